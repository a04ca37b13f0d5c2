package admintool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// resetSpec is the --reset-offsets scenario.
type resetSpec struct {
	scenario  string // one of cgScenarios
	offset    int64  // --to-offset N, --shift-by N
	timestamp int64  // --to-datetime, in ms since the epoch
	duration  time.Duration
	plan      map[string]map[topicPartition]int64 // --from-file, per group
}

func parseResetSpec(c *cli.Context, scenario string, groups []string) (resetSpec, error) {
	s := resetSpec{scenario: scenario}
	switch scenario {
	case "to-offset", "shift-by":
		s.offset = c.Int64(scenario)
	case "to-datetime":
		ms, err := parseResetDateTime(c.String("to-datetime"))
		if err != nil {
			return s, err
		}
		s.timestamp = ms
	case "by-duration":
		d, err := parseISODuration(c.String("by-duration"))
		if err != nil {
			return s, err
		}
		s.duration = d
	case "from-file":
		path := c.String("from-file")
		data, err := os.ReadFile(path)
		if err != nil {
			return s, failf("cannot read --from-file %s: %s", path, oneLine(err.Error()))
		}
		single := ""
		if len(groups) == 1 {
			single = groups[0]
		}
		plan, err := parseResetPlan(string(data), single)
		if err != nil {
			return s, failf("invalid --from-file %s: %s", path, err)
		}
		s.plan = plan
	}
	return s, nil
}

var dateTimeRE = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})(Z|[+-]\d{2}(?::?\d{2})?)?$`)

// parseResetDateTime parses --to-datetime like Kafka 2.4's ConsumerGroupCommand.
// convertTimestamp: yyyy-MM-dd'T'HH:mm:ss.SSS followed by an optional zone (Z, ±hh, ±hhmm
// or ±hh:mm); without a zone the time is UTC. It returns ms since the epoch.
func parseResetDateTime(s string) (int64, error) {
	m := dateTimeRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, failf("invalid --to-datetime %q: want YYYY-MM-DDTHH:mm:SS.sss with an optional zone (Z, +hh, +hhmm, +hh:mm), e.g. 2024-05-01T12:00:00.000+02:00", s)
	}
	n := make([]int, 8)
	for i := 1; i <= 7; i++ {
		n[i], _ = strconv.Atoi(m[i])
	}
	offset := 0
	if z := m[8]; z != "" && z != "Z" {
		sign := 1
		if z[0] == '-' {
			sign = -1
		}
		digits := strings.ReplaceAll(z[1:], ":", "")
		hh, _ := strconv.Atoi(digits[:2])
		mm := 0
		if len(digits) == 4 {
			mm, _ = strconv.Atoi(digits[2:])
		}
		if hh > 18 || mm > 59 {
			return 0, failf("invalid --to-datetime %q: zone offset %s out of range", s, z)
		}
		offset = sign * (hh*3600 + mm*60)
	}
	t := time.Date(n[1], time.Month(n[2]), n[3], n[4], n[5], n[6], n[7]*int(time.Millisecond), time.FixedZone("", offset))
	if t.Year() != n[1] || int(t.Month()) != n[2] || t.Day() != n[3] || t.Hour() != n[4] || t.Minute() != n[5] || t.Second() != n[6] {
		return 0, failf("invalid --to-datetime %q: no such date or time", s)
	}
	return t.UnixMilli(), nil
}

var isoDurationRE = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?\d+)D)?(?:(T)(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?$`)

// parseISODuration parses --by-duration like java.time.Duration.parse: PnDTnHnMn.nS, each
// part optional but at least one present, parts and the whole may carry a sign.
func parseISODuration(s string) (time.Duration, error) {
	bad := failf("invalid --by-duration %q: want an ISO-8601 duration PnDTnHnMnS, e.g. PT30M or P1DT12H", s)
	m := isoDurationRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil || (m[2] == "" && m[3] == "") || (m[3] != "" && m[4] == "" && m[5] == "" && m[6] == "") {
		return 0, bad
	}
	var total float64 // seconds; float64 is exact enough for durations an operator types
	part := func(v string, unit float64) error {
		if v == "" {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return err
		}
		total += float64(n) * unit
		return nil
	}
	if part(m[2], 86400) != nil || part(m[4], 3600) != nil || part(m[5], 60) != nil || part(m[6], 1) != nil {
		return 0, bad
	}
	if total > float64(1<<62)/float64(time.Second) || total < -float64(1<<62)/float64(time.Second) {
		return 0, bad
	}
	d := time.Duration(total * float64(time.Second))
	if m[7] != "" {
		frac, _ := strconv.ParseInt((m[7] + "000000000")[:9], 10, 64)
		if strings.HasPrefix(m[6], "-") {
			frac = -frac
		}
		d += time.Duration(frac)
	}
	if m[1] == "-" {
		d = -d
	}
	return d, nil
}

