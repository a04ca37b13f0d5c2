// Package perf owns `isrbroker perf produce|consume`, load generators that mirror Kafka
// 2.4's kafka-producer-perf-test.sh (ProducerPerformance) and kafka-consumer-perf-test.sh
// (ConsumerPerformance): the same flags, Kafka producer property names, and output lines in
// the same format, so scripts that parse Kafka's tools parse these too (issue 4 item 5).
// Both use the franz-go client (kgo); the consumer assigns every partition directly from
// the log start, since isrbroker serves no consumer-group APIs.
//
// Operational failures (no reachable broker, unknown topic, bad flags or producer
// properties, records that failed) are returned as one-line errors; the caller prints
// "isrbroker: <error>" and exits with status 1.
package perf

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

// MetadataTimeout bounds the start-up check that a broker answers and the topic's
// partitions all have a leader.
var MetadataTimeout = 15 * time.Second

// Command returns `perf` with the subcommands `produce` and `consume`.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "perf",
		Usage: "measure produce and consume throughput and latency (kafka-producer-perf-test / kafka-consumer-perf-test)",
		Subcommands: []*cli.Command{
			produceCommand(),
			consumeCommand(),
		},
	}
}

// failf is an operational error (exit status 1), one line.
func failf(format string, a ...any) error {
	return cli.Exit(oneLine(fmt.Sprintf(format, a...)), 1)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// applyTrailingArgs handles what Go's flag parsing leaves in c.Args(): it stops at the first
// argument that is not a flag, so `--producer-props acks=all bootstrap.servers=h:1 --print-metrics`
// leaves "bootstrap.servers=h:1 --print-metrics". Like Kafka's argparse4j (nargs "+"), every
// name=value argument after the multi-value flag belongs to it, and flags may follow.
// multi names the multi-value flag (it must be a StringSliceFlag), "" for none.
func applyTrailingArgs(c *cli.Context, multi string) error {
	rest := c.Args().Slice()
	inMulti := multi != "" && c.IsSet(multi)
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			continue
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if !inMulti {
				return fmt.Errorf("unexpected argument %q", a)
			}
			if err := c.Set(multi, a); err != nil {
				return fmt.Errorf("invalid --%s %q: %v", multi, a, err)
			}
			continue
		}
		name := strings.TrimLeft(a, "-")
		value, hasValue := "", false
		if j := strings.IndexByte(name, '='); j >= 0 {
			name, value, hasValue = name[:j], name[j+1:], true
		}
		f := lookupFlag(c.Command.Flags, name)
		if f == nil {
			return fmt.Errorf("flag provided but not defined: -%s", name)
		}
		if _, isBool := f.(*cli.BoolFlag); isBool {
			if !hasValue {
				value = "true"
			}
		} else if !hasValue {
			if i+1 >= len(rest) {
				return fmt.Errorf("flag needs an argument: -%s", name)
			}
			i++
			value = rest[i]
		}
		if err := c.Set(name, value); err != nil {
			return fmt.Errorf("invalid value %q for flag -%s: %v", value, name, err)
		}
		inMulti = multi != "" && containsName(f.Names(), multi)
	}
	return nil
}

func lookupFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		if containsName(f.Names(), name) {
			return f
		}
	}
	return nil
}

func containsName(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// topicPartitions asks the cluster for topic's metadata until every partition has a leader
// and returns the partition ids. With autoCreate the request may create the topic (as the
// Kafka 2.4 producer's metadata requests do when the broker allows auto-creation).
func topicPartitions(ctx context.Context, cl *kgo.Client, bootstrap []string, topic string, autoCreate bool) ([]int32, error) {
	ctx, cancel := context.WithTimeout(ctx, MetadataTimeout)
	defer cancel()
	answered := false // some broker answered a metadata request
	last := ""        // why the last attempt did not succeed
	for {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = autoCreate
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			if last == "" || ctx.Err() == nil {
				last = err.Error()
			}
		} else {
			answered = true
			ids, reason, ferr := partitionsReady(resp, topic)
			if ferr != nil {
				return nil, ferr
			}
			if reason == "" {
				return ids, nil
			}
			last = reason
		}
		// Poll again: a broker is starting, the topic was just created, or a leader is
		// being elected.
		select {
		case <-ctx.Done():
			if !answered {
				return nil, fmt.Errorf("cannot reach any broker at %s within %v: %s", strings.Join(bootstrap, ","), MetadataTimeout, last)
			}
			return nil, fmt.Errorf("topic %s is not ready within %v: %s", topic, MetadataTimeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// partitionsReady returns the partitions of topic in resp when all have a leader; otherwise
// a reason to wait, or an error that waiting cannot fix (the topic does not exist).
func partitionsReady(resp *kmsg.MetadataResponse, topic string) ([]int32, string, error) {
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if t.ErrorCode != 0 {
			err := kerr.ErrorForCode(t.ErrorCode)
			if t.ErrorCode == kerr.UnknownTopicOrPartition.Code {
				return nil, "", fmt.Errorf("topic %s does not exist (%v)", topic, err)
			}
			if !kerr.IsRetriable(err) {
				return nil, "", fmt.Errorf("topic %s: %v", topic, err)
			}
			return nil, err.Error(), nil
		}
		if len(t.Partitions) == 0 {
			return nil, "the topic has no partitions yet", nil
		}
		ids := make([]int32, 0, len(t.Partitions))
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 && p.ErrorCode != kerr.ReplicaNotAvailable.Code {
				return nil, fmt.Sprintf("partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode)), nil
			}
			if p.Leader < 0 {
				return nil, fmt.Sprintf("partition %d has no leader", p.Partition), nil
			}
			ids = append(ids, p.Partition)
		}
		return ids, "", nil
	}
	return nil, "the topic is missing from the metadata response", nil
}
