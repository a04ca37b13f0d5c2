package kproto

import "unicode/utf16"

// Java's String.hashCode and Kafka's Utils.abs: Kafka places partitions with them (the replica
// fetcher id, S15; the group coordinator's __consumer_offsets partition, docs/groups.md §1), so
// isrbroker must compute them bit for bit as Java does.

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

// JavaAbs is Kafka's Utils.abs: the absolute value, except that math.MinInt32 maps to 0
// (Java's Math.abs would leave it negative).
func JavaAbs(n int32) int32 {
	if n == -1<<31 {
		return 0
	}
	if n < 0 {
		return -n
	}
	return n
}
