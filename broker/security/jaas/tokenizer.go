package jaas

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// tokenKind is what a token is, as Java's StreamTokenizer (configured as Kafka's JaasConfig
// configures it) would classify it (docs/sasl.md §1).
type tokenKind int

const (
	tokEOF    tokenKind = iota
	tokWord             // a run of word characters: has a string value
	tokQuoted           // "..." or '...': has a string value
	tokNumber           // starts with a digit, '.' or '-' and a digit: no string value in Java
	tokSymbol           // any other single character ('=', ';', '{', '}', ...)
)

type token struct {
	kind tokenKind
	text string // the value of a word or quoted string, the raw text of a number or symbol
	line int
}

// hasValue reports whether Java's StreamTokenizer gives the token a string value (sval).
func (t token) hasValue() bool { return t.kind == tokWord || t.kind == tokQuoted }

func (t token) is(sym string) bool { return t.kind == tokSymbol && t.text == sym }

// describe names the token for error messages.
func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "the end of the text"
	case tokNumber:
		return fmt.Sprintf("the unquoted number %s (line %d; quote it)", t.text, t.line)
	case tokSymbol:
		return fmt.Sprintf("%q (line %d)", t.text, t.line)
	default:
		return fmt.Sprintf("%q (line %d)", t.text, t.line)
	}
}

// tokenizer splits JAAS text the way Java's StreamTokenizer does with Kafka's settings:
// whitespace is every char <= ' '; words start with a letter, '_', '$' or a char >= U+00A0 and go on
// with those, digits, '.' and '-'; numbers start with a digit, '.' or '-'+digit; '"' and '\” quote;
// "//", "/* */" and a lone '/' are comments. Stricter than Java: an unterminated quoted string is an
// error rather than a string that ends at the line end.
type tokenizer struct {
	s    string
	pos  int
	line int
}

func newTokenizer(s string) *tokenizer { return &tokenizer{s: s, line: 1} }

func isWordStart(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r == '$' || r >= 0xA0
}

func isDigitish(r rune) bool { return r >= '0' && r <= '9' || r == '.' || r == '-' }

func (t *tokenizer) peekRune(off int) rune {
	if t.pos+off >= len(t.s) {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(t.s[t.pos+off:])
	return r
}

// skipSpaceAndComments advances over whitespace and comments.
func (t *tokenizer) skipSpaceAndComments() error {
	for t.pos < len(t.s) {
		c := t.s[t.pos]
		switch {
		case c == '\n':
			t.line++
			t.pos++
		case c <= ' ':
			t.pos++
		case c == '/' && t.peekRune(1) == '*':
			end := strings.Index(t.s[t.pos+2:], "*/")
			if end < 0 {
				return fmt.Errorf("comment opened with /* at line %d is not closed", t.line)
			}
			t.line += strings.Count(t.s[t.pos:t.pos+2+end], "\n")
			t.pos += 2 + end + 2
		case c == '/': // "//" or a lone '/': Java's comment char, to the end of the line
			end := strings.IndexByte(t.s[t.pos:], '\n')
			if end < 0 {
				t.pos = len(t.s)
			} else {
				t.pos += end
			}
		default:
			return nil
		}
	}
	return nil
}

// next returns the next token.
func (t *tokenizer) next() (token, error) {
	if err := t.skipSpaceAndComments(); err != nil {
		return token{}, err
	}
	if t.pos >= len(t.s) {
		return token{kind: tokEOF, line: t.line}, nil
	}
	start := t.pos
	r, size := utf8.DecodeRuneInString(t.s[t.pos:])
	switch {
	case r >= '0' && r <= '9' || r == '.' || r == '-' && isNumberStart(t.peekRune(1)):
		t.pos += size
		dot := r == '.'
		for t.pos < len(t.s) {
			c := t.s[t.pos]
			if c == '.' && !dot {
				dot = true
			} else if c < '0' || c > '9' {
				break
			}
			t.pos++
		}
		return token{kind: tokNumber, text: t.s[start:t.pos], line: t.line}, nil
	case isWordStart(r):
		t.pos += size
		for t.pos < len(t.s) {
			r, size := utf8.DecodeRuneInString(t.s[t.pos:])
			if !isWordStart(r) && !isDigitish(r) {
				break
			}
			t.pos += size
		}
		return token{kind: tokWord, text: t.s[start:t.pos], line: t.line}, nil
	case r == '"' || r == '\'':
		return t.quoted(byte(r))
	default:
		t.pos += size
		return token{kind: tokSymbol, text: string(r), line: t.line}, nil
	}
}

func isNumberStart(r rune) bool { return r >= '0' && r <= '9' || r == '.' }

// quoted reads a quoted string with Java's escapes: \a \b \f \n \r \t \v, octal \NNN, and any
// other escaped char stands for itself (\" \' \\).
func (t *tokenizer) quoted(q byte) (token, error) {
	line := t.line
	t.pos++ // the opening quote
	var b strings.Builder
	for {
		if t.pos >= len(t.s) || t.s[t.pos] == '\n' || t.s[t.pos] == '\r' {
			return token{}, fmt.Errorf("quoted value starting at line %d is not closed with %c before the line ends", line, q)
		}
		c := t.s[t.pos]
		switch {
		case c == q:
			t.pos++
			return token{kind: tokQuoted, text: b.String(), line: line}, nil
		case c == '\\' && t.pos+1 < len(t.s) && t.s[t.pos+1] != '\n' && t.s[t.pos+1] != '\r':
			t.pos++
			t.escape(&b)
		default:
			r, size := utf8.DecodeRuneInString(t.s[t.pos:])
			b.WriteRune(r)
			t.pos += size
		}
	}
}

// escape writes the char of the escape sequence at t.pos (just after the backslash).
func (t *tokenizer) escape(b *strings.Builder) {
	c := t.s[t.pos]
	if c >= '0' && c <= '7' {
		// Java: up to three octal digits, the third only if the first is 0-3.
		v, n := int(c-'0'), 1
		maxDigits := 2
		if c <= '3' {
			maxDigits = 3
		}
		for n < maxDigits && t.pos+n < len(t.s) && t.s[t.pos+n] >= '0' && t.s[t.pos+n] <= '7' {
			v = v*8 + int(t.s[t.pos+n]-'0')
			n++
		}
		t.pos += n
		b.WriteRune(rune(v))
		return
	}
	if e, ok := map[byte]byte{'a': 7, 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}[c]; ok {
		b.WriteByte(e)
		t.pos++
		return
	}
	r, size := utf8.DecodeRuneInString(t.s[t.pos:])
	b.WriteRune(r)
	t.pos += size
}
