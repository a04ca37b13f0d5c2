package main

import (
	"crypto/tls"
	"strings"
	"testing"
)

func TestNewInterBrokerSecurity(t *testing.T) {
	tlsFor := func(host string) *tls.Config { return &tls.Config{ServerName: host} }
	cases := []struct {
		protocol, mechanism, user string
		tls                       bool
		mech                      string // the SASL mechanism's name, "" for none
		err                       string
	}{
		{protocol: "PLAINTEXT"},
		{protocol: "SSL", tls: true},
		{protocol: "SASL_PLAINTEXT", mechanism: "PLAIN", user: "broker", mech: "PLAIN"},
		{protocol: "SASL_SSL", mechanism: "SCRAM-SHA-512", user: "broker", tls: true, mech: "SCRAM-SHA-512"},
		{protocol: "SASL_PLAINTEXT", mechanism: "SCRAM-SHA-256", user: "broker", mech: "SCRAM-SHA-256"},
		{protocol: "SASL_PLAINTEXT", mechanism: "GSSAPI", user: "broker", err: "supports PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512"},
		{protocol: "SASL_PLAINTEXT", mechanism: "PLAIN", err: "no username"},
		{protocol: "TLS", err: "unknown security protocol"},
	}
	for _, tc := range cases {
		sec, err := newInterBrokerSecurity(tc.protocol, tlsFor, tc.mechanism, tc.user, "pw")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %s: err = %v, want %q", tc.protocol, tc.mechanism, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s: %v", tc.protocol, tc.mechanism, err)
			continue
		}
		if (sec.TLSFor != nil) != tc.tls {
			t.Errorf("%s: TLS set = %v, want %v", tc.protocol, sec.TLSFor != nil, tc.tls)
		}
		got := ""
		if sec.SASL != nil {
			got = sec.SASL.Name()
		}
		if got != tc.mech {
			t.Errorf("%s %s: SASL mechanism %q, want %q", tc.protocol, tc.mechanism, got, tc.mech)
		}
	}
	if _, err := newInterBrokerSecurity("SASL_SSL", nil, "PLAIN", "broker", "pw"); err == nil {
		t.Error("SASL_SSL without a TLS configuration accepted")
	}
}
