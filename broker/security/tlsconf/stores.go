package tlsconf

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	// JKS: Kafka's default store type. keystore-go is a maintained reader and writer of Java's
	// JKS format (the standard library has none); it checks the store's integrity digest with
	// ssl.keystore.password and decrypts each key entry with ssl.key.password, as Java does.
	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	// PKCS12: golang.org/x/crypto/pkcs12 is frozen and reads neither PBES2/AES (what keytool has
	// written since JDK 12) nor trust stores; go-pkcs12 is its maintained fork that reads both.
	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// storeType returns the upper-cased store type of key, refusing names other than JKS, PKCS12
// and PEM (Java's KeyStore.getInstance matches type names case-insensitively).
func storeType(keys map[string]string, key string) (string, error) {
	t := strings.ToUpper(valueOr(keys, key, defaultStoreType))
	switch t {
	case "JKS", "PKCS12", "PEM":
		return t, nil
	}
	return "", keyErr(key, nil, "store type %q not supported (JKS, PKCS12 or PEM)", t)
}

// set reports a key present with a non-empty value: an empty value counts as unset.
func set(keys map[string]string, key string) (string, bool) {
	v, _ := value(keys, key)
	return v, v != ""
}

// loadKeystore reads the listener's keystore, with Kafka's checks of which keys go together
// (SslEngineBuilder.createKeystore in 2.4, DefaultSslEngineFactory.createKeystore in 2.7 for
// PEM). No keystore configured gives nil, nil.
func loadKeystore(keys map[string]string) ([]tls.Certificate, error) {
	typ, err := storeType(keys, KeyKeystoreType)
	if err != nil {
		return nil, err
	}
	location, hasLocation := set(keys, KeyKeystoreLocation)
	password, hasPassword := set(keys, KeyKeystorePassword)
	keyPassword, hasKeyPassword := set(keys, KeyKeyPassword)
	inlineKey, hasInlineKey := set(keys, KeyKeystoreKey)
	inlineChain, hasInlineChain := set(keys, KeyKeystoreCertChain)
	switch {
	case hasInlineKey && typ != "PEM":
		return nil, keyErr(KeyKeystoreKey, nil, "SSL private key can be specified only for PEM, but key store type is %s", typ)
	case hasInlineKey && !hasInlineChain:
		return nil, keyErr(KeyKeystoreCertChain, nil, "SSL private key is specified, but certificate chain is not specified")
	case hasInlineKey && hasLocation:
		return nil, keyErr(KeyKeystoreLocation, nil, "both SSL key store location and separate private key (%s) are specified", KeyKeystoreKey)
	case hasInlineChain && !hasInlineKey:
		return nil, keyErr(KeyKeystoreKey, nil, "SSL certificate chain is specified, but private key is not specified")
	case typ == "PEM" && hasPassword:
		return nil, keyErr(KeyKeystorePassword, nil, "SSL key store password cannot be specified with PEM format, only key password may be specified")
	case hasInlineKey:
		cert, err := pemKeyPair(inlineChain, inlineKey, keyPassword, KeyKeystoreKey, KeyKeystoreCertChain)
		if err != nil {
			return nil, err
		}
		return []tls.Certificate{cert}, nil
	case !hasLocation && hasPassword:
		return nil, keyErr(KeyKeystoreLocation, nil, "SSL key store is not specified, but key store password is specified")
	case !hasLocation:
		return nil, nil
	case typ != "PEM" && !hasPassword:
		return nil, keyErr(KeyKeystorePassword, nil, "SSL key store %s is specified, but key store password is not specified", location)
	}
	data, err := os.ReadFile(location)
	if err != nil {
		return nil, keyErr(KeyKeystoreLocation, err, "reading the key store")
	}
	if !hasKeyPassword {
		keyPassword = password // Kafka: ssl.key.password defaults to the store password
	}
	switch typ {
	case "PEM":
		cert, err := pemKeyPair(string(data), string(data), keyPassword, KeyKeystoreLocation, KeyKeystoreLocation)
		if err != nil {
			return nil, err
		}
		return []tls.Certificate{cert}, nil
	case "PKCS12":
		if hasKeyPassword && keyPassword != password {
			return nil, keyErr(KeyKeyPassword, nil, "differs from %s; a PKCS12 key store is read here with its one password (keytool writes it so)", KeyKeystorePassword)
		}
		key, leaf, cas, err := pkcs12.DecodeChain(data, password)
		if errors.Is(err, pkcs12.ErrIncorrectPassword) {
			return nil, keyErr(KeyKeystorePassword, err, "PKCS12 key store %s: wrong password", location)
		}
		if err != nil {
			return nil, keyErr(KeyKeystoreLocation, err, "PKCS12 key store %s", location)
		}
		chain := append([]*x509.Certificate{leaf}, cas...)
		cert, err := keyPair(chain, key)
		if err != nil {
			return nil, keyErr(KeyKeystoreLocation, err, "PKCS12 key store %s", location)
		}
		return []tls.Certificate{cert}, nil
	}
	return loadJKSKeystore(data, location, password, keyPassword)
}

