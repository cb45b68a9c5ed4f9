package scheduler

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// host is a Host that records what the scheduler routes (a due job's destinations
// and body) and the durability of each commit, and commits batches at once.
type host struct {
	mu      sync.Mutex
	n       int
	routed  chan string // "<dest> <body>"
	commits []persistence.Durability
}

func newHost() *host { return &host{routed: make(chan string, 100)} }

func (h *host) NewMessageID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	return "ID:test-" + strconv.Itoa(h.n)
}

func (h *host) Route(dests []destinations.Name, m *persistence.Message) (persistence.Batch, []destinations.Accepted, error) {
	for _, d := range dests {
		h.routed <- d.String() + " " + string(m.Body)
	}
	return nil, nil, nil
}

// next is the next message routed, within a generous deadline.
func (h *host) next(t *testing.T) string {
	t.Helper()
	select {
	case r := <-h.routed:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("nothing routed in 10s")
		return ""
	}
}

func (h *host) Commit(batch persistence.Batch, d persistence.Durability, done func(error)) {
	h.mu.Lock()
	h.commits = append(h.commits, d)
	h.mu.Unlock()
	done(batch.Commit(context.Background(), d))
}

func (h *host) durabilities() []persistence.Durability {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]persistence.Durability(nil), h.commits...)
}

// A new job is committed Sync, its producer waiting for it; each delivery of a due job
// Async: nobody waits for it, and a crash that undoes it leaves the job stored to be
// delivered again, so it rides the store's next sync instead of forcing one.
func TestDeliveriesRideTheNextSync(t *testing.T) {
	store := memstore.New()
	h := newHost()
	s := newScheduler(t, store, h, nil)
	m := &persistence.Message{ID: "ID:orig", Body: []byte("r"), Persistent: true, Priority: 4,
		Headers: persistence.Headers{HeaderDelay, "1", HeaderPeriod, "1", HeaderRepeat, "1"}}
	dests, err := destinations.Parse("/queue/soon")
	require.NoError(t, err)
	done := make(chan error, 1)
	require.NoError(t, s.Schedule(context.Background(), dests, m, func(err error) { done <- err }))
	require.NoError(t, <-done)
	for range 2 {
		assert.Equal(t, "/queue/soon r", h.next(t))
	}
	require.Eventually(t, func() bool { return stored(store) == 0 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, []persistence.Durability{persistence.Sync, persistence.Async, persistence.Async}, h.durabilities())
}

// recorder is a slog.Handler keeping the messages of the lines logged.
type recorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, rec.Message)
	return nil
}

func (r *recorder) logged() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

func newScheduler(t *testing.T, store persistence.Store, h Host, log *slog.Logger) *Scheduler {
	t.Helper()
	s := New(Config{Store: store, Host: h, Log: log, Memory: destinations.NewUsage(1 << 30), Space: &destinations.SpaceSignal{}})
	require.NoError(t, s.Recover(context.Background()))
	t.Cleanup(s.Close)
	return s
}

func stored(store *memstore.Store) int64 {
	n, _ := store.Stats(StoreDest)
	return n
}

// A stored job whose destination no longer parses is deleted at start, with a log
// line, instead of staying in the store for good; the good ones are still delivered.
func TestUndeliverableJobDeleted(t *testing.T) {
	store := memstore.New()
	due := time.Now().Add(-time.Second).UnixMilli()
	batch := store.Begin()
	for i, dests := range []string{"/queue/", "/queue/good"} {
		batch.Add(&persistence.Message{Dest: StoreDest, Seq: jobKey(due, uint64(i)), ID: "job" + strconv.Itoa(i),
			Body: []byte(dests), Persistent: true, Priority: 4,
			Headers: persistence.Headers{hdrJobDests, dests, hdrJobDue, strconv.FormatInt(due, 10), hdrJobRemaining, "0", hdrJobPeriod, "0"}})
	}
	require.NoError(t, batch.Commit(context.Background(), persistence.Sync))
	rec := &recorder{}
	h := newHost()
	newScheduler(t, store, h, slog.New(rec))
	assert.Contains(t, rec.logged(), "scheduled message deleted: its destination no longer parses")
	assert.Equal(t, "/queue/good /queue/good", h.next(t))
	require.Eventually(t, func() bool { return stored(store) == 0 }, 10*time.Second, 5*time.Millisecond)
}