// parseResetPlan parses a --from-file CSV (what --export prints): "topic,partition,offset"
// lines for a single --group, else "group,topic,partition,offset" lines.
func parseResetPlan(csv, singleGroup string) (map[string]map[topicPartition]int64, error) {
	plan := map[string]map[topicPartition]int64{}
	for i, line := range strings.Split(csv, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		var group string
		switch {
		case len(f) == 3 && singleGroup != "":
			group = singleGroup
		case len(f) == 4:
			group, f = f[0], f[1:]
		default:
			want := "group,topic,partition,offset"
			if singleGroup != "" {
				want = "topic,partition,offset or " + want
			}
			return nil, fmt.Errorf("line %d %q: want %s", i+1, line, want)
		}
		p, err1 := strconv.ParseInt(strings.TrimSpace(f[1]), 10, 32)
		o, err2 := strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64)
		if err1 != nil || err2 != nil || p < 0 || strings.TrimSpace(f[0]) == "" {
			return nil, fmt.Errorf("line %d %q: want a topic, a partition number and an offset", i+1, line)
		}
		if plan[group] == nil {
			plan[group] = map[topicPartition]int64{}
		}
		plan[group][topicPartition{strings.TrimSpace(f[0]), int32(p)}] = o
	}
	return plan, nil
}

// resetScope returns the partitions --topic or --all-topics selects for the group:
// --all-topics means the partitions the group has committed offsets for.
func (r *cgRun) resetScope(ctx context.Context, committed map[topicPartition]int64) ([]topicPartition, error) {
	var ps []topicPartition
	seen := map[topicPartition]bool{}
	add := func(p topicPartition) {
		if !seen[p] {
			seen[p] = true
			ps = append(ps, p)
		}
	}
	if r.o.allTopics {
		for p := range committed {
			add(p)
		}
	}
	args, err := parseTopicArgs(r.o.topics)
	if err != nil {
		return nil, err
	}
	for _, a := range args {
		ids := a.Partitions
		if ids == nil {
			if ids, err = r.be.partitions(ctx, a.Topic); err != nil {
				var ee *exitError
				if errors.As(err, &ee) {
					return nil, err
				}
				return nil, failf("--topic %s: %s", a.Topic, oneLine(err.Error()))
			}
		}
		for _, p := range ids {
			add(topicPartition{a.Topic, p})
		}
	}
	sortPartitions(ps)
	return ps, nil
}

// planReset computes the new offsets of the group's partitions ps like Kafka 2.4's
// ConsumerGroupCommand.prepareOffsetsToReset. warn receives Kafka's clamping warnings.
func planReset(ctx context.Context, be groupsBackend, group string, ps []topicPartition, committed map[topicPartition]int64,
	spec resetSpec, now time.Time, warn func(string)) (map[topicPartition]int64, error) {
	out := map[topicPartition]int64{}
	fromBroker := func(offsets map[topicPartition]int64, what string) (map[topicPartition]int64, error) {
		for _, p := range ps {
			o, ok := offsets[p]
			if !ok {
				return nil, failf("Error getting %s of topic partition: %s", what, p)
			}
			out[p] = o
		}
		return out, nil
	}
	switch spec.scenario {
	case "to-earliest":
		start, err := be.startOffsets(ctx, ps)
		if err != nil {
			return nil, err
		}
		return fromBroker(start, "starting offset")
	case "to-latest":
		end, err := be.endOffsets(ctx, ps)
		if err != nil {
			return nil, err
		}
		return fromBroker(end, "ending offset")
	case "to-datetime", "by-duration":
		ts := spec.timestamp
		if spec.scenario == "by-duration" {
			ts = now.Add(-spec.duration).UnixMilli()
		}
		byTime, err := be.offsetsForTime(ctx, ps, ts)
		if err != nil {
			return nil, err
		}
		return fromBroker(byTime, "offset by timestamp")
	case "to-current":
		var missing []topicPartition
		for _, p := range ps {
			if o, ok := committed[p]; ok {
				out[p] = o
			} else {
				missing = append(missing, p)
			}
		}
		if len(missing) == 0 {
			return out, nil
		}
		end, err := be.endOffsets(ctx, missing)
		if err != nil {
			return nil, err
		}
		for _, p := range missing {
			o, ok := end[p]
			if !ok {
				return nil, failf("Error getting ending offset of topic partition: %s", p)
			}
			out[p] = o
		}
		return out, nil
	}
	requested := map[topicPartition]int64{}
	switch spec.scenario {
	case "to-offset":
		for _, p := range ps {
			requested[p] = spec.offset
		}
	case "shift-by":
		for _, p := range ps {
			o, ok := committed[p]
			if !ok {
				return nil, failf("Cannot shift offset for partition %s since there is no current committed offset", p)
			}
			requested[p] = o + spec.offset
		}
	case "from-file":
		plan, ok := spec.plan[group]
		if !ok {
			return nil, failf("No reset plan for group %s found", group)
		}
		for p, o := range plan {
			requested[p] = o
		}
	default:
		return nil, failf("unknown reset scenario %q", spec.scenario)
	}
	return clampOffsets(ctx, be, requested, warn)
}

