package admin

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Jolokia reads (docs/api.md, "Jolokia reads"): ActiveMQ's monitoring scripts read its
// MBeans' attributes through the Jolokia agent of its web console,
//
//	GET /api/jolokia/read/org.apache.activemq:type=Broker,brokerName=B,destinationType=Queue,destinationName=Q/QueueSize
//
// and this serves those reads with ActiveMQ's MBean and attribute names and Jolokia
// 1.x's JSON, read-only: the request types read, search and version. Every other type
// (exec, write, list, notification) is refused with Jolokia's status 403: there is no
// generic invoke here (the lesson of CVE-2022-41678 and CVE-2023-50164's cousins in
// operations.md §5.6). As Jolokia does, the HTTP status is 200 and the Jolokia status
// is in the body (a POST of several requests answers each); 401 and 403 of guard stay
// HTTP statuses.

// jolokiaDomain is ActiveMQ's JMX domain.
const jolokiaDomain = "org.apache.activemq"

// jolokiaProtocol is the Jolokia protocol version the answers follow (Jolokia 1.7's).
const jolokiaProtocol = "7.2"

// maxJolokiaBody bounds a POSTed request list.
const maxJolokiaBody = 1 << 20

// jolokiaError is a Jolokia error: its status and Java exception class.
type jolokiaError struct {
	status    int
	errorType string
	msg       string
}

func (e *jolokiaError) Error() string { return e.errorType + " : " + e.msg }

func jolokiaErr(status int, errorType, format string, args ...any) *jolokiaError {
	return &jolokiaError{status, errorType, fmt.Sprintf(format, args...)}
}

const (
	instanceNotFound  = "javax.management.InstanceNotFoundException"
	attributeNotFound = "javax.management.AttributeNotFoundException"
	malformedName     = "javax.management.MalformedObjectNameException"
	illegalArgument   = "java.lang.IllegalArgumentException"
	refusedType       = "java.lang.Exception"
)

// jolokiaRequest is one Jolokia request, as POSTed (or taken from a GET path).
type jolokiaRequest struct {
	Type      string `json:"type"`
	MBean     string `json:"mbean,omitempty"`
	Attribute any    `json:"attribute,omitempty"` // a name or a list of names
	Path      string `json:"path,omitempty"`
	// Config holds processing parameters; canonicalNaming is the one heeded.
	Config map[string]any `json:"config,omitempty"`
}

// mbean is one of the MBeans the reads serve.
type mbean struct {
	name  objectName
	attrs map[string]any
}

// jolokiaView is the broker's MBeans at one moment: one Backend snapshot per HTTP
// request.
type jolokiaView struct {
	beans []mbean
}

// objectNames is an attribute listing MBeans (the broker's Queues and Topics): it
// renders as Jolokia renders ObjectName[], [{"objectName": "..."}], canonical or not
// as the request asks.
type objectNames []objectName

func (ns objectNames) render(canonical bool) []any {
	out := make([]any, len(ns))
	for i, n := range ns {
		out[i] = map[string]any{"objectName": nameString(n, canonical)}
	}
	return out
}

// render turns an attribute's value into its JSON form.
func render(v any, canonical bool) any {
	if ns, ok := v.(objectNames); ok {
		return ns.render(canonical)
	}
	return v
}

// renderAll is the JSON form of some attributes.
func renderAll(attrs map[string]any, canonical bool) map[string]any {
	out := make(map[string]any, len(attrs))
	for k, v := range attrs {
		out[k] = render(v, canonical)
	}
	return out
}

