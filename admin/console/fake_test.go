package console

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/activemq-go/broker/admin"
)

// testSession is the login session of the tests: one user, one CSRF token.
type testSession struct{ user, token string }

func (s testSession) User(*http.Request) string      { return s.user }
func (s testSession) CSRFToken(*http.Request) string { return s.token }
func (s testSession) CheckCSRF(r *http.Request) bool {
	got := r.PostFormValue(CSRFField)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) == 1
}

var errNotFound = errors.New("fake: not found")

// fakeBackend is an in-memory broker: queues with messages, topics, durable
// subscriptions, connections and streams. It records what the console asked of it.
type fakeBackend struct {
	mu       sync.Mutex
	overview admin.Overview
	queues   map[string]*fakeQueue // by full name
	topics   map[string]admin.Destination
	streams  map[string]admin.Stream
	durables []admin.DurableSubscription
	conns    []admin.Connection
	nextID   int

	sent    []sentMessage
	moves   []moveCall
	purges  []string
	removed []string
	closed  []closeCall
	deleted []string // queue/id
}

type fakeQueue struct {
	d    admin.Destination
	msgs []admin.Message
}

type sentMessage struct {
	Dest string
	Req  admin.SendRequest
}

type moveCall struct {
	Queue string
	Req   admin.MoveRequest
}

type closeCall struct{ ID, Reason string }

var _ Backend = (*fakeBackend)(nil)

func newFakeBackend() *fakeBackend {
	return &fakeBackend{
		overview: admin.Overview{Name: "test-broker", Version: "0.0.0-test", Started: time.Now().Add(-time.Hour), Uptime: 3600, Adapter: "memory"},
		queues:   map[string]*fakeQueue{},
		topics:   map[string]admin.Destination{},
		streams:  map[string]admin.Stream{},
	}
}

// addQueue creates a queue (if needed) with counters from d.
func (f *fakeBackend) addQueue(name string, d admin.Destination) *fakeQueue {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queueLocked(name, d)
}

func (f *fakeBackend) queueLocked(name string, d admin.Destination) *fakeQueue {
	full := "/queue/" + name
	q, ok := f.queues[full]
	if !ok {
		d.Name, d.Type = full, "queue"
		q = &fakeQueue{d: d}
		f.queues[full] = q
	}
	return q
}

// put adds a message to a queue, with the given id ("" for a new one).
func (f *fakeBackend) put(queue, id, body string, headers map[string]string) admin.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.putLocked(queue, id, body, headers, true, time.Now())
}

func (f *fakeBackend) putLocked(queue, id, body string, headers map[string]string, persistent bool, at time.Time) admin.Message {
	q := f.queueLocked(queue, admin.Destination{})
	if id == "" {
		f.nextID++
		id = fmt.Sprintf("ID:test-%d", f.nextID)
	}
	m := admin.Message{ID: id, Destination: q.d.Name, Headers: headers, Persistent: persistent, Priority: 4, Timestamp: at, Size: len(body), Body: body}
	q.msgs = append(q.msgs, m)
	q.d.Enqueued++
	f.overview.MessagesIn++
	return m
}

func (f *fakeBackend) Overview() admin.Overview {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := f.overview
	o.Connections, o.Queues, o.Topics, o.Streams = len(f.conns), len(f.queues), len(f.topics), len(f.streams)
	return o
}