// loadJKSKeystore returns every private-key entry of a JKS store, by alias order; Go's TLS
// server then picks among them by the client's hello as Java's key manager picks by key type.
func loadJKSKeystore(data []byte, location, password, keyPassword string) ([]tls.Certificate, error) {
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		if strings.Contains(err.Error(), "invalid digest") {
			return nil, keyErr(KeyKeystorePassword, err, "JKS key store %s: integrity check failed (wrong password?)", location)
		}
		return nil, keyErr(KeyKeystoreLocation, err, "JKS key store %s (keytool -importkeystore converts other formats)", location)
	}
	aliases := ks.Aliases()
	sort.Strings(aliases)
	var out []tls.Certificate
	for _, alias := range aliases {
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		entry, err := ks.GetPrivateKeyEntry(alias, []byte(keyPassword))
		if err != nil {
			return nil, keyErr(KeyKeyPassword, err, "JKS key store %s, entry %q: cannot recover the key (wrong password?)", location, alias)
		}
		key, err := x509.ParsePKCS8PrivateKey(entry.PrivateKey)
		if err != nil {
			return nil, keyErr(KeyKeystoreLocation, err, "JKS key store %s, entry %q", location, alias)
		}
		var chain []*x509.Certificate
		for _, c := range entry.CertificateChain {
			cert, err := x509.ParseCertificate(c.Content)
			if err != nil {
				return nil, keyErr(KeyKeystoreLocation, err, "JKS key store %s, entry %q", location, alias)
			}
			chain = append(chain, cert)
		}
		cert, err := keyPair(chain, key)
		if err != nil {
			return nil, keyErr(KeyKeystoreLocation, err, "JKS key store %s, entry %q", location, alias)
		}
		out = append(out, cert)
	}
	if len(out) == 0 {
		return nil, keyErr(KeyKeystoreLocation, nil, "JKS key store %s holds no private key entry", location)
	}
	return out, nil
}

// pemKeyPair reads a PEM certificate chain and private key; chainKey and keyKey name the config
// keys for messages.
func pemKeyPair(chainText, keyText, keyPassword, keyKey, chainKey string) (tls.Certificate, error) {
	chain, err := pemCertificates(chainText)
	if err != nil {
		return tls.Certificate{}, keyErr(chainKey, err, "PEM certificate chain")
	}
	key, err := pemPrivateKey(keyText, keyPassword)
	var kpe *keyPasswordError
	if errors.As(err, &kpe) {
		return tls.Certificate{}, keyErr(KeyKeyPassword, nil, "PEM private key: %s", kpe.msg)
	}
	if err != nil {
		return tls.Certificate{}, keyErr(keyKey, err, "PEM private key")
	}
	cert, err := keyPair(chain, key)
	if err != nil {
		return tls.Certificate{}, keyErr(keyKey, err, "PEM key store")
	}
	return cert, nil
}

