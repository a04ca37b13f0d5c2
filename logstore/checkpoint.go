package logstore

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Checkpoint file names (docs/kafka-facts.md §6).
const (
	recoveryPointCheckpointFile = "recovery-point-offset-checkpoint"
	replicationCheckpointFile   = "replication-offset-checkpoint"
	logStartCheckpointFile      = "log-start-offset-checkpoint"
	leaderEpochCheckpointFile   = "leader-epoch-checkpoint"
	cleanShutdownFile           = ".kafka_cleanshutdown"
	metaPropertiesFile          = "meta.properties"
	checkpointVersion           = 0
)

// writeFileAtomic writes data to path through `<path>.tmp` + fsync + rename + fsync of the
// directory, so a crash leaves either the old or the new file, never a torn one.
func writeFileAtomic(fsys FS, path string, data []byte) error {
	tmp := path + ".tmp"
	if err := writeSynced(fsys, tmp, data); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(fsys, filepath.Dir(path))
}

// writeSynced writes data to path (created or truncated) and fsyncs it.
func writeSynced(fsys FS, path string, data []byte) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// removeAfter removes paths after delay (file.delete.delay.ms), at once when delay <= 0.
func removeAfter(fsys FS, paths []string, delay time.Duration) {
	remove := func() {
		for _, p := range paths {
			fsys.Remove(p)
		}
	}
	if delay <= 0 {
		remove()
	} else {
		time.AfterFunc(delay, remove)
	}
}

// syncDir fsyncs a directory so a rename or create in it is durable.
func syncDir(fsys FS, dir string) error { return syncDirFS(fsys, dir) }

// formatOffsetCheckpoint renders Kafka's per-dir checkpoint format: version 0, the entry
// count, then one `topic partition offset` line per entry (sorted for stable output).
func formatOffsetCheckpoint(entries map[TopicPartition]int64) []byte {
	tps := make([]TopicPartition, 0, len(entries))
	for tp := range entries {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(tps))
	for _, tp := range tps {
		fmt.Fprintf(&b, "%s %d %d\n", tp.Topic, tp.Partition, entries[tp])
	}
	return b.Bytes()
}

// readCheckpointLines reads a checkpoint file, checks the version and count, and returns the
// entry lines split into fields (each with exactly want fields). A missing file returns
// (nil, nil).
func readCheckpointLines(fsys FS, path string, want int) ([][]string, error) {
	data, err := readFileFS(fsys, path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return strings.TrimSpace(sc.Text()), true
	}
	line, ok := next()
	if !ok {
		return nil, fmt.Errorf("%s: empty checkpoint file", path)
	}
	if v, err := strconv.Atoi(line); err != nil || v != checkpointVersion {
		return nil, fmt.Errorf("%s: unrecognised checkpoint version %q", path, line)
	}
	line, ok = next()
	if !ok {
		return nil, fmt.Errorf("%s: missing entry count", path)
	}
	count, err := strconv.Atoi(line)
	if err != nil || count < 0 {
		return nil, fmt.Errorf("%s: malformed entry count %q", path, line)
	}
	var out [][]string
	for {
		line, ok := next()
		if !ok {
			break
		}
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != want {
			return nil, fmt.Errorf("%s: malformed line %q", path, line)
		}
		out = append(out, f)
	}
	if len(out) != count {
		return nil, fmt.Errorf("%s: expected %d entries, found %d", path, count, len(out))
	}
	return out, nil
}

// readOffsetCheckpoint reads a `topic partition offset` checkpoint.
func readOffsetCheckpoint(fsys FS, path string) (map[TopicPartition]int64, error) {
	lines, err := readCheckpointLines(fsys, path, 3)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(lines))
	for _, f := range lines {
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: malformed entry %q", path, strings.Join(f, " "))
		}
		out[TopicPartition{Topic: f[0], Partition: int32(p)}] = off
	}
	return out, nil
}

// writeOffsetCheckpoint writes a `topic partition offset` checkpoint atomically.
func writeOffsetCheckpoint(fsys FS, path string, entries map[TopicPartition]int64) error {
	return writeFileAtomic(fsys, path, formatOffsetCheckpoint(entries))
}

// formatEpochCheckpoint renders leader-epoch-checkpoint: version, count, `epoch startOffset`.
func formatEpochCheckpoint(entries []EpochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b.Bytes()
}

// readEpochCheckpoint reads leader-epoch-checkpoint.
func readEpochCheckpoint(fsys FS, path string) ([]EpochEntry, error) {
	lines, err := readCheckpointLines(fsys, path, 2)
	if err != nil {
		return nil, err
	}
	out := make([]EpochEntry, 0, len(lines))
	for _, f := range lines {
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		off, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: malformed entry %q", path, strings.Join(f, " "))
		}
		out = append(out, EpochEntry{Epoch: int32(e), StartOffset: off})
	}
	return out, nil
}