// clampOffsets keeps requested offsets within [log start offset, log end offset] like
// Kafka 2.4's checkOffsetsRange, warning for each clamped one.
func clampOffsets(ctx context.Context, be groupsBackend, requested map[topicPartition]int64, warn func(string)) (map[topicPartition]int64, error) {
	ps := make([]topicPartition, 0, len(requested))
	for p := range requested {
		ps = append(ps, p)
	}
	sortPartitions(ps)
	start, err := be.startOffsets(ctx, ps)
	if err != nil {
		return nil, err
	}
	end, err := be.endOffsets(ctx, ps)
	if err != nil {
		return nil, err
	}
	out := map[topicPartition]int64{}
	for _, p := range ps {
		o := requested[p]
		e, okEnd := end[p]
		s, okStart := start[p]
		if !okEnd || !okStart {
			return nil, failf("cannot get the log start and end offsets of topic partition %s (does it exist?)", p)
		}
		switch {
		case o > e:
			warn(fmt.Sprintf("New offset (%d) is higher than latest offset for topic partition %s. Value will be set to %d", o, p, e))
			o = e
		case o < s:
			warn(fmt.Sprintf("New offset (%d) is lower than earliest offset for topic partition %s. Value will be set to %d", o, p, s))
			o = s
		}
		out[p] = o
	}
	return out, nil
}

// resetOffsets plans (and with --execute commits) new offsets for each selected group.
// Groups with active members are refused with Kafka's message; the others are still reset.
func (r *cgRun) resetOffsets(ctx context.Context) error {
	groups, err := r.groupIDs(ctx)
	if err != nil || len(groups) == 0 {
		return err
	}
	groups = sortedUnique(groups)
	ds, err := r.describeAll(ctx, groups)
	if err != nil {
		return err
	}
	now := time.Now()
	if r.now != nil {
		now = r.now()
	}
	plans := map[string]map[topicPartition]int64{}
	var refused []string
	for _, g := range groups {
		if st := ds[g].State; st != "Empty" && st != "Dead" {
			refused = append(refused, fmt.Sprintf("Assignments can only be reset if the group '%s' is inactive, but the current state is %s.", g, st))
			continue
		}
		committed, err := r.be.committedOffsets(ctx, g)
		if err != nil {
			return err
		}
		ps, err := r.resetScope(ctx, committed)
		if err != nil {
			return err
		}
		plan, err := planReset(ctx, r.be, g, ps, committed, r.o.reset, now, func(msg string) { fmt.Fprintln(r.stderr, "WARN: "+msg) })
		if err != nil {
			return err
		}
		if r.o.execute && len(plan) > 0 {
			if err := r.be.commit(ctx, g, plan); err != nil {
				return err
			}
		}
		plans[g] = plan
	}
	if r.o.export {
		writeResetCSV(r.out, plans, len(r.o.groups) == 1)
	} else {
		writeResetPlan(r.out, plans)
	}
	if len(refused) > 0 {
		return failf("%s", strings.Join(refused, " "))
	}
	return nil
}

func sortStrings(ss []string) { sort.Strings(ss) }
