// Package admintool owns the operator verbs `isrbroker topics`, `isrbroker cluster`,
// `isrbroker leader-election`, `isrbroker reassign-partitions` and
// `isrbroker consumer-groups` (urfave/cli/v2 commands), modelled on Kafka 2.4's
// kafka-topics.sh, kafka-leader-election.sh, kafka-reassign-partitions.sh and
// kafka-consumer-groups.sh: the same verbs, flags and output. With --zookeeper they read
// and write the znodes through zkcoord/admin over their own session (admin.Connect: no
// broker coordinator, no controller; zkcoord/zkdata is the only package that knows znode
// paths); `topics`
// with --bootstrap-server and `consumer-groups` go through the Kafka protocol with
// franz-go's kadm instead.
//
// Every failure an operator can act on (an unreachable ZooKeeper, an unknown topic or
// broker, a malformed --replica-assignment) is returned as one error line; the caller
// prints "isrbroker: <error>" and exits with ExitCode(err): 1 for operational errors, 2 when
// `cluster --fail-on-...` found the condition it was asked to fail on.
package admintool

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/broker/config/configdef"
	"github.com/isrbroker/isrbroker/zkcoord/admin"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
)

// Exit statuses.
const (
	ExitError     = 1 // operational error: unreachable ZooKeeper, unknown topic, bad flags
	ExitUnhealthy = 2 // cluster --fail-on-* condition holds
)

// exitError is an error with an exit status (cli.ExitCoder).
type exitError struct {
	msg  string
	code int
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) ExitCode() int { return e.code }

// ExitCode maps an error returned by one of the commands to a process exit status: 0 for
// nil, the status of a cli.ExitCoder (2 for a cluster health failure), else 1.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) && ec.ExitCode() != 0 {
		return ec.ExitCode()
	}
	return ExitError
}

// failf is an operational error (exit 1), one line.
func failf(format string, a ...any) error {
	return &exitError{msg: oneLine(fmt.Sprintf(format, a...)), code: ExitError}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// clean strips package prefixes ("zkcoord: ") from an error for operator output.
func clean(err error) string {
	s := strings.ReplaceAll(err.Error(), "zkcoord: ", "")
	// Kafka's own messages already say what is invalid.
	s = strings.ReplaceAll(s, "invalid replication factor: replication factor", "replication factor")
	s = strings.ReplaceAll(s, "invalid number of partitions: number of partitions", "number of partitions")
	return oneLine(s)
}

// Commands returns the `topics`, `cluster`, `leader-election`, `reassign-partitions`,
// `consumer-groups`, `configs`, `delete-records`, `log-dirs` and `acls` commands.
func Commands() []*cli.Command {
	return []*cli.Command{topicsCommand(), clusterCommand(), electionCommand(), reassignCommand(), consumerGroupsCommand(), configsCommand(), deleteRecordsCommand(), logDirsCommand(), aclsCommand()}
}

// zkFlags returns fresh --zookeeper flags (urfave/cli flags keep per-run state).
func zkFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "zookeeper", Usage: "ZooKeeper connect string host:port[,host:port][/chroot]"},
		&cli.DurationFlag{Name: "zk-timeout", Value: 10 * time.Second, Usage: "give up when no ZooKeeper session is established within this time"},
		&cli.BoolFlag{Name: "verbose", Usage: "log ZooKeeper client activity to stderr"},
	}
}

// connectZK opens an admin session (admin.Connect) and turns failures into
// operator messages.
func connectZK(c *cli.Context) (*admin.Session, error) { return connectZKSession(c, true) }

