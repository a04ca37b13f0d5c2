package logstore

import "path/filepath"

// Size is the bytes of all the log's segments (Kafka's Log.size, which DescribeLogDirs
// reports). It reads the segment sizes published under mu; no file is touched.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.segs.totalSize()
}

// LogsByDir returns every configured log dir, by absolute path (Kafka names a log dir by
// its absolute path in DescribeLogDirs), with the logs it holds; a dir without logs maps to
// an empty map. An offline dir (logdir_failure.go) is listed with the logs it held; OfflineLogDirs
// names it. A dir that fails at Open fails the broker.
func (m *Manager) LogsByDir() map[string]map[TopicPartition]*Log {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]map[TopicPartition]*Log, len(m.dirs))
	abs := make(map[string]string, len(m.dirs))
	for _, d := range m.dirs {
		a, err := filepath.Abs(d)
		if err != nil {
			a = d
		}
		abs[d] = a
		out[a] = map[TopicPartition]*Log{}
	}
	for tp, l := range m.logs {
		out[abs[m.dirOf[tp]]][tp] = l
	}
	return out
}
