package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/isrbroker/isrbroker/tests/cluster"
)

// Issue 14 item 3: the README's operator commands run as written. TestReadmeCommands takes every
// `isrbroker ...` line of the fenced block of the README's "Operator tools" section and runs it
// through bash, exactly as written except for two substitutions, against a real 3-broker
// cluster: the README's fixed addresses (ZooKeeper 127.0.0.1:2181, broker 127.0.0.1:9092) become
// the test cluster's, and the perf tools' record counts (1000000) become readmePerfRecords so the
// test stays short. A README command that drifts from the CLI (a renamed flag, a placeholder
// such as `[--x]` or `a|b`, a command the test does not know) fails the test.
//
// With ISRBROKER_README_EXTERNAL=1 nothing is started and the commands run as written against
// the cluster of `scripts/cluster.sh up` (the fixed addresses), with `isrbroker` from PATH:
// scripts/readme-commands.sh.

// readmePerfRecords replaces the perf tools' 1000000 records.
const readmePerfRecords = "2000"

// readmeTopic and readmeGroup are the topic and group the README's examples use.
const (
	readmeTopic = "orders"
	readmeGroup = "billing"
)

// readmeCommand is one `isrbroker ...` line of the README with its position.
type readmeCommand struct {
	line int    // 1-based line in README.md
	text string // as written
}

// readmeSection returns the lines of README's "## heading" section with their line numbers.
func readmeSection(t *testing.T, readme []byte, heading string) ([]string, int) {
	t.Helper()
	lines := strings.Split(string(readme), "\n")
	start := -1
	for i, l := range lines {
		if start < 0 {
			if strings.TrimSpace(l) == "## "+heading {
				start = i + 1
			}
			continue
		}
		if strings.HasPrefix(l, "## ") {
			return lines[start:i], start
		}
	}
	if start < 0 {
		t.Fatalf("README.md has no section %q", "## "+heading)
	}
	return lines[start:], start
}

// fencedBlocks returns the lines of the section's ```sh blocks (with README line numbers).
func fencedBlocks(lines []string, offset int) []readmeCommand {
	var out []readmeCommand
	in := false
	for i, l := range lines {
		switch {
		case !in && strings.HasPrefix(l, "```sh"):
			in = true
		case in && strings.HasPrefix(l, "```"):
			in = false
		case in:
			out = append(out, readmeCommand{line: offset + i + 1, text: l})
		}
	}
	return out
}

// readmeOperatorCommands returns the `isrbroker` command lines of the "Operator tools" block.
func readmeOperatorCommands(t *testing.T, readme []byte) []readmeCommand {
	t.Helper()
	lines, off := readmeSection(t, readme, "Operator tools")
	var cmds []readmeCommand
	for _, c := range fencedBlocks(lines, off) {
		s := strings.TrimSpace(c.text)
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if !strings.HasPrefix(s, "isrbroker ") {
			t.Errorf("README.md:%d: a line of the Operator tools block that is not an isrbroker command: %q", c.line, s)
			continue
		}
		cmds = append(cmds, readmeCommand{line: c.line, text: s})
	}
	// The README shows about 30; far fewer means the block was not found as intended.
	if len(cmds) < 20 {
		t.Fatalf("README.md: only %d isrbroker commands in the Operator tools block", len(cmds))
	}
	return cmds
}

// notAsWritten finds what a shell would not run as the README means it: placeholders
// ([optional], a|b alternatives, <value>, ...) and shell syntax beyond words.
var notAsWritten = regexp.MustCompile(`[\[\]|<>$;&\\'"` + "`" + `]|\.\.\.`)

// readmeStep is how the test runs one README command.
type readmeStep struct {
	cmd   readmeCommand
	args  []string // the words, for classification
	phase int      // 0: creates the topic; 1: reads and changes; 2: deletes the group; 3: deletes the topic
}

// hasArgs reports whether words contains every flag of want.
func hasArgs(words []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, a := range words {
			if a == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func planReadmeSteps(t *testing.T, cmds []readmeCommand) []readmeStep {
	t.Helper()
	steps := make([]readmeStep, 0, len(cmds))
	for _, c := range cmds {
		if m := notAsWritten.FindString(c.text); m != "" {
			t.Errorf("README.md:%d: %q is not runnable as written (%q is a placeholder or shell syntax): write a command that runs", c.line, c.text, m)
			continue
		}
		words := strings.Fields(c.text)
		st := readmeStep{cmd: c, args: words, phase: 1}
		switch {
		case words[1] == "topics" && hasArgs(words, "--create"):
			st.phase = 0
		case words[1] == "consumer-groups" && hasArgs(words, "--delete"):
			st.phase = 2
		case words[1] == "topics" && hasArgs(words, "--delete"):
			st.phase = 3
		}
		steps = append(steps, st)
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].phase < steps[j].phase })
	return steps
}

