package zkclient

import (
	"slices"
	"testing"
)

func TestParseConnect(t *testing.T) {
	for _, c := range []struct {
		in      string
		servers []string
		chroot  string
		bad     bool
	}{
		{in: "h:2181", servers: []string{"h:2181"}},
		{in: " a:1, b:2 /kafka/x/ ", servers: []string{"a:1", "b:2"}, chroot: "/kafka/x"},
		{in: "a:1/", servers: []string{"a:1"}},
		{in: "/chroot", bad: true},
		{in: " , ", bad: true},
	} {
		servers, chroot, err := ParseConnect(c.in)
		if (err != nil) != c.bad || !slices.Equal(servers, c.servers) || chroot != c.chroot {
			t.Errorf("%q: %v %q %v", c.in, servers, chroot, err)
		}
	}
}
