package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// startSASLSSL starts three brokers whose clients and whose inter-broker connections use a
// SASL_SSL listener (JKS keystore signed by an openssl CA; the brokers log in to each other with
// SCRAM-SHA-512 as admin, whose credential is written to ZooKeeper before they start). users
// get SCRAM credentials too; extra are more broker overrides.
func startSASLSSL(t *testing.T, users map[string]string, extra map[string]string) (*cluster.Cluster, *cluster.SASLSSLListener) {
	t.Helper()
	l := &cluster.SASLSSLListener{TLS: cluster.MakeTLSFixtures(t), InterBrokerUser: "admin", InterBrokerPass: "admin-pw",
		PlainUsers: map[string]string{"carol": "carol-pw"}, Extra: extra}
	overrides := l.Overrides(t, 3)
	c := cluster.Start(t, cluster.Options{Brokers: 3, BrokerOverrides: overrides, BeforeBrokers: func(z *cluster.ZooKeeper) {
		cluster.AddScramUser(t, z.Addr, "admin", "admin-pw")
		for u, p := range users {
			cluster.AddScramUser(t, z.Addr, u, p)
		}
	}})
	return c, l
}

// saslSSLClient is a kgo client on the SASL_SSL listeners with mech and the fixtures' CA.
func saslSSLClient(t *testing.T, l *cluster.SASLSSLListener, mech sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	all := append([]kgo.Opt{kgo.SeedBrokers(l.Seeds()...), kgo.SASL(mech), kgo.DialTLSConfig(l.TLS.ClientTLS(t))}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// kcatSASLSSL runs kcat with the SASL_SSL client settings for user and password plus args; stdin
// feeds a producer. It returns the combined output and the error of the run.
func kcatSASLSSL(t *testing.T, l *cluster.SASLSSLListener, user, password string, withCA bool, stdin string, args ...string) (string, error) {
	t.Helper()
	base := []string{"-b", strings.Join(l.Seeds(), ","), "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-256",
		"-X", "sasl.username=" + user, "-X", "sasl.password=" + password}
	if withCA {
		base = append(base, "-X", "ssl.ca.location="+l.TLS.CAPEM)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath(t), append(base, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestSASLSSLEndToEnd: issue 30's proof with stock clients. Three brokers replicate over
// SASL_SSL with SCRAM-SHA-512 (an RF=3 topic with min.insync.replicas=3 takes acks=all writes);
// kcat (librdkafka, SCRAM-SHA-256, the CA file) and franz-go (SCRAM-SHA-512, TLS) each produce
// and consume there; a wrong password is an authentication error for both; a client without the
// CA fails certificate verification; a PLAINTEXT client on the SASL_SSL port gets no answer.
func TestSASLSSLEndToEnd(t *testing.T) {
	c, l := startSASLSSL(t, map[string]string{"alice": "alice-pw"}, nil)
	c.CreateTopicWithConfigs("ssl-t", 1, 3, map[string]string{"min.insync.replicas": "3"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	cl := saslSSLClient(t, l, scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha512Mechanism(), kgo.RequiredAcks(kgo.AllISRAcks()))
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ssl-t", Value: []byte("kgo-0")}).FirstErr()
		return err == nil, fmt.Sprintf("acks=all over SASL_SSL with SCRAM-SHA-512 replication: %v", err)
	})
	for i := 1; i < 5; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ssl-t", Value: []byte(fmt.Sprint("kgo-", i))}).FirstErr(); err != nil {
			t.Fatalf("kgo produce %d: %v", i, err)
		}
	}
	if out, err := kcatSASLSSL(t, l, "alice", "alice-pw", true, "kcat-0\nkcat-1\nkcat-2\n", "-P", "-t", "ssl-t", "-p", "0"); err != nil {
		t.Fatalf("kcat produce: %v\n%s", err, out)
	}
	out, err := kcatSASLSSL(t, l, "alice", "alice-pw", true, "", "-C", "-t", "ssl-t", "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%s\n")
	if err != nil {
		t.Fatalf("kcat consume: %v\n%s", err, out)
	}
	want := "kgo-0\nkgo-1\nkgo-2\nkgo-3\nkgo-4\nkcat-0\nkcat-1\nkcat-2\n"
	if out != want {
		t.Fatalf("kcat consumed %q, want %q", out, want)
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{"ssl-t": {0: kgo.NewOffset().AtStart()}})
	var got []string
	for len(got) < 8 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, "\n")+"\n" != want {
		t.Fatalf("kgo consumed %q, want %q", got, want)
	}
	st, err := c.ZK.PartitionState("ssl-t", 0)
	if err != nil || len(st.ISR) != 3 {
		t.Fatalf("ISR after acks=all writes over SASL_SSL replication: %+v %v", st, err)
	}

	t.Run("wrong password", func(t *testing.T) {
		out, err := kcatSASLSSL(t, l, "alice", "wrong", true, "", "-L", "-m", "5")
		if err == nil || !strings.Contains(out, "Authentication failed") {
			t.Fatalf("kcat with a wrong password: %v\n%s", err, out)
		}
		bad := saslSSLClient(t, l, scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism(), kgo.RequestRetries(0))
		if err := bad.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("kgo with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	})
	t.Run("no CA", func(t *testing.T) {
		out, err := kcatSASLSSL(t, l, "alice", "alice-pw", false, "", "-L", "-m", "5")
		if err == nil || !strings.Contains(out, "certificate verify failed") {
			t.Fatalf("kcat without the CA: %v\n%s", err, out)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(l.Seeds()...), kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}),
			kgo.SASL(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.Ping(ctx); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
			t.Fatalf("kgo without the CA: %v, want a verification failure", err)
		}
	})
	t.Run("plaintext client on the SASL_SSL port", func(t *testing.T) {
		r := dialPlain(t, l.Seeds()[0])
		r.send(apiVersionsFrame(7))
		if data := r.readToEOF(); len(data) >= 8 && bytes.Equal(data[4:8], []byte{0, 0, 0, 7}) {
			t.Fatalf("a plaintext ApiVersions on the SASL_SSL port was answered: %x", data)
		}
	})
}