// readmeEnv is where the commands run: addresses, the working directory with the JSON files
// the README names, PATH with `isrbroker`.
type readmeEnv struct {
	zk, bootstrap string   // what 127.0.0.1:2181 and 127.0.0.1:9092 become
	seeds         []string // for the test's own client
	dir           string
	path          string // PATH for bash
	adm           *kadm.Client
	cl            *kgo.Client
}

func (e *readmeEnv) substitute(s string) string {
	s = strings.NewReplacer("127.0.0.1:2181", e.zk, "127.0.0.1:9092", e.bootstrap).Replace(s)
	s = strings.ReplaceAll(s, "--num-records 1000000", "--num-records "+readmePerfRecords)
	return strings.ReplaceAll(s, "--messages 1000000", "--messages "+readmePerfRecords)
}

// run runs one command line through bash in e.dir; exit code -1: killed at the timeout.
func (e *readmeEnv) run(line string, timeout time.Duration) (int, string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "PATH="+e.path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return -1, stdout.String(), stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	case err != nil:
		return -1, stdout.String(), err.Error()
	}
	return 0, stdout.String(), stderr.String()
}

// afterCreate gives the README's examples something to act on: records in every partition of
// orders (delete-records deletes below offset 10 of orders-0) and committed offsets of the
// inactive group billing (describe, reset, delete-offsets).
func (e *readmeEnv) afterCreate(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for p := int32(0); p < 6; p++ {
		for i := 0; i < 20; i++ {
			recs = append(recs, &kgo.Record{Topic: readmeTopic, Partition: p, Value: fmt.Appendf(nil, "readme %d-%d", p, i)})
		}
	}
	if err := e.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", readmeTopic, err)
	}
	e.commitBilling(t)
}

// commitBilling commits offset 15 of every orders partition for group billing (no members).
func (e *readmeEnv) commitBilling(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	offs := kadm.Offsets{}
	for p := int32(0); p < 6; p++ {
		offs.Add(kadm.Offset{Topic: readmeTopic, Partition: p, At: 15, LeaderEpoch: -1})
	}
	resp, err := commitWithRetry(ctx, e.adm, readmeGroup, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit offsets of group %s: %v", readmeGroup, err)
	}
}

// proposedPlan is the JSON after "Proposed partition reassignment configuration".
func proposedPlan(stdout string) (string, bool) {
	_, after, ok := strings.Cut(stdout, "Proposed partition reassignment configuration\n")
	if !ok {
		return "", false
	}
	plan := strings.TrimSpace(strings.SplitN(strings.TrimSpace(after), "\n", 2)[0])
	return plan, strings.HasPrefix(plan, "{")
}

