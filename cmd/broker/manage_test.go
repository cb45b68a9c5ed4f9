package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/admin"
)

// fakeAdminAPI speaks the admin REST contract (docs/api.md) over an httptest server,
// with queues that are counts of messages; it requires user:pass when user is set.
type fakeAdminAPI struct {
	user, pass string

	mu       sync.Mutex
	dests    []admin.Destination
	stream   admin.Stream
	moves    []admin.MoveRequest // each request, in order
	requests []string            // method and escaped path of each request
}

func (f *fakeAdminAPI) find(name string) *admin.Destination {
	for i := range f.dests {
		if f.dests[i].Name == name {
			return &f.dests[i]
		}
	}
	return nil
}

func apiErr(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func apiJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeAdminAPI) start(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/broker", func(w http.ResponseWriter, _ *http.Request) {
		apiJSON(w, 200, admin.Overview{Name: "fake", Version: "1.2.3", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Uptime: 3725, Adapter: "kahaDB", MemoryUsed: 3 << 20, MemoryLimit: 64 << 20, StoreUsed: 1500,
			Connections: 2, Queues: 3, Topics: 1, MessagesIn: 123456, MessagesOut: 1000})
	})
	mux.HandleFunc("GET /api/destinations", func(w http.ResponseWriter, r *http.Request) {
		kind := r.URL.Query().Get("type")
		out := []admin.Destination{}
		for _, d := range f.dests {
			if kind == "" || d.Type == kind {
				out = append(out, d)
			}
		}
		apiJSON(w, 200, out)
	})
	mux.HandleFunc("GET /api/streams/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") != f.stream.Name {
			apiErr(w, 404, "no such stream")
			return
		}
		apiJSON(w, 200, f.stream)
	})
	mux.HandleFunc("POST /api/queues/{name}/purge", func(w http.ResponseWriter, r *http.Request) {
		d := f.find("/queue/" + r.PathValue("name"))
		if d == nil {
			apiErr(w, 404, "no such queue: /queue/"+r.PathValue("name"))
			return
		}
		n := d.Messages
		d.Messages = 0
		apiJSON(w, 200, map[string]int64{"purged": n})
	})
	mux.HandleFunc("POST /api/queues/{name}/move", func(w http.ResponseWriter, r *http.Request) {
		d := f.find("/queue/" + r.PathValue("name"))
		if d == nil {
			apiErr(w, 404, "no such queue")
			return
		}
		var req admin.MoveRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			apiErr(w, 400, err.Error())
			return
		}
		f.moves = append(f.moves, req)
		n := d.Messages
		if req.Limit > 0 {
			n = min(n, int64(req.Limit))
		}
		if !req.Copy {
			d.Messages -= n
		}
		apiJSON(w, 200, map[string]int64{"moved": n})
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.requests = append(f.requests, r.Method+" "+r.URL.EscapedPath())
		if f.user != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != f.user || p != f.pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="broker"`)
				apiErr(w, 401, "authentication required")
				return
			}
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func newFakeAdminAPI() *fakeAdminAPI {
	return &fakeAdminAPI{dests: []admin.Destination{
		{Name: "/queue/orders", Type: "queue", Messages: 12, Enqueued: 1000, Dequeued: 988, Consumers: 2, OldestAge: 1.5},
		{Name: "/queue/DLQ.orders", Type: "queue", Messages: 1234, Enqueued: 1234, DLQ: true},
		{Name: "/queue/a b/c", Type: "queue", Messages: 1},
		{Name: "/topic/prices", Type: "topic", Enqueued: 5, Consumers: 1},
		{Name: "/topic/events", Type: "stream", Enqueued: 9},
	}, stream: admin.Stream{Name: "events",
		Partitions: []admin.StreamPartition{{Partition: 0, StartOffset: 0, EndOffset: 9, Bytes: 2048}},
		Groups: []admin.StreamGroup{{Group: "g", Lag: 4, Members: 1,
			Partitions: []admin.StreamGroupPartition{{Partition: 0, Committed: 5, End: 9, Lag: 4}}}}}}
}

func TestListCommand(t *testing.T) {
	api := newFakeAdminAPI()
	base := api.start(t)
	out, stderr, code := runCLI(t, "", "list", "--admin", base)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, `NAME               TYPE    MESSAGES  CONSUMERS  ENQUEUED  DEQUEUED
/queue/orders      queue   12        2          1,000     988
/queue/DLQ.orders  queue   1,234     0          1,234     0
/queue/a b/c       queue   1         0          0         0
/topic/prices      topic   0         1          5         0
/topic/events      stream  0         0          9         0
`, out)

	out, _, code = runCLI(t, "", "list", "--admin", base, "--type", "topic", "--json")
	require.Equal(t, exitOK, code)
	var got []admin.Destination
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Len(t, got, 1)
	assert.Equal(t, "/topic/prices", got[0].Name)
}

// TestAdminCredentials: the URL's credentials go as HTTP Basic authentication, from
// --admin or $BROKER_ADMIN; a 401 names what to do, and no error shows the password.
func TestAdminCredentials(t *testing.T) {
	api := newFakeAdminAPI()
	api.user, api.pass = "admin", "s3cr@t"
	base := api.start(t)
	withCreds := strings.Replace(base, "http://", "http://admin:s3cr%40t@", 1)

	t.Setenv(envAdminURL, "")
	_, stderr, code := runCLI(t, "", "list", "--admin", base)
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "broker: list: HTTP 401 Unauthorized: authentication required (give a user of an admin group")

	_, stderr, code = runCLI(t, "", "list", "--admin", strings.Replace(base, "http://", "http://admin:hunter2@", 1))
	assert.Equal(t, exitFailed, code)
	assert.NotContains(t, stderr, "hunter2")

	_, stderr, code = runCLI(t, "", "list", "--admin", withCreds)
	assert.Equal(t, exitOK, code, stderr)

	t.Setenv(envAdminURL, withCreds)
	_, stderr, code = runCLI(t, "", "stat")
	assert.Equal(t, exitOK, code, stderr)
}

func TestStatCommand(t *testing.T) {
	base := newFakeAdminAPI().start(t)
	out, stderr, code := runCLI(t, "", "stat", "--admin", base)
	require.Equal(t, exitOK, code, stderr)
	for _, want := range []string{"name         fake\n", "version      1.2.3\n", "uptime       1h2m5s\n",
		"store        kahaDB\n", "memory       3.0 MiB of 64.0 MiB (5%)\n", "store use    1.5 KiB (no limit)\n",
		"connections  2\n", "received     123,456 messages\n"} {
		assert.Contains(t, out, want)
	}

	out, stderr, code = runCLI(t, "", "stat", "--admin", base, "orders")
	require.Equal(t, exitOK, code, stderr)
	for _, want := range []string{"name            /queue/orders\n", "type            queue\n",
		"messages        12\n", "enqueued        1,000\n", "oldest message  1.5s\n"} {
		assert.Contains(t, out, want)
	}
	out, _, code = runCLI(t, "", "stat", "--admin", base, "/queue/DLQ.orders")
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "dead-letter queue  yes\n")

	out, _, code = runCLI(t, "", "stat", "--admin", base, "--json", "prices")
	require.Equal(t, exitOK, code)
	var d destinationStat
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	assert.Equal(t, "/topic/prices", d.Name)
	assert.Equal(t, int64(5), d.Enqueued)
	assert.Nil(t, d.Stream)

	out, stderr, code = runCLI(t, "", "stat", "--admin", base, "/topic/events")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "type            stream\n")
	assert.Contains(t, out, "PARTITION  START  END  SIZE\n0          0      9    2.0 KiB\n")
	assert.Contains(t, out, "GROUP  PARTITION  COMMITTED  END  LAG\ng      0          5          9    4\n")

	_, stderr, code = runCLI(t, "", "stat", "--admin", base, "/queue/nope")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "broker: stat /queue/nope: no such destination")
}

func TestPurgeCommand(t *testing.T) {
	api := newFakeAdminAPI()
	base := api.start(t)
	out, stderr, code := runCLI(t, "", "purge", "--admin", base, "/queue/orders")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "purged 12 messages from /queue/orders\n", out)

	// A name with a slash and a space is one path segment.
	out, stderr, code = runCLI(t, "", "purge", "--admin", base, "queue://a b/c")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "purged 1 message from /queue/a b/c\n", out)
	assert.Contains(t, api.requests, "POST /api/queues/a%20b%2Fc/purge")

	_, stderr, code = runCLI(t, "", "purge", "--admin", base, "nope")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "broker: purge /queue/nope: HTTP 404 Not Found: no such queue: /queue/nope\n")

	_, stderr, code = runCLI(t, "", "purge", "--admin", "http://127.0.0.1:1", "/queue/orders")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "broker: purge /queue/orders: admin API at http://127.0.0.1:1: dial tcp 127.0.0.1:1")
}

// TestMoveCommand: a move goes in requests of moveChunk messages up to what the queue
// held (or --limit); a copy is one request; the target is passed as the API takes it.
func TestMoveCommand(t *testing.T) {
	api := newFakeAdminAPI()
	base := api.start(t)
	out, stderr, code := runCLI(t, "", "move", "--admin", base, "DLQ.orders", "--to", "original", "--selector", "a = 1")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "moved 1,234 messages from /queue/DLQ.orders to their original destinations\n", out)
	assert.Equal(t, []admin.MoveRequest{
		{To: "original", Selector: "a = 1", Limit: moveChunk},
		{To: "original", Selector: "a = 1", Limit: moveChunk},
		{To: "original", Selector: "a = 1", Limit: 1234 - 2*moveChunk},
	}, api.moves)

	api.moves = nil
	api.find("/queue/DLQ.orders").Messages = 700
	out, stderr, code = runCLI(t, "", "move", "--admin", base, "/queue/DLQ.orders", "--to", "orders", "--limit", "600")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "moved 600 messages from /queue/DLQ.orders to /queue/orders\n", out)
	assert.Equal(t, []admin.MoveRequest{{To: "/queue/orders", Limit: moveChunk}, {To: "/queue/orders", Limit: 100}}, api.moves)

	api.moves = nil
	out, stderr, code = runCLI(t, "", "move", "--admin", base, "/queue/orders", "--to", "/topic/prices", "--copy")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "copied 12 messages from /queue/orders to /topic/prices\n", out)
	assert.Equal(t, []admin.MoveRequest{{To: "/topic/prices", Copy: true}}, api.moves)

	// The queue runs dry before the count: move stops at the short request.
	api.moves = nil
	api.find("/queue/DLQ.orders").Messages = 0
	out, _, code = runCLI(t, "", "move", "--admin", base, "/queue/DLQ.orders", "--to", "orders")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "moved 0 messages from /queue/DLQ.orders to /queue/orders\n", out)
	assert.Empty(t, api.moves)

	_, stderr, code = runCLI(t, "", "move", "--admin", base, "/queue/nope", "--to", "orders")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "broker: move /queue/nope: no such destination")
}
