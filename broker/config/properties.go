package config

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// ParseProperties reads a Java .properties document the way java.util.Properties.load
// does, which is how Kafka reads server.properties:
//
//   - a line whose first non-blank character is '#' or '!' is a comment; blank lines are skipped;
//   - the key ends at the first unescaped '=', ':' or whitespace; blanks and at most one '='
//     or ':' after it are skipped; the rest of the line is the value;
//   - a line ending in an odd number of backslashes continues on the next line, whose leading
//     blanks are dropped;
//   - escapes \t \n \r \f and \uXXXX are decoded, any other escaped character stands for itself.
//
// Keys and values are trimmed of surrounding blanks (Kafka's ConfigDef trims values before
// typing them). A later duplicate key replaces an earlier one, as in Java. The input is read
// as UTF-8 rather than ISO-8859-1; only non-ASCII values could differ.
func ParseProperties(r io.Reader) (map[string]string, error) {
	props := make(map[string]string)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	lineNo := 0
	for {
		logical, startLine, ok := nextLogicalLine(sc, &lineNo)
		if !ok {
			break
		}
		key, value, err := splitProperty(logical)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", startLine, err)
		}
		props[key] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", lineNo+1, err)
	}
	return props, nil
}

// nextLogicalLine joins continuation lines and skips comments and blank lines. It returns
// the logical line still escaped, with the trailing continuation backslashes removed.
func nextLogicalLine(sc *bufio.Scanner, lineNo *int) (string, int, bool) {
	for sc.Scan() {
		*lineNo++
		line := strings.TrimRight(sc.Text(), "\r")
		trimmed := strings.TrimLeft(line, " \t\f")
		if trimmed == "" || trimmed[0] == '#' || trimmed[0] == '!' {
			continue
		}
		start := *lineNo
		var b strings.Builder
		cur := trimmed
		for {
			if !continues(cur) {
				b.WriteString(cur)
				return b.String(), start, true
			}
			b.WriteString(cur[:len(cur)-1])
			if !sc.Scan() {
				// A continuation at end of input: Java drops the backslash.
				return b.String(), start, true
			}
			*lineNo++
			cur = strings.TrimLeft(strings.TrimRight(sc.Text(), "\r"), " \t\f")
		}
	}
	return "", 0, false
}

// continues reports whether a line ends in an odd number of backslashes.
func continues(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

// splitProperty splits a logical line into its unescaped key and value.
func splitProperty(line string) (string, string, error) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || isBlank(c) {
			break
		}
		i++
	}
	if i > len(line) {
		i = len(line) // a key ending in a lone backslash
	}
	rawKey := line[:i]
	j := i
	for j < len(line) && isBlank(line[j]) {
		j++
	}
	if j < len(line) && (line[j] == '=' || line[j] == ':') {
		j++
	}
	for j < len(line) && isBlank(line[j]) {
		j++
	}
	key, err := unescape(rawKey)
	if err != nil {
		return "", "", err
	}
	value, err := unescape(line[j:])
	if err != nil {
		return "", "", fmt.Errorf("value of %q: %w", key, err)
	}
	return strings.TrimSpace(key), strings.TrimSpace(value), nil
}

// unescape decodes the escapes of a .properties key or value.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash is dropped, as in Java
		}
		switch e := s[i]; e {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`malformed \uxxxx escape`)
			}
			var r rune
			for _, h := range []byte(s[i+1 : i+5]) {
				var d byte
				switch {
				case h >= '0' && h <= '9':
					d = h - '0'
				case h >= 'a' && h <= 'f':
					d = h - 'a' + 10
				case h >= 'A' && h <= 'F':
					d = h - 'A' + 10
				default:
					return "", fmt.Errorf(`malformed \uxxxx escape`)
				}
				r = r<<4 | rune(d)
			}
			b.WriteRune(r)
			i += 4
		default:
			b.WriteByte(e)
		}
	}
	return b.String(), nil
}