func (s *Server) jolokiaView() *jolokiaView {
	ov := s.o.Backend.Overview()
	ds := s.o.Backend.Destinations("")
	brokerName := encodeNamePart(ov.Name)
	broker := objectName{domain: jolokiaDomain, keys: []nameKey{{"type", "Broker"}, {"brokerName", brokerName}}}
	queues, topics := objectNames{}, objectNames{}
	var consumers, producers, enq, deq, msgs int64
	var beans []mbean
	for _, d := range ds {
		var typ, short string
		switch {
		case d.Type == "queue" && strings.HasPrefix(d.Name, "/queue/"):
			typ, short = "Queue", strings.TrimPrefix(d.Name, "/queue/")
		case d.Type == "topic" && strings.HasPrefix(d.Name, "/topic/"):
			typ, short = "Topic", strings.TrimPrefix(d.Name, "/topic/")
		default:
			continue // streams and temporary destinations have no ActiveMQ MBean here
		}
		n := objectName{domain: jolokiaDomain, keys: append(append([]nameKey(nil), broker.keys...),
			nameKey{"destinationType", typ}, nameKey{"destinationName", encodeNamePart(short)})}
		if typ == "Queue" {
			queues = append(queues, n)
		} else {
			topics = append(topics, n)
		}
		consumers += int64(d.Consumers)
		producers += int64(d.Producers)
		enq += d.Enqueued
		deq += d.Dequeued
		msgs += d.Messages
		beans = append(beans, mbean{name: n, attrs: map[string]any{
			"Name":                 short,
			"QueueSize":            d.Messages,
			"EnqueueCount":         d.Enqueued,
			"DequeueCount":         d.Dequeued,
			"DispatchCount":        d.Dequeued + d.Dispatched,
			"ExpiredCount":         d.Expired,
			"InFlightCount":        d.Dispatched,
			"ConsumerCount":        int64(d.Consumers),
			"ProducerCount":        int64(d.Producers),
			"MemoryUsageByteCount": d.Memory,
			"MemoryLimit":          ov.MemoryLimit,
			"MemoryPercentUsage":   percent(d.Memory, ov.MemoryLimit),
		}})
	}
	up := time.Duration(ov.Uptime * float64(time.Second))
	beans = append([]mbean{{name: broker, attrs: map[string]any{
		"BrokerName":              ov.Name,
		"BrokerVersion":           ov.Version,
		"BrokerId":                "ID:" + ov.Name + "-" + strconv.FormatInt(ov.Started.UnixMilli(), 10),
		"Uptime":                  printDuration(up),
		"UptimeMillis":            up.Milliseconds(),
		"TotalConnectionsCount":   int64(ov.Connections),
		"CurrentConnectionsCount": int64(ov.Connections),
		"TotalConsumerCount":      consumers,
		"TotalProducerCount":      producers,
		"TotalEnqueueCount":       enq,
		"TotalDequeueCount":       deq,
		"TotalMessageCount":       msgs,
		"MemoryPercentUsage":      percent(ov.MemoryUsed, ov.MemoryLimit),
		"MemoryLimit":             ov.MemoryLimit,
		"StorePercentUsage":       percent(ov.StoreUsed, ov.StoreLimit),
		"StoreLimit":              ov.StoreLimit,
		"Queues":                  queues,
		"Topics":                  topics,
	}}}, beans...)
	return &jolokiaView{beans: beans}
}

// percent is ActiveMQ's usage percentage: an int, 0 without a limit.
func percent(used, limit int64) int64 {
	if limit <= 0 {
		return 0
	}
	return used * 100 / limit
}

// printDuration is ActiveMQ's TimeUtils.printDuration, the broker's Uptime attribute:
// "12.345 seconds", "5 minutes", "2 hours 3 minutes", "1 day 4 hours".
func printDuration(d time.Duration) string {
	plural := func(n int64, unit string) string {
		if n > 1 {
			return strconv.FormatInt(n, 10) + " " + unit + "s"
		}
		return strconv.FormatInt(n, 10) + " " + unit
	}
	secs := d.Seconds()
	if secs < 60 {
		return strconv.FormatFloat(secs, 'f', 3, 64) + " seconds"
	}
	mins := secs / 60
	if mins < 60 {
		return plural(int64(mins), "minute")
	}
	hours := mins / 60
	if hours < 24 {
		s := plural(int64(hours), "hour")
		if m := int64((hours - float64(int64(hours))) * 60); m != 0 {
			s += " " + plural(m, "minute")
		}
		return s
	}
	days := hours / 24
	s := plural(int64(days), "day")
	if h := int64((days - float64(int64(days))) * 24); h != 0 {
		s += " " + plural(h, "hour")
	}
	return s
}

