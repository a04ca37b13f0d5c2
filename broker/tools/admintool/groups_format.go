package admintool

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// missingColumn is Kafka's MISSING_COLUMN_VALUE.
const missingColumn = "-"

// offsetRow is one --describe line. Partition -1 and Offset/LogEndOffset -1 are unknown.
type offsetRow struct {
	Group, Topic               string
	Partition                  int32
	Offset, LogEndOffset       int64
	ConsumerID, Host, ClientID string
}

// lag is LOG-END-OFFSET minus CURRENT-OFFSET when both are known (Kafka's getLag).
func (r offsetRow) lag() string {
	if r.Offset < 0 || r.LogEndOffset < 0 {
		return missingColumn
	}
	return strconv.FormatInt(r.LogEndOffset-r.Offset, 10)
}

func orMissing(n int64) string {
	if n < 0 {
		return missingColumn
	}
	return strconv.FormatInt(n, 10)
}

// describeOffsetRows builds the --describe rows like Kafka 2.4's collectGroupsOffsets:
// first the members that have partitions, most partitions first, one row per assigned
// partition (with its committed offset, if any); then, with "-" as consumer, the
// partitions that have a committed offset but no member. Partitions are sorted by topic
// and partition.
func describeOffsetRows(d groupDescription, committed, logEnd map[topicPartition]int64) []offsetRow {
	offset := func(p topicPartition, m map[topicPartition]int64) int64 {
		if o, ok := m[p]; ok {
			return o
		}
		return -1
	}
	members := make([]groupMember, 0, len(d.Members))
	for _, m := range d.Members {
		if len(m.Assignment) > 0 {
			members = append(members, m)
		}
	}
	sort.SliceStable(members, func(i, j int) bool { return len(members[i].Assignment) > len(members[j].Assignment) })
	var rows []offsetRow
	assigned := map[topicPartition]bool{}
	for _, m := range members {
		ps := append([]topicPartition(nil), m.Assignment...)
		sortPartitions(ps)
		for _, p := range ps {
			assigned[p] = true
			rows = append(rows, offsetRow{Group: d.Group, Topic: p.Topic, Partition: p.Partition,
				Offset: offset(p, committed), LogEndOffset: offset(p, logEnd),
				ConsumerID: m.ID, Host: m.Host, ClientID: m.ClientID})
		}
	}
	var rest []topicPartition
	for p := range committed {
		if !assigned[p] {
			rest = append(rest, p)
		}
	}
	sortPartitions(rest)
	for _, p := range rest {
		rows = append(rows, offsetRow{Group: d.Group, Topic: p.Topic, Partition: p.Partition,
			Offset: committed[p], LogEndOffset: offset(p, logEnd),
			ConsumerID: missingColumn, Host: missingColumn, ClientID: missingColumn})
	}
	return rows
}

// writeOffsetRows prints Kafka 2.4's --describe (--offsets) table: a blank line, the
// header, the rows; GROUP, TOPIC, CONSUMER-ID and HOST are at least 15 wide.
func writeOffsetRows(out io.Writer, rows []offsetRow) {
	g, t, c, h := 15, 15, 15, 15
	for _, r := range rows {
		g, t, c, h = max(g, len(r.Group)), max(t, len(r.Topic)), max(c, len(r.ConsumerID)), max(h, len(r.Host))
	}
	format := fmt.Sprintf("%%-%ds %%-%ds %%-10s %%-15s %%-15s %%-15s %%-%ds %%-%ds %%s\n", g, t, c, h)
	fmt.Fprint(out, "\n")
	fmt.Fprintf(out, format, "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")
	for _, r := range rows {
		part := missingColumn
		if r.Partition >= 0 {
			part = strconv.Itoa(int(r.Partition))
		}
		fmt.Fprintf(out, format, r.Group, r.Topic, part, orMissing(r.Offset), orMissing(r.LogEndOffset), r.lag(), r.ConsumerID, r.Host, r.ClientID)
	}
}