func (f *fakeBackend) Destinations(kind string) []admin.Destination {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []admin.Destination
	if kind == "" || kind == "queue" {
		for _, q := range f.queues {
			d := q.d
			d.Messages = int64(len(q.msgs))
			d.OldestAge = 0
			if len(q.msgs) > 0 {
				d.OldestAge = time.Since(q.msgs[0].Timestamp).Seconds()
			}
			out = append(out, d)
		}
	}
	if kind == "" || kind == "topic" {
		for _, t := range f.topics {
			out = append(out, t)
		}
	}
	if kind == "" || kind == "stream" {
		for name, s := range f.streams {
			d := admin.Destination{Name: name, Type: "stream"}
			for _, p := range s.Partitions {
				d.Messages += p.EndOffset - p.StartOffset
				d.Enqueued += p.EndOffset
			}
			for _, g := range s.Groups {
				d.Consumers += g.Members
			}
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// previewBytes is how much of a body Browse returns.
const previewBytes = 200

func (f *fakeBackend) Browse(_ context.Context, queue, after string, limit int) ([]admin.Message, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, ok := f.queues[queue]
	if !ok {
		return nil, "", errNotFound
	}
	start := 0
	if after != "" {
		start = len(q.msgs)
		for i, m := range q.msgs {
			if m.ID == after {
				start = i + 1
				break
			}
		}
	}
	end := min(start+limit, len(q.msgs))
	var out []admin.Message
	for _, m := range q.msgs[start:end] {
		if len(m.Body) > previewBytes {
			m.Body, m.Truncated = m.Body[:previewBytes], true
		}
		out = append(out, m)
	}
	next := ""
	if end < len(q.msgs) && len(out) > 0 {
		next = out[len(out)-1].ID
	}
	return out, next, nil
}

func (f *fakeBackend) Message(_ context.Context, queue, id string) (admin.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q, ok := f.queues[queue]; ok {
		for _, m := range q.msgs {
			if m.ID == id {
				return m, nil
			}
		}
	}
	return admin.Message{}, errNotFound
}

func (f *fakeBackend) DeleteMessage(_ context.Context, queue, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q, ok := f.queues[queue]; ok {
		for i, m := range q.msgs {
			if m.ID == id {
				q.msgs = append(q.msgs[:i], q.msgs[i+1:]...)
				f.deleted = append(f.deleted, queue+"/"+id)
				return nil
			}
		}
	}
	return errNotFound
}

func (f *fakeBackend) Send(_ context.Context, dest string, r admin.SendRequest) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, sentMessage{dest, r})
	if name, ok := strings.CutPrefix(dest, "/queue/"); ok {
		return f.putLocked(name, "", r.Body, r.Headers, r.Persistent, time.Now()).ID, nil
	}
	f.nextID++
	f.overview.MessagesIn++
	return fmt.Sprintf("ID:test-%d", f.nextID), nil
}

func (f *fakeBackend) Purge(_ context.Context, queue string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, ok := f.queues[queue]
	if !ok {
		return 0, errNotFound
	}
	n := len(q.msgs)
	q.msgs = nil
	f.purges = append(f.purges, queue)
	return n, nil
}

func (f *fakeBackend) RemoveDestination(_ context.Context, dest string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.queues[dest]; ok {
		delete(f.queues, dest)
	} else if _, ok := f.topics[dest]; ok {
		delete(f.topics, dest)
	} else {
		return errNotFound
	}
	f.removed = append(f.removed, dest)
	return nil
}

// idSelector is the only selector the fake understands besides "": one message by id.
var idSelector = regexp.MustCompile(`^JMSMessageID = '((?:[^']|'')*)'$`)

func (f *fakeBackend) Move(_ context.Context, queue string, r admin.MoveRequest) (admin.MoveResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.moves = append(f.moves, moveCall{queue, r})
	q, ok := f.queues[queue]
	if !ok {
		return admin.MoveResult{}, errNotFound
	}
	match := func(admin.Message) bool { return true }
	if r.Selector != "" {
		m := idSelector.FindStringSubmatch(r.Selector)
		if m == nil {
			return admin.MoveResult{}, fmt.Errorf("fake: selector %q not understood", r.Selector)
		}
		id := strings.ReplaceAll(m[1], "''", "'")
		match = func(msg admin.Message) bool { return msg.ID == id }
	}
	var keep []admin.Message
	n := 0
	for _, m := range q.msgs {
		if (r.Limit > 0 && n >= r.Limit) || !match(m) {
			keep = append(keep, m)
			continue
		}
		to := r.To
		if to == "original" {
			to = m.Headers["original-destination"]
		}
		name, ok := strings.CutPrefix(to, "/queue/")
		if !ok {
			keep = append(keep, m)
			continue
		}
		moved := m
		moved.Headers = map[string]string{}
		for k, v := range m.Headers {
			if k != "original-destination" {
				moved.Headers[k] = v
			}
		}
		t := f.queueLocked(name, admin.Destination{})
		moved.Destination = t.d.Name
		t.msgs = append(t.msgs, moved)
		n++
		if r.Copy {
			keep = append(keep, m)
		}
	}
	q.msgs = keep
	return admin.MoveResult{Moved: n}, nil
}

func (f *fakeBackend) Connections() []admin.Connection {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]admin.Connection(nil), f.conns...)
}

func (f *fakeBackend) CloseConnection(_ context.Context, id, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range f.conns {
		if c.ID == id {
			f.conns = append(f.conns[:i], f.conns[i+1:]...)
			f.closed = append(f.closed, closeCall{id, reason})
			return nil
		}
	}
	return errNotFound
}

func (f *fakeBackend) DurableSubscriptions() []admin.DurableSubscription {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]admin.DurableSubscription(nil), f.durables...)
}

func (f *fakeBackend) ImportDurable(context.Context, string, string, []admin.SendRequest) (admin.ImportResult, error) {
	return admin.ImportResult{}, errors.New("fake: no imports")
}

func (f *fakeBackend) RemoveDurableSubscription(_ context.Context, clientID, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, d := range f.durables {
		if d.ClientID == clientID && d.Name == name {
			if d.Active {
				return errors.New("fake: durable subscription in use")
			}
			f.durables = append(f.durables[:i], f.durables[i+1:]...)
			f.removed = append(f.removed, "durable:"+clientID+"/"+name)
			return nil
		}
	}
	return errNotFound
}

func (f *fakeBackend) Stream(name string) (admin.Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.streams[name]
	if !ok {
		return admin.Stream{}, errNotFound
	}
	return s, nil
}

// Readers of what the console asked, for the tests.

func (f *fakeBackend) Sent() []sentMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sentMessage(nil), f.sent...)
}

func (f *fakeBackend) Moves() []moveCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]moveCall(nil), f.moves...)
}

func (f *fakeBackend) Purges() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.purges...)
}

func (f *fakeBackend) Closed() []closeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]closeCall(nil), f.closed...)
}

func (f *fakeBackend) Removed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.removed...)
}

// ids returns the ids of the messages waiting on a queue.
func (f *fakeBackend) ids(queue string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	if q, ok := f.queues["/queue/"+queue]; ok {
		for _, m := range q.msgs {
			out = append(out, m.ID)
		}
	}
	return out
}