// jolokia serves /api/jolokia: GET /api/jolokia/<type>/<arguments> and POST
// /api/jolokia with one request or a list.
func (s *Server) jolokia(w http.ResponseWriter, r *http.Request) {
	canonical := r.URL.Query().Get("canonicalNaming") != "false"
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		req, jerr := parseJolokiaPath(r)
		var resp map[string]any
		if jerr != nil {
			resp = errorResponse(nil, jerr)
		} else {
			resp = s.jolokiaView().handle(req, canonical)
		}
		writeJolokia(w, resp)
	case http.MethodPost:
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJolokiaBody))
		if err != nil {
			writeJolokia(w, errorResponse(nil, jolokiaErr(400, illegalArgument, "cannot read the request body: %v", err)))
			return
		}
		trimmed := strings.TrimSpace(string(body))
		if strings.HasPrefix(trimmed, "[") {
			var reqs []jolokiaRequest
			if err := json.Unmarshal(body, &reqs); err != nil {
				writeJolokia(w, errorResponse(nil, jolokiaErr(400, illegalArgument, "invalid JSON request: %v", err)))
				return
			}
			view := s.jolokiaView()
			out := make([]map[string]any, len(reqs))
			for i, req := range reqs {
				out[i] = view.handle(req, canonicalFor(req, canonical))
			}
			writeJolokia(w, out)
			return
		}
		var req jolokiaRequest
		if err := json.Unmarshal(body, &req); err != nil {
			writeJolokia(w, errorResponse(nil, jolokiaErr(400, illegalArgument, "invalid JSON request: %v", err)))
			return
		}
		c := canonicalFor(req, canonical)
		writeJolokia(w, s.jolokiaView().handle(req, c))
	default:
		w.Header().Set("Allow", "GET, POST")
		writeJolokia(w, errorResponse(nil, jolokiaErr(405, illegalArgument, "HTTP method %s is not supported: use GET or POST", r.Method)))
	}
}

// canonicalFor is the request's canonicalNaming (its config) or the query's.
func canonicalFor(req jolokiaRequest, def bool) bool {
	switch v := req.Config["canonicalNaming"].(type) {
	case bool:
		return v
	case string:
		return v != "false"
	}
	return def
}

// writeJolokia writes a Jolokia answer: HTTP 200 whatever the Jolokia status, with
// Jolokia's default content type.
func writeJolokia(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "text/plain;charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(v)
}

// parseJolokiaPath reads a GET request's path: /api/jolokia/<type>/<arg>/...,
// each part unescaped as Jolokia does ("!/" a slash within a part, "!!" a "!"; a
// percent-encoded slash works too). No type is a version request.
func parseJolokiaPath(r *http.Request) (jolokiaRequest, *jolokiaError) {
	raw := strings.TrimPrefix(r.URL.EscapedPath(), "/api/jolokia")
	raw = strings.Trim(raw, "/")
	if raw == "" {
		return jolokiaRequest{Type: "version"}, nil
	}
	parts, err := splitJolokiaPath(raw)
	if err != nil {
		return jolokiaRequest{}, jolokiaErr(400, illegalArgument, "%v", err)
	}
	req := jolokiaRequest{Type: parts[0]}
	args := parts[1:]
	switch req.Type {
	case "read":
		if len(args) == 0 {
			return req, jolokiaErr(400, illegalArgument, "a read needs an MBean: /read/<mbean>[/<attribute>[/<path>]]")
		}
		req.MBean = args[0]
		if len(args) > 1 && args[1] != "" {
			if attrs := strings.Split(args[1], ","); len(attrs) > 1 {
				list := make([]any, len(attrs))
				for i, a := range attrs {
					list[i] = a
				}
				req.Attribute = list
			} else {
				req.Attribute = args[1]
			}
		}
		if len(args) > 2 {
			req.Path = strings.Join(args[2:], "/")
		}
	case "search":
		if len(args) > 0 {
			req.MBean = args[0]
		}
	}
	return req, nil
}