// connectZKSession is connectZK; requireCluster false skips the /brokers/ids check
// (admin.ConnectWithoutCluster), for writes that must precede the first broker.
func connectZKSession(c *cli.Context, requireCluster bool) (*admin.Session, error) {
	connect := strings.TrimSpace(c.String("zookeeper"))
	timeout := c.Duration("zk-timeout")
	log := logrus.New()
	log.SetOutput(io.Discard)
	if c.Bool("verbose") {
		log.SetOutput(c.App.ErrWriter)
		log.SetLevel(logrus.DebugLevel)
	}
	connectFn := admin.Connect
	if !requireCluster {
		connectFn = admin.ConnectWithoutCluster
	}
	coord, err := connectFn(c.Context, connect, timeout, log)
	switch {
	case err == nil:
		return coord, nil
	case errors.Is(err, zkclient.ErrNoSession):
		return nil, failf("cannot reach ZooKeeper at %s: no session within %v", connect, timeout)
	case errors.Is(err, admin.ErrNoCluster):
		return nil, failf("ZooKeeper at %s holds no isrbroker cluster (no /brokers/ids; wrong chroot?)", connect)
	default:
		return nil, failf("cannot use ZooKeeper at %s: %s", connect, clean(err))
	}
}

// zkErr wraps a ZooKeeper read/write failure.
func zkErr(c *cli.Context, err error) error {
	return failf("ZooKeeper at %s: %s", c.String("zookeeper"), clean(err))
}

// parseReplicaAssignment parses Kafka's --replica-assignment "1:2:3,2:3:1": partition i
// gets the i-th comma-separated list of broker ids. Errors name the bad part.
func parseReplicaAssignment(s string) (map[int32][]int32, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("invalid --replica-assignment: empty")
	}
	out := map[int32][]int32{}
	size := -1
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("invalid --replica-assignment %q: partition %d has no replicas", s, i)
		}
		var r []int32
		seen := map[int32]bool{}
		for _, b := range strings.Split(part, ":") {
			id, err := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
			if err != nil || id < 0 {
				return nil, fmt.Errorf("invalid --replica-assignment %q: %q in partition %d (%q) is not a broker id", s, b, i, part)
			}
			if seen[int32(id)] {
				return nil, fmt.Errorf("invalid --replica-assignment %q: partition %d (%q) lists broker %d twice", s, i, part, id)
			}
			seen[int32(id)] = true
			r = append(r, int32(id))
		}
		if size >= 0 && len(r) != size {
			return nil, fmt.Errorf("invalid --replica-assignment %q: partition %d (%q) has %d replicas, partition 0 has %d", s, i, part, len(r), size)
		}
		size = len(r)
		out[int32(i)] = r
	}
	return out, nil
}

// parseConfigs parses repeated --config k=v (a value may hold commas and '=') and checks each
// against configdef's topic keys, so that a typo fails before anything is written.
func parseConfigs(kvs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		i := strings.IndexByte(kv, '=')
		if i <= 0 {
			return nil, fmt.Errorf("invalid --config %q: want key=value", kv)
		}
		out[strings.TrimSpace(kv[:i])] = strings.TrimSpace(kv[i+1:])
	}
	if err := configdef.ValidateTopicConfigs(out); err != nil {
		return nil, err
	}
	return out, nil
}

// topicMatcher matches --topic like Kafka's TopicCommand: an exact name, or a regular
// expression matching whole names when it is not a plain topic name.
func topicMatcher(spec string) (func(string) bool, error) {
	if spec == "" {
		return func(string) bool { return true }, nil
	}
	plain := true
	for i := 0; i < len(spec); i++ {
		b := spec[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-') {
			plain = false
		}
	}
	if plain {
		return func(t string) bool { return t == spec }, nil
	}
	re, err := regexp.Compile("^(?:" + spec + ")$")
	if err != nil {
		return func(t string) bool { return t == spec }, nil
	}
	return func(t string) bool { return t == spec || re.MatchString(t) }, nil
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// minISR is the topic's min.insync.replicas, else 1 (the broker default; Kafka's describe
// also reads only the topic config).
func minISR(configs map[string]string) int {
	if v, ok := configs["min.insync.replicas"]; ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
			return n
		}
	}
	return 1
}
