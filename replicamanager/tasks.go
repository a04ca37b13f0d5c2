package replicamanager

import (
	"context"
	"time"
)

// This file holds the replica manager's lifecycle and background tasks: the ISR-shrink task (S10)
// and the HW checkpoint.

// Start runs the background tasks: the ISR-shrink task every replica.lag.time.max.ms/2 (S10) and
// the HW checkpoint every replica.high.watermark.checkpoint.interval.ms.
func (rm *ReplicaManager) Start() {
	rm.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		rm.cancel = cancel
		rm.wg.Add(3)
		go rm.watchLogDirFailures(ctx)
		go rm.every(ctx, rm.cfg.ReplicaLagTimeMax/2, rm.maybeShrinkIsr)
		go rm.every(ctx, rm.cfg.HighWatermarkCheckpointInterval, func() { _ = rm.checkpointHighWatermarks() })
	})
}

func (rm *ReplicaManager) every(ctx context.Context, d time.Duration, f func()) {
	defer rm.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// Shutdown stops fetchers and background tasks and writes a final HW checkpoint.
func (rm *ReplicaManager) Shutdown() {
	rm.stopOnce.Do(func() {
		if rm.cancel != nil {
			rm.cancel()
		}
		rm.wg.Wait()
		rm.fetcher.Close()
		if err := rm.checkpointHighWatermarks(); err != nil {
			rm.log.WithError(err).Warn("final high watermark checkpoint failed")
		}
	})
}

// maybeShrinkIsr runs the ISR-shrink step on every partition this broker leads (S10).
func (rm *ReplicaManager) maybeShrinkIsr() {
	now := rm.now()
	for _, p := range rm.allPartitions() {
		if p.maybeShrinkIsr(now) {
			rm.purgatory.checkAndComplete(p.tp)
		}
	}
}

// checkpointHighWatermarks writes every hosted partition's HW to replication-offset-checkpoint.
func (rm *ReplicaManager) checkpointHighWatermarks() error {
	hws := make(map[TopicPartition]int64)
	for _, p := range rm.allPartitions() {
		hws[p.tp] = p.HighWatermark()
	}
	if err := rm.logs.CheckpointHighWatermarks(hws); err != nil {
		rm.log.WithError(err).Warn("writing replication-offset-checkpoint")
		return err
	}
	return nil
}
