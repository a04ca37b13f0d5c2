// Command isrbroker is a message broker that speaks the Apache Kafka wire protocol, is
// coordinated by Apache ZooKeeper and replicates partitions like Kafka 2.4 in ZooKeeper mode.
//
// main owns the command line (urfave/cli/v2) and the wiring of the packages: it parses
// server.properties (broker/config), constructs the log layer, the ZooKeeper coordinator,
// the replica manager and the wire server in that order, and stops them in reverse order on
// SIGTERM/SIGINT, after a controlled shutdown (K7) unless controlled.shutdown.enable=false.
//
//	isrbroker broker --config server.properties [--override key=value]...
//	isrbroker broker server.properties --override key=value   (kafka-server-start.sh style)
//	isrbroker healthcheck --bootstrap-server host:port [--broker-id N]   (container health check)
//	isrbroker version
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	metrics "github.com/rcrowley/go-metrics"
	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/isrbroker/isrbroker/broker"
	"github.com/isrbroker/isrbroker/broker/clientquota"
	"github.com/isrbroker/isrbroker/broker/config"
	"github.com/isrbroker/isrbroker/broker/groupcoord"
	"github.com/isrbroker/isrbroker/broker/kproto"
	"github.com/isrbroker/isrbroker/broker/metricsexport"
	"github.com/isrbroker/isrbroker/broker/replview"
	"github.com/isrbroker/isrbroker/broker/tools/admintool"
	"github.com/isrbroker/isrbroker/broker/tools/health"
	"github.com/isrbroker/isrbroker/broker/tools/perf"
	"github.com/isrbroker/isrbroker/logstore"
	"github.com/isrbroker/isrbroker/replicamanager"
	"github.com/isrbroker/isrbroker/replicamanager/replevents"
	"github.com/isrbroker/isrbroker/zkcoord"
)

// Version is the isrbroker version; set with -ldflags "-X main.Version=...".
var Version = "0.1.0-dev"

// KafkaVersion is the Kafka release whose ZooKeeper-mode behaviour isrbroker follows.
const KafkaVersion = "2.4"

func main() {
	os.Exit(run(context.Background(), os.Args, os.Stdout, os.Stderr))
}

// run executes the command line and returns the exit status. A failure prints exactly one
// line, "isrbroker: ...", to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(ctx, stdout, stderr)
	if err := app.Run(args); err != nil {
		fmt.Fprintf(stderr, "isrbroker: %s\n", oneLine(err))
		return admintool.ExitCode(err) // 1, or 2 when a `cluster --fail-on-...` check finds a problem
	}
	return 0
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}

func newApp(ctx context.Context, stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:    "isrbroker",
		Usage:   "a Kafka-protocol message broker replicating like Kafka " + KafkaVersion + " in ZooKeeper mode",
		Version: Version,
		Writer:  stdout,
		// Flag errors print usage to stdout; the one-line error goes to stderr from run.
		ErrWriter: stdout,
		// --override values keep their commas (listeners=A://h:1,B://h:2).
		DisableSliceFlagSeparator: true,
		// Never os.Exit from inside the library: run prints the error and chooses the status.
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: append([]*cli.Command{
			{
				Name:      "broker",
				Usage:     "run a broker",
				ArgsUsage: "[server.properties] [--override key=value]...",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "path of server.properties (Kafka 2.4 broker settings)"},
					&cli.StringSliceFlag{Name: "override", Usage: "set a property after the file: key=value (repeatable)"},
					&cli.StringFlag{Name: "log-level", Value: "info", Usage: "trace, debug, info, warn or error"},
					&cli.StringFlag{Name: "log-format", Usage: "text or json (docs/logging.md); default isrbroker.log.format, text"},
				},
				Action: func(c *cli.Context) error { return brokerCommand(ctx, c, stderr) },
			},
			{
				Name:  "version",
				Usage: "print the version",
				Action: func(c *cli.Context) error {
					fmt.Fprintf(stdout, "isrbroker %s (Kafka %s protocol and replication, ZooKeeper mode)\n", Version, KafkaVersion)
					return nil
				},
			},
		}, append(admintool.Commands(), perf.Command(), health.Command(stdout))...),
	}
}

