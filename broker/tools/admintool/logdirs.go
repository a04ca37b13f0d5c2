package admintool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/urfave/cli/v2"
)

// `isrbroker log-dirs` is Kafka 2.4's kafka-log-dirs.sh (LogDirsCommand; docs/kafka-facts.md,
// "DescribeLogDirs"): DescribeLogDirs to each broker, printed as Kafka's JSON.

const logDirsDescription = `Query the log directories of brokers, like Kafka 2.4's kafka-log-dirs.sh.

  --bootstrap-server B --describe [--broker-list "1,2"] [--topic-list "a,b"]
      Asks every listed broker (all brokers when --broker-list is absent) for its log
      directories and prints, after two progress lines, Kafka's JSON:
      {"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/data","error":null,
      "partitions":[{"partition":"t-0","size":123,"offsetLag":0,"isFuture":false}]}]}]}
      size is the bytes of the partition's segments on that broker; offsetLag is
      max(HW - LEO, 0), which is 0 for a current replica.

Errors are one line on stderr with exit status 1.`

func logDirsCommand() *cli.Command {
	return &cli.Command{
		Name:        "log-dirs",
		Usage:       "describe the brokers' log directories (kafka-log-dirs.sh)",
		Description: logDirsDescription,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-server", Usage: "REQUIRED: the broker(s) to bootstrap from, host:port[,host:port]"},
			&cli.BoolFlag{Name: "describe", Usage: "describe the log directories of the brokers"},
			&cli.StringFlag{Name: "broker-list", Usage: `brokers to query, e.g. "1,2,3" (default: all brokers)`},
			&cli.StringFlag{Name: "topic-list", Usage: `topics to show, e.g. "a,b" (default: all topics)`},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "give up after this time"},
		},
		Action: logDirsAction,
	}
}

// logDirsJSON and the types below keep Kafka's key order.
type logDirsJSON struct {
	Version int                 `json:"version"`
	Brokers []brokerLogDirsJSON `json:"brokers"`
}

type brokerLogDirsJSON struct {
	Broker  int32        `json:"broker"`
	LogDirs []logDirJSON `json:"logDirs"`
}

type logDirJSON struct {
	LogDir     string              `json:"logDir"`
	Error      *string             `json:"error"`
	Partitions []logDirReplicaJSON `json:"partitions"`
}

type logDirReplicaJSON struct {
	Partition string `json:"partition"`
	Size      int64  `json:"size"`
	OffsetLag int64  `json:"offsetLag"`
	IsFuture  bool   `json:"isFuture"`
}

func logDirsAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return failf("unexpected argument %q (flags only; see isrbroker log-dirs --help)", c.Args().First())
	}
	if !c.Bool("describe") {
		return failf("--describe is required")
	}
	bootstrap := strings.TrimSpace(c.String("bootstrap-server"))
	if bootstrap == "" {
		return failf("--bootstrap-server is required")
	}
	var brokers []int32
	if s := c.String("broker-list"); strings.TrimSpace(s) != "" {
		var err error
		if brokers, err = parseBrokerList(s); err != nil {
			return err
		}
	}
	topics := map[string]bool{}
	for _, t := range strings.Split(c.String("topic-list"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			topics[t] = true
		}
	}
	timeout := c.Duration("timeout")
	cl, err := dialKafka(bootstrap, timeout, "log-dirs-tool")
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(c.Context, timeout)
	defer cancel()
	reqErr := func(err error) error {
		if errors.Is(err, context.DeadlineExceeded) {
			return failf("cannot reach Kafka brokers at %s within %v", bootstrap, timeout)
		}
		return failf("Kafka brokers at %s: %s", bootstrap, oneLine(err.Error()))
	}
	if brokers == nil {
		m, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return reqErr(err)
		}
		for _, b := range m.Brokers {
			brokers = append(brokers, b.NodeID)
		}
		sort.Slice(brokers, func(i, j int) bool { return brokers[i] < brokers[j] })
	}
	out := c.App.Writer
	fmt.Fprintln(out, "Querying brokers for log directories information")
	doc := logDirsJSON{Version: 1, Brokers: []brokerLogDirsJSON{}}
	for _, id := range brokers {
		dirs, err := adm.DescribeBrokerLogDirs(ctx, id, nil)
		if err != nil {
			return failf("broker %d: %s", id, oneLine(err.Error()))
		}
		doc.Brokers = append(doc.Brokers, brokerLogDirsFor(id, dirs, topics))
	}
	fmt.Fprintf(out, "Received log directory information from brokers %s\n", joinIDs(brokers))
	data, err := json.Marshal(doc)
	if err != nil {
		return failf("encoding the answer: %v", err)
	}
	fmt.Fprintln(out, string(data))
	return nil
}

// brokerLogDirsFor is one broker's entry, its dirs and partitions sorted, the partitions of
// topics only (all when topics is empty), like Kafka's formatAsJson.
func brokerLogDirsFor(id int32, dirs kadm.DescribedLogDirs, topics map[string]bool) brokerLogDirsJSON {
	b := brokerLogDirsJSON{Broker: id, LogDirs: []logDirJSON{}}
	names := make([]string, 0, len(dirs))
	for name := range dirs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		d := dirs[name]
		ld := logDirJSON{LogDir: name, Error: javaExceptionName(d.Err), Partitions: []logDirReplicaJSON{}}
		for _, p := range d.Topics.Sorted() {
			if len(topics) > 0 && !topics[p.Topic] {
				continue
			}
			ld.Partitions = append(ld.Partitions, logDirReplicaJSON{
				Partition: fmt.Sprintf("%s-%d", p.Topic, p.Partition), Size: p.Size, OffsetLag: p.OffsetLag, IsFuture: p.IsFuture,
			})
		}
		b.LogDirs = append(b.LogDirs, ld)
	}
	return b
}

// javaExceptionName is Kafka's Errors.exceptionName for a log dir error: null for none.
func javaExceptionName(err error) *string {
	if err == nil {
		return nil
	}
	var s string
	var ke *kerr.Error
	switch {
	case errors.Is(err, kerr.KafkaStorageError):
		s = "org.apache.kafka.common.errors.KafkaStorageException"
	case errors.As(err, &ke):
		s = ke.Message
	default:
		s = err.Error()
	}
	return &s
}