func TestReadmeCommands(t *testing.T) {
	_, readme := readREADME(t)
	steps := planReadmeSteps(t, readmeOperatorCommands(t, readme))
	if t.Failed() {
		t.FailNow()
	}

	e := &readmeEnv{dir: t.TempDir()}
	if os.Getenv("ISRBROKER_README_EXTERNAL") == "1" {
		// scripts/readme-commands.sh: the cluster of scripts/cluster.sh, isrbroker from PATH.
		if _, err := exec.LookPath("isrbroker"); err != nil {
			t.Fatalf("isrbroker is not on PATH (scripts/cluster.sh up installs it): %v", err)
		}
		e.zk, e.bootstrap, e.seeds, e.path = "127.0.0.1:2181", "127.0.0.1:9092", []string{"127.0.0.1:9092"}, os.Getenv("PATH")
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		e.cl, e.adm = cl, kadm.NewClient(cl)
	} else {
		c := cluster.Start(t, cluster.Options{})
		e.zk, e.bootstrap, e.seeds = c.ZK.Addr, c.Broker(1).Addr, c.BootstrapAddrs()
		// `isrbroker` as the README writes it: the harness's binary first on PATH.
		bin := filepath.Join(t.TempDir(), "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(cluster.Binary(t), filepath.Join(bin, "isrbroker")); err != nil {
			t.Fatal(err)
		}
		e.path = bin + string(os.PathListSeparator) + os.Getenv("PATH")
		e.cl = c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
		e.adm = c.Admin()
	}
	// The JSON files the README's commands name, in Kafka's formats.
	files := map[string]string{
		"move.json":   `{"topics":[{"topic":"orders"}],"version":1}`,
		"delete.json": `{"partitions":[{"topic":"orders","partition":0,"offset":10}],"version":1}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(e.dir, name), []byte(body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	groupDeleted := false
	for _, st := range steps {
		line := e.substitute(st.cmd.text)
		if rest := strings.ReplaceAll(strings.ReplaceAll(line, e.zk, ""), e.bootstrap, ""); strings.Contains(rest, "127.0.0.1:") {
			t.Errorf("README.md:%d: %q uses an address other than 127.0.0.1:2181 and 127.0.0.1:9092", st.cmd.line, st.cmd.text)
			continue
		}
		if st.args[1] == "consumer-groups" && hasArgs(st.args, "--delete") && !groupDeleted {
			// --delete-offsets (earlier) may have removed the group's last offsets; commit again
			// so the group exists to be deleted.
			e.commitBilling(t)
			groupDeleted = true
		}
		verify := hasArgs(st.args, "--verify")
		var code int
		var stdout, stderr string
		ok, msg := cluster.Poll(90*time.Second, func() (bool, string) {
			code, stdout, stderr = e.run(line, 60*time.Second)
			if code == 0 || !verify {
				return true, ""
			}
			// --verify exits 1 while a reassignment is still in progress: poll it.
			return false, fmt.Sprintf("exit %d\n%s%s", code, stdout, stderr)
		})
		if !ok {
			t.Errorf("README.md:%d: %s\n(run as %s): still failing after 90 s: %s", st.cmd.line, st.cmd.text, line, msg)
			continue
		}
		t.Logf("README.md:%d: %s: exit %d", st.cmd.line, line, code)
		if code != 0 {
			t.Errorf("README.md:%d: %s\n(run as %s)\nexit %d\nstdout:\n%s\nstderr:\n%s", st.cmd.line, st.cmd.text, line, code, stdout, stderr)
			continue
		}
		switch {
		case st.args[1] == "topics" && hasArgs(st.args, "--create"):
			e.afterCreate(t)
		case st.args[1] == "reassign-partitions" && hasArgs(st.args, "--generate"):
			plan, ok := proposedPlan(stdout)
			if !ok {
				t.Fatalf("README.md:%d: --generate printed no proposed plan:\n%s", st.cmd.line, stdout)
			}
			if err := os.WriteFile(filepath.Join(e.dir, "plan.json"), []byte(plan+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestReadmeClusterCommands: the `scripts/cluster.sh` commands of the README's "Running a local
// cluster" block are exactly those the script accepts (its usage line), so neither drifts.
// The cluster itself uses fixed ports; scripts/readme-commands.sh runs the operator commands
// against it.
func TestReadmeClusterCommands(t *testing.T) {
	root, readme := readREADME(t)
	lines, off := readmeSection(t, readme, "Running a local cluster")
	documented := map[string]bool{}
	for _, c := range fencedBlocks(lines, off) {
		f := strings.Fields(c.text)
		if len(f) >= 2 && f[0] == "scripts/cluster.sh" {
			documented[f[1]] = true
		}
	}
	// The README opens with the first command.
	if first := strings.SplitN(string(readme), "```sh\n", 2); len(first) != 2 || !strings.HasPrefix(first[1], "scripts/cluster.sh up\nscripts/test.sh\n```") {
		t.Errorf("README.md does not open with the two commands scripts/cluster.sh up and scripts/test.sh")
	}

	cmd := exec.Command("bash", filepath.Join(root, "scripts", "cluster.sh"), "no-such-command")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("scripts/cluster.sh no-such-command: want exit 2 with its usage, got %v:\n%s", err, out)
	}
	m := regexp.MustCompile(`usage: scripts/cluster.sh ([a-z|]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("scripts/cluster.sh printed no usage line:\n%s", out)
	}
	accepted := map[string]bool{}
	for _, c := range strings.Split(string(m[1]), "|") {
		accepted[c] = true
		if !documented[c] {
			t.Errorf("scripts/cluster.sh %s is not in the README's Running a local cluster block", c)
		}
	}
	for c := range documented {
		if !accepted[c] {
			t.Errorf("README.md documents scripts/cluster.sh %s, which the script does not accept", c)
		}
	}
	if len(accepted) < 5 {
		t.Errorf("scripts/cluster.sh accepts only %v", accepted)
	}
}

// readREADME returns the module root and the repository's README.md.
func readREADME(t *testing.T) (string, []byte) {
	t.Helper()
	root, err := cluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return root, readme
}