func splitJolokiaPath(raw string) ([]string, error) {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '!' && i+1 < len(raw):
			i++
			cur.WriteByte(raw[i])
		case c == '/':
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	parts = append(parts, cur.String())
	for i, p := range parts {
		u, err := url.PathUnescape(p)
		if err != nil {
			return nil, fmt.Errorf("bad escape in the path: %v", err)
		}
		parts[i] = u
	}
	return parts, nil
}

// handle answers one request.
func (v *jolokiaView) handle(req jolokiaRequest, canonical bool) map[string]any {
	switch req.Type {
	case "read":
		return v.read(req, canonical)
	case "search":
		return v.search(req, canonical)
	case "version":
		return okResponse(map[string]any{"type": "version"}, map[string]any{
			"agent":    "activemq-go (Jolokia-compatible reads)",
			"protocol": jolokiaProtocol,
			"config":   map[string]any{},
			"info":     map[string]any{"product": "activemq-go", "vendor": "activemq-go"},
		})
	case "exec", "write", "list", "notification":
		return errorResponse(map[string]any{"type": req.Type}, jolokiaErr(403, refusedType,
			"request type %s is not allowed: this broker's Jolokia endpoint serves reads only (read, search, version)", req.Type))
	case "":
		return errorResponse(nil, jolokiaErr(400, illegalArgument, "the request has no type"))
	}
	return errorResponse(map[string]any{"type": req.Type}, jolokiaErr(400, illegalArgument, "unknown request type %q", req.Type))
}

func okResponse(request map[string]any, value any) map[string]any {
	return map[string]any{"request": request, "value": value, "timestamp": time.Now().Unix(), "status": 200}
}

func errorResponse(request map[string]any, e *jolokiaError) map[string]any {
	m := map[string]any{"status": e.status, "error_type": e.errorType, "error": e.Error()}
	if request != nil {
		m["request"] = request
	}
	return m
}

// find returns the MBeans pattern names.
func (v *jolokiaView) find(pattern objectName) []mbean {
	var out []mbean
	match := pattern.matcher()
	for _, b := range v.beans {
		if match(b.name) {
			out = append(out, b)
		}
	}
	return out
}

func nameString(n objectName, canonical bool) string {
	if canonical {
		return n.canonical()
	}
	return n.String()
}

func (v *jolokiaView) search(req jolokiaRequest, canonical bool) map[string]any {
	echo := map[string]any{"type": "search", "mbean": req.MBean}
	pattern, err := parseObjectName(req.MBean)
	if err != nil {
		return errorResponse(echo, jolokiaErr(400, malformedName, "invalid ObjectName %q", req.MBean))
	}
	echo["mbean"] = pattern.canonical()
	names := []string{}
	for _, b := range v.find(pattern) {
		names = append(names, nameString(b.name, canonical))
	}
	sort.Strings(names)
	return okResponse(echo, names)
}

// attributes returns the names a request's attribute asks for (nil: all) and whether
// it named several.
func attributes(a any) ([]string, bool, *jolokiaError) {
	switch a := a.(type) {
	case nil:
		return nil, false, nil
	case string:
		if a == "" {
			return nil, false, nil
		}
		return []string{a}, false, nil
	case []any:
		out := make([]string, 0, len(a))
		for _, x := range a {
			s, ok := x.(string)
			if !ok {
				return nil, false, jolokiaErr(400, illegalArgument, "attribute names are strings")
			}
			out = append(out, s)
		}
		if len(out) == 0 {
			return nil, false, nil
		}
		return out, true, nil
	}
	return nil, false, jolokiaErr(400, illegalArgument, "attribute is a name or a list of names")
}

