package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// kcatPath finds kcat; the test is skipped without it unless CI is set.
func kcatPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("kcat not found (scripts/install-deps.sh installs it): %v", err)
		}
		t.Skipf("kcat not found (scripts/install-deps.sh installs it): %v", err)
	}
	return p
}

// kcat runs kcat with default client settings, stdin as given, and a deadline so that a broker
// that never answers fails the test instead of hanging it.
func kcat(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v (deadline: %v)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, ctx.Err(), stdout.String(), stderr.String())
	}
	return stdout.String()
}

// kcatLine is one consumed record printed by `-f '%p %o %k %s\n'`.
type kcatLine struct {
	Partition int32
	Offset    int64
	Key       string
	Value     string
}

func parseKcatLines(t *testing.T, out string) []kcatLine {
	t.Helper()
	var lines []kcatLine
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		f := strings.SplitN(l, " ", 4)
		if len(f) != 4 {
			t.Fatalf("kcat -C line %q: want 'partition offset key value'", l)
		}
		p, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("kcat -C line %q: bad partition/offset", l)
		}
		lines = append(lines, kcatLine{int32(p), o, f[2], f[3]})
	}
	return lines
}

// checkKcatRoundTrip checks that what kcat consumed is what it produced: every key once with its
// value, offsets 0..n-1 per partition, and input order kept within each partition.
func checkKcatRoundTrip(t *testing.T, in []string, got []kcatLine) {
	t.Helper()
	if len(got) != len(in) {
		t.Fatalf("kcat consumed %d records, produced %d: %v", len(got), len(in), got)
	}
	index := map[string]int{} // key -> input line number
	for i, l := range in {
		k, _, _ := strings.Cut(l, ":")
		index[k] = i
	}
	lastSeq := map[int32]int{}
	nextOffset := map[int32]int64{}
	for _, g := range got {
		i, ok := index[g.Key]
		if !ok {
			t.Fatalf("kcat consumed unknown key %q", g.Key)
		}
		if want := in[i]; want != g.Key+":"+g.Value {
			t.Errorf("key %q: consumed value %q, produced %q", g.Key, g.Value, want)
		}
		delete(index, g.Key)
		if g.Offset != nextOffset[g.Partition] {
			t.Errorf("partition %d: offset %d, want %d (no gaps from 0)", g.Partition, g.Offset, nextOffset[g.Partition])
		}
		nextOffset[g.Partition] = g.Offset + 1
		if prev, ok := lastSeq[g.Partition]; ok && i < prev {
			t.Errorf("partition %d: line %d consumed after line %d: order not kept", g.Partition, i, prev)
		}
		lastSeq[g.Partition] = i
	}
}

// Issue 6: kcat (librdkafka) with default settings lists the cluster (-L), produces (-P) and
// consumes to the end (-C -e), both to a created topic and to one auto-created by the producer.
func TestKcat_ListProduceConsumeWithDefaults(t *testing.T) {
	kcatPath(t)
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	bootstrap := strings.Join(c.BootstrapAddrs(), ",")
	const topic = "kcat-created"
	c.CreateTopic(topic, 6, 1)

	meta := kcat(t, "", "-L", "-b", bootstrap)
	if !strings.Contains(meta, " 3 brokers:") {
		t.Errorf("kcat -L: want 3 brokers:\n%s", meta)
	}
	for _, id := range c.IDs() {
		if want := fmt.Sprintf("broker %d at %s", id, c.Broker(id).Addr); !strings.Contains(meta, want) {
			t.Errorf("kcat -L: missing %q:\n%s", want, meta)
		}
	}
	if !strings.Contains(meta, fmt.Sprintf("topic %q with 6 partitions", topic)) {
		t.Errorf("kcat -L: missing topic %s with 6 partitions:\n%s", topic, meta)
	}

	for _, tc := range []struct{ topic, note string }{
		{topic, "created topic"},
		{"kcat-auto", "auto-created by the producer's Metadata request"},
	} {
		t.Run(tc.topic, func(t *testing.T) {
			var in []string
			for i := 0; i < 200; i++ {
				in = append(in, fmt.Sprintf("k%03d:value %d from kcat", i, i))
			}
			kcat(t, strings.Join(in, "\n")+"\n", "-P", "-b", bootstrap, "-t", tc.topic, "-K:")
			out := kcat(t, "", "-C", "-b", bootstrap, "-t", tc.topic, "-e", "-o", "beginning", "-f", "%p %o %k %s\n")
			checkKcatRoundTrip(t, in, parseKcatLines(t, out))
		})
	}
}

// Issue 6: a franz-go kgo client with default settings (idempotent producer requested, default
// compression and partitioner) produces and consumes; every field that Kafka stores comes back
// exactly: key (including a null key), value (empty and 256 KiB), headers, timestamp, partition
// order and offsets.
func TestKgoDefaultClient_RecordsComeBackExactly(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	const topic, partitions = "kgo-exact", 3
	c.CreateTopic(topic, partitions, 1)

	big := bytes.Repeat([]byte("0123456789abcdef"), 16<<10)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var want []*kgo.Record
	for i := 0; i < 300; i++ {
		r := &kgo.Record{
			Topic:     topic,
			Key:       []byte(fmt.Sprintf("key-%d", i%17)),
			Value:     []byte(fmt.Sprintf("value-%d", i)),
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
			Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte(strconv.Itoa(i))}, {Key: "empty", Value: nil}},
		}
		switch i {
		case 7:
			r.Key = nil
		case 8:
			r.Value = []byte{}
		case 9:
			r.Value = big
		}
		want = append(want, r)
	}
	cl := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, want...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	got := readAll(t, c, topic, partitions)
	byPart := map[int32][]*kgo.Record{}
	for _, r := range want {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	for p, ws := range byPart {
		gs := got[p]
		if len(gs) != len(ws) {
			t.Errorf("partition %d: consumed %d records, produced %d", p, len(gs), len(ws))
			continue
		}
		for i := range ws {
			w, g := ws[i], gs[i]
			switch {
			case g.Offset != w.Offset || g.Offset != int64(i):
				t.Errorf("partition %d record %d: offset %d, produced at %d", p, i, g.Offset, w.Offset)
			case (w.Key == nil) != (g.Key == nil) || !bytes.Equal(g.Key, w.Key):
				t.Errorf("partition %d offset %d: key %q (nil %v), want %q (nil %v)", p, g.Offset, g.Key, g.Key == nil, w.Key, w.Key == nil)
			case !bytes.Equal(g.Value, w.Value):
				t.Errorf("partition %d offset %d: value of %d bytes differs from the %d produced", p, g.Offset, len(g.Value), len(w.Value))
			case !g.Timestamp.Equal(w.Timestamp):
				t.Errorf("partition %d offset %d: timestamp %v, want %v", p, g.Offset, g.Timestamp, w.Timestamp)
			case len(g.Headers) != len(w.Headers):
				t.Errorf("partition %d offset %d: headers %v, want %v", p, g.Offset, g.Headers, w.Headers)
			default:
				for j := range w.Headers {
					if g.Headers[j].Key != w.Headers[j].Key || !bytes.Equal(g.Headers[j].Value, w.Headers[j].Value) {
						t.Errorf("partition %d offset %d header %d: %v, want %v", p, g.Offset, j, g.Headers[j], w.Headers[j])
					}
				}
			}
		}
	}
}
