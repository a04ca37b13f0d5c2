package fetcher

import "github.com/isrbroker/isrbroker/broker/kproto"

// FetcherID picks the fetcher of a partition toward one leader (S15, S16):
// Utils.abs(31 * topic.hashCode() + partition) % num.replica.fetchers, in int32 arithmetic as
// Kafka computes it. numFetchers < 1 is treated as 1.
func FetcherID(topic string, partition int32, numFetchers int) int {
	if numFetchers < 1 {
		numFetchers = 1
	}
	return int(kproto.JavaAbs(31*kproto.JavaStringHashCode(topic)+partition)) % numFetchers
}
