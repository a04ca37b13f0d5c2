package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Broker is one broker process slot: its dirs and ports stay the same across restarts. Its
// methods control the process (Start, Kill, Pause, Resume, Terminate, Restart), read its output,
// and ask it directly (Metrics, ListOffset, ProduceOnce). Cluster.Broker(id) returns it.
type Broker struct {
	ID          int32
	Addr        string // "127.0.0.1:port" of the PLAINTEXT listener
	MetricsAddr string // metrics.listen
	Dir         string // working directory of the process
	LogDir      string // log.dirs
	ConfigPath  string // generated server.properties
	OutputPath  string // stdout+stderr of every run, appended
	overrides   map[string]string

	t   testing.TB
	bin string // the isrbroker binary

	mu     sync.Mutex
	starts int
	proc   *process
}

type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// Start starts the broker's process; it must not be running.
func (b *Broker) Start() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc != nil && !b.proc.exited() {
		b.t.Fatalf("cluster: broker %d is already running", b.ID)
	}
	keys := make([]string, 0, len(b.overrides))
	for k := range b.overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := []string{"broker", "--config", b.ConfigPath}
	// ISRBROKER_LOG_LEVEL (trace, debug, ...) raises the brokers' log level when a scenario
	// needs a closer look; the default is the broker's own (info).
	if lvl := os.Getenv("ISRBROKER_LOG_LEVEL"); lvl != "" {
		args = append(args, "--log-level", lvl)
	}
	for _, k := range keys {
		args = append(args, "--override", k+"="+b.overrides[k])
	}
	out, err := os.OpenFile(b.OutputPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.t.Fatalf("cluster: broker %d output: %v", b.ID, err)
	}
	defer out.Close()
	b.starts++
	fmt.Fprintf(out, "=== cluster: start #%d of broker %d at %s: isrbroker %s\n",
		b.starts, b.ID, time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command(b.bin, args...)
	cmd.Dir = b.Dir
	cmd.Env = brokerEnv()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("cluster: start broker %d: %v", b.ID, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	b.proc = p
}

// brokerEnv is the harness's environment without the KAFKA_* variables: the broker reads
// those as config properties (docs/containers.md), so a KAFKA_LOG_RETENTION_MS or
// KAFKA_HEAP_OPTS left in a developer's shell would otherwise change, or stop, every broker
// a test starts. Tests set properties with overrides only.
func brokerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KAFKA_") {
			env = append(env, kv)
		}
	}
	return env
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process group the harness created for this process (only that group).
func (p *process) signal(sig syscall.Signal) error {
	if p.exited() {
		return nil
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// current is the broker's latest process (nil if never started).
func (b *Broker) current() *process {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.proc
}

// Running reports whether the broker's process is alive (possibly paused by SIGSTOP).
func (b *Broker) Running() bool {
	p := b.current()
	return p != nil && !p.exited()
}

// Pid returns the process id of the broker's current process (0 if never started).
func (b *Broker) Pid() int {
	p := b.current()
	if p == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// WaitExit waits up to timeout for the broker's process to end and returns its exit code
// (-1 when killed by a signal).
func (b *Broker) WaitExit(timeout time.Duration) (int, bool) {
	p := b.current()
	if p == nil {
		return 0, true
	}
	if !p.exited() {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		select {
		case <-p.done:
		case <-timer.C:
			return 0, false
		}
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode(), true
	}
	return 0, true
}

// Kill sends SIGKILL to the broker (kill -9) and waits for the process to be gone.
func (b *Broker) Kill() {
	b.t.Helper()
	p := b.current()
	if p == nil || p.exited() {
		return
	}
	_ = p.signal(syscall.SIGKILL)
	if _, ok := b.WaitExit(30 * time.Second); !ok {
		b.t.Fatalf("cluster: broker %d did not die after SIGKILL", b.ID)
	}
}

// Pause freezes the broker with SIGSTOP; Resume resumes it.
func (b *Broker) Pause() {
	b.t.Helper()
	if p := b.current(); p != nil {
		if err := p.signal(syscall.SIGSTOP); err != nil {
			b.t.Fatalf("cluster: SIGSTOP broker %d: %v", b.ID, err)
		}
	}
}

// Resume resumes the broker after Pause (SIGCONT).
func (b *Broker) Resume() {
	b.t.Helper()
	if p := b.current(); p != nil {
		if err := p.signal(syscall.SIGCONT); err != nil {
			b.t.Fatalf("cluster: SIGCONT broker %d: %v", b.ID, err)
		}
	}
}

// Terminate sends SIGTERM (graceful stop) and waits for the exit; a broker that has not exited
// after 30 s fails the test and is killed. It returns the exit code.
func (b *Broker) Terminate() int {
	b.t.Helper()
	p := b.current()
	if p == nil || p.exited() {
		code, _ := b.WaitExit(0)
		return code
	}
	_ = p.signal(syscall.SIGCONT)
	_ = p.signal(syscall.SIGTERM)
	code, ok := b.WaitExit(30 * time.Second)
	if !ok {
		_ = p.signal(syscall.SIGKILL)
		b.t.Fatalf("cluster: broker %d did not exit within 30s of SIGTERM", b.ID)
	}
	return code
}

// Restart starts the broker again with the same dirs, ports and overrides. A process that is
// still running is killed (SIGKILL) first; use Terminate before Restart for a graceful bounce.
func (b *Broker) Restart() {
	b.t.Helper()
	b.Kill()
	b.Start()
}

// kill is the cleanup's kill: SIGCONT then SIGKILL, reporting (not failing at once) a process
// that does not die.
func (b *Broker) kill() {
	p := b.current()
	if p == nil || p.exited() {
		return
	}
	_ = p.signal(syscall.SIGCONT)
	_ = p.signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		b.t.Errorf("cluster: broker %d (pid %d) did not die", b.ID, p.cmd.Process.Pid)
	}
}

// Output returns everything the broker has written to stdout and stderr over all its runs.
func (b *Broker) Output() string {
	data, err := os.ReadFile(b.OutputPath)
	if err != nil {
		return ""
	}
	return string(data)
}

// OutputSince returns the broker's output written by its latest run only.
func (b *Broker) OutputSince() string {
	out := b.Output()
	if i := strings.LastIndex(out, "=== cluster: start #"); i >= 0 {
		return out[i:]
	}
	return out
}

// Tail returns the last n lines of the broker's output.
func (b *Broker) Tail(n int) string { return tail(b.Output(), n) }

func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// PartitionDir is the directory of topic-p in the broker's log dir (`<topic>-<p>`).
func (b *Broker) PartitionDir(topic string, p int32) string {
	return filepath.Join(b.LogDir, topic+"-"+Itoa32(p))
}

// WaitPartitionDirGone waits until the broker's log dir has no directory for topic-p.
func (b *Broker) WaitPartitionDirGone(topic string, p int32, timeout time.Duration) {
	b.t.Helper()
	dir := b.PartitionDir(topic, p)
	WaitFor(b.t, timeout, func() (bool, string) {
		_, err := os.Stat(dir)
		if errors.Is(err, os.ErrNotExist) {
			return true, ""
		}
		return false, fmt.Sprintf("%s still exists (stat: %v)", dir, err)
	})
}
