package integration

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 28 item 8: a `kcat -G` member (librdkafka's balanced consumer) of a group whose topic
// is deleted and re-created with fewer partitions while the member is stopped (SIGSTOP, so the
// deletion window is never in its metadata, as when the two come quickly).
//
// Kafka 2.4 removes the committed offsets of a deleted topic's partitions from every group
// when the controller's UpdateMetadata marks them deleted (GroupCoordinator
// handleDeletedPartitions, docs/groups.md §6): OffsetFetch answers none for the topic
// afterwards. Once resumed, the member sees 2 partitions instead of 4, revokes all four and
// commits its old positions: UNKNOWN_TOPIC_OR_PARTITION for partitions 2 and 3 (not in the
// metadata cache, KafkaApis.handleOffsetCommitRequest), stored for 0 and 1 (librdkafka
// reports the last partition's error for all four). It reads the re-created topic's records
// from there and, on close (SIGTERM: final commit, LeaveGroup), the group ends Empty with the
// new topic's end offsets committed.
//
// What librdkafka does after closing is its own: before 2.1.0 (Debian's 2.0.2) it leaks a
// reference to each assigned partition that vanished from Metadata (fixed in 2.1.0: "a
// reference count issue was blocking the consumer from closing ... if the corresponding topic
// is deleted"), and rd_kafka_destroy waits for its broker threads forever. Kafka 2.4 answers
// the same Metadata (partitions 2 and 3 are gone), so the process's exit is only required from
// librdkafka 2.1.0 on.
func TestGroups_KcatTopicRecreatedWithFewerPartitions(t *testing.T) {
	kcatPath(t)
	c := startGroupCluster(t, nil)
	const topic, group = "kcat-recreate", "kcat-recreate-grp"
	const before, after = int32(4), int32(2)
	c.CreateTopic(topic, before, 3)
	c.WaitMetadataLeaders(topic, before, 30*time.Second)

	m := startKcatMember(t, c, group, topic, "-X", "client.id=kcat-recreate", "-X", "session.timeout.ms=30000",
		"-X", "topic.metadata.refresh.interval.ms=500")
	c.Groups.WaitStable(group, topic, before, 1, 60*time.Second)
	pr := newProduced()
	pr.produceRoundRobin(t, c, topic, before, "old", 40)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		n := len(m.lines(t))
		return n >= 40, fmt.Sprintf("kcat consumed %d of the 40 records of the first topic", n)
	})
	c.Groups.WaitCommitted(group, topic, pr.ends(before), 30*time.Second)

	m.freeze(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	resp, err := c.Admin().DeleteTopics(ctx, topic)
	if err != nil || resp[topic].Err != nil {
		m.thaw(t)
		t.Fatalf("DeleteTopics: %v %v", err, resp[topic].Err)
	}
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		return !c.ZK.Exists("/brokers/topics/"+topic) && !c.ZK.Exists("/admin/delete_topics/"+topic), "topic deletion not complete"
	})
	if offs := committedOffsetsOf(t, ctx, c, group)[topic]; len(offs) != 0 {
		m.thaw(t)
		t.Fatalf("OffsetFetch after the topic was deleted: committed offsets %v of the deleted topic, want none (Kafka removes them)", offs)
	}
	c.CreateTopic(topic, after, 3)
	c.WaitMetadataLeaders(topic, after, 30*time.Second)
	npr := newProduced()
	npr.produceRoundRobin(t, c, topic, after, "new", 40)
	m.thaw(t)

	ends := npr.ends(after)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		last := map[int32]int64{}
		for _, l := range m.lines(t) {
			if strings.HasPrefix(l.Value, "new-") {
				if l.Partition >= after {
					return false, fmt.Sprintf("record %s consumed from partition %d of a %d-partition topic", l.Value, l.Partition, after)
				}
				last[l.Partition] = max(last[l.Partition], l.Offset)
			}
		}
		for p, end := range ends {
			if last[p] != end-1 {
				return false, fmt.Sprintf("kcat's last records of the re-created topic: %v, want the end offsets %v minus one", last, ends)
			}
		}
		return true, ""
	})

	start := time.Now()
	_ = syscall.Kill(m.cmd.Process.Pid, syscall.SIGTERM)
	// The consumer's close as the broker sees it: the final commit of the new end offsets
	// and the LeaveGroup.
	c.Groups.WaitCommitted(group, topic, ends, 30*time.Second)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		d, err := c.Groups.Describe(ctx, group)
		return err == nil && d.State == "Empty" && len(d.Members) == 0, fmt.Sprintf("group after SIGTERM: %s, %d members, %v", d.State, len(d.Members), err)
	})
	t.Logf("kcat committed and left the group %v after SIGTERM", time.Since(start).Round(time.Millisecond))

	v := librdkafkaVersion(t)
	leaky := v != "" && versionBefore(v, 2, 1)
	wait := 30 * time.Second
	if leaky {
		wait = 5 * time.Second // only to report whether it exited
	}
	select {
	case <-m.done:
		t.Logf("kcat exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	case <-time.After(wait):
		if leaky {
			t.Logf("kcat (librdkafka %s) left the group but had not exited %v after SIGTERM: librdkafka before 2.1.0 "+
				"leaks the partitions that vanished from Metadata and waits in rd_kafka_destroy; not required of it", v, wait)
			return
		}
		t.Fatalf("kcat (librdkafka %s) did not exit within %v of SIGTERM; stderr:\n%s", v, wait, m.errText())
	}
}

// committedOffsetsOf fetches every committed offset of group (OffsetFetch of all topics).
func committedOffsetsOf(t *testing.T, ctx context.Context, c *cluster.Cluster, group string) map[string]map[int32]int64 {
	t.Helper()
	resps, err := c.Admin().FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("OffsetFetch(%s): %v", group, err)
	}
	out := map[string]map[int32]int64{}
	for topic, ps := range resps {
		for p, o := range ps {
			if o.Err == nil && o.At >= 0 {
				if out[topic] == nil {
					out[topic] = map[int32]int64{}
				}
				out[topic][p] = o.At
			}
		}
	}
	return out
}

// librdkafkaVersion is the librdkafka version kcat -V reports, "" if it does not say.
func librdkafkaVersion(t *testing.T) string {
	out, _ := exec.Command(kcatPath(t), "-V").CombinedOutput()
	if m := regexp.MustCompile(`librdkafka (\d+\.\d+\.\d+)`).FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return ""
}

// versionBefore reports whether version "a.b.c" is below major.minor.
func versionBefore(v string, major, minor int) bool {
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return false
	}
	a, _ := strconv.Atoi(parts[0])
	b, _ := strconv.Atoi(parts[1])
	return a < major || a == major && b < minor
}
