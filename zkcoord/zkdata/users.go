package zkdata

import (
	"fmt"
	"strings"
)

// /config/users/<sanitized user>: a user's SCRAM credentials (and, in Kafka, its quotas), the
// config znode JSON of EncodeConfig; changes are announced with entity_path
// "users/<sanitized user>" (docs/sasl.md §3).

// UserConfigPath is /config/users/<SanitizeUser(user)>.
func UserConfigPath(user string) string { return PathConfigUsers + "/" + SanitizeUser(user) }

// UserEntity is the entity path of a user's config change notification.
func UserEntity(user string) string { return "users/" + SanitizeUser(user) }

// SanitizeUser is Kafka's Sanitizer.sanitize of a user principal for a znode name: Java's
// URLEncoder over UTF-8 (letters, digits and ".-*_" kept, space to "+", every other byte
// %XX upper-case), then "*" to "%2A" and "+" to "%20".
func SanitizeUser(user string) string {
	var b strings.Builder
	for i := 0; i < len(user); i++ {
		c := user[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// DesanitizeUser is Kafka's Sanitizer.desanitize (Java's URLDecoder): "+" is a space and %XX a
// byte. A malformed escape is an error, as URLDecoder's.
func DesanitizeUser(name string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '+':
			b.WriteByte(' ')
		case '%':
			if i+2 >= len(name) || !isHex(name[i+1]) || !isHex(name[i+2]) {
				return "", fmt.Errorf("zkdata: user znode name %q: malformed %% escape", name)
			}
			b.WriteByte(unhex(name[i+1])<<4 | unhex(name[i+2]))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