func (v *jolokiaView) read(req jolokiaRequest, canonical bool) map[string]any {
	echo := map[string]any{"type": "read", "mbean": req.MBean}
	if req.Attribute != nil && req.Attribute != "" {
		echo["attribute"] = req.Attribute
	}
	if req.Path != "" {
		echo["path"] = req.Path
	}
	name, err := parseObjectName(req.MBean)
	if err != nil {
		return errorResponse(echo, jolokiaErr(400, malformedName, "invalid ObjectName %q", req.MBean))
	}
	echo["mbean"] = name.canonical()
	attrs, several, jerr := attributes(req.Attribute)
	if jerr != nil {
		return errorResponse(echo, jerr)
	}
	if !name.isPattern() {
		beans := v.find(name)
		if len(beans) == 0 {
			return errorResponse(echo, jolokiaErr(404, instanceNotFound, "%s", name.canonical()))
		}
		b := beans[0]
		var value any
		switch {
		case attrs == nil:
			value = renderAll(b.attrs, canonical)
		case !several:
			x, ok := b.attrs[attrs[0]]
			if !ok {
				return errorResponse(echo, jolokiaErr(404, attributeNotFound, "No such attribute: %s", attrs[0]))
			}
			value = render(x, canonical)
		default:
			m := map[string]any{}
			for _, a := range attrs {
				x, ok := b.attrs[a]
				if !ok {
					return errorResponse(echo, jolokiaErr(404, attributeNotFound, "No such attribute: %s", a))
				}
				m[a] = render(x, canonical)
			}
			value = m
		}
		value, jerr = walkPath(value, req.Path)
		if jerr != nil {
			return errorResponse(echo, jerr)
		}
		return okResponse(echo, value)
	}
	// A pattern: {"<name>": {"<attribute>": value}} over the MBeans that have the
	// attributes asked for.
	beans := v.find(name)
	if len(beans) == 0 {
		return errorResponse(echo, jolokiaErr(404, instanceNotFound, "No MBean with pattern %s found for reading attributes", name.canonical()))
	}
	out := map[string]any{}
	for _, b := range beans {
		m := map[string]any{}
		if attrs == nil {
			m = renderAll(b.attrs, canonical)
		}
		for _, a := range attrs {
			if x, ok := b.attrs[a]; ok {
				m[a] = render(x, canonical)
			}
		}
		if len(m) > 0 {
			out[nameString(b.name, canonical)] = m
		}
	}
	if len(out) == 0 {
		return errorResponse(echo, jolokiaErr(400, illegalArgument, "No matching attributes %v found on MBeans matching %s", attrs, name.canonical()))
	}
	if req.Path != "" {
		value, jerr := walkPath(out, req.Path)
		if jerr != nil {
			return errorResponse(echo, jerr)
		}
		return okResponse(echo, value)
	}
	return okResponse(echo, out)
}

// walkPath follows a Jolokia inner path ("Queues/0/objectName") into a value.
func walkPath(value any, path string) (any, *jolokiaError) {
	if path == "" {
		return value, nil
	}
	parts, err := splitJolokiaPath(path)
	if err != nil {
		return nil, jolokiaErr(400, illegalArgument, "%v", err)
	}
	for _, p := range parts {
		switch v := value.(type) {
		case map[string]any:
			x, ok := v[p]
			if !ok {
				return nil, jolokiaErr(404, attributeNotFound, "No such key %q in path %s", p, path)
			}
			value = x
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(v) {
				return nil, jolokiaErr(400, illegalArgument, "index %q out of range in path %s", p, path)
			}
			value = v[i]
		default:
			return nil, jolokiaErr(400, illegalArgument, "path %s goes into a simple value", path)
		}
	}
	return value, nil
}
