package admintool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/zkcoord/admin"
)

const clusterDescription = `Print the cluster's state as ZooKeeper holds it: the controller and its epoch, the live
brokers with their endpoints and rack, and partition counts: online (a live leader),
offline (no leader, or the leader is not live), under-replicated (ISR smaller than the
replicas) and under min ISR (ISR smaller than the topic's min.insync.replicas, default 1,
or no live leader: the same rules as topics --describe --under-min-isr-partitions).
Topics marked for deletion are not counted.

For scripts and health checks, --fail-on-offline, --fail-on-under-replicated and
--fail-on-under-min-isr make the command exit with status 2 and a one-line reason on
stderr when the condition holds (status 1 means the check itself failed, e.g. ZooKeeper
is unreachable).

Examples:
  isrbroker cluster --zookeeper localhost:2181
  isrbroker cluster --zookeeper localhost:2181/isrbroker --json
  isrbroker cluster --zookeeper localhost:2181 --fail-on-offline --fail-on-under-min-isr --zk-timeout 5s

Output:
  Controller: 1 (epoch 3)
  Brokers:
  	1	PLAINTEXT://10.0.0.1:9092	rack: -
  	2	PLAINTEXT://10.0.0.2:9092	rack: -
  Partitions: 12 online: 12 offline: 0 under-replicated: 1 under-min-isr: 0`

func clusterCommand() *cli.Command {
	flags := zkFlags()
	flags = append(flags,
		&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of text"},
		&cli.BoolFlag{Name: "fail-on-offline", Usage: "exit 2 when a partition is offline"},
		&cli.BoolFlag{Name: "fail-on-under-replicated", Usage: "exit 2 when a partition is under-replicated"},
		&cli.BoolFlag{Name: "fail-on-under-min-isr", Usage: "exit 2 when a partition is under min ISR"},
	)
	return &cli.Command{
		Name:        "cluster",
		Usage:       "show the controller, live brokers and partition health (from ZooKeeper)",
		Description: clusterDescription,
		Flags:       flags,
		Action:      clusterAction,
	}
}

// ClusterState is the `cluster --json` output.
type ClusterState struct {
	Controller struct {
		ID    int32 `json:"id"` // -1: none
		Epoch int32 `json:"epoch"`
	} `json:"controller"`
	Brokers    []BrokerState `json:"brokers"`
	Topics     int           `json:"topics"`
	Partitions struct {
		Total           int `json:"total"`
		Online          int `json:"online"`
		Offline         int `json:"offline"`
		UnderReplicated int `json:"underReplicated"`
		UnderMinIsr     int `json:"underMinIsr"`
	} `json:"partitions"`
	// Offline, UnderReplicated and UnderMinIsr name the partitions ("topic-partition").
	Offline         []string `json:"offline"`
	UnderReplicated []string `json:"underReplicated"`
	UnderMinIsr     []string `json:"underMinIsr"`
}

// BrokerState is one live broker in ClusterState.
type BrokerState struct {
	ID        int32    `json:"id"`
	Endpoints []string `json:"endpoints"`
	Rack      string   `json:"rack,omitempty"`
}

func clusterAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return failf("unexpected argument %q (flags only; see isrbroker cluster --help)", c.Args().First())
	}
	if strings.TrimSpace(c.String("zookeeper")) == "" {
		return failf("--zookeeper is required")
	}
	coord, err := connectZK(c)
	if err != nil {
		return err
	}
	defer coord.Close()
	st, err := readCluster(coord)
	if err != nil {
		return zkErr(c, err)
	}
	out := c.App.Writer
	if c.Bool("json") {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			return failf("%s", err)
		}
	} else {
		writeCluster(out, st)
	}
	var reasons []string
	add := func(on bool, what string, tps []string) {
		if on && len(tps) > 0 {
			reasons = append(reasons, fmt.Sprintf("%d %s partitions (%s)", len(tps), what, abbreviate(tps, 5)))
		}
	}
	add(c.Bool("fail-on-offline"), "offline", st.Offline)
	add(c.Bool("fail-on-under-replicated"), "under-replicated", st.UnderReplicated)
	add(c.Bool("fail-on-under-min-isr"), "under-min-isr", st.UnderMinIsr)
	if len(reasons) > 0 {
		return &exitError{msg: strings.Join(reasons, "; "), code: ExitUnhealthy}
	}
	return nil
}

func abbreviate(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:n], ", ") + fmt.Sprintf(", ... %d more", len(s)-n)
}

// readCluster gathers ClusterState from ZooKeeper.
func readCluster(coord *admin.Session) (ClusterState, error) {
	var st ClusterState
	st.Offline, st.UnderReplicated, st.UnderMinIsr = []string{}, []string{}, []string{}
	id, err := coord.Reader.ControllerID()
	if err != nil {
		return st, err
	}
	epoch, _, err := coord.Reader.ControllerEpoch()
	if err != nil {
		return st, err
	}
	st.Controller.ID, st.Controller.Epoch = id, epoch
	live, brokers, err := liveSet(coord)
	if err != nil {
		return st, err
	}
	st.Brokers = []BrokerState{}
	for _, b := range brokers {
		bs := BrokerState{ID: b.ID, Rack: b.Rack, Endpoints: []string{}}
		for _, e := range b.Endpoints {
			bs.Endpoints = append(bs.Endpoints, e.Listener+"://"+net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))))
		}
		st.Brokers = append(st.Brokers, bs)
	}
	topics, err := coord.Reader.Topics()
	if err != nil {
		return st, err
	}
	del, err := coord.Reader.TopicsMarkedForDeletion()
	if err != nil {
		return st, err
	}
	marked := map[string]bool{}
	for _, t := range del {
		marked[t] = true
	}
	for _, name := range topics {
		if marked[name] {
			continue
		}
		t, err := readTopic(coord, name, false)
		if errors.Is(err, admin.ErrUnknownTopic) {
			continue
		}
		if err != nil {
			return st, err
		}
		st.Topics++
		for _, p := range t.Partitions {
			tp := fmt.Sprintf("%s-%d", name, p.ID)
			h := health(p, t.Configs, live)
			st.Partitions.Total++
			if h.hasLeader {
				st.Partitions.Online++
			} else {
				st.Partitions.Offline++
				st.Offline = append(st.Offline, tp)
			}
			if h.underReplicated {
				st.Partitions.UnderReplicated++
				st.UnderReplicated = append(st.UnderReplicated, tp)
			}
			if h.underMinISR {
				st.Partitions.UnderMinIsr++
				st.UnderMinIsr = append(st.UnderMinIsr, tp)
			}
		}
	}
	return st, nil
}

func writeCluster(out io.Writer, st ClusterState) {
	ctl := "none"
	if st.Controller.ID >= 0 {
		ctl = fmt.Sprint(st.Controller.ID)
	}
	fmt.Fprintf(out, "Controller: %s (epoch %d)\n", ctl, st.Controller.Epoch)
	fmt.Fprintln(out, "Brokers:")
	for _, b := range st.Brokers {
		rack := b.Rack
		if rack == "" {
			rack = "-"
		}
		fmt.Fprintf(out, "\t%d\t%s\track: %s\n", b.ID, strings.Join(b.Endpoints, ","), rack)
	}
	p := st.Partitions
	fmt.Fprintf(out, "Partitions: %d online: %d offline: %d under-replicated: %d under-min-isr: %d\n",
		p.Total, p.Online, p.Offline, p.UnderReplicated, p.UnderMinIsr)
}
