package tlsconf

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"strings"
)

// pemEntry matches one PEM entry the way Kafka 2.7's PemParser does: the BEGIN and END lines may
// be surrounded by other text, header lines ("Name: value") are skipped, and the base64 body may
// be broken by any white space, so an inline value written on one line of a properties file
// still parses (docs/security.md §2).
var pemEntry = regexp.MustCompile(`-+BEGIN\s+([A-Z0-9 ]*?)\s*-+\s+((?:[^\r\n:-]*:[^\r\n]*[\r\n]+)*)([a-zA-Z0-9/+=\s]*)-+END\s+([A-Z0-9 ]*?)\s*-+`)

type pemBlock struct {
	kind    string // "CERTIFICATE", "PRIVATE KEY", "ENCRYPTED PRIVATE KEY", ...
	headers bool
	der     []byte
}

func parsePEM(text string) ([]pemBlock, error) {
	var out []pemBlock
	for _, m := range pemEntry.FindAllStringSubmatch(text, -1) {
		body := strings.Join(strings.Fields(m[3]), "")
		der, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return nil, fmt.Errorf("PEM entry %q: %w", m[1], err)
		}
		out = append(out, pemBlock{kind: m[1], headers: strings.TrimSpace(m[2]) != "", der: der})
	}
	return out, nil
}

// pemCertificates returns the CERTIFICATE entries of text, in order.
func pemCertificates(text string) ([]*x509.Certificate, error) {
	blocks, err := parsePEM(text)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for _, b := range blocks {
		if b.kind != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.der)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no CERTIFICATE entries in PEM")
	}
	return certs, nil
}

// keyPasswordError marks a private key that could not be decrypted, or that does not match
// ssl.key.password being set or not: the caller names ssl.key.password.
type keyPasswordError struct{ msg string }

func (e *keyPasswordError) Error() string { return e.msg }

func errKeyPassword(msg string) error { return &keyPasswordError{msg} }

// pemPrivateKey returns the one PKCS#8 private key of text: "PRIVATE KEY" when password is empty,
// "ENCRYPTED PRIVATE KEY" (PBES2) decrypted with password otherwise, as Kafka 2.7's PemStore reads
// keys. PKCS#1 ("RSA PRIVATE KEY") and SEC 1 ("EC PRIVATE KEY") keys are refused, as Kafka does;
// `openssl pkcs8 -topk8` converts them.
func pemPrivateKey(text, password string) (crypto.PrivateKey, error) {
	blocks, err := parsePEM(text)
	if err != nil {
		return nil, err
	}
	var keys []pemBlock
	for _, b := range blocks {
		if strings.HasSuffix(b.kind, "PRIVATE KEY") {
			keys = append(keys, b)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("Private key not provided")
	}
	if len(keys) != 1 {
		return nil, fmt.Errorf("Expected one private key, but found %d", len(keys))
	}
	k := keys[0]
	switch {
	case k.kind == "PRIVATE KEY" && password == "":
		return x509.ParsePKCS8PrivateKey(k.der)
	case k.kind == "PRIVATE KEY":
		return nil, errKeyPassword("set, but the private key is not encrypted (PKCS#8 ENCRYPTED PRIVATE KEY expected)")
	case k.kind == "ENCRYPTED PRIVATE KEY" && password == "":
		return nil, errKeyPassword("not set, but the private key is encrypted")
	case k.kind == "ENCRYPTED PRIVATE KEY":
		der, err := decryptPKCS8(k.der, []byte(password))
		if err != nil {
			return nil, err
		}
		key, err := x509.ParsePKCS8PrivateKey(der)
		if err != nil {
			return nil, errKeyPassword("cannot decrypt the private key (wrong password?)")
		}
		return key, nil
	}
	return nil, fmt.Errorf("%s: only PKCS#8 keys (PRIVATE KEY, ENCRYPTED PRIVATE KEY) are read; convert with openssl pkcs8 -topk8", k.kind)
}

var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA224 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 8}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

// RFC 8018 structures of an encrypted PKCS#8 key (PBES2 with PBKDF2).
type encryptedPrivateKeyInfo struct {
	Algorithm     pkix.AlgorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc pkix.AlgorithmIdentifier
	EncryptionScheme  pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// decryptPKCS8 decrypts an EncryptedPrivateKeyInfo protected with PBES2 (PBKDF2 with an HMAC-SHA
// PRF, AES-CBC or 3DES-CBC): what `openssl pkcs8 -topk8 -v2 <cipher>` and openssl 3's defaults
// write. The legacy PBES1 schemes are refused.
func decryptPKCS8(der, password []byte) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if _, err := asn1.Unmarshal(der, &info); err != nil {
		return nil, fmt.Errorf("parsing the encrypted private key: %w", err)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encrypted private key: scheme %v not supported (PBES2 expected: openssl pkcs8 -topk8 -v2 aes-256-cbc)", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("parsing PBES2 parameters: %w", err)
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("encrypted private key: key derivation %v not supported (PBKDF2 expected)", params.KeyDerivationFunc.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("parsing PBKDF2 parameters: %w", err)
	}
	var prf func() hash.Hash
	switch p := kdf.PRF.Algorithm; {
	case len(p) == 0 || p.Equal(oidHMACSHA1):
		prf = sha1.New
	case p.Equal(oidHMACSHA224):
		prf = sha256.New224
	case p.Equal(oidHMACSHA256):
		prf = sha256.New
	case p.Equal(oidHMACSHA384):
		prf = sha512.New384
	case p.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, fmt.Errorf("encrypted private key: PBKDF2 PRF %v not supported", p)
	}
	var keyLen int
	var newBlock func([]byte) (cipher.Block, error)
	switch s := params.EncryptionScheme.Algorithm; {
	case s.Equal(oidAES128CBC):
		keyLen, newBlock = 16, aes.NewCipher
	case s.Equal(oidAES192CBC):
		keyLen, newBlock = 24, aes.NewCipher
	case s.Equal(oidAES256CBC):
		keyLen, newBlock = 32, aes.NewCipher
	case s.Equal(oidDESEDE3CBC):
		keyLen, newBlock = 24, des.NewTripleDESCipher
	default:
		return nil, fmt.Errorf("encrypted private key: cipher %v not supported (AES-CBC or DES-EDE3-CBC expected)", s)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil {
		return nil, fmt.Errorf("parsing the cipher IV: %w", err)
	}
	if kdf.Iterations <= 0 {
		return nil, errors.New("encrypted private key: PBKDF2 iteration count not positive")
	}
	key, err := pbkdf2.Key(prf, string(password), kdf.Salt, kdf.Iterations, keyLen)
	if err != nil {
		return nil, err
	}
	block, err := newBlock(key)
	if err != nil {
		return nil, err
	}
	data := info.EncryptedData
	if len(iv) != block.BlockSize() || len(data) == 0 || len(data)%block.BlockSize() != 0 {
		return nil, errors.New("encrypted private key: bad IV or data length")
	}
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, data)
	// PKCS#7 padding: a wrong password shows here (or in the DER that follows).
	n := int(plain[len(plain)-1])
	if n == 0 || n > block.BlockSize() {
		return nil, errKeyPassword("cannot decrypt the private key (wrong password?)")
	}
	for _, c := range plain[len(plain)-n:] {
		if int(c) != n {
			return nil, errKeyPassword("cannot decrypt the private key (wrong password?)")
		}
	}
	return plain[:len(plain)-n], nil
}
