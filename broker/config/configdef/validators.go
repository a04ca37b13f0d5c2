package configdef

import (
	"slices"
	"strconv"
	"strings"
)

// Validator restricts a typed value. Check returns "" when the value is valid, else the
// reason ("must be at least 1"); Doc renders the valid values for docs/configuration.md.
type Validator struct {
	Doc   string
	Check func(v any) string
}

// AtLeast accepts integers >= min; note, if given, is appended to the message in brackets.
func AtLeast(min int64, note ...string) *Validator {
	msg := "must be at least " + strconv.FormatInt(min, 10)
	if len(note) > 0 {
		msg += " (" + note[0] + ")"
	}
	return &Validator{Doc: "[" + strconv.FormatInt(min, 10) + ",...]", Check: func(v any) string {
		if v.(int64) < min {
			return msg
		}
		return ""
	}}
}

// Positive accepts integers > 0.
func Positive() *Validator {
	return &Validator{Doc: "[1,...]", Check: func(v any) string {
		if v.(int64) <= 0 {
			return "must be greater than 0"
		}
		return ""
	}}
}

// Between accepts integers or doubles in [lo, hi].
func Between(lo, hi float64) *Validator {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	return &Validator{Doc: "[" + f(lo) + ",...," + f(hi) + "]", Check: func(v any) string {
		var x float64
		switch t := v.(type) {
		case int64:
			x = float64(t)
		case float64:
			x = t
		}
		if x < lo || x > hi {
			return "must be between " + f(lo) + " and " + f(hi)
		}
		return ""
	}}
}

// UnlimitedOrAtLeast1 accepts -1 (unlimited) or integers >= 1 (retention.ms).
func UnlimitedOrAtLeast1() *Validator {
	return &Validator{Doc: "-1 or [1,...]", Check: func(v any) string {
		if x := v.(int64); x != -1 && x < 1 {
			return "must be unlimited (-1) or at least 1"
		}
		return ""
	}}
}

// superUsers accepts super.users: ';'-separated principals of the form Type:name.
func superUsers() *Validator {
	return &Validator{Doc: "principals Type:name separated by ';'", Check: func(v any) string {
		for _, p := range strings.Split(v.(string), ";") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			if i := strings.IndexByte(p, ':'); i <= 0 || i == len(p)-1 {
				return "principal " + strconv.Quote(p) + " is not of the form Type:name (User:admin)"
			}
		}
		return ""
	}}
}

// OneOf accepts one of the strings (case-sensitive, as Kafka's ValidString).
func OneOf(values ...string) *Validator {
	return &Validator{Doc: strings.Join(values, ", "), Check: func(v any) string {
		for _, x := range values {
			if v.(string) == x {
				return ""
			}
		}
		return "must be one of " + strings.Join(values, ", ")
	}}
}

// EmptyOrOneOf accepts an empty value or one of the strings (case-sensitive); why, appended
// to the message, says what the empty value means and why nothing else is accepted.
func EmptyOrOneOf(why string, values ...string) *Validator {
	return &Validator{Doc: "empty or " + strings.Join(values, ", "), Check: func(v any) string {
		if v.(string) == "" || slices.Contains(values, v.(string)) {
			return ""
		}
		return "must be empty or one of " + strings.Join(values, ", ") + " (" + why + ")"
	}}
}

// ListOf accepts a non-empty list whose entries are each one of values (Kafka's ValidList);
// what names an entry in the message ("policy").
func ListOf(what string, values ...string) *Validator {
	alts := strings.Join(values, " or ")
	return &Validator{Doc: "[" + strings.Join(values, ", ") + "]", Check: func(v any) string {
		l := v.([]string)
		if len(l) == 0 {
			return "must list at least one " + what
		}
	entries:
		for _, e := range l {
			for _, x := range values {
				if strings.EqualFold(e, x) {
					continue entries
				}
			}
			return "each " + what + " must be " + alts
		}
		return ""
	}}
}

// ThrottledReplicas accepts Kafka's throttled-replica list: "*" or partition:broker pairs
// (LogConfig's ThrottledReplicaListValidator).
func ThrottledReplicas() *Validator {
	return &Validator{Doc: "[partitionId]:[brokerId],... or *", Check: func(v any) string {
		l := v.([]string)
		if len(l) == 1 && l[0] == "*" {
			return ""
		}
		for _, e := range l {
			p, b, ok := strings.Cut(e, ":")
			if _, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32); !ok || err != nil {
				return "must be * or a list of partition:broker pairs"
			}
			if _, err := strconv.ParseInt(strings.TrimSpace(b), 10, 32); err != nil {
				return "must be * or a list of partition:broker pairs"
			}
		}
		return ""
	}}
}
