package perf

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultDateFormat is kafka-consumer-perf-test's default --date-format (Java
// SimpleDateFormat syntax).
const DefaultDateFormat = "yyyy-MM-dd HH:mm:ss:SSS"

// DateFormat formats times with a Java SimpleDateFormat pattern. The supported letters are
// y M d H h k K m s S a E Z X; text in single quotes is literal, and two single quotes stand for one.
type DateFormat struct {
	parts []datePart
}

type datePart struct {
	letter byte // 0: literal
	n      int
	lit    string
}

// ParseDateFormat compiles a SimpleDateFormat pattern; an unsupported letter is an error.
func ParseDateFormat(pattern string) (*DateFormat, error) {
	df := &DateFormat{}
	for i := 0; i < len(pattern); {
		ch := pattern[i]
		switch {
		case ch == '\'':
			if i+1 < len(pattern) && pattern[i+1] == '\'' {
				df.parts = append(df.parts, datePart{lit: "'"})
				i += 2
				continue
			}
			j := i + 1
			var lit strings.Builder
			for ; j < len(pattern); j++ {
				if pattern[j] == '\'' {
					if j+1 < len(pattern) && pattern[j+1] == '\'' {
						lit.WriteByte('\'')
						j++
						continue
					}
					break
				}
				lit.WriteByte(pattern[j])
			}
			if j >= len(pattern) {
				return nil, fmt.Errorf("invalid date format %q: unterminated quote", pattern)
			}
			df.parts = append(df.parts, datePart{lit: lit.String()})
			i = j + 1
		case ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z':
			if !strings.ContainsRune("yMdHhkKmsSaEZX", rune(ch)) {
				return nil, fmt.Errorf("invalid date format %q: unsupported pattern letter '%c'", pattern, ch)
			}
			j := i
			for j < len(pattern) && pattern[j] == ch {
				j++
			}
			df.parts = append(df.parts, datePart{letter: ch, n: j - i})
			i = j
		default:
			df.parts = append(df.parts, datePart{lit: string(ch)})
			i++
		}
	}
	return df, nil
}

func pad(v, n int) string {
	s := strconv.Itoa(v)
	for len(s) < n {
		s = "0" + s
	}
	return s
}

// Format formats t (in its location) like SimpleDateFormat.format.
func (df *DateFormat) Format(t time.Time) string {
	var b strings.Builder
	for _, p := range df.parts {
		if p.letter == 0 {
			b.WriteString(p.lit)
			continue
		}
		switch p.letter {
		case 'y':
			if p.n == 2 {
				b.WriteString(pad(t.Year()%100, 2))
			} else {
				b.WriteString(pad(t.Year(), p.n))
			}
		case 'M':
			switch {
			case p.n >= 4:
				b.WriteString(t.Month().String())
			case p.n == 3:
				b.WriteString(t.Month().String()[:3])
			default:
				b.WriteString(pad(int(t.Month()), p.n))
			}
		case 'd':
			b.WriteString(pad(t.Day(), p.n))
		case 'H':
			b.WriteString(pad(t.Hour(), p.n))
		case 'k': // 1-24
			h := t.Hour()
			if h == 0 {
				h = 24
			}
			b.WriteString(pad(h, p.n))
		case 'K': // 0-11
			b.WriteString(pad(t.Hour()%12, p.n))
		case 'h': // 1-12
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			b.WriteString(pad(h, p.n))
		case 'm':
			b.WriteString(pad(t.Minute(), p.n))
		case 's':
			b.WriteString(pad(t.Second(), p.n))
		case 'S':
			b.WriteString(pad(t.Nanosecond()/int(time.Millisecond), p.n))
		case 'a':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'E':
			if p.n >= 4 {
				b.WriteString(t.Weekday().String())
			} else {
				b.WriteString(t.Weekday().String()[:3])
			}
		case 'Z':
			b.WriteString(t.Format("-0700"))
		case 'X':
			switch p.n {
			case 1:
				b.WriteString(t.Format("Z07"))
			case 2:
				b.WriteString(t.Format("Z0700"))
			default:
				b.WriteString(t.Format("Z07:00"))
			}
		}
	}
	return b.String()
}
