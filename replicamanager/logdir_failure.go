package replicamanager

import (
	"context"
	"sort"
	"sync/atomic"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/isrbroker/isrbroker/logstore"
)

// Offline log dirs (Kafka's ReplicaManager.handleLogDirFailure, KIP-112; docs/kafka-facts.md
// §12). logstore takes a log dir offline at its first I/O error and reports it on
// LogDirFailures; the replica manager then, under the state change lock, stops the fetchers of
// the partitions whose logs are in that dir and marks them offline (not leader, not follower:
// produce, fetch and LeaderAndIsr for them answer KAFKA_STORAGE_ERROR, and no ISR change is
// written for them any more), completes their delayed operations, tells the controller through
// the LogDirFailureNotifier (zkcoord writes /log_dir_event_notification) and, when no log dir
// is online any more, asks the broker to shut down. The controller then sends LeaderAndIsr for
// every replica of this broker; the offline ones answer KAFKA_STORAGE_ERROR and the controller
// elects other leaders from the ISR.

// LogDirFailureNotifier tells the controller that a log dir of this broker went offline;
// zkcoord implements it.
type LogDirFailureNotifier interface {
	PropagateLogDirEvent() error
}

// logDirs is the log-dir side of the replica manager: DescribeLogDirs (log_dirs.go) and the
// handling of offline log dirs.
type logDirs struct {
	pool      *partitionPool
	logs      *logstore.Manager
	log       *logrus.Entry
	fetcher   fetcherManager
	purgatory *purgatory
	// ctl serialises taking partitions offline with the controller's requests (its state
	// change lock) and tells the leadership listener.
	ctl *controllerRequests
	// notifier tells the controller about an offline log dir (nil: no one to tell) and
	// allDirsOffline shuts the broker down when none is left; set by main.
	notifier       LogDirFailureNotifier
	allDirsOffline atomic.Pointer[func(dirs []string)]
}

// watchLogDirFailures handles each log dir that goes offline until ctx is done (Kafka's
// LogDirFailureHandler thread).
func (d *logDirs) watchLogDirFailures(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case dir := <-d.logs.LogDirFailures():
			d.handleLogDirFailure(dir)
		}
	}
}

// handleLogDirFailure takes the partitions whose logs are in the offline dir offline, tells the
// controller, and shuts the broker down when no dir is left.
func (d *logDirs) handleLogDirFailure(dir string) {
	log := d.log.WithFields(logrus.Fields{"component": "state-change", "logDir": dir})
	log.Warn("stopping serving replicas in the offline log dir")
	d.ctl.stateChangeLock.Lock()
	var offline []TopicPartition
	var parts []*Partition
	for _, p := range d.pool.allPartitions() {
		if p.log.Offline() && markOffline(p) {
			offline = append(offline, p.tp)
			parts = append(parts, p)
		}
	}
	sort.Slice(offline, func(i, j int) bool {
		if offline[i].Topic != offline[j].Topic {
			return offline[i].Topic < offline[j].Topic
		}
		return offline[i].Partition < offline[j].Partition
	})
	d.fetcher.RemoveFetcherForPartitions(offline)
	d.ctl.stateChangeLock.Unlock()
	for _, tp := range offline {
		d.purgatory.checkAndComplete(tp) // parked produces answer KAFKA_STORAGE_ERROR
	}
	d.ctl.notifyLeadership(nil, offline)
	l := log.WithField("partitions", len(parts))
	if len(offline) > 0 {
		l = l.WithField("topic", offline[0].Topic).WithField("partition", offline[0].Partition)
	}
	l.Warn("stopped fetchers and marked offline the partitions of the offline log dir (topic and partition: the first)")
	if d.notifier != nil {
		if err := d.notifier.PropagateLogDirEvent(); err != nil {
			log.WithError(err).Error("telling the controller about the offline log dir failed")
		}
	}
	if d.logs.LiveLogDirs() == 0 {
		dirs := d.logs.OfflineLogDirs()
		d.log.WithField("logDirs", dirs).Error("all log dirs have failed: shutting the broker down")
		if f := d.allDirsOffline.Load(); f != nil {
			(*f)(dirs)
		}
	}
}

// markOffline makes the partition p offline (Kafka's HostedPartition.Offline): no longer leader
// or follower, so it serves nothing and writes no ISR change. It returns false when it was
// offline already.
func markOffline(p *Partition) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.offline {
		return false
	}
	p.offline = true
	p.leaderID, p.leader = -1, nil
	return true
}

// isOffline reports whether the partition's log dir is offline.
func (p *Partition) isOffline() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.offline
}

// storageErrorCode is KAFKA_STORAGE_ERROR, the answer for a partition in an offline log dir.
var storageErrorCode = kerr.KafkaStorageError.Code
