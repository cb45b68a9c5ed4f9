package console

import (
	"fmt"
	"html/template"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/activemq-go/broker/admin"
)

// Destination name forms, as clients write them.
const (
	queuePrefix = "/queue/"
	topicPrefix = "/topic/"
)

// shortName is a destination's name without /queue/ or /topic/.
func shortName(dest string) string {
	if s, ok := strings.CutPrefix(dest, queuePrefix); ok {
		return s
	}
	if s, ok := strings.CutPrefix(dest, topicPrefix); ok {
		return s
	}
	return dest
}

// isDLQ reports whether d is a dead-letter queue: flagged by the broker, or named as
// ActiveMQ names them (ActiveMQ.DLQ, ActiveMQ.DLQ.Queue.X, DLQ.X).
func isDLQ(d admin.Destination) bool {
	return d.DLQ || (d.Type == "queue" && isDLQName(shortName(d.Name)))
}

func isDLQName(short string) bool {
	return strings.HasPrefix(short, "DLQ.") || strings.HasPrefix(short, "ActiveMQ.DLQ")
}

// funcs are the templates' helpers. None returns template.HTML: everything they
// produce is escaped like any other value.
var funcs = template.FuncMap{
	"short": shortName,
	"qpath": func(dest string) string { return "/queues/" + url.PathEscape(shortName(dest)) },
	"tpath": func(dest string) string { return "/topics/" + url.PathEscape(shortName(dest)) },
	"spath": func(dest string) string { return "/streams/" + url.PathEscape(shortName(dest)) },
	"mpath": func(dest, id string) string {
		return "/queues/" + url.PathEscape(shortName(dest)) + "/messages/" + url.PathEscape(id)
	},
	"esc":       url.PathEscape,
	"isDLQ":     isDLQ,
	"num":       formatNum,
	"bytes":     formatBytes,
	"age":       formatAge,
	"since":     func(t time.Time) string { return formatAge(time.Since(t).Seconds()) },
	"ts":        formatTime,
	"tsShort":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
	"rate":      formatRate,
	"preview":   preview,
	"headers":   sortedHeaders,
	"orig":      func(m admin.Message) string { return m.Headers["original-destination"] },
	"plural":    plural,
	"sparkW":    func() int { return sparkWidth },
	"sparkH":    func() int { return sparkHeight },
	"durShort":  func(d time.Duration) string { return formatAge(d.Seconds()) },
	"sub":       func(a, b int64) int64 { return a - b },
	"mul7":      func(n int64) int64 { return n * 7 / 10 },
	"mul9":      func(n int64) int64 { return n * 9 / 10 },
	"dict":      dict,
	"csrfField": func() string { return CSRFField },
	"int64":     func(n int) int64 { return int64(n) },
}

// dict builds a map from name, value pairs, to pass several values to a template.
func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("dict: odd number of arguments")
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict: key %v is not a string", kv[i])
		}
		m[k] = kv[i+1]
	}
	return m, nil
}

// formatNum writes an integer with thousands separators.
func formatNum(v any) string {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	case uint64:
		n = int64(x)
	default:
		return fmt.Sprint(v)
	}
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// formatBytes writes a size in B, KiB, MiB, GiB or TiB.
func formatBytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v := float64(n)
	for _, unit := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= 1024
		if v < 1024 || unit == "TiB" {
			if v < 10 {
				return fmt.Sprintf("%.1f %s", v, unit)
			}
			return fmt.Sprintf("%.0f %s", v, unit)
		}
	}
	return "" // not reached
}

// formatAge writes a duration in seconds the way an operator reads it: "42s",
// "3m 12s", "2h 05m", "4d 3h"; "–" for zero.
func formatAge(sec float64) string {
	if sec <= 0 || math.IsNaN(sec) {
		return "–"
	}
	s := int64(sec)
	switch {
	case s < 60:
		if sec < 1 {
			return "<1s"
		}
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm %02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh %02dm", s/3600, s%3600/60)
	default:
		return fmt.Sprintf("%dd %dh", s/86400, s%86400/3600)
	}
}

// formatTime writes a time in UTC to the second (to the millisecond with ms).
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

// formatRate writes messages per second.
func formatRate(r float64) string {
	switch {
	case r == 0:
		return "0/s"
	case r < 10:
		return fmt.Sprintf("%.1f/s", r)
	default:
		return formatNum(int64(math.Round(r))) + "/s"
	}
}

// percent is used of limit in percent (0 when there is no limit).
func percent(used, limit int64) float64 {
	if limit <= 0 {
		return 0
	}
	return math.Round(1000*float64(used)/float64(limit)) / 10
}

// previewLen is how much of a body the browse table shows.
const previewLen = 120

// preview is the start of a message's body for the browse table: its text, or a note
// for a binary body.
func preview(m admin.Message) string {
	if m.Body == "" && m.BodyBase64 != "" {
		return fmt.Sprintf("(binary, %s)", formatBytes(int64(m.Size)))
	}
	s := strings.Join(strings.Fields(m.Body), " ")
	if r := []rune(s); len(r) > previewLen {
		return string(r[:previewLen]) + "…"
	}
	if m.Truncated {
		return s + "…"
	}
	return s
}

// header is one name and value.
type header struct{ Name, Value string }

// sortedHeaders is a message's headers sorted by name.
func sortedHeaders(h map[string]string) []header {
	out := make([]header, 0, len(h))
	for k, v := range h {
		out = append(out, header{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// plural is "1 message" or "3 messages".
func plural(n any, word string) string {
	s := formatNum(n)
	if s == "1" {
		return s + " " + word
	}
	return s + " " + word + "s"
}