// keyPair checks that key belongs to the chain's leaf and builds the tls.Certificate.
func keyPair(chain []*x509.Certificate, key crypto.PrivateKey) (tls.Certificate, error) {
	if len(chain) == 0 {
		return tls.Certificate{}, errors.New("no certificate for the private key")
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return tls.Certificate{}, fmt.Errorf("private key of type %T cannot sign", key)
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(chain[0].PublicKey) {
		return tls.Certificate{}, errors.New("the private key does not match the first certificate of the chain")
	}
	cert := tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return cert, nil
}

// loadTruststore reads the listener's trust store (Kafka's createTruststore checks). No trust store
// configured gives nil, nil: the system roots verify, as Java's default trust store does.
func loadTruststore(keys map[string]string) ([]*x509.Certificate, error) {
	typ, err := storeType(keys, KeyTruststoreType)
	if err != nil {
		return nil, err
	}
	location, hasLocation := set(keys, KeyTruststoreLocation)
	password, hasPassword := set(keys, KeyTruststorePassword)
	inline, hasInline := set(keys, KeyTruststoreCertificates)
	switch {
	case hasInline && typ != "PEM":
		return nil, keyErr(KeyTruststoreCertificates, nil, "SSL trust store certs can be specified only for PEM, but trust store type is %s", typ)
	case hasInline && hasLocation:
		return nil, keyErr(KeyTruststoreLocation, nil, "both SSL trust store location and separate trust certificates (%s) are specified", KeyTruststoreCertificates)
	case typ == "PEM" && hasPassword:
		return nil, keyErr(KeyTruststorePassword, nil, "SSL trust store password cannot be specified for PEM format")
	case hasInline:
		certs, err := pemCertificates(inline)
		if err != nil {
			return nil, keyErr(KeyTruststoreCertificates, err, "PEM trust store")
		}
		return certs, nil
	case !hasLocation && hasPassword:
		return nil, keyErr(KeyTruststoreLocation, nil, "SSL trust store is not specified, but trust store password is specified")
	case !hasLocation:
		return nil, nil
	}
	data, err := os.ReadFile(location)
	if err != nil {
		return nil, keyErr(KeyTruststoreLocation, err, "reading the trust store")
	}
	switch typ {
	case "PEM":
		certs, err := pemCertificates(string(data))
		if err != nil {
			return nil, keyErr(KeyTruststoreLocation, err, "PEM trust store %s", location)
		}
		return certs, nil
	case "PKCS12":
		certs, err := pkcs12.DecodeTrustStore(data, password)
		if errors.Is(err, pkcs12.ErrIncorrectPassword) {
			return nil, keyErr(KeyTruststorePassword, err, "PKCS12 trust store %s: wrong password", location)
		}
		if err != nil {
			return nil, keyErr(KeyTruststoreLocation, err, "PKCS12 trust store %s", location)
		}
		return certs, nil
	}
	ks := keystore.New()
	err = ks.Load(bytes.NewReader(data), []byte(password))
	if err != nil && strings.Contains(err.Error(), "invalid digest") {
		// Java loads a trust store without a password and skips the integrity check; the
		// entries are read before the digest, so the same holds here.
		if hasPassword {
			return nil, keyErr(KeyTruststorePassword, err, "JKS trust store %s: integrity check failed (wrong password?)", location)
		}
		err = nil
	}
	if err != nil {
		return nil, keyErr(KeyTruststoreLocation, err, "JKS trust store %s", location)
	}
	aliases := ks.Aliases()
	sort.Strings(aliases)
	var certs []*x509.Certificate
	for _, alias := range aliases {
		var der []byte
		if ks.IsTrustedCertificateEntry(alias) {
			e, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				return nil, keyErr(KeyTruststoreLocation, err, "JKS trust store %s, entry %q", location, alias)
			}
			der = e.Certificate.Content
		} else if chain, err := ks.GetPrivateKeyEntryCertificateChain(alias); err == nil && len(chain) > 0 {
			der = chain[0].Content // Java trusts the leaf of a key entry too
		} else {
			continue
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, keyErr(KeyTruststoreLocation, err, "JKS trust store %s, entry %q", location, alias)
		}
		certs = append(certs, c)
	}
	return certs, nil
}
