package sslprincipal

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// RulesKey is the broker config key the mapping rules come from.
const RulesKey = "ssl.principal.mapping.rules"

// DefaultRules is Kafka's default for ssl.principal.mapping.rules: the DN unchanged.
const DefaultRules = "DEFAULT"

// Kafka 2.4's SslPrincipalMapper grammar (docs/security.md §2): the value is split into rules at
// commas outside a RULE's pattern and replacement (which may escape "/" and "," with a
// backslash); each rule is DEFAULT or RULE:<pattern>/<replacement>/[L|U]; an empty rule is
// ignored. Go's regexp, like Java's, prefers the leftmost alternative and honours lazy
// quantifiers, so these expressions split and parse as Kafka's do.
const rulePattern = `(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	ruleSplitter = regexp.MustCompile(`\s*(` + rulePattern + `)\s*(?:,\s*|$)`)
	ruleParser   = regexp.MustCompile(`^(?:` + rulePattern + `)`)
	backRef      = regexp.MustCompile(`\$(\d+)`)
)

// Mapper maps a distinguished name to a principal name through the parsed rules; the first rule
// whose pattern matches the whole DN gives the name.
type Mapper struct {
	rules []rule
}

type rule struct {
	isDefault   bool
	source      string         // the pattern as written, for messages
	whole       *regexp.Regexp // the pattern anchored at both ends: Java's Matcher.matches()
	re          *regexp.Regexp // the pattern as written: Java's String.replaceAll
	afterRune   *regexp.Regexp // one rune of context, then the pattern: a match at a given position
	replacement string
	lower       bool
	upper       bool
}

// NoMatchingRuleError is returned when no rule applies to a DN (Kafka's
// SslPrincipalMapper.NoMatchingRule); Kafka then fails the connection's principal build.
type NoMatchingRuleError struct {
	DN    string
	Rules string
}

func (e *NoMatchingRuleError) Error() string {
	return "No rules apply to " + e.DN + ", rules " + e.Rules
}

// ParseRules parses a value of ssl.principal.mapping.rules. Errors name the key and the rule, as
// Kafka's "Invalid rule" messages do; a pattern Go's regexp cannot compile (Java-only syntax such
// as look-arounds or back-references) is an error too.
func ParseRules(value string) (*Mapper, error) {
	var m Mapper
	var err error
	for _, sm := range ruleSplitter.FindAllStringSubmatch(strings.TrimSpace(value), -1) {
		r := sm[1]
		loc := ruleParser.FindStringSubmatchIndex(r)
		if loc == nil {
			return nil, fmt.Errorf("%s: Invalid rule: %s", RulesKey, r)
		}
		if loc[1] != len(r) {
			return nil, fmt.Errorf("%s: Invalid rule: `%s`, unmatched substring: `%s`", RulesKey, r, r[loc[1]:])
		}
		group := func(i int) (string, bool) {
			if loc[2*i] < 0 {
				return "", false
			}
			return r[loc[2*i]:loc[2*i+1]], true
		}
		if _, ok := group(1); ok {
			m.rules = append(m.rules, rule{isDefault: true})
			continue
		}
		pattern, ok := group(2)
		if !ok {
			continue // an empty rule: ignored, as Kafka does
		}
		replacement, _ := group(3)
		caseFold, _ := group(4)
		var res [3]*regexp.Regexp
		for i, expr := range []string{pattern, `\A(?:` + pattern + `)\z`, `\A(?s:.)(?:` + pattern + `)`} {
			if res[i], err = regexp.Compile(expr); err != nil {
				return nil, fmt.Errorf("%s: rule %q: pattern %q: %w", RulesKey, r, pattern, err)
			}
		}
		m.rules = append(m.rules, rule{
			source:      pattern,
			re:          res[0],
			whole:       res[1],
			afterRune:   res[2],
			replacement: replacement,
			lower:       caseFold == "L",
			upper:       caseFold == "U",
		})
	}
	return &m, nil
}

// Name maps dn. The error is a *NoMatchingRuleError when no rule applies, or an invalid group
// reference in a replacement (Java's replaceAll throws there too).
func (m *Mapper) Name(dn string) (string, error) {
	for _, r := range m.rules {
		name, ok, err := r.apply(dn)
		if err != nil {
			return "", err
		}
		if ok {
			return name, nil
		}
	}
	return "", &NoMatchingRuleError{DN: dn, Rules: m.String()}
}

// String lists the rules as Kafka's SslPrincipalMapper.toString does ("[RULE:p/r/L, DEFAULT]").
func (m *Mapper) String() string {
	parts := make([]string, len(m.rules))
	for i, r := range m.rules {
		parts[i] = r.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (r rule) String() string {
	if r.isDefault {
		return "DEFAULT"
	}
	s := "RULE:" + r.source + "/" + r.replacement
	switch {
	case r.lower:
		s += "/L"
	case r.upper:
		s += "/U"
	}
	return s
}

func (r rule) apply(dn string) (string, bool, error) {
	if r.isDefault {
		return dn, true, nil
	}
	if !r.whole.MatchString(dn) {
		return "", false, nil
	}
	var out string
	replacement, err := escapeLiteralBackReferences(r.replacement, r.re.NumSubexp())
	if err == nil {
		out, err = r.replaceAll(dn, replacement)
	}
	if err != nil {
		return "", false, fmt.Errorf("%s: rule %s on %q: %w", RulesKey, r, dn, err)
	}
	switch {
	case r.lower:
		out = strings.ToLower(out)
	case r.upper:
		out = strings.ToUpper(out)
	}
	return out, true, nil
}

// escapeLiteralBackReferences turns a "$N" naming a group the pattern does not have into a literal
// "\$N", as Kafka's Rule.escapeLiteralBackReferences does (a "$123" with fewer groups is first
// cut to "$12", then "$1"). Like Kafka's, the offsets of later references are those of the
// original text even after a backslash went in, so this keeps Kafka's result for two invalid
// references in one replacement.
func escapeLiteralBackReferences(unescaped string, groups int) (string, error) {
	if groups == 0 {
		return unescaped, nil
	}
	value := unescaped
	for _, loc := range backRef.FindAllStringSubmatchIndex(unescaped, -1) {
		num := unescaped[loc[2]:loc[3]]
		if strings.HasPrefix(num, "0") {
			continue
		}
		idx, err := strconv.ParseInt(num, 10, 32)
		if err != nil {
			// Java's Integer.parseInt throws here and the principal build fails.
			return "", fmt.Errorf("group reference $%s: %w", num, err)
		}
		for idx > int64(groups) && idx >= 10 {
			idx /= 10
		}
		if idx > int64(groups) {
			start := loc[2] - 1 // the "$"
			value = value[:start] + `\` + value[start:]
		}
	}
	return value, nil
}

// replaceAll is Java's String.replaceAll(pattern, replacement) with Java's replacement syntax:
// "\x" is a literal x, "$N" group N (digits taken while the number stays a group), "${name}" a
// named group. Java's and Go's match sequences differ in one place, which is restored here: Go
// skips an empty match right where a non-empty match ended, Java replaces it too (Java's
// "abc".replaceAll(".*", "x") is "xx"; docs/security.md §2).
func (r rule) replaceAll(s, replacement string) (string, error) {
	var b strings.Builder
	last := 0
	matches := r.re.FindAllStringSubmatchIndex(s, -1)
	for i, m := range matches {
		b.WriteString(s[last:m[0]])
		if err := r.expand(&b, replacement, s, m); err != nil {
			return "", err
		}
		last = m[1]
		if m[1] == m[0] || (i+1 < len(matches) && matches[i+1][0] == m[1]) {
			continue
		}
		// Go delivered no match starting where this one ended: if the pattern matches there,
		// that match is the empty one Go dropped. The rune before gives ^, \b and \B their
		// context.
		_, size := utf8.DecodeLastRuneInString(s[:m[1]])
		at := m[1] - size
		if em := r.afterRune.FindStringSubmatchIndex(s[at:]); em != nil && em[1] == size {
			for j := range em {
				if em[j] >= 0 {
					em[j] += at
				}
			}
			em[0] = m[1]
			if err := r.expand(&b, replacement, s, em); err != nil {
				return "", err
			}
		}
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

func (r rule) expand(b *strings.Builder, repl, s string, m []int) error {
	groups := r.re.NumSubexp()
	writeGroup := func(g int) {
		if m[2*g] >= 0 {
			b.WriteString(s[m[2*g]:m[2*g+1]])
		}
	}
	for i := 0; i < len(repl); {
		c := repl[i]
		switch c {
		case '\\':
			i++
			if i == len(repl) {
				return errors.New("character to be escaped is missing")
			}
			_, size := utf8.DecodeRuneInString(repl[i:])
			b.WriteString(repl[i : i+size])
			i += size
		case '$':
			i++
			if i == len(repl) {
				return errors.New("Illegal group reference: group index is missing")
			}
			if repl[i] == '{' {
				i++
				j := i
				for j < len(repl) && isASCIIAlnum(repl[j]) {
					j++
				}
				name := repl[i:j]
				if name == "" {
					return errors.New("named capturing group has 0 length name")
				}
				if j == len(repl) || repl[j] != '}' {
					return errors.New("named capturing group is missing trailing '}'")
				}
				if name[0] >= '0' && name[0] <= '9' {
					return fmt.Errorf("capturing group name {%s} starts with digit character", name)
				}
				g := r.re.SubexpIndex(name)
				if g < 0 {
					return fmt.Errorf("No group with name {%s}", name)
				}
				writeGroup(g)
				i = j + 1
				continue
			}
			if repl[i] < '0' || repl[i] > '9' {
				return errors.New("Illegal group reference")
			}
			g := int(repl[i] - '0')
			i++
			for i < len(repl) && repl[i] >= '0' && repl[i] <= '9' {
				next := g*10 + int(repl[i]-'0')
				if next > groups {
					break
				}
				g = next
				i++
			}
			if g > groups {
				return fmt.Errorf("No group %d", g)
			}
			writeGroup(g)
		default:
			b.WriteByte(c)
			i++
		}
	}
	return nil
}

func isASCIIAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
