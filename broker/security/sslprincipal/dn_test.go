package sslprincipal

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

var (
	oidC      = asn1.ObjectIdentifier{2, 5, 4, 6}
	oidO      = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOU     = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidCN     = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidL      = asn1.ObjectIdentifier{2, 5, 4, 7}
	oidST     = asn1.ObjectIdentifier{2, 5, 4, 8}
	oidStreet = asn1.ObjectIdentifier{2, 5, 4, 9}
	oidSerial = asn1.ObjectIdentifier{2, 5, 4, 5}
	oidDC     = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	oidUID    = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
	oidEmail  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
)

func av(oid asn1.ObjectIdentifier, tag int, value []byte) atv {
	return atv{Type: oid, Value: asn1.RawValue{Class: asn1.ClassUniversal, Tag: tag, Bytes: value}}
}

func ps(oid asn1.ObjectIdentifier, s string) atv  { return av(oid, tagPrintableString, []byte(s)) }
func u8(oid asn1.ObjectIdentifier, s string) atv  { return av(oid, tagUTF8String, []byte(s)) }
func ia5(oid asn1.ObjectIdentifier, s string) atv { return av(oid, tagIA5String, []byte(s)) }

func bmp(oid asn1.ObjectIdentifier, s string) atv {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u>>8), byte(u))
	}
	return av(oid, tagBMPString, b)
}

func subject(t *testing.T, rdns ...rdnSET) []byte {
	t.Helper()
	b, err := asn1.Marshal(rdns)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func one(a atv) rdnSET { return rdnSET{a} }

// dnCases are subjects in encoding order (least specific first, as certificates are written)
// with the text Java 17's X500Principal.getName() gives for each (checked by
// TestFormatDNMatchesJava where a JDK is installed).
func dnCases(t *testing.T) []struct {
	name string
	raw  []byte
	want string
} {
	return []struct {
		name string
		raw  []byte
		want string
	}{
		{"order", subject(t, one(ps(oidC, "US")), one(ps(oidO, "Acme")), one(ps(oidOU, "Eng")), one(u8(oidCN, "client"))),
			"CN=client,OU=Eng,O=Acme,C=US"},
		{"escapees", subject(t, one(u8(oidCN, `a,b+c=d<e>f;g"h\i#j`))),
			`CN=a\,b\+c\=d\<e\>f\;g\"h\\i\#j`},
		{"leading hash and spaces", subject(t, one(u8(oidO, "#start")), one(u8(oidOU, "  two lead")), one(u8(oidCN, "trail  "))),
			`CN=trail\ \ ,OU=\ \ two lead,O=\#start`},
		{"inner spaces kept", subject(t, one(u8(oidCN, "a  b"))), "CN=a  b"},
		{"all spaces", subject(t, one(u8(oidCN, "  "))), `CN=\ \ `},
		{"empty value", subject(t, one(u8(oidCN, ""))), "CN="},
		{"multi-valued RDN", subject(t, one(ps(oidC, "US")), rdnSET{u8(oidCN, "x"), u8(oidUID, "y")}),
			"CN=x+UID=y,C=US"},
		{"other keywords", subject(t, one(ia5(oidDC, "com")), one(ia5(oidDC, "example")), one(u8(oidST, "CA")),
			one(u8(oidL, "SF")), one(u8(oidStreet, "1 Main St"))),
			"STREET=1 Main St,L=SF,ST=CA,DC=example,DC=com"},
		{"email and serialNumber as OID and hex", subject(t, one(ps(oidSerial, "42")), one(ia5(oidEmail, "a@b.c")), one(u8(oidCN, "n"))),
			"CN=n,1.2.840.113549.1.9.1=#16056140622e63,2.5.4.5=#13023432"},
		{"non-ASCII UTF8String", subject(t, one(u8(oidCN, "Zoë Ünïcode"))), "CN=Zoë Ünïcode"},
		// Java decodes every string tag's bytes as UTF-8: NUL is written "\00", a malformed byte U+FFFD.
		{"BMPString read as UTF-8", subject(t, one(bmp(oidCN, "bmp-é"))), `CN=\00b\00m\00p\00-\00` + "\uFFFD"},
		{"T61String read as UTF-8", subject(t, one(av(oidCN, tagT61String, []byte{'c', 0xe9, 0xe9}))), "CN=c\uFFFD\uFFFD"},
		{"NUL in UTF8String", subject(t, one(u8(oidCN, "a\x00b"))), `CN=a\00b`},
		{"NumericString is hex", subject(t, one(av(oidCN, 18, []byte("123")))), "CN=#1203313233"},
	}
}

func TestFormatDN(t *testing.T) {
	for _, c := range dnCases(t) {
		got, err := FormatDN(c.raw)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: FormatDN = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestFormatDNRejectsGarbage(t *testing.T) {
	if _, err := FormatDN([]byte{0x30, 0x05, 0x01}); err == nil {
		t.Fatal("FormatDN accepted a truncated name")
	}
}

// javaDN is a one-file Java program (run as `java DN.java`): for each certificate file it prints
// the hex of the UTF-8 of X500Principal.getName(), so no console encoding is involved.
const javaDN = `import java.io.*;
import java.nio.charset.StandardCharsets;
import java.security.cert.*;
public class DN {
    public static void main(String[] args) throws Exception {
        CertificateFactory f = CertificateFactory.getInstance("X.509");
        for (String p : args) {
            try (InputStream in = new FileInputStream(p)) {
                X509Certificate c = (X509Certificate) f.generateCertificate(in);
                StringBuilder sb = new StringBuilder();
                for (byte b : c.getSubjectX500Principal().getName().getBytes(StandardCharsets.UTF_8)) {
                    sb.append(String.format("%02x", b));
                }
                System.out.println(sb);
            }
        }
    }
}
`

// TestFormatDNMatchesJava checks the golden strings of dnCases against the JDK itself: a
// certificate per case, read by X500Principal. Skipped where no java is installed.
func TestFormatDNMatchesJava(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("java not installed")
	}
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cases := dnCases(t)
	var files []string
	for i, c := range cases {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 1)), RawSubject: c.raw,
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p := filepath.Join(dir, fmt.Sprintf("c%d.der", i))
		if err := os.WriteFile(p, der, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	src := filepath.Join(dir, "DN.java")
	if err := os.WriteFile(src, []byte(javaDN), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(java, append([]string{src}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("java: %v\n%s", err, out)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(cases) {
		t.Fatalf("java printed %d names for %d certificates:\n%s", len(lines), len(cases), out)
	}
	for i, c := range cases {
		b, err := hex.DecodeString(lines[i])
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%s: Java's getName() = %q, golden %q", c.name, b, c.want)
		}
	}
}
