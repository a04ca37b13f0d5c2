package main

import (
	"fmt"
	"io"
	stdlog "log"

	"github.com/sirupsen/logrus"
)

// The broker's log components (docs/logging.md): every line carries a "component" field, the
// way Kafka writes server.log, controller.log, state-change.log, log-cleaner.log and the
// group coordinator's lines apart. The wiring derives one logger per component from the
// root logger; packages narrow it further where Kafka has a separate logger (the
// controller's state-change lines, the fetchers, the cleaner, the group coordinator).
const (
	componentServer         = "server"          // start-up, shutdown, the wire server's listeners and connections
	componentLog            = "log"             // logstore: segments, recovery, retention, checkpoints
	componentZooKeeper      = "zookeeper"       // zkcoord: the session, registration, ISR writes
	componentReplicaManager = "replica-manager" // partitions: leadership, ISR, HW, delayed operations
	componentCoordinator    = "coordinator"     // the group coordinator (broker/groupcoord)
	componentReplication    = "replication-page"
)

// Log formats of isrbroker.log.format and --log-format.
const (
	logFormatText = "text"
	logFormatJSON = "json"
)

// timestampFormat is the time of every line, in both formats: RFC 3339 with milliseconds.
const timestampFormat = "2006-01-02T15:04:05.000Z07:00"

// parseLogLevel checks --log-level before anything else runs.
func parseLogLevel(level string) (logrus.Level, error) {
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return 0, fmt.Errorf("invalid --log-level %q: trace, debug, info, warn or error", level)
	}
	return lvl, nil
}

// newLogger builds the root logger: text (logrus key=value) or JSON (one object per line
// with the stable keys time, level, msg and the fields of docs/logging.md).
func newLogger(out io.Writer, level logrus.Level, format string) (*logrus.Logger, error) {
	l := logrus.New()
	l.SetOutput(out)
	l.SetLevel(level)
	switch format {
	case logFormatText:
		l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: timestampFormat})
	case logFormatJSON:
		l.SetFormatter(&logrus.JSONFormatter{TimestampFormat: timestampFormat, FieldMap: logrus.FieldMap{
			logrus.FieldKeyTime: "time", logrus.FieldKeyLevel: "level", logrus.FieldKeyMsg: "msg",
		}})
	default:
		return nil, fmt.Errorf("invalid --log-format %q: text or json", format)
	}
	return l, nil
}

// logFormat is --log-format when given, else isrbroker.log.format (validated by broker/config).
func logFormat(flag, configured string) string {
	if flag != "" {
		return flag
	}
	return configured
}

// redirectStdLog sends what libraries write through Go's standard log package (net/http's
// server errors on the metrics listener) into the broker's log as warnings of component
// server, so that a JSON log holds only JSON lines. The returned function restores it.
func redirectStdLog(log *logrus.Entry) (restore func()) {
	w := log.WithField("component", componentServer).WriterLevel(logrus.WarnLevel)
	prevOut, prevFlags := stdlog.Writer(), stdlog.Flags()
	stdlog.SetOutput(w)
	stdlog.SetFlags(0)
	return func() {
		stdlog.SetOutput(prevOut)
		stdlog.SetFlags(prevFlags)
		_ = w.Close()
	}
}
