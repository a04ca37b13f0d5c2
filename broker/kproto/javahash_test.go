package kproto

import (
	"math"
	"testing"
)

// Expected values were computed with Java's String.hashCode (OpenJDK) at development time.
func TestJavaStringHashCode(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int32
	}{
		{"", 0},
		{"a", 97},
		{"topic", 110546223},
		{"test", 3556498},
		{"__consumer_offsets", -970371369},
		{"orders-v2", -390713756},
		{"h\u00e9llo", 103094734},             // non-ASCII, BMP
		{"日本語", 25921943},                     // CJK, BMP
		{"\U0001F600", 1772899},               // outside the BMP: a UTF-16 surrogate pair
		{"a\U0001F600b", 57849694},            // surrogates in the middle
		{"polygenelubricants", math.MinInt32}, // overflow to exactly MIN_VALUE
		{"this is a fairly long topic name that overflows int32 many times", 1092090755},
	} {
		if got := JavaStringHashCode(c.s); got != c.want {
			t.Errorf("JavaStringHashCode(%q) = %d, want %d", c.s, got, c.want)
		}
	}
}

func TestJavaAbs(t *testing.T) {
	for in, want := range map[int32]int32{0: 0, 5: 5, -5: 5, math.MaxInt32: math.MaxInt32, -math.MaxInt32: math.MaxInt32, math.MinInt32: 0} {
		if got := JavaAbs(in); got != want {
			t.Errorf("JavaAbs(%d) = %d, want %d", in, got, want)
		}
	}
}
