// Package sslprincipal builds the Kafka principal of a TLS client from its certificate, as Kafka
// 2.4's DefaultKafkaPrincipalBuilder does on an SSL listener: the subject's distinguished name in
// the text Java's X500Principal.getName() produces (RFC 2253), mapped through
// ssl.principal.mapping.rules (Kafka's SslPrincipalMapper), as "User:<name>"; "User:ANONYMOUS"
// without a client certificate (docs/security.md §2).
//
// It is a shared leaf: it imports nothing of the repository.
package sslprincipal

import (
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"
)

// atv is one AttributeTypeAndValue with its value kept as DER, so that both the string tag and
// the exact encoding (for the "#hex" form) are at hand.
type atv struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rdnSET is one RelativeDistinguishedName; encoding/asn1 reads a type whose name ends in SET as
// SET OF.
type rdnSET []atv

// rfc2253Keywords are the attribute keywords Java's X500Principal writes in RFC 2253 output
// (sun.security.x509.AVAKeyword entries marked RFC 2253 compliant); every other attribute is
// written as its dotted OID with a "#hex" DER value (docs/security.md §2).
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// The universal string tags Java renders as text in RFC 2253 output (DerValue tags for which
// AVA.isDerString(value, false) holds); any other tag is written as "#hex".
const (
	tagUTF8String      = 12
	tagPrintableString = 19
	tagT61String       = 20
	tagIA5String       = 22
	tagGeneralString   = 27
	tagBMPString       = 30
)

// rfc2253Escapees are the characters Java's AVA.toRFC2253String escapes with a backslash
// wherever they occur: RFC 2253's ",+\"\\<>;" plus "=" and "#".
const rfc2253Escapees = ",=+<>#;\"\\"

// FormatDN returns the distinguished name encoded in rawSubject (an x509.Certificate's
// RawSubject) as Java's X500Principal.getName() writes it: the RDNs in reverse order of the
// encoding (most specific first), separated by ",", no spaces; the AVAs of a multi-valued RDN
// joined by "+" in encoding order; the keywords of rfc2253Keywords, other types as dotted OIDs
// with "#" and the lower-case hex of the value's DER; the characters of rfc2253Escapees and
// leading or trailing spaces and carriage returns escaped with a backslash. Go's
// pkix.Name.String() differs in order, keywords and escaping (docs/security.md §2).
func FormatDN(rawSubject []byte) (string, error) {
	var seq []rdnSET
	rest, err := asn1.Unmarshal(rawSubject, &seq)
	if err != nil {
		return "", fmt.Errorf("parsing the subject name: %w", err)
	}
	if len(rest) != 0 {
		return "", fmt.Errorf("parsing the subject name: %d trailing bytes", len(rest))
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if i < len(seq)-1 {
			b.WriteByte(',')
		}
		for j, a := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			if err := writeAVA(&b, a); err != nil {
				return "", err
			}
		}
	}
	return b.String(), nil
}

func writeAVA(b *strings.Builder, a atv) error {
	oid := a.Type.String()
	keyword, named := rfc2253Keywords[oid]
	if !named {
		keyword = oid
	}
	b.WriteString(keyword)
	b.WriteByte('=')
	text, isString := javaString(a.Value)
	if !named || !isString {
		b.WriteByte('#')
		b.WriteString(hex.EncodeToString(a.Value.FullBytes))
		return nil
	}
	b.WriteString(escapeRFC2253(text))
	return nil
}

// javaString returns the text Java's AVA.toRFC2253String writes for a string value, reporting
// false for a tag Java writes as hex. Java (checked with JDK 17) decodes the value bytes of every
// string tag as UTF-8, whatever the tag says: a BMPString's zero bytes become NUL characters and
// a T61String's Latin-1 byte above 0x7f becomes U+FFFD, one per malformed byte.
func javaString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case tagUTF8String, tagPrintableString, tagT61String, tagIA5String, tagGeneralString, tagBMPString:
	default:
		return "", false
	}
	var b strings.Builder
	for p := v.Bytes; len(p) > 0; {
		r, size := utf8.DecodeRune(p)
		b.WriteRune(r)
		p = p[size:]
	}
	return b.String(), true
}

// escapeRFC2253 escapes as AVA.toRFC2253String does: first each escapee with a backslash and
// NUL as "\00", then each leading and trailing ' ' or '\r' of the escaped text.
func escapeRFC2253(s string) string {
	var esc []rune
	for _, c := range s {
		if c == 0 {
			esc = append(esc, '\\', '0', '0')
			continue
		}
		if strings.ContainsRune(rfc2253Escapees, c) {
			esc = append(esc, '\\')
		}
		esc = append(esc, c)
	}
	lead := 0
	for lead < len(esc) && (esc[lead] == ' ' || esc[lead] == '\r') {
		lead++
	}
	trail := len(esc) - 1
	for trail >= 0 && (esc[trail] == ' ' || esc[trail] == '\r') {
		trail--
	}
	var b strings.Builder
	for i, c := range esc {
		if i < lead || i > trail {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
