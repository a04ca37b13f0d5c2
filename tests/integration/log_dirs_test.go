package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// DescribeLogDirs (API key 35) and `isrbroker log-dirs` (kafka-log-dirs.sh) against 3 brokers.

// segmentBytesOnDisk is the size of every .log segment file of a partition directory.
func segmentBytesOnDisk(dir string) (int64, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return 0, err
	}
	var total int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return 0, err
		}
		total += fi.Size()
	}
	return total, nil
}

// produceValues writes n records of size bytes to topic with acks=all and returns the bytes
// of the values (uncompressed, so that the log holds at least those bytes).
func produceValues(t *testing.T, c *cluster.Cluster, topic string, n, size int) int64 {
	t.Helper()
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		copy(v, fmt.Sprintf("%s-%06d", topic, i))
		recs = append(recs, &kgo.Record{Value: v})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return int64(n * size)
}

// TestDescribeLogDirs: every broker answers its log dir by absolute path; each replica of a
// fully replicated partition reports the bytes of its segment files (at least the bytes
// produced, equal on all replicas once they have the same log) and an offset lag of 0.
func TestDescribeLogDirs(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Brokers: 3})
	const topic = "sized"
	assignment := map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}}
	c.CreateTopicWithAssignment(topic, assignment, nil)
	c.CreateTopicWithAssignment("other", map[int32][]int32{0: {3}}, nil)
	waitFullISR(t, c, topic, assignment, 30*time.Second)
	produced := produceValues(t, c, topic, 3000, 200)
	produceValues(t, c, "other", 10, 50)
	ends := endOffsets(t, c, topic, 2)

	adm := c.Admin()
	var all kadm.DescribedAllLogDirs
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if all, err = adm.DescribeAllLogDirs(ctx, nil); err != nil {
			return false, err.Error()
		}
		// The followers' logs reach the leader's LEO (= HW, nothing is produced now), so
		// every replica holds the same batches and the same bytes.
		for p := int32(0); p < 2; p++ {
			sizes := map[int64]bool{}
			for _, id := range c.IDs() {
				leo, err := cluster.LogEndOffsetOnDisk(c.Broker(id).PartitionDir(topic, p))
				if err != nil || leo != ends[p] {
					return false, fmt.Sprintf("broker %d %s-%d LEO %d of %d (%v)", id, topic, p, leo, ends[p], err)
				}
				d, ok := findReplica(all, id, topic, p)
				if !ok {
					return false, fmt.Sprintf("broker %d does not report %s-%d", id, topic, p)
				}
				sizes[d.Size] = true
			}
			if len(sizes) != 1 {
				return false, fmt.Sprintf("%s-%d sizes differ between replicas: %v", topic, p, sizes)
			}
		}
		return true, ""
	})
	var total int64
	for _, id := range c.IDs() {
		dirs := all[id]
		abs, _ := filepath.Abs(c.Broker(id).LogDir)
		if len(dirs) != 1 || dirs[abs].Dir != abs {
			t.Fatalf("broker %d dirs %v, want exactly %s", id, keys(dirs), abs)
		}
		if err := dirs[abs].Err; err != nil {
			t.Fatalf("broker %d dir error %v", id, err)
		}
		for p := int32(0); p < 2; p++ {
			d, _ := findReplica(all, id, topic, p)
			onDisk, err := segmentBytesOnDisk(c.Broker(id).PartitionDir(topic, p))
			if err != nil || d.Size != onDisk || d.Size <= 0 {
				t.Fatalf("broker %d %s-%d size %d, segment files %d bytes (%v)", id, topic, p, d.Size, onDisk, err)
			}
			if d.OffsetLag != 0 || d.IsFuture {
				t.Fatalf("broker %d %s-%d offsetLag %d isFuture %v, want 0 and false", id, topic, p, d.OffsetLag, d.IsFuture)
			}
			if id == 1 {
				total += d.Size
			}
		}
		_, hasOther := findReplica(all, id, "other", 0)
		if hasOther != (id == 3) {
			t.Fatalf("broker %d reports other-0: %v", id, hasOther)
		}
	}
	// Record batches add headers but values dominate: the sizes hold every produced byte
	// and are not wildly larger.
	if total < produced || total > 2*produced {
		t.Fatalf("partition sizes on broker 1 sum to %d for %d bytes of values", total, produced)
	}

	// A request for one partition answers only that partition.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	one, err := adm.DescribeBrokerLogDirs(ctx, 2, kadm.TopicsSet{topic: {1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	one.Each(func(d kadm.DescribedLogDir) { d.Topics.Each(func(kadm.DescribedLogDirPartition) { n++ }) })
	if _, ok := findReplica(kadm.DescribedAllLogDirs{2: one}, 2, topic, 1); !ok || n != 1 {
		t.Fatalf("describe of %s-1 on broker 2 answered %d partitions: %+v", topic, n, one)
	}

	// `isrbroker log-dirs` prints Kafka's two lines and JSON, for the listed brokers and
	// topics only, with the sizes the brokers report.
	out := adminOK(t, "log-dirs", "--bootstrap-server", c.Broker(1).Addr, "--describe", "--broker-list", "1,2", "--topic-list", topic)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || lines[0] != "Querying brokers for log directories information" ||
		lines[1] != "Received log directory information from brokers 1,2" {
		t.Fatalf("log-dirs output:\n%s", out)
	}
	var doc struct {
		Version int `json:"version"`
		Brokers []struct {
			Broker  int32 `json:"broker"`
			LogDirs []struct {
				LogDir     string  `json:"logDir"`
				Error      *string `json:"error"`
				Partitions []struct {
					Partition string `json:"partition"`
					Size      int64  `json:"size"`
					OffsetLag int64  `json:"offsetLag"`
					IsFuture  bool   `json:"isFuture"`
				} `json:"partitions"`
			} `json:"logDirs"`
		} `json:"brokers"`
	}
	if err := json.Unmarshal([]byte(lines[2]), &doc); err != nil || doc.Version != 1 || len(doc.Brokers) != 2 {
		t.Fatalf("log-dirs JSON %v: %s", err, lines[2])
	}
	if !strings.Contains(lines[2], `"error":null`) || !strings.HasPrefix(lines[2], `{"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":`) {
		t.Fatalf("log-dirs JSON is not Kafka's shape: %s", lines[2])
	}
	for _, b := range doc.Brokers {
		if len(b.LogDirs) != 1 || len(b.LogDirs[0].Partitions) != 2 {
			t.Fatalf("broker %d: %+v", b.Broker, b.LogDirs)
		}
		for _, p := range b.LogDirs[0].Partitions {
			var part int32
			if _, err := fmt.Sscanf(strings.TrimPrefix(p.Partition, topic+"-"), "%d", &part); err != nil {
				t.Fatalf("partition %q", p.Partition)
			}
			d, _ := findReplica(all, b.Broker, topic, part)
			if p.Size != d.Size || p.OffsetLag != 0 || p.IsFuture {
				t.Fatalf("broker %d %s: tool says %+v, DescribeLogDirs %+v", b.Broker, p.Partition, p, d)
			}
		}
	}
}

func findReplica(all kadm.DescribedAllLogDirs, id int32, topic string, p int32) (kadm.DescribedLogDirPartition, bool) {
	for _, d := range all[id] {
		if r, ok := d.Topics.Lookup(topic, p); ok {
			return r, true
		}
	}
	return kadm.DescribedLogDirPartition{}, false
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
