// Package health owns `isrbroker healthcheck`: a container health check for a broker image
// that has no shell (the FROM scratch image of scripts/docker/Dockerfile).
//
// A broker is healthy when it answers ApiVersions and then Metadata over the Kafka protocol
// and, when a broker id is given, lists itself among the live brokers of that Metadata
// answer. A broker learns the live brokers only from the controller's UpdateMetadata, which
// the controller sends once the broker's registration (/brokers/ids/<id>) appeared, so a
// listed id means "registered in ZooKeeper, known to the controller and serving Metadata".
package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/broker/kproto"
)

// Result is what a successful check saw.
type Result struct {
	Brokers      int   // live brokers in the Metadata answer
	ControllerID int32 // -1 when the broker knows no controller yet
}

// Check sends ApiVersions v0 and Metadata v1 (no topics) to addr. brokerID >= 0 requires
// that broker to be listed in the answer; a negative brokerID only requires a non-empty
// broker list. The whole check is bounded by timeout.
func Check(ctx context.Context, addr string, brokerID int32, timeout time.Duration) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := kproto.Dial(ctx, addr, "", "isrbroker-healthcheck", timeout)
	if err != nil {
		return Result{}, fmt.Errorf("connect %s: %w", addr, err)
	}
	defer conn.Close()

	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 0
	resp, err := conn.Request(ctx, av)
	if err != nil {
		return Result{}, fmt.Errorf("ApiVersions to %s: %w", addr, err)
	}
	avr, ok := resp.(*kmsg.ApiVersionsResponse)
	if !ok {
		return Result{}, errors.New("ApiVersions: unexpected response type")
	}
	if err := kerr.ErrorForCode(avr.ErrorCode); err != nil {
		return Result{}, fmt.Errorf("ApiVersions to %s: %w", addr, err)
	}
	metadataOK := false
	for _, k := range avr.ApiKeys {
		if k.ApiKey == 3 && k.MinVersion <= 1 && k.MaxVersion >= 1 {
			metadataOK = true
		}
	}
	if !metadataOK {
		return Result{}, fmt.Errorf("%s does not offer Metadata v1 in ApiVersions", addr)
	}

	md := kmsg.NewPtrMetadataRequest()
	md.Version = 1
	md.Topics = []kmsg.MetadataRequestTopic{} // empty, not null: no topics, only brokers
	resp, err = conn.Request(ctx, md)
	if err != nil {
		return Result{}, fmt.Errorf("Metadata to %s: %w", addr, err)
	}
	mdr, ok := resp.(*kmsg.MetadataResponse)
	if !ok {
		return Result{}, errors.New("Metadata: unexpected response type")
	}
	res := Result{Brokers: len(mdr.Brokers), ControllerID: mdr.ControllerID}
	if brokerID < 0 {
		if len(mdr.Brokers) == 0 {
			return res, fmt.Errorf("%s lists no live brokers in Metadata yet", addr)
		}
		return res, nil
	}
	for _, b := range mdr.Brokers {
		if b.NodeID == brokerID {
			return res, nil
		}
	}
	return res, fmt.Errorf("broker %d is not among the %d live brokers %s lists in Metadata (not registered yet, or no UpdateMetadata from the controller)", brokerID, len(mdr.Brokers), addr)
}

// Command is `isrbroker healthcheck`: exit status 0 when Check passes, 1 otherwise (the
// contract of Docker's HEALTHCHECK and compose's healthcheck.test).
func Command(stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "healthcheck",
		Usage: "exit 0 when a broker serves ApiVersions and Metadata and lists itself (container health check)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-server", Value: "127.0.0.1:9092", Usage: "the broker's host:port"},
			&cli.IntFlag{Name: "broker-id", Value: -1, Usage: "require this broker id in the Metadata answer (-1: any live broker)"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Second, Usage: "give up after this time"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("healthcheck: unexpected argument %q", c.Args().First())
			}
			id := c.Int("broker-id")
			if id < -1 || id > 1<<31-1 {
				return fmt.Errorf("healthcheck: --broker-id %d out of range", id)
			}
			addr := c.String("bootstrap-server")
			res, err := Check(c.Context, addr, int32(id), c.Duration("timeout"))
			if err != nil {
				return fmt.Errorf("unhealthy: %w", err)
			}
			fmt.Fprintf(stdout, "healthy: %s serves Metadata with %d live brokers, controller %d\n", addr, res.Brokers, res.ControllerID)
			return nil
		},
	}
}