// brokerArgs resolves the config path and overrides from flags and, like
// kafka-server-start.sh, from positional arguments: "server.properties --override k=v".
func brokerArgs(c *cli.Context) (string, []string, error) {
	path := c.String("config")
	overrides := append([]string(nil), c.StringSlice("override")...)
	rest := c.Args().Slice()
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--override" || a == "-override":
			if i+1 >= len(rest) {
				return "", nil, errors.New("--override needs key=value")
			}
			overrides = append(overrides, rest[i+1])
			i++
		case strings.HasPrefix(a, "--override=") || strings.HasPrefix(a, "-override="):
			overrides = append(overrides, a[strings.IndexByte(a, '=')+1:])
		case path == "" && !strings.HasPrefix(a, "-"):
			path = a
		default:
			return "", nil, fmt.Errorf("unexpected argument %q", a)
		}
	}
	if path == "" {
		return "", nil, errors.New("no config file: use --config server.properties")
	}
	return path, overrides, nil
}

func brokerCommand(parent context.Context, c *cli.Context, stderr io.Writer) error {
	path, overrides, err := brokerArgs(c)
	if err != nil {
		return err
	}
	level, err := parseLogLevel(c.String("log-level"))
	if err != nil {
		return err
	}
	// server.properties < KAFKA_* environment variables < --override (docs/containers.md).
	cfg, report, err := config.LoadAll(config.Sources{Path: path, Environ: os.Environ(), Overrides: overrides})
	if err != nil {
		return err
	}
	logger, err := newLogger(stderr, level, logFormat(c.String("log-format"), cfg.LogFormat))
	if err != nil {
		return err
	}
	log := logger.WithFields(logrus.Fields{"brokerId": cfg.BrokerID, "component": componentServer})
	defer redirectStdLog(log)()
	for _, w := range report.Warnings {
		log.Warn(w)
	}
	if len(report.FromEnv) > 0 {
		set := make([]string, len(report.FromEnv))
		for i, s := range report.FromEnv {
			set[i] = s.Var + "->" + s.Key
		}
		log.WithField("settings", strings.Join(set, ",")).Info("config properties from environment variables")
	}
	if len(report.SkippedEnv) > 0 {
		log.WithField("variables", strings.Join(report.SkippedEnv, ",")).
			Info("environment variables of Kafka's JVM, logging or JMX skipped: they configure no broker setting")
	}

	ctx, stop := signal.NotifyContext(parent, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	b, err := startBroker(ctx, cfg, log)
	if err != nil {
		return err
	}
	var serveErr, dirsErr error
	select {
	case <-ctx.Done():
		// A second signal while stopping kills the process the default way.
		stop()
		log.Info("shutting down")
		if cfg.ControlledShutdownEnable {
			// K7: move this broker's leaderships away while it still serves.
			controlledShutdown(context.Background(), shutdownLocator{b.zk.Reader, b.zk.Registrar}, shutdownSettings{
				BrokerID: cfg.BrokerID, Listener: cfg.InterBrokerListenerName,
				MaxRetries: cfg.ControlledShutdownMaxRetries, RetryBackoff: cfg.ControlledShutdownRetryBackoff,
				Timeout: cfg.ControllerSocketTimeout, Security: b.interBroker,
			}, log)
		}
	case serveErr = <-b.serveErr:
		log.WithError(serveErr).Error("wire server stopped; shutting down")
	case dirs := <-b.dirsFailed:
		// Kafka halts here (LogManager: "Shutdown broker because all log dirs in ... have
		// failed"; docs/kafka-facts.md §12). isrbroker stops without a controlled shutdown: no
		// log is written again, the offline dirs get no clean shutdown marker (their logs are
		// recovered at the next start), and closing the ZooKeeper session moves the leaderships.
		dirsErr = fmt.Errorf("all log dirs in %s have failed", strings.Join(dirs, ", "))
		log.WithField("logDirs", dirs).Error("shutdown broker because all log dirs have failed")
	}
	b.shutdown()
	if serveErr != nil {
		return fmt.Errorf("wire server: %w", serveErr)
	}
	if dirsErr != nil {
		return dirsErr
	}
	log.Info("shut down cleanly")
	return nil
}

// LogConfig is the broker-wide log configuration (topic configs override it per topic).
func LogConfig(cfg *config.Config) logstore.Config {
	policy, _ := logstore.ParseCleanupPolicy(cfg.LogCleanupPolicy) // validated by broker/config
	tsType, _ := logstore.ParseTimestampType(cfg.LogMessageTimestampType)
	return logstore.Config{
		SegmentBytes:          int64(cfg.LogSegmentBytes),
		SegmentMs:             cfg.LogRoll(),
		RetentionMs:           cfg.LogRetentionMs,
		RetentionBytes:        cfg.LogRetentionBytes,
		IndexIntervalBytes:    cfg.LogIndexIntervalBytes,
		MaxMessageBytes:       cfg.MessageMaxBytes,
		FlushIntervalMessages: cfg.LogFlushIntervalMessages,
		FlushInterval:         cfg.LogFlushInterval(),
		FileDeleteDelay:       cfg.FileDeleteDelay,
		CleanupPolicy:         policy,
		MinCleanableRatio:     cfg.LogCleanerMinCleanableRatio,
		MinCompactionLagMs:    cfg.LogCleanerMinCompactionLagMs,
		MaxCompactionLagMs:    cfg.LogCleanerMaxCompactionLagMs,
		DeleteRetentionMs:     cfg.LogCleanerDeleteRetentionMs,
		TimestampType:         tsType,
		TimestampDiffMaxMs:    cfg.LogMessageTimestampDiffMaxMs,
		TimestampDiffLimited:  cfg.LogMessageTimestampDiffMaxMs != config.NeverMs,
	}
}

// LogCleanerConfig is the broker's log cleaner configuration (log.cleaner.*).
// connectionLimits are the wire server's connection settings (validated by config.Validate).
func connectionLimits(cfg *config.Config) *broker.ConnectionLimits {
	overrides, _ := config.ParsePerIPOverrides(cfg.MaxConnectionsPerIPOverrides)
	return &broker.ConnectionLimits{
		MaxConnections:      int(cfg.MaxConnections),
		MaxConnectionsPerIP: int(cfg.MaxConnectionsPerIP),
		PerIPOverrides:      overrides,
		IdleTimeout:         cfg.ConnectionsMaxIdle,
		ProtectedListener:   cfg.InterBrokerListenerName,
	}
}

func LogCleanerConfig(cfg *config.Config, reg metrics.Registry) logstore.CleanerConfig {
	return logstore.CleanerConfig{
		Enable: cfg.LogCleanerEnable, Threads: cfg.LogCleanerThreads, Backoff: cfg.LogCleanerBackoff,
		DedupeBufferSize: cfg.LogCleanerDedupeBufferSize, Registry: reg,
	}
}

// runningBroker holds the started components for the reverse-order shutdown.
type runningBroker struct {
	log      logrus.FieldLogger
	logs     *logstore.Manager
	zk       *zkcoord.Coordinator
	rmgr     *replicamanager.ReplicaManager
	srv      *broker.Server
	groups   *groupcoord.Coordinator
	bgCancel context.CancelFunc
	bg       sync.WaitGroup
	serveErr chan error
	// dirsFailed receives the log dirs once none is online (the replica manager's
	// SetAllLogDirsOffline): the broker shuts down.
	dirsFailed chan []string
	metrics    net.Addr       // bound metrics address, nil when disabled
	page       *replview.Page // served on the metrics listener from the start, 503 until Start
	// interBroker secures the broker's own connections to the inter-broker listener (fetchers,
	// controller channel, controlled shutdown), built by interBrokerSecurity
	// (interbroker_security.go) from that listener's keys; the zero value is PLAINTEXT.
	interBroker kproto.Security
}

// startBroker constructs and starts everything. On error whatever was started is stopped
// again and the error says which step failed.
func startBroker(ctx context.Context, cfg *config.Config, log *logrus.Entry) (_ *runningBroker, err error) {
	reg := metrics.NewRegistry()
	bgCtx, bgCancel := context.WithCancel(context.Background())
	events := replevents.New(cfg.BrokerID, 0) // the replication page's event journal
	b := &runningBroker{log: log, bgCancel: bgCancel, serveErr: make(chan error, 1), dirsFailed: make(chan []string, 1),
		page: replview.NewPage(cfg.BrokerID, events)}
	defer func() {
		if err != nil {
			b.shutdown()
		}
	}()

	// The metrics port is bound first so that a taken port is a start-up error.
	if cfg.MetricsListen != "" {
		ln, lerr := net.Listen("tcp", cfg.MetricsListen)
		if lerr != nil {
			return nil, fmt.Errorf("metrics.listen %s: %w", cfg.MetricsListen, lerr)
		}
		b.metrics = ln.Addr()
		b.bg.Add(1)
		go func() {
			defer b.bg.Done()
			if serr := metricsexport.ServeHandler(bgCtx, ln, httpMux(reg, b.page, pprofRoutes(cfg, log))); serr != nil {
				log.WithError(serr).Error("metrics endpoint stopped")
			}
		}()
		log.WithField("addr", ln.Addr().String()).Info("serving Prometheus metrics at /metrics and the replication page at /replication")
	}

	// The inter-broker listener's client side (interbroker_security.go), before the controller
	// channel, the fetchers and the controlled-shutdown client that use it.
	if b.interBroker, err = interBrokerSecurity(cfg); err != nil {
		return nil, err
	}

	logCfg := LogConfig(cfg)
	b.logs, err = logstore.Open(cfg.LogDirs, cfg.BrokerID, logCfg, log.WithField("component", componentLog))
	if err != nil {
		return nil, fmt.Errorf("log.dirs %s: %w", strings.Join(cfg.LogDirs, ","), err)
	}
	b.logs.SetMetricsRegistry(reg) // kafka.log:type=Log gauges per partition (docs/metrics.md)

	endpoints := make([]zkcoord.Endpoint, 0, len(cfg.AdvertisedListeners))
	for _, l := range cfg.AdvertisedListeners {
		endpoints = append(endpoints, zkcoord.Endpoint{Listener: l.Name, Host: l.Host, Port: int32(l.Port), SecurityProtocol: l.SecurityProtocol})
	}
	// The coordinator reports every (re-)registration's broker epoch (KIP-380); the replica
	// manager is built after the coordinator, so the callback goes through a pointer.
	var rmgrRef atomic.Pointer[replicamanager.ReplicaManager]
	b.zk, err = zkcoord.Connect(ctx, zkcoord.Config{
		Connect:                 cfg.ZookeeperConnect,
		SessionTimeout:          cfg.ZookeeperSessionTimeout,
		ConnectionTimeout:       cfg.ZookeeperConnectionTimeout,
		BrokerID:                cfg.BrokerID,
		Endpoints:               endpoints,
		Rack:                    cfg.BrokerRack,
		InterBrokerListener:     cfg.InterBrokerListenerName,
		ControllerSocketTimeout: cfg.ControllerSocketTimeout,
		LocalAddr:               cfg.LocalAddress, // isrbroker.local.address: controller channel and ZooKeeper session
		UncleanLeaderElection:   cfg.UncleanLeaderElectionEnable,
		DeleteTopicEnable:       cfg.DeleteTopicEnable,
		Registry:                reg,
		// K7: automatic leader rebalance (zkcoord/preferred.go).
		AutoLeaderRebalance:                cfg.AutoLeaderRebalanceEnable,
		LeaderImbalanceCheckInterval:       cfg.LeaderImbalanceCheckInterval,
		LeaderImbalancePerBrokerPercentage: cfg.LeaderImbalancePerBrokerPercentage,
		InterBrokerSecurity:                b.interBroker, // the controller's channel to the brokers
		OnBrokerEpoch: func(e int64) {
			if r := rmgrRef.Load(); r != nil {
				r.SetBrokerEpoch(e)
			}
		},
		OnControllerChange: b.page.OnControllerChange, // the page's journal records the controller's elections (S9)
		Log:                log.WithField("component", componentZooKeeper),
	})
	if err != nil {
		return nil, fmt.Errorf("zookeeper.connect %s: %w", cfg.ZookeeperConnect, err)
	}

	b.rmgr = replicamanager.New(replicamanager.Config{
		BrokerID:                        cfg.BrokerID,
		ReplicaLagTimeMax:               cfg.ReplicaLagTimeMax,
		MinInsyncReplicas:               cfg.MinInsyncReplicas,
		HighWatermarkCheckpointInterval: cfg.ReplicaHighWatermarkCheckpointInterval,
		NumReplicaFetchers:              cfg.NumReplicaFetchers,
		ReplicaFetchWaitMax:             cfg.ReplicaFetchWaitMax,
		ReplicaFetchMinBytes:            cfg.ReplicaFetchMinBytes,
		ReplicaFetchMaxBytes:            cfg.ReplicaFetchMaxBytes,
		ReplicaFetchResponseMaxBytes:    cfg.ReplicaFetchResponseMaxBytes,
		ReplicaFetchBackoff:             cfg.ReplicaFetchBackoff,
		ReplicaSocketTimeout:            cfg.ReplicaSocketTimeout,
		UncleanLeaderElection:           cfg.UncleanLeaderElectionEnable,
		ReplicaSelector:                 cfg.ReplicaSelectorClass, // KIP-392
		LocalAddr:                       cfg.LocalAddress,         // isrbroker.local.address: replica fetchers
		LogDefaults:                     logCfg,
		Events:                          events,
		Registry:                        reg,
		Log:                             log.WithField("component", componentReplicaManager),
		InterBrokerSecurity:             b.interBroker,
	}, b.logs, replicaCoordinatorOf(b.zk))
	rmgrRef.Store(b.rmgr)
	b.rmgr.SetAllLogDirsOffline(func(dirs []string) {
		select {
		case b.dirsFailed <- dirs:
		default:
		}
	})
	b.page.Start(b.rmgr.Requests(), b.zk, log)

	acls, err := newAuthorizer(cfg, b.zk)
	if err != nil {
		return nil, err
	}
	listeners := make([]broker.Listener, 0, len(cfg.Listeners))
	for _, l := range cfg.Listeners {
		sec, err := broker.NewListenerSecurity(cfg, l, scramCredentials(b.zk))
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, broker.Listener{Name: l.Name, Host: l.Host, Port: int32(l.Port), Security: sec})
	}
	b.srv = broker.New(broker.Config{
		BrokerID:                 cfg.BrokerID,
		ClusterID:                b.zk.ClusterID(),
		Listeners:                listeners,
		SocketRequestMaxBytes:    cfg.SocketRequestMaxBytes,
		AutoCreateTopics:         cfg.AutoCreateTopicsEnable,
		NumPartitions:            cfg.NumPartitions,
		DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		// Clients wait for the controller's first UpdateMetadata (registration may first wait
		// for a stale znode of this broker to expire, up to the session timeout).
		ClientWaitForMetadata: cfg.ZookeeperSessionTimeout + 5*time.Second,
		StaticConfig:          cfg.Props,
		Connections:           connectionLimits(cfg),
		// SASL: a failed authentication's close waits (connection.failed.authentication.delay.ms).
		FailedAuthenticationDelay: cfg.ConnectionFailedAuthenticationDelay,
		Registry:                  reg,
		Log:                       log,

		FetchSessionCacheSlots: fetchSessionSlots(cfg.MaxIncrementalFetchSessionCacheSlots),
		// Client quotas (docs/quotas.md): the windows and the deprecated static defaults.
		ClientQuotas: clientquota.Settings{NumWindows: cfg.QuotaWindowNum, WindowSize: cfg.QuotaWindowSize,
			ProducerDefault: cfg.QuotaProducerDefault, ConsumerDefault: cfg.QuotaConsumerDefault},
	}, brokerDeps(b.rmgr, b.zk, acls))
	// NOT_LEADER_OR_FOLLOWER versus UNKNOWN_TOPIC_OR_PARTITION comes from the metadata cache.
	md := b.srv.Metadata()
	b.rmgr.SetKnownPartition(func(tp replicamanager.TopicPartition) bool {
		_, ok := md.Partition(tp.Topic, tp.Partition)
		return ok
	})
	// The replica selector's racks (KIP-392): UpdateMetadata's live brokers.
	b.rmgr.SetReplicaEndpoint(md.ReplicaEndpoint)
	// DeleteRecords' low watermark counts the followers on live brokers only.
	b.rmgr.SetAliveBroker(func(id int32) bool {
		_, ok := md.Snapshot().Brokers[id]
		return ok
	})

	// The group coordinator (consumer groups, __consumer_offsets): after the replica manager
	// and the wire server, before the first request and the first LeaderAndIsr.
	b.groups = groupcoord.New(groupcoord.Config{
		BrokerID:                      cfg.BrokerID,
		OffsetsTopicNumPartitions:     cfg.OffsetsTopicNumPartitions,
		OffsetsTopicReplicationFactor: cfg.OffsetsTopicReplicationFactor,
		OffsetsTopicSegmentBytes:      cfg.OffsetsTopicSegmentBytes,
		OffsetsCommitRequiredAcks:     cfg.OffsetsCommitRequiredAcks,
		OffsetsCommitTimeout:          cfg.OffsetsCommitTimeout,
		OffsetsRetention:              cfg.OffsetsRetention,
		OffsetsRetentionCheckInterval: cfg.OffsetsRetentionCheckInterval,
		OffsetsLoadBufferSize:         cfg.OffsetsLoadBufferSize,
		OffsetMetadataMaxBytes:        cfg.OffsetMetadataMaxBytes,
		GroupMinSessionTimeout:        cfg.GroupMinSessionTimeout,
		GroupMaxSessionTimeout:        cfg.GroupMaxSessionTimeout,
		GroupInitialRebalanceDelay:    cfg.GroupInitialRebalanceDelay,
		GroupMaxSize:                  cfg.GroupMaxSize,
		Registry:                      reg,
		Log:                           log.WithField("component", componentCoordinator),
	}, b.rmgr.Requests(), broker.GroupMetadata{Cache: md}, b.zk.Admin)
	b.rmgr.SetLeadershipListener(b.groups.OnLeadershipChange)
	b.srv.SetGroupCoordinator(b.groups)
	b.groups.Start()

	if err = b.srv.Listen(); err != nil {
		return nil, err
	}
	go func() { b.serveErr <- b.srv.Serve() }()
	b.rmgr.Start()

	if addr := pageAddress(cfg, b.metrics); addr != "" {
		b.page.Publish(b.zk, addr, log) // for the other brokers' cluster views
	}
	epoch, err := b.zk.Registrar.Register(ctx)
	if err != nil {
		if errors.Is(err, zkcoord.ErrBrokerIDInUse) {
			return nil, fmt.Errorf("broker.id %d is registered in ZooKeeper by another live broker", cfg.BrokerID)
		}
		return nil, fmt.Errorf("registering broker.id %d in ZooKeeper: %w", cfg.BrokerID, err)
	}
	b.rmgr.SetBrokerEpoch(epoch)
	b.zk.StartController()

	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		b.logs.RunBackground(bgCtx, cfg.LogRetentionCheckInterval, cfg.LogFlushOffsetCheckpointInterval)
	}()
	b.logs.StartCleaner(LogCleanerConfig(cfg, reg)) // stopped by b.logs.Close

	log.WithFields(logrus.Fields{"brokerEpoch": epoch, "clusterId": b.zk.ClusterID()}).Info("broker started")
	return b, nil
}

