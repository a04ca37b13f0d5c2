package admintool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

// `isrbroker delete-records` is Kafka 2.4's kafka-delete-records.sh (DeleteRecordsCommand):
// it sends DeleteRecords for the partitions and offsets of a JSON file through the Kafka
// protocol and prints each partition's low watermark or error (docs/delete-records.md).

const deleteRecordsDescription = `Delete the records of partitions below the given offsets, like Kafka 2.4's
kafka-delete-records.sh: each partition's leader raises its log start offset to the offset
(-1: the high watermark) and answers once every live replica has done the same.

The JSON file has Kafka's format ("version" defaults to 1, the only version):
  {"partitions": [{"topic": "orders", "partition": 0, "offset": 10}], "version": 1}

Example:
  isrbroker delete-records --bootstrap-server localhost:9092 --offset-json-file delete.json

Output:
  Executing records delete operation
  Records delete operation completed:
  partition: orders-0	low_watermark: 10
  partition: orders-1	error: OFFSET_OUT_OF_RANGE: The requested offset is not within the range of offsets maintained by the server.`

func deleteRecordsCommand() *cli.Command {
	return &cli.Command{
		Name:        "delete-records",
		Usage:       "delete records of partitions below an offset (DeleteRecords)",
		Description: deleteRecordsDescription,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-server", Usage: "REQUIRED: the server(s) to connect to (host:port[,host:port])"},
			&cli.StringFlag{Name: "offset-json-file", Usage: `REQUIRED: the JSON file with the offset per partition: {"partitions":[{"topic":"foo","partition":1,"offset":1}],"version":1}`},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "how long to wait for the brokers"},
		},
		Action: deleteRecordsAction,
	}
}

// deleteRecordsEntry is one partition of the offset JSON file.
type deleteRecordsEntry struct {
	Topic     *string `json:"topic"`
	Partition *int32  `json:"partition"`
	Offset    *int64  `json:"offset"`
}

// parseDeleteRecordsJSON reads Kafka's offset JSON (DeleteRecordsCommand.parseOffsetJsonString):
// version 1 (the default), a partitions array, no partition twice.
func parseDeleteRecordsJSON(data []byte) (kadm.Offsets, []string, error) {
	var doc struct {
		Version    *int                  `json:"version"`
		Partitions *[]deleteRecordsEntry `json:"partitions"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, failf("The input string is not a valid JSON: %s", err)
	}
	if doc.Version != nil && *doc.Version != 1 {
		return nil, nil, failf("Not supported version field value %d", *doc.Version)
	}
	if doc.Partitions == nil {
		return nil, nil, failf("Missing partitions field")
	}
	offsets := kadm.Offsets{}
	var order, dups []string
	for i, e := range *doc.Partitions {
		if e.Topic == nil || e.Partition == nil || e.Offset == nil {
			return nil, nil, failf("partition entry %d lacks topic, partition or offset", i)
		}
		name := fmt.Sprintf("%s-%d", *e.Topic, *e.Partition)
		if _, ok := offsets.Lookup(*e.Topic, *e.Partition); ok {
			dups = append(dups, name)
			continue
		}
		offsets.Add(kadm.Offset{Topic: *e.Topic, Partition: *e.Partition, At: *e.Offset, LeaderEpoch: -1})
		order = append(order, name)
	}
	if len(dups) > 0 {
		return nil, nil, failf("Offset json file contains duplicate topic partitions: %s", strings.Join(dups, ","))
	}
	return offsets, order, nil
}

func deleteRecordsAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return failf("unexpected arguments: %s", strings.Join(c.Args().Slice(), " "))
	}
	bootstrap, file := c.String("bootstrap-server"), c.String("offset-json-file")
	if bootstrap == "" || file == "" {
		return failf("--bootstrap-server and --offset-json-file are required")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return failf("reading --offset-json-file: %s", err)
	}
	offsets, _, err := parseDeleteRecordsJSON(data)
	if err != nil {
		return err
	}
	cl, err := dialKafka(bootstrap, c.Duration("timeout"), "isrbroker-delete-records")
	if err != nil {
		return err
	}
	defer cl.Close()
	out := c.App.Writer
	fmt.Fprintln(out, "Executing records delete operation")
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout")+10*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(c.Duration("timeout") / time.Millisecond)) // the DeleteRecords timeout_ms
	resps, err := adm.DeleteRecords(ctx, offsets)
	failed := shardFailures(err)
	if err != nil && failed == nil {
		return failf("delete records: %s", clean(err))
	}
	fmt.Fprintln(out, "Records delete operation completed:")
	var lines []deleteRecordsLine
	offsets.Each(func(o kadm.Offset) {
		l := deleteRecordsLine{topic: o.Topic, partition: o.Partition}
		if r, ok := resps.Lookup(o.Topic, o.Partition); ok {
			l.low, l.err = r.LowWatermark, r.Err
		} else if e, ok := failed[fmt.Sprintf("%s-%d", o.Topic, o.Partition)]; ok {
			l.err = e
		} else {
			l.err = errors.New("no answer from the brokers")
		}
		lines = append(lines, l)
	})
	sort.Slice(lines, func(i, j int) bool {
		if lines[i].topic != lines[j].topic {
			return lines[i].topic < lines[j].topic
		}
		return lines[i].partition < lines[j].partition
	})
	for _, l := range lines {
		if l.err != nil {
			fmt.Fprintf(out, "partition: %s-%d\terror: %s\n", l.topic, l.partition, errorText(l.err))
		} else {
			fmt.Fprintf(out, "partition: %s-%d\tlow_watermark: %d\n", l.topic, l.partition, l.low)
		}
	}
	return nil
}

type deleteRecordsLine struct {
	topic     string
	partition int32
	low       int64
	err       error
}

// errorText renders a partition's error as "CODE: description" (kerr), or the client's message.
func errorText(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message + ": " + ke.Description
	}
	return oneLine(err.Error())
}

// shardFailures maps each partition of a failed DeleteRecords shard to the shard's error; nil
// when err is not a *kadm.ShardErrors.
func shardFailures(err error) map[string]error {
	var se *kadm.ShardErrors
	if !errors.As(err, &se) {
		return nil
	}
	out := map[string]error{}
	for _, s := range se.Errs {
		req, ok := s.Req.(*kmsg.DeleteRecordsRequest)
		if !ok {
			continue
		}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				out[fmt.Sprintf("%s-%d", t.Topic, p.Partition)] = s.Err
			}
		}
	}
	return out
}
