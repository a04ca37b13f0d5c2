package fetcher

import "testing"

// S15/S16: fetcherId = Utils.abs(31 * topic.hashCode() + partition) % num.replica.fetchers,
// expected values computed in Java.
func TestS15_FetcherIDMatchesJava(t *testing.T) {
	for _, c := range []struct {
		topic     string
		partition int32
		n         int
		want      int
	}{
		{"test", 0, 3, 1}, {"test", 1, 3, 2}, {"test", 2, 7, 5}, {"test", 3, 7, 6}, {"test", 49, 7, 3},
		{"topic", 0, 2, 1}, {"topic", 0, 7, 6}, {"topic", 6, 7, 0}, {"topic", 49, 3, 0},
		{"__consumer_offsets", 0, 3, 2}, {"__consumer_offsets", 5, 7, 1}, {"__consumer_offsets", 49, 7, 6},
		{"日本語", 0, 7, 1}, {"日本語", 5, 7, 6}, {"\U0001F600", 0, 7, 6}, {"\U0001F600", 4, 7, 3},
		// 31*hashCode overflows to MIN_VALUE: Utils.abs(MIN_VALUE) = 0.
		{"polygenelubricants", 0, 7, 0}, {"polygenelubricants", 0, 2, 0},
		{"polygenelubricants", 1, 7, 1}, {"polygenelubricants", 2, 7, 0},
		{"orders-v2", 0, 2, 0}, {"orders-v2", 1, 2, 1}, {"orders-v2", 6, 2, 0}, {"orders-v2", 7, 2, 1},
		{"test", 5, 1, 0},
	} {
		if got := FetcherID(c.topic, c.partition, c.n); got != c.want {
			t.Errorf("FetcherID(%q, %d, %d) = %d, want %d", c.topic, c.partition, c.n, got, c.want)
		}
	}
	if got := FetcherID("x", 1, 0); got != 0 {
		t.Errorf("FetcherID with 0 fetchers = %d, want 0", got)
	}
}
