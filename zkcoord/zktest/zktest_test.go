package zktest

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestStartRestart(t *testing.T) {
	s := Start(t)
	conn, _, err := zk.Connect([]string{s.Addr}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Create("/x", []byte("1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	s.Restart(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _, err := conn.Get("/x")
		if err == nil {
			if string(b) != "1" {
				t.Fatalf("got %q", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