// A persistent repeating job is delivered once and then once per repeat, each time
// under a new message id, and leaves the store after the last; it survives a restart
// on the same store meanwhile.
func TestRepeatingJobSurvivesRestart(t *testing.T) {
	store := memstore.New()
	h := newHost()
	s := New(Config{Store: store, Host: h, Memory: destinations.NewUsage(1 << 30), Space: &destinations.SpaceSignal{}})
	require.NoError(t, s.Recover(context.Background()))
	m := &persistence.Message{ID: "ID:orig", Body: []byte("r"), Persistent: true, Priority: 4,
		Headers: persistence.Headers{HeaderDelay, "3600000", HeaderPeriod, "1", HeaderRepeat, "2"}}
	require.True(t, s.Wants(m))
	dests, err := destinations.Parse("/queue/later")
	require.NoError(t, err)
	done := make(chan error, 1)
	require.NoError(t, s.Schedule(context.Background(), dests, m, func(err error) { done <- err }))
	require.NoError(t, <-done)
	s.Close()
	require.EqualValues(t, 1, stored(store), "the job is stored until it is due")

	// Stored again due now, as a clock an hour later would find it.
	var job *persistence.Message
	require.NoError(t, store.Scan(context.Background(), StoreDest, 0, 0, func(m *persistence.Message) error { job = m.Clone(); return nil }))
	now := time.Now().UnixMilli()
	moved := store.Begin()
	moved.Ack(StoreDest, job.Seq)
	job.Seq = jobKey(now, 0)
	for i := 0; i+1 < len(job.Headers); i += 2 {
		if job.Headers[i] == hdrJobDue {
			job.Headers[i+1] = strconv.FormatInt(now, 10)
		}
	}
	moved.Add(job)
	require.NoError(t, moved.Commit(context.Background(), persistence.Sync))

	newScheduler(t, store, h, nil)
	for range 3 {
		assert.Equal(t, "/queue/later r", h.next(t))
	}
	require.Eventually(t, func() bool { return stored(store) == 0 }, 10*time.Second, 5*time.Millisecond)
	select {
	case r := <-h.routed:
		t.Fatalf("a fourth delivery: %s", r)
	default:
	}
}

// The scheduling headers are checked: a cron schedule and a negative delay are refused
// as an invalid destination would be.
func TestCheckRefuses(t *testing.T) {
	s := New(Config{})
	for _, hs := range []persistence.Headers{{HeaderCron, "* * * * *"}, {HeaderDelay, "-1"}, {HeaderRepeat, "x"}} {
		err := s.Check(&persistence.Message{Headers: hs})
		assert.ErrorIs(t, err, destinations.ErrInvalidDestination, "%v", hs)
	}
	assert.NoError(t, s.Check(&persistence.Message{Headers: persistence.Headers{HeaderDelay, "10"}}))
	assert.False(t, s.Wants(&persistence.Message{Headers: persistence.Headers{"x", "y"}}))
}

// OpenWire's clients set the scheduling properties as typed longs and ints: they are
// read as the STOMP headers are.
func TestTypedSchedulingProperties(t *testing.T) {
	s := New(Config{})
	m := &persistence.Message{Props: persistence.Props{
		persistence.IntProp(HeaderDelay, persistence.PropLong, 1500),
		persistence.IntProp(HeaderRepeat, persistence.PropInt, 2),
		persistence.IntProp(HeaderPeriod, persistence.PropLong, 100),
	}}
	require.True(t, s.Wants(m))
	sc, err := s.parse(m)
	require.NoError(t, err)
	assert.Equal(t, schedule{delay: 1500, period: 100, repeat: 2}, sc)
	neg := &persistence.Message{Props: persistence.Props{persistence.IntProp(HeaderDelay, persistence.PropLong, -5)}}
	assert.ErrorIs(t, s.Check(neg), destinations.ErrInvalidDestination)
}