// writeMembers prints Kafka 2.4's --describe --members table (with --verbose the
// ASSIGNMENT column: "topic(0,1), other(2)", "-" when none). Like Kafka, each line ends in
// the space after #PARTITIONS when there is no ASSIGNMENT column.
func writeMembers(out io.Writer, d groupDescription, verbose bool) {
	g, c, h, cl := max(15, len(d.Group)), 15, 15, 15
	for _, m := range d.Members {
		c, h, cl = max(c, len(m.ID)), max(h, len(m.Host)), max(cl, len(m.ClientID))
	}
	format := fmt.Sprintf("%%-%ds %%-%ds %%-%ds %%-%ds %%-15s ", g, c, h, cl)
	fmt.Fprint(out, "\n")
	fmt.Fprintf(out, format, "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
	if verbose {
		fmt.Fprint(out, "ASSIGNMENT")
	}
	fmt.Fprint(out, "\n")
	for _, m := range d.Members {
		fmt.Fprintf(out, format, d.Group, m.ID, m.Host, m.ClientID, strconv.Itoa(len(m.Assignment)))
		if verbose {
			fmt.Fprint(out, assignmentString(m.Assignment))
		}
		fmt.Fprint(out, "\n")
	}
}

// assignmentString renders an assignment like Kafka's printMembers: per topic
// "topic(p1,p2)" with sorted partitions, topics sorted, joined by ", "; "-" when empty.
func assignmentString(ps []topicPartition) string {
	if len(ps) == 0 {
		return missingColumn
	}
	byTopic := map[string][]int{}
	for _, p := range ps {
		byTopic[p.Topic] = append(byTopic[p.Topic], int(p.Partition))
	}
	var parts []string
	for t, ids := range byTopic {
		sort.Ints(ids)
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = strconv.Itoa(id)
		}
		parts = append(parts, t+"("+strings.Join(s, ",")+")")
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// writeState prints Kafka 2.4's --describe --state table. As in Kafka, the GROUP column
// takes the width of the coordinator ("host:port (id)", at least 25).
func writeState(out io.Writer, d groupDescription) {
	coord := fmt.Sprintf("%s:%d (%d)", d.Coordinator.Host, d.Coordinator.Port, d.Coordinator.ID)
	w := max(25, len(coord))
	format := fmt.Sprintf("%%-%ds %%-25s %%-20s %%-15s %%s\n", w)
	fmt.Fprint(out, "\n")
	fmt.Fprintf(out, format, "GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
	fmt.Fprintf(out, format, d.Group, coord, d.Protocol, d.State, strconv.Itoa(len(d.Members)))
}

func sortedPlan(plans map[string]map[topicPartition]int64) (groups []string, parts map[string][]topicPartition) {
	parts = map[string][]topicPartition{}
	for g, plan := range plans {
		groups = append(groups, g)
		for p := range plan {
			parts[g] = append(parts[g], p)
		}
		sortPartitions(parts[g])
	}
	sort.Strings(groups)
	return groups, parts
}

// writeResetPlan prints Kafka 2.4's --reset-offsets table (GROUP TOPIC PARTITION NEW-OFFSET).
func writeResetPlan(out io.Writer, plans map[string]map[topicPartition]int64) {
	if len(plans) == 0 {
		return
	}
	const format = "%-30s %-30s %-10s %-15s\n"
	fmt.Fprint(out, "\n")
	fmt.Fprintf(out, format, "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
	groups, parts := sortedPlan(plans)
	for _, g := range groups {
		for _, p := range parts[g] {
			fmt.Fprintf(out, format, g, p.Topic, strconv.Itoa(int(p.Partition)), strconv.FormatInt(plans[g][p], 10))
		}
	}
}

// writeResetCSV prints --reset-offsets --export: "topic,partition,offset" lines for a
// single --group, else "group,topic,partition,offset" (the input of --from-file).
func writeResetCSV(out io.Writer, plans map[string]map[topicPartition]int64, singleGroup bool) {
	groups, parts := sortedPlan(plans)
	for _, g := range groups {
		for _, p := range parts[g] {
			if singleGroup {
				fmt.Fprintf(out, "%s,%d,%d\n", p.Topic, p.Partition, plans[g][p])
			} else {
				fmt.Fprintf(out, "%s,%s,%d,%d\n", g, p.Topic, p.Partition, plans[g][p])
			}
		}
	}
}

// deleteOffsetsGroupMessage is Kafka 2.4's message for a group-level OffsetDelete error.
func deleteOffsetsGroupMessage(group string, err error) string {
	switch {
	case errors.Is(err, kerr.InvalidGroupID):
		return fmt.Sprintf("'%s' is not valid.", group)
	case errors.Is(err, kerr.GroupIDNotFound):
		return fmt.Sprintf("'%s' does not exist.", group)
	case errors.Is(err, kerr.GroupAuthorizationFailed):
		return fmt.Sprintf("Access to '%s' is not authorized.", group)
	case errors.Is(err, kerr.NonEmptyGroup):
		return fmt.Sprintf("Deleting offsets of a consumer group '%s' is forbidden if the group is not empty.", group)
	case errors.Is(err, kerr.GroupSubscribedToTopic), errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.UnknownTopicOrPartition):
		return "Encounter some partition level error, see the follow-up details: " + groupErrText(err)
	default:
		return "Encounter some unknown error: " + groupErrText(err)
	}
}
