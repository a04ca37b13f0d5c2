package sasl

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// The SCRAM message grammar of Kafka's ScramMessages (docs/sasl.md §3), checked by hand.

// clientFirst is a parsed client-first message.
type clientFirst struct {
	gs2Header  string // "n,," or "n,a=<authzid>,", as received
	authzid    string // unescaped
	username   string // unescaped saslname
	nonce      string
	bare       string // client-first-message-bare, as received (for the AuthMessage)
	extensions map[string]string
}

// tokenAuth reports the tokenauth extension (Java's Boolean.parseBoolean).
func (c clientFirst) tokenAuth() bool { return strings.EqualFold(c.extensions["tokenauth"], "true") }

// clientFinalMsg is a parsed client-final message.
type clientFinalMsg struct {
	channelBinding []byte
	nonce          string
	proof          []byte
	withoutProof   string // client-final-message-without-proof, as received
}

// unescapeSaslName checks a saslname (ASCII 0x01-0x7F but ',', and '=' only in =2C and =3D) and
// unescapes it.
func unescapeSaslName(s, what string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("empty %s", what)
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '=':
			switch {
			case strings.HasPrefix(s[i:], "=2C"):
				b.WriteByte(',')
			case strings.HasPrefix(s[i:], "=3D"):
				b.WriteByte('=')
			default:
				return "", fmt.Errorf("%s has '=' not in =2C or =3D", what)
			}
			i += 2
		case c == 0 || c > 0x7F || c == ',':
			return "", fmt.Errorf("%s has byte 0x%02x outside ASCII 0x01-0x7F", what, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// checkChars reports whether s is non-empty and every byte is in [lo, hi] and not in except.
func checkChars(s string, lo, hi byte, except string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < lo || s[i] > hi || strings.IndexByte(except, s[i]) >= 0 {
			return false
		}
	}
	return true
}

func isAlpha(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// parseExtensions parses `,key=value` items (key letters, value ASCII 0x01-0x7F without ','); s
// starts with ',' or is empty.
func parseExtensions(s string) (map[string]string, error) {
	ext := map[string]string{}
	if s == "" {
		return ext, nil
	}
	if s[0] != ',' {
		return nil, errors.New("extensions must follow ','")
	}
	for _, item := range strings.Split(s[1:], ",") {
		k, v, ok := strings.Cut(item, "=")
		if !ok || !isAlpha(k) || !checkChars(v, 0x01, 0x7F, ",") {
			return nil, fmt.Errorf("malformed extension %.32q", item)
		}
		ext[k] = v
	}
	return ext, nil
}

// parseClientFirst: n,[a=<saslname>],[m=<value>,]n=<saslname>,r=<nonce>[,<key>=<value>]*. Only gs2
// flag 'n'; m= and unknown extensions are accepted and ignored, as Kafka does.
func parseClientFirst(s string) (clientFirst, error) {
	var c clientFirst
	rest, ok := strings.CutPrefix(s, "n,")
	if !ok {
		return c, errors.New("gs2 header must start with n, (channel binding is not supported)")
	}
	if strings.HasPrefix(rest, "a=") {
		i := strings.IndexByte(rest, ',')
		if i < 0 {
			return c, errors.New("gs2 header not terminated by ','")
		}
		az, err := unescapeSaslName(rest[2:i], "authzid")
		if err != nil {
			return c, err
		}
		c.authzid, rest = az, rest[i+1:]
	} else if rest, ok = strings.CutPrefix(rest, ","); !ok {
		return c, errors.New("gs2 header not terminated by ','")
	}
	c.gs2Header = s[:len(s)-len(rest)]
	c.bare = rest
	if strings.HasPrefix(rest, "m=") {
		i := strings.IndexByte(rest, ',')
		if i < 0 || !checkChars(rest[2:i], 0x01, 0x7F, ",") {
			return c, errors.New("malformed reserved m= extension")
		}
		rest = rest[i+1:]
	}
	rest, ok = strings.CutPrefix(rest, "n=")
	if !ok {
		return c, errors.New("n=<username> expected")
	}
	i := strings.IndexByte(rest, ',')
	if i < 0 {
		return c, errors.New("r=<nonce> missing")
	}
	user, err := unescapeSaslName(rest[:i], "username")
	if err != nil {
		return c, err
	}
	c.username = user
	rest, ok = strings.CutPrefix(rest[i+1:], "r=")
	if !ok {
		return c, errors.New("r=<nonce> expected after the username")
	}
	i = strings.IndexByte(rest, ',')
	if i < 0 {
		i = len(rest)
	}
	if !checkChars(rest[:i], 0x21, 0x7E, ",") {
		return c, errors.New("nonce must be printable ASCII without ','")
	}
	c.nonce = rest[:i]
	c.extensions, err = parseExtensions(rest[i:])
	return c, err
}

// decodeBase64 decodes standard padded base64 and nothing else (Kafka's BASE64 pattern; Go's
// decoder would skip line breaks).
func decodeBase64(s, what string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return nil, fmt.Errorf("%s is not base64", what)
		}
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%s is not base64", what)
	}
	return b, nil
}

// parseClientFinal: c=<b64>,r=<nonce>[,<key>=<value>]*,p=<b64 proof>.
func parseClientFinal(s string) (clientFinalMsg, error) {
	var c clientFinalMsg
	p := strings.LastIndex(s, ",p=")
	if p < 0 {
		return c, errors.New("p=<proof> missing")
	}
	c.withoutProof = s[:p]
	proof, err := decodeBase64(s[p+3:], "proof")
	if err != nil {
		return c, err
	}
	c.proof = proof
	rest, ok := strings.CutPrefix(c.withoutProof, "c=")
	if !ok {
		return c, errors.New("c=<channel binding> expected")
	}
	i := strings.IndexByte(rest, ',')
	if i < 0 {
		return c, errors.New("r=<nonce> missing")
	}
	if c.channelBinding, err = decodeBase64(rest[:i], "channel binding"); err != nil {
		return c, err
	}
	rest, ok = strings.CutPrefix(rest[i+1:], "r=")
	if !ok {
		return c, errors.New("r=<nonce> expected after the channel binding")
	}
	i = strings.IndexByte(rest, ',')
	if i < 0 {
		i = len(rest)
	}
	if !checkChars(rest[:i], 0x21, 0x7E, ",") {
		return c, errors.New("nonce must be printable ASCII without ','")
	}
	c.nonce = rest[:i]
	_, err = parseExtensions(rest[i:])
	return c, err
}
