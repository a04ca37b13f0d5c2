package logstore

import (
	"sync"
	"testing"
)

// TestGetOrCreateInParallel: logs are created concurrently (outside the manager's lock); the
// same partition asked for by several goroutines yields one log, the dirs are filled evenly
// (the dir with the fewest logs first), and Close closes them all on its worker pool.
func TestGetOrCreateInParallel(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	cfg := testConfig()
	m, _ := openTestManager(t, dirs, cfg, nil)
	const parts = 40
	got := make([][]*Log, parts)
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		got[p] = make([]*Log, 3)
		for k := 0; k < 3; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := m.GetOrCreate(TopicPartition{Topic: "par", Partition: int32(p)}, cfg)
				if err != nil {
					t.Error(err)
				}
				got[p][k] = l
			}()
		}
	}
	wg.Wait()
	perDir := map[string]int{}
	for p := 0; p < parts; p++ {
		if got[p][0] == nil || got[p][0] != got[p][1] || got[p][0] != got[p][2] {
			t.Fatalf("partition %d: %p %p %p, want one log", p, got[p][0], got[p][1], got[p][2])
		}
		perDir[m.dirOf[TopicPartition{Topic: "par", Partition: int32(p)}]]++
	}
	if perDir[dirs[0]] != parts/2 || perDir[dirs[1]] != parts/2 {
		t.Fatalf("logs per dir %v, want %d each", perDir, parts/2)
	}
	if m.dirLogs[dirs[0]] != parts/2 || m.dirLogs[dirs[1]] != parts/2 || len(m.creating) != 0 {
		t.Fatalf("dir counts %v, creating %v", m.dirLogs, m.creating)
	}
	if err := m.Delete(TopicPartition{Topic: "par", Partition: 0}); err != nil {
		t.Fatal(err)
	}
	if m.dirLogs[dirs[0]]+m.dirLogs[dirs[1]] != parts-1 {
		t.Fatalf("dir counts after a deletion %v", m.dirLogs)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetOrCreate(TopicPartition{Topic: "par", Partition: 99}, cfg); err != ErrClosed {
		t.Fatalf("create after Close: %v, want ErrClosed", err)
	}
}
