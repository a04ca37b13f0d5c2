package fetcher

import "unicode/utf16"

// JavaStringHashCode returns Java's String.hashCode of s: s[0]*31^(n-1) + … + s[n-1] over the
// UTF-16 code units of s, with int32 overflow. Characters outside the BMP count as their two
// surrogates, as in Java; invalid UTF-8 bytes count as U+FFFD.
func JavaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + int32(hi)
			h = 31*h + int32(lo)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// javaAbs is Kafka's Utils.abs: the absolute value, except that math.MinInt32 maps to 0
// (Java's Math.abs would leave it negative).
func javaAbs(n int32) int32 {
	if n == -1<<31 {
		return 0
	}
	if n < 0 {
		return -n
	}
	return n
}

// FetcherID picks the fetcher of a partition toward one leader (S15, S16):
// Utils.abs(31 * topic.hashCode() + partition) % num.replica.fetchers, in int32 arithmetic as
// Kafka computes it. numFetchers < 1 is treated as 1.
func FetcherID(topic string, partition int32, numFetchers int) int {
	if numFetchers < 1 {
		numFetchers = 1
	}
	return int(javaAbs(31*JavaStringHashCode(topic)+partition)) % numFetchers
}
