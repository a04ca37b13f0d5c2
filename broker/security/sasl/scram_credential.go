package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// ScramMechanism is SCRAM-SHA-256 or SCRAM-SHA-512 (Kafka's ScramMechanism, docs/sasl.md §3).
type ScramMechanism struct {
	name          string
	newHash       func() hash.Hash
	minIterations int
}

// The two SCRAM mechanisms Kafka 2.4 offers; both need at least 4096 iterations.
var (
	ScramSHA256Mechanism = &ScramMechanism{ScramSHA256, sha256.New, 4096}
	ScramSHA512Mechanism = &ScramMechanism{ScramSHA512, sha512.New, 4096}
)

// Name is the mechanism's name, also the key of its credential in /config/users/<user>.
func (m *ScramMechanism) Name() string { return m.name }

// MinIterations is the fewest iterations a credential may have.
func (m *ScramMechanism) MinIterations() int { return m.minIterations }

// ScramMechanismByName returns SCRAM-SHA-256 or SCRAM-SHA-512.
func ScramMechanismByName(name string) (*ScramMechanism, bool) {
	switch name {
	case ScramSHA256:
		return ScramSHA256Mechanism, true
	case ScramSHA512:
		return ScramSHA512Mechanism, true
	}
	return nil, false
}

func (m *ScramMechanism) hmac(key []byte, parts ...string) []byte {
	mac := hmac.New(m.newHash, key)
	for _, p := range parts {
		mac.Write([]byte(p))
	}
	return mac.Sum(nil)
}

func (m *ScramMechanism) h(b []byte) []byte {
	h := m.newHash()
	h.Write(b)
	return h.Sum(nil)
}

// ScramCredential is what the server stores of a SCRAM user (Kafka's ScramCredential).
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

// Format is the credential as Kafka stores it under the mechanism's key in /config/users/<user>:
// salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n> (ScramCredentialUtils).
func (c ScramCredential) Format() string {
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("salt=%s,stored_key=%s,server_key=%s,iterations=%d", b64(c.Salt), b64(c.StoredKey), b64(c.ServerKey), c.Iterations)
}

// ErrInvalidCredential is wrapped by ParseScramCredential's errors.
var ErrInvalidCredential = errors.New("SCRAM credential not valid")

// ParseScramCredential parses Format's text: split at ',', each item at its first '=', exactly
// the four keys (Kafka's ScramCredentialUtils.credentialFromString). Errors name the key at fault,
// not the value.
func ParseScramCredential(s string) (ScramCredential, error) {
	fields := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(item, "=")
		if !ok || k == "" {
			return ScramCredential{}, fmt.Errorf("%w: item %d is not key=value", ErrInvalidCredential, len(fields)+1)
		}
		if _, dup := fields[k]; dup {
			return ScramCredential{}, fmt.Errorf("%w: key %s given twice", ErrInvalidCredential, k)
		}
		fields[k] = v
	}
	var c ScramCredential
	for _, k := range []string{"salt", "stored_key", "server_key", "iterations"} {
		if _, ok := fields[k]; !ok {
			return ScramCredential{}, fmt.Errorf("%w: key %s missing (want salt, stored_key, server_key, iterations)", ErrInvalidCredential, k)
		}
	}
	if len(fields) != 4 {
		return ScramCredential{}, fmt.Errorf("%w: %d keys, want exactly salt, stored_key, server_key, iterations", ErrInvalidCredential, len(fields))
	}
	for k, dst := range map[string]*[]byte{"salt": &c.Salt, "stored_key": &c.StoredKey, "server_key": &c.ServerKey} {
		b, err := base64.StdEncoding.Strict().DecodeString(fields[k])
		if err != nil || strings.ContainsAny(fields[k], "\r\n") {
			return ScramCredential{}, fmt.Errorf("%w: %s is not base64", ErrInvalidCredential, k)
		}
		*dst = b
	}
	n, err := strconv.ParseInt(fields["iterations"], 10, 32)
	if err != nil || n <= 0 {
		return ScramCredential{}, fmt.Errorf("%w: iterations %q is not a positive integer", ErrInvalidCredential, fields["iterations"])
	}
	c.Iterations = int(n)
	return c, nil
}

// saltedPassword is Hi(password, salt, i): PBKDF2-HMAC with the mechanism's hash, the password as
// UTF-8 without SASLprep, as Kafka's ScramFormatter.
func (m *ScramMechanism) saltedPassword(password string, salt []byte, iterations int) ([]byte, error) {
	return pbkdf2.Key(m.newHash, password, salt, iterations, m.newHash().Size())
}

// NewScramCredential derives a credential from a password, with a fresh salt read from rnd (nil:
// crypto/rand) as Kafka does: the UTF-8 of a random 130-bit base-36 string. iterations below the
// mechanism's minimum are an error.
func NewScramCredential(m *ScramMechanism, password string, iterations int, rnd io.Reader) (ScramCredential, error) {
	if iterations < m.minIterations {
		return ScramCredential{}, fmt.Errorf("Iterations %d is less than the minimum %d required for %s", iterations, m.minIterations, m.name)
	}
	salt, err := randomBase36(rnd)
	if err != nil {
		return ScramCredential{}, err
	}
	return m.credentialWithSalt(password, []byte(salt), iterations)
}

func (m *ScramMechanism) credentialWithSalt(password string, salt []byte, iterations int) (ScramCredential, error) {
	sp, err := m.saltedPassword(password, salt, iterations)
	if err != nil {
		return ScramCredential{}, err
	}
	clientKey := m.hmac(sp, "Client Key")
	return ScramCredential{Salt: salt, StoredKey: m.h(clientKey), ServerKey: m.hmac(sp, "Server Key"), Iterations: iterations}, nil
}

// randomBase36 is Kafka's ScramFormatter.secureRandomString: a random 130-bit number in base 36.
func randomBase36(rnd io.Reader) (string, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	var b [17]byte // 136 bits, the top 6 dropped
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	b[0] &= 0x03
	return new(big.Int).SetBytes(b[:]).Text(36), nil
}

// scramConfigValue is kafka-configs' pattern for the value of --add-config 'SCRAM-SHA-256=[...]'.
var scramConfigValue = regexp.MustCompile(`^(?:iterations=([0-9]*),)?password=(.*)$`)

// ParseScramConfigValue parses the value of kafka-configs --add-config
// 'SCRAM-SHA-256=[iterations=8192,password=pw]' (with or without the brackets): iterations default
// to the minimum 4096, fewer is an error (Kafka's ConfigCommand). The password may contain ','.
func ParseScramConfigValue(m *ScramMechanism, value string) (iterations int, password string, err error) {
	if strings.HasPrefix(value, "[") && strings.HasSuffix(value, "]") {
		value = value[1 : len(value)-1]
	}
	g := scramConfigValue.FindStringSubmatch(value)
	if g == nil {
		return 0, "", fmt.Errorf("invalid %s credential config: want [iterations=<n>,]password=<password>", m.name)
	}
	iterations = m.minIterations
	if strings.HasPrefix(value, "iterations=") {
		n, err := strconv.ParseInt(g[1], 10, 32)
		if err != nil {
			return 0, "", fmt.Errorf("invalid %s credential config: iterations %q is not a number", m.name, g[1])
		}
		iterations = int(n)
	}
	if iterations < m.minIterations {
		return 0, "", fmt.Errorf("Iterations %d is less than the minimum %d required for %s", iterations, m.minIterations, m.name)
	}
	return iterations, g[2], nil
}
