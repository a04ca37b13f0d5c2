package logstore

import "sync"

// dirSyncer makes directory entries durable with group commit: an fsync of a directory covers
// every entry created in it before the fsync started, so callers that need their new entry
// durable share one fsync instead of each running its own. Fsyncs of one directory serialise
// in the file system, which made creating thousands of logs (a LeaderAndIsr for a new topic)
// cost one directory fsync each (docs/performance.md, "Controller at scale").
type dirSyncer struct {
	dir     string
	fs      FS
	mu      sync.Mutex
	cond    *sync.Cond
	running bool
	started uint64 // fsyncs started
	done    uint64 // fsyncs finished (they run one at a time, in order)
	errSeq  uint64 // the latest finished fsync that failed
	err     error
}

func newDirSyncer(fsys FS, dir string) *dirSyncer {
	d := &dirSyncer{dir: dir, fs: fsOr(fsys)}
	d.cond = sync.NewCond(&d.mu)
	return d
}

// sync returns once an fsync of the directory that started after the call has finished; its
// error, or that of a later one.
func (d *dirSyncer) sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	// A running fsync may have started before this caller's entry was created: the next one.
	need := d.started + 1
	for d.done < need {
		if d.running {
			d.cond.Wait()
			continue
		}
		d.running = true
		d.started++
		seq := d.started
		d.mu.Unlock()
		err := syncDir(d.fs, d.dir)
		d.mu.Lock()
		d.running = false
		d.done = seq
		if err != nil {
			d.errSeq, d.err = seq, err
		}
		d.cond.Broadcast()
	}
	if d.errSeq >= need {
		return d.err
	}
	return nil
}
