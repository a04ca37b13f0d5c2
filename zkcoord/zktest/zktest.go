// Package zktest starts a real Apache ZooKeeper server for tests. It owns
// nothing but the lifetime of one ZooKeeper process per call to Start: a temp
// config and data dir, a free 127.0.0.1 port, and SIGKILL/SIGSTOP/SIGCONT
// helpers used by fault tests.
package zktest

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Jar is the ZooKeeper server jar shipped by the Debian `zookeeper` package.
// Its manifest class path pulls in the dependencies.
const Jar = "/usr/share/java/zookeeper.jar"

// TickTime is the ZooKeeper tick used by the test server. Sessions are
// clamped by ZooKeeper to [minSessionTimeout, 20*tick], so 1000 ms ticks
// with minSessionTimeout=1000 allow session timeouts between 1 s and 20 s.
const TickTime = 1000 * time.Millisecond

// Server is one running ZooKeeper process.
type Server struct {
	// Addr is "127.0.0.1:port".
	Addr string

	port    int
	dir     string
	cfgPath string
	logPath string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start starts a real ZooKeeper 3.8 on a free 127.0.0.1 port, waits until a
// client can connect and registers a cleanup that kills it. If java or the
// ZooKeeper jar is missing the test is skipped, unless env CI is set (then it
// fails). Under -short every test that needs it is skipped: real-ZooKeeper tests are the
// integration tier, and the unit tier (zkcoord's sub-packages on zkcoord/zkmem) runs without.
func Start(t testing.TB) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("zktest: real ZooKeeper skipped with -short (integration tier)")
	}
	java, err := exec.LookPath("java")
	if err == nil {
		_, err = os.Stat(Jar)
	}
	if err != nil {
		msg := fmt.Sprintf("zktest: ZooKeeper unavailable (need java on PATH and %s from the Debian package `zookeeper`): %v", Jar, err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	_ = java
	dir := t.TempDir()
	s := &Server{dir: dir}
	s.port, err = freePort()
	if err != nil {
		t.Fatalf("zktest: free port: %v", err)
	}
	s.Addr = fmt.Sprintf("127.0.0.1:%d", s.port)
	dataDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatalf("zktest: %v", err)
	}
	cfg := strings.Join([]string{
		fmt.Sprintf("tickTime=%d", TickTime.Milliseconds()),
		"initLimit=10",
		"syncLimit=5",
		"dataDir=" + dataDir,
		fmt.Sprintf("clientPort=%d", s.port),
		"clientPortAddress=127.0.0.1",
		"minSessionTimeout=1000",
		"maxSessionTimeout=20000",
		"maxClientCnxns=0",
		"admin.enableServer=false",
		"4lw.commands.whitelist=*",
		"autopurge.purgeInterval=0",
		"",
	}, "\n")
	s.cfgPath = filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(s.cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatalf("zktest: %v", err)
	}
	// log4j/logback configuration: keep output in a file in the temp dir.
	s.logPath = filepath.Join(dir, "zookeeper.log")
	t.Cleanup(s.Stop)
	if err := s.start(); err != nil {
		t.Fatalf("zktest: %v", err)
	}
	if err := s.waitReady(30 * time.Second); err != nil {
		t.Fatalf("zktest: %v\n%s", err, s.tailLog())
	}
	return s
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command("java",
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-cp", Jar,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", s.cfgPath)
	cmd.Dir = s.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start ZooKeeper: %w", err)
	}
	logf.Close()
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	go func() { _ = cmd.Wait() }()
	return nil
}

// waitReady polls until a ZooKeeper client gets a session and can read "/".
func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		if err := s.ping(deadline); err == nil {
			return nil
		} else {
			lastErr = err
		}
		time.Sleep(100 * time.Millisecond) // poll interval, not synchronisation
	}
	return fmt.Errorf("ZooKeeper at %s not ready after %v: %v", s.Addr, timeout, lastErr)
}

func (s *Server) ping(deadline time.Time) error {
	// "ruok" four-letter word first: cheap and does not need a session.
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return err
	}
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	_, _ = c.Write([]byte("ruok"))
	b, _ := io.ReadAll(c)
	c.Close()
	if string(b) != "imok" {
		return fmt.Errorf("ruok answered %q", b)
	}
	conn, ev, err := zk.Connect([]string{s.Addr}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		return err
	}
	defer conn.Close()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				_, _, err := conn.Get("/")
				return err
			}
		case <-t.C:
			return fmt.Errorf("no session")
		}
	}
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...interface{}) {}

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	// Negative pid: the whole process group started with Setpgid.
	_ = syscall.Kill(-s.cmd.Process.Pid, sig)
}

// Stop kills the server (SIGKILL to its process group). Safe to call twice.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	// A stopped process still dies on SIGKILL.
	s.signal(syscall.SIGKILL)
	// Wait until the port is free so that Restart can bind it again.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(cmd.Process.Pid, 0); err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.mu.Lock()
	s.cmd = nil
	s.mu.Unlock()
}

// Pause freezes the server with SIGSTOP: sessions stop being served.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

// Restart kills the server and starts it again on the same port and data dir;
// it returns once a client can connect.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := s.start(); err != nil {
			t.Fatalf("zktest: restart: %v", err)
		}
		err := s.waitReady(15 * time.Second)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("zktest: restart: %v\n%s", err, s.tailLog())
		}
		s.Stop()
	}
}

// Log returns the tail of the ZooKeeper server output (for failure messages).
func (s *Server) tailLog() string {
	b, _ := os.ReadFile(s.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
