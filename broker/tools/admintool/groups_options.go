package admintool

// The `consumer-groups` command line: its options and their validation (docs/consumer-groups-tool.md).

import (
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// cgOptions is a validated `consumer-groups` command line.
type cgOptions struct {
	action    string // list, describe, delete, reset-offsets, delete-offsets
	bootstrap string
	timeout   time.Duration
	groups    []string
	allGroups bool
	topics    []string // --topic values as given (name or name:p1,p2)
	allTopics bool

	// describe
	view    string // offsets, members, state
	verbose bool

	// reset-offsets
	execute bool
	export  bool
	reset   resetSpec
}

// parseCGOptions checks the command line with Kafka 2.4's ConsumerGroupCommand rules.
func parseCGOptions(c *cli.Context) (*cgOptions, error) {
	if c.NArg() > 0 {
		return nil, failf("unexpected argument %q (flags only; see isrbroker consumer-groups --help)", c.Args().First())
	}
	o := &cgOptions{}
	n := 0
	for _, a := range cgActions {
		if c.Bool(a) {
			o.action = a
			n++
		}
	}
	if n != 1 {
		return nil, failf("Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets")
	}
	o.bootstrap = strings.TrimSpace(c.String("bootstrap-server"))
	if o.bootstrap == "" {
		return nil, failf("--bootstrap-server is required")
	}
	if ms := c.Int64("timeout"); ms <= 0 {
		return nil, failf("invalid --timeout %d: must be a positive number of milliseconds", ms)
	} else {
		o.timeout = time.Duration(ms) * time.Millisecond
	}
	for _, g := range c.StringSlice("group") {
		o.groups = append(o.groups, strings.TrimSpace(g))
	}
	o.allGroups = c.Bool("all-groups")
	o.topics = c.StringSlice("topic")
	o.allTopics = c.Bool("all-topics")
	hasGroup := c.IsSet("group")

	if hasGroup && o.allGroups {
		return nil, failf("Option --group can't be used with option --all-groups")
	}
	for _, g := range o.groups {
		if g == "" {
			return nil, failf("invalid --group \"\": a group id must not be empty")
		}
	}
	if o.action == "list" && (hasGroup || o.allGroups) {
		return nil, failf("Option --%s can't be used with option --list", map[bool]string{true: "group", false: "all-groups"}[hasGroup])
	}
	if c.IsSet("topic") && (o.action == "list" || o.action == "describe" || o.action == "delete") {
		if o.action == "delete" {
			return nil, failf("The consumer does not support topic-specific offset deletion from a consumer group.")
		}
		return nil, failf("Option --topic can't be used with option --%s", o.action)
	}
	if o.allTopics && o.action != "reset-offsets" {
		return nil, failf("Option --all-topics is only valid with --reset-offsets")
	}

	// --describe sub-actions.
	views := 0
	o.view = "offsets"
	for _, v := range []string{"offsets", "members", "state"} {
		if c.Bool(v) {
			if o.action != "describe" {
				return nil, failf("Option --%s is only valid with --describe", v)
			}
			views++
			o.view = v
		}
	}
	if views > 1 {
		return nil, failf("Options --offsets, --members and --state are mutually exclusive")
	}
	o.verbose = c.Bool("verbose")
	if o.verbose && o.action != "describe" {
		return nil, failf("Option --verbose is only valid with --describe")
	}

	// --reset-offsets options.
	var scenarios []string
	for _, s := range cgScenarios {
		if c.IsSet(s) {
			scenarios = append(scenarios, s)
		}
	}
	if o.action != "reset-offsets" {
		for _, f := range append([]string{"dry-run", "execute", "export"}, scenarios...) {
			if c.IsSet(f) {
				return nil, failf("Option --%s is only valid with --reset-offsets", f)
			}
		}
	}

	switch o.action {
	case "describe", "delete":
		if !hasGroup && !o.allGroups {
			return nil, failf("Option --%s takes one of these options: --group, --all-groups", o.action)
		}
	case "delete-offsets":
		if !hasGroup || !c.IsSet("topic") {
			return nil, failf("Option --delete-offsets takes the following options: --group, --topic")
		}
		if len(o.groups) > 1 {
			return nil, failf("Option --delete-offsets takes a single --group, got %d", len(o.groups))
		}
		if _, err := parseTopicArgs(o.topics); err != nil {
			return nil, err
		}
	case "reset-offsets":
		if c.Bool("dry-run") && c.Bool("execute") {
			return nil, failf("Option --reset-offsets only accepts one of --execute and --dry-run")
		}
		o.execute = c.Bool("execute")
		o.export = c.Bool("export")
		if !hasGroup && !o.allGroups {
			return nil, failf("Option --reset-offsets takes one of these options: --group, --all-groups")
		}
		if len(scenarios) > 1 {
			return nil, failf("Option --%s can't be used with option --%s", scenarios[0], scenarios[1])
		}
		if len(scenarios) == 0 {
			return nil, failf("Option --reset-offsets requires one of the following scenarios: --to-offset, --shift-by, --to-datetime, --by-duration, --to-earliest, --to-latest, --to-current, --from-file")
		}
		if c.IsSet("topic") && o.allTopics {
			return nil, failf("Option --topic can't be used with option --all-topics")
		}
		if !c.IsSet("topic") && !o.allTopics && scenarios[0] != "from-file" {
			return nil, failf("One of the reset scopes should be defined: --all-topics, --topic.")
		}
		if _, err := parseTopicArgs(o.topics); err != nil {
			return nil, err
		}
		spec, err := parseResetSpec(c, scenarios[0], o.groups)
		if err != nil {
			return nil, err
		}
		o.reset = spec
	}
	return o, nil
}

// topicArg is one --topic value: a topic, with the partitions when given as topic:p1,p2.
type topicArg struct {
	Topic      string
	Partitions []int32 // nil: all partitions
}

// parseTopicArgs parses --topic values ("orders" or "orders:0,1,2").
func parseTopicArgs(args []string) ([]topicArg, error) {
	var out []topicArg
	for _, a := range args {
		name, parts, hasParts := strings.Cut(strings.TrimSpace(a), ":")
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, failf("invalid --topic %q: no topic name", a)
		}
		ta := topicArg{Topic: name}
		if hasParts {
			for _, p := range strings.Split(parts, ",") {
				id, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
				if err != nil || id < 0 {
					return nil, failf("invalid --topic %q: %q is not a partition number", a, p)
				}
				ta.Partitions = append(ta.Partitions, int32(id))
			}
		}
		out = append(out, ta)
	}
	return out, nil
}
