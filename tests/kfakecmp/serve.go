package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

// serveCmd runs a kfake cluster of three brokers in this process until SIGTERM or SIGINT, as a
// user runs another cluster: its own process, its own heap and garbage collector, measured by
// `kfakecmp run` over loopback exactly as isrbroker is (issue 32: measured inside the load
// generator, kfake's heap shared the client's CPU and collector). It prints "ready ADDRS" on
// stdout once every broker listens.
//
//	kfakecmp serve --target kfake|kfake-disk --ports P1,P2,P3 [--data-dir DIR]
func serveCmd(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	target := fs.String("target", "", "kfake (segment files in memory) or kfake-disk (kfake.DataDir)")
	portList := fs.String("ports", "", "the three brokers' loopback ports, comma-separated")
	dataDir := fs.String("data-dir", "", "with kfake-disk: where the segment files go (default: a temporary directory, removed at exit)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var ports []int
	for _, p := range strings.Split(*portList, ",") {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return fmt.Errorf("--ports: %q is not a port", p)
		}
		ports = append(ports, n)
	}
	if len(ports) != 3 {
		return fmt.Errorf("--ports: want 3 ports, got %d", len(ports))
	}
	opts := []kfake.Opt{kfake.Ports(ports...)}
	switch *target {
	case "kfake":
		if *dataDir != "" {
			return errors.New("--data-dir is for --target kfake-disk")
		}
	case "kfake-disk":
		dir := *dataDir
		if dir == "" {
			d, err := os.MkdirTemp("", "kfakecmp-data-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			dir = d
		}
		opts = append(opts, kfake.DataDir(dir))
	default:
		return fmt.Errorf("--target must be kfake or kfake-disk, got %q", *target)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("starting kfake: %w", err)
	}
	defer c.Close()
	fmt.Println("ready", strings.Join(c.ListenAddrs(), ","))
	s := <-sig
	logf("%s: %v, stopping", *target, s)
	return nil
}
