package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Paths of the shipped dashboard and alert rules, relative to the repository root.
const (
	DashboardFile  = "docs/grafana/isrbroker-dashboard.json"
	AlertRulesFile = "docs/prometheus/isrbroker-alerts.yml"
)

// DashboardExprs returns every target expression of the Grafana dashboard at path (panels
// nested in rows included), keyed by "panel title/refId".
func DashboardExprs(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	type target struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	}
	type panel struct {
		Title   string            `json:"title"`
		Type    string            `json:"type"`
		Targets []target          `json:"targets"`
		Panels  []json.RawMessage `json:"panels"`
	}
	var d struct {
		Title  string            `json:"title"`
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string]string{}
	var walk func([]json.RawMessage) error
	walk = func(ps []json.RawMessage) error {
		for _, r := range ps {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			for _, t := range p.Targets {
				out[p.Title+"/"+t.RefID] = t.Expr
			}
			if err := walk(p.Panels); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(d.Panels)
}

// AlertExprs returns the expr of every alert in the rules file at path, by alert name. The
// file is read line-wise (the repository does not depend on a YAML library): an `expr:` is
// either on its line or a `>-` block of the more indented lines after it.
func AlertExprs(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	lines := strings.Split(string(raw), "\n")
	alert := ""
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if a, ok := strings.CutPrefix(l, "- alert:"); ok {
			alert = strings.TrimSpace(a)
			continue
		}
		e, ok := strings.CutPrefix(l, "expr:")
		if !ok || alert == "" {
			continue
		}
		e = strings.TrimSpace(e)
		if e == ">-" || e == "|" || e == ">" {
			indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
			var b []string
			for i+1 < len(lines) {
				n := lines[i+1]
				if strings.TrimSpace(n) != "" && len(n)-len(strings.TrimLeft(n, " ")) <= indent {
					break
				}
				b = append(b, strings.TrimSpace(n))
				i++
			}
			e = strings.Join(b, " ")
		}
		out[alert] = strings.TrimSpace(e)
	}
	return out, nil
}

var metricNameRE = regexp.MustCompile(`\b(?:kafka|go|process)_[a-z0-9_]+\b`)

// QueriedMetricNames lists the metric names (kafka_*, go_*, process_*) that expr queries.
func QueriedMetricNames(expr string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range metricNameRE.FindAllString(expr, -1) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// DocsQueries returns every expression of the dashboard and the alert rules under the
// repository root, keyed by "file: panel or alert".
func DocsQueries(root string) (map[string]string, error) {
	out := map[string]string{}
	d, err := DashboardExprs(filepath.Join(root, DashboardFile))
	if err != nil {
		return nil, err
	}
	for k, v := range d {
		out[DashboardFile+": "+k] = v
	}
	a, err := AlertExprs(filepath.Join(root, AlertRulesFile))
	if err != nil {
		return nil, err
	}
	for k, v := range a {
		out[AlertRulesFile+": "+k] = v
	}
	return out, nil
}

// FamilyOf maps a queried name to its family in a parsed text exposition: a summary's or
// histogram's _count, _sum and _bucket series belong to the family without the suffix.
func FamilyOf(name string, families map[string]bool) (string, bool) {
	if families[name] {
		return name, true
	}
	for _, s := range []string{"_count", "_sum", "_bucket"} {
		if base, ok := strings.CutSuffix(name, s); ok && families[base] {
			return base, true
		}
	}
	return "", false
}
