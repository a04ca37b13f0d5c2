package logstore

import (
	"testing"
	"time"
)

// ReconfigureCleaner restarts the cleaner threads with the new settings (KIP-226, Kafka's
// LogCleaner.reconfigure): a cleaner sleeping out a one-hour backoff cleans a dirty log at once
// after its backoff is lowered dynamically, with the new thread count; deleting the override
// returns to the static settings; after Close nothing restarts.
func TestReconfigureCleanerRestartsThreads(t *testing.T) {
	dir := t.TempDir()
	m, err := Open([]string{dir}, 1, testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	static := CleanerConfig{Enable: true, Threads: 1, Backoff: time.Hour, DedupeBufferSize: 1 << 20}
	m.StartCleaner(static) // no log yet: the thread finds nothing and sleeps for an hour
	tp := TopicPartition{Topic: "c", Partition: 0}
	l, err := m.GetOrCreate(tp, compactConfig())
	if err != nil {
		t.Fatal(err)
	}
	fillKeys(t, l, 300, 10, time.Now().UnixMilli(), 1)
	l.SetHighWatermark(l.LogEndOffset())

	m.ReconfigureCleaner(CleanerOverrides{Threads: 2, Backoff: 10 * time.Millisecond})
	deadline := time.Now().Add(10 * time.Second)
	for l.status().cleanerCheckpoint <= 0 {
		if time.Now().After(deadline) {
			t.Fatal("the reconfigured cleaner never cleaned the dirty log")
		}
		time.Sleep(5 * time.Millisecond) // polling the cleaner's progress; not synchronisation
	}
	c := m.cleaner
	c.mu.Lock()
	threads, stats := c.cfg.Threads, len(c.lastStats)
	c.mu.Unlock()
	if threads != 2 || stats != 2 {
		t.Fatalf("cleaner threads %d (stats %d), want 2", threads, stats)
	}

	m.ReconfigureCleaner(CleanerOverrides{}) // the dynamic values deleted: back to server.properties'
	c.mu.Lock()
	got := c.cfg
	c.mu.Unlock()
	if got.Threads != static.Threads || got.Backoff != static.Backoff || got.DedupeBufferSize != static.DedupeBufferSize {
		t.Fatalf("after the overrides were deleted: %+v, want the static %+v", got, static)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m.ReconfigureCleaner(CleanerOverrides{Threads: 3}) // after Close: nothing restarts
	c.mu.Lock()
	threads = c.cfg.Threads
	c.mu.Unlock()
	if threads != static.Threads {
		t.Fatalf("a closed manager's cleaner was reconfigured to %d threads", threads)
	}
}