// shutdown stops the components in reverse order of start: wire server, group coordinator
// (parked joins are answered NOT_COORDINATOR), replica manager
// (fetchers, delayed operations, HW checkpoint), then at once the ZooKeeper session (the
// registration and any controller znode vanish) and the background log tasks followed by
// the logs, whose Close writes the clean-shutdown marker.
func (b *runningBroker) shutdown() {
	// Each step's duration goes into one summary line (docs/performance.md, "Controller at
	// scale": where a controlled shutdown's time goes once the controller has answered).
	steps := logrus.Fields{}
	t := time.Now()
	step := func(name string) {
		now := time.Now()
		steps[name] = now.Sub(t).Round(time.Millisecond)
		t = now
	}
	if b.srv != nil {
		if err := b.srv.Close(); err != nil {
			b.log.WithError(err).Warn("closing the wire server")
		}
	}
	step("stopServer")
	if b.groups != nil {
		b.groups.Close()
	}
	step("stopGroups")
	if b.rmgr != nil {
		b.rmgr.SetLeadershipListener(nil)
		b.rmgr.Shutdown()
	}
	step("stopReplicas")
	// The ZooKeeper session is closed (a round trip; its ephemeral registration goes) while the
	// logs close: neither needs the other once the replica manager has stopped, and a
	// controlled shutdown waits for both (docs/performance.md, "Controller at scale").
	zkClosed := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		if b.zk != nil {
			if err := b.zk.Close(); err != nil {
				b.log.WithError(err).Warn("closing the ZooKeeper session")
			}
		}
		zkClosed <- time.Since(start)
	}()
	b.bgCancel()
	b.bg.Wait()
	step("stopBackground")
	if b.logs != nil {
		if err := b.logs.Close(); err != nil {
			b.log.WithError(err).Error("closing the logs")
		}
	}
	step("stopLogs")
	steps["stopZooKeeper"] = (<-zkClosed).Round(time.Millisecond)
	b.log.WithFields(steps).Info("stopped the components")
}

// fetchSessionSlots maps max.incremental.fetch.session.cache.slots to broker.Config's
// FetchSessionCacheSlots, whose 0 means the default: 0 slots (no sessions) is -1 there.
func fetchSessionSlots(slots int32) int32 {
	if slots == 0 {
		return -1
	}
	return slots
}
