package replicamanager

import (
	"context"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/logstore"
)

// backgroundTasks are the replica manager's lifecycle and scheduled tasks (Kafka's
// isr-expiration and highwatermark-checkpoint tasks, and the LogDirFailureHandler thread): the
// ISR-shrink task (S10), the HW checkpoint and the watch of offline log dirs.
type backgroundTasks struct {
	pool      *partitionPool
	purgatory *purgatory
	logs      *logstore.Manager
	log       *logrus.Entry
	now       func() time.Time
	fetcher   fetcherManager
	dirs      *logDirs
	// shrinkEvery is replica.lag.time.max.ms/2 (S10), checkpointEvery
	// replica.high.watermark.checkpoint.interval.ms.
	shrinkEvery, checkpointEvery time.Duration

	startOnce sync.Once
	stopOnce  sync.Once
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// start runs the background tasks: the ISR-shrink task every replica.lag.time.max.ms/2 (S10),
// the HW checkpoint every replica.high.watermark.checkpoint.interval.ms and the watch of
// offline log dirs (logdir_failure.go).
func (t *backgroundTasks) start() {
	t.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		t.cancel = cancel
		t.wg.Add(3)
		go func() {
			defer t.wg.Done()
			t.dirs.watchLogDirFailures(ctx)
		}()
		go t.every(ctx, t.shrinkEvery, t.maybeShrinkIsr)
		go t.every(ctx, t.checkpointEvery, func() { _ = t.checkpointHighWatermarks() })
	})
}

func (t *backgroundTasks) every(ctx context.Context, d time.Duration, f func()) {
	defer t.wg.Done()
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			f()
		}
	}
}

// shutdown stops fetchers and background tasks and writes a final HW checkpoint.
func (t *backgroundTasks) shutdown() {
	t.stopOnce.Do(func() {
		if t.cancel != nil {
			t.cancel()
		}
		t.wg.Wait()
		t.fetcher.Close()
		if err := t.checkpointHighWatermarks(); err != nil {
			t.log.WithError(err).Warn("final high watermark checkpoint failed")
		}
	})
}

// maybeShrinkIsr runs the ISR-shrink step on every partition this broker leads (S10).
func (t *backgroundTasks) maybeShrinkIsr() {
	now := t.now()
	for _, p := range t.pool.allPartitions() {
		if p.maybeShrinkIsr(now) {
			t.purgatory.checkAndComplete(p.tp)
		}
	}
}

// checkpointHighWatermarks writes every hosted partition's HW to replication-offset-checkpoint.
func (t *backgroundTasks) checkpointHighWatermarks() error {
	hws := make(map[TopicPartition]int64)
	for _, p := range t.pool.allPartitions() {
		hws[p.tp] = p.HighWatermark()
	}
	if err := t.logs.CheckpointHighWatermarks(hws); err != nil {
		t.log.WithError(err).Warn("writing replication-offset-checkpoint")
		return err
	}
	return nil
}
