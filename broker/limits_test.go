package broker

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker/scheduler"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// newPolicyBroker starts a broker whose every destination has the policy edit makes of
// the default.
func newLimitsBroker(t testing.TB, o Options, edit func(kind destinations.Kind, name string, p *policy.Policy)) *Broker {
	t.Helper()
	if o.Store == nil {
		o.Store = memstore.New()
	}
	if edit != nil {
		o.Policies = func(kind destinations.Kind, name string) policy.Policy {
			p := policy.Default(kind.IsTopic())
			edit(kind, name, &p)
			return p
		}
	}
	b, err := New(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// TestMemoryLimitZeroIsNoDestinationLimit: a policy memoryLimit of 0 means the
// destination has no limit of its own (only memoryUsage applies): non-persistent
// messages are accepted and persistent ones stay in memory instead of being paged.
func TestMemoryLimitZeroIsNoDestinationLimit(t *testing.T) {
	b := newLimitsBroker(t, Options{MemoryUsage: 64 << 20}, func(_ destinations.Kind, _ string, p *policy.Policy) {
		p.MemoryLimit = 0
	})
	p := newClient(t, b, "")
	for i := 0; i < 10; i++ {
		p.send("/queue/nolimit", "non-persistent", false)
		p.send("/queue/nolimit", "persistent", true)
	}
	st, ok := b.QueueStats("nolimit")
	require.True(t, ok)
	assert.Equal(t, 20, st.Pending)
	q := b.dests.FindQueue("nolimit")
	paged := q.Paged()
	assert.False(t, paged, "persistent messages were paged out under a limit of 0")
	assert.Positive(t, st.MemoryBytes)
}

// TestTempDestinationPolicies: temporary destinations take the policy of their own kind
// (tempQueue / tempTopic entries), not that of the queue or topic patterns.
func TestTempDestinationPolicies(t *testing.T) {
	b := newLimitsBroker(t, Options{}, func(kind destinations.Kind, _ string, p *policy.Policy) {
		switch kind {
		case destinations.TempQueue:
			p.Prefetch, p.MemoryLimit = 7, 1<<20
		case destinations.TempTopic:
			p.Prefetch = 9
		}
	})
	c := newClient(t, b, "")
	var subs []*Subscription
	for _, dest := range []string{"/temp-queue/r", "/temp-topic/r", "/queue/q", "/topic/t"} {
		n, err := destinations.ParseOne(dest)
		require.NoError(t, err)
		c.do(func() {
			s, err := c.conn.Subscribe(context.Background(), SubscribeRequest{ID: dest, Dest: n})
			require.NoError(t, err)
			subs = append(subs, s)
		})
	}
	assert.EqualValues(t, 7, subs[0].Prefetch)
	assert.EqualValues(t, 9, subs[1].Prefetch)
	assert.EqualValues(t, policy.DefaultQueuePrefetch, subs[2].Prefetch)
	assert.EqualValues(t, policy.DefaultTopicPrefetch, subs[3].Prefetch)
	_, limit := subs[0].q.MemoryUsed()
	assert.EqualValues(t, 1<<20, limit)
	assert.EqualValues(t, 1<<20, subs[0].q.Policy().MemoryLimit)
}

// TestExpireMessagesPeriodPerDestination: each queue is swept for expired messages on its
// own policy's period, and a period of 0 means that queue is never swept (its expired
// messages are dropped only when a consumer would get them).
func TestExpireMessagesPeriodPerDestination(t *testing.T) {
	b := newLimitsBroker(t, Options{ExpirySweep: 10 * time.Millisecond}, func(_ destinations.Kind, name string, p *policy.Policy) {
		switch name {
		case "fast":
			p.ExpireMessagesPeriod = 30 * time.Millisecond
		case "never":
			p.ExpireMessagesPeriod = 0
		}
	})
	c := newClient(t, b, "")
	past := time.Now().Add(-time.Second).UnixMilli()
	for _, q := range []string{"fast", "never"} {
		n, err := destinations.Parse("/queue/" + q)
		require.NoError(t, err)
		res := make(chan error, 1)
		c.do(func() {
			require.NoError(t, c.conn.Send(context.Background(), n, &persistence.Message{Body: []byte("x"), Priority: 4, Expires: past}, "", func(err error) { res <- err }))
		})
		require.NoError(t, <-res)
	}
	pending := func(q string) int { st, _ := b.QueueStats(q); return st.Pending }
	eventually(t, func() bool { return pending("fast") == 0 })
	// Two more sweeper passes have looked at /queue/never.
	start := b.expirySweeps.Load()
	eventually(t, func() bool { return b.expirySweeps.Load() >= start+2 })
	assert.Equal(t, 1, pending("never"), "a queue with expireMessagesPeriod 0 was swept")
}

// TestTopicTimeToLiveAndExpiry: a topic's defaultTimeToLive gives its messages an
// expiry (also the durable subscriptions' stored copies), and a topic message that has
// expired before it reaches the subscriber is not delivered; its prefetch credit goes to
// the next message.
func TestTopicTimeToLiveAndExpiry(t *testing.T) {
	const ttl = time.Hour
	b := newLimitsBroker(t, Options{}, func(kind destinations.Kind, name string, p *policy.Policy) {
		if kind == destinations.Topic && name == "ttl" {
			p.DefaultTimeToLive = ttl
		}
	})
	c := newClient(t, b, "")
	c.subscribe("s", "/topic/ttl", AckAuto, 0)
	before := time.Now()
	c.send("/topic/ttl", "a", false)
	d := c.recv()
	assert.GreaterOrEqual(t, d.Msg.Expires, before.Add(ttl).UnixMilli())
	assert.LessOrEqual(t, d.Msg.Expires, time.Now().Add(ttl).UnixMilli())

	// A composite send gives each destination its own policy's expiry.
	c.subscribe("q", "/queue/no-ttl", AckAuto, 0)
	c.send("/topic/ttl,/queue/no-ttl", "b", false)
	for i := 0; i < 2; i++ {
		d := c.recv()
		if d.Destination == "/queue/no-ttl" {
			assert.Zero(t, d.Msg.Expires, "the queue got the topic's expiry")
		} else {
			assert.NotZero(t, d.Msg.Expires)
		}
	}

	// Messages expiring while they wait for a slow subscriber are not delivered.
	slow := newClient(t, b, "")
	slow.subscribe("slow", "/topic/exp", AckClientIndividual, 1)
	p := newClient(t, b, "")
	soon := time.Now().Add(50 * time.Millisecond).UnixMilli()
	for _, body := range []string{"first", "expiring-1", "expiring-2"} {
		n, err := destinations.Parse("/topic/exp")
		require.NoError(t, err)
		p.do(func() {
			require.NoError(t, p.conn.Send(context.Background(), n, &persistence.Message{Body: []byte(body), Priority: 4, Expires: soon}, "", func(error) {}))
		})
	}
	first := slow.recv()
	require.Equal(t, "first", string(first.Msg.Body))
	eventually(t, func() bool { return time.Now().UnixMilli() > soon })
	p.send("/topic/exp", "fresh", false)
	require.NoError(t, slow.ack(first))
	assert.Equal(t, "fresh", string(slow.recv().Msg.Body), "an expired topic message was delivered")
}

// TestTransactedScheduledSendInCommitBatch: a scheduled message sent in a transaction is
// stored in the COMMIT's own batch, so once COMMIT is answered the job is in the store
// (a crash right after the RECEIPT cannot lose it).
func TestTransactedScheduledSendInCommitBatch(t *testing.T) {
	store := newFaultStore()
	b := newLimitsBroker(t, Options{Store: store, Scheduler: true}, nil)
	c := newClient(t, b, "")
	dests, err := destinations.Parse("/queue/later")
	require.NoError(t, err)
	hold := make(chan struct{})
	store.set(func(s *faultStore) { s.hold = hold })
	jobsAtReceipt := make(chan int, 1)
	c.do(func() {
		require.NoError(t, c.conn.Begin("tx"))
		m := &persistence.Message{Body: []byte("later"), Persistent: true, Priority: 4,
			Headers: persistence.Headers{scheduler.HeaderDelay, "3600000"}}
		require.NoError(t, c.conn.Send(context.Background(), dests, m, "tx", func(err error) { require.NoError(t, err) }))
		require.NoError(t, c.conn.Commit(context.Background(), "tx", func(err error) {
			assert.NoError(t, err)
			n, _ := store.Stats(scheduler.StoreDest)
			jobsAtReceipt <- int(n)
		}))
	})
	close(hold)
	select {
	case n := <-jobsAtReceipt:
		assert.Equal(t, 1, n, "jobs stored when COMMIT was answered")
	case <-time.After(10 * time.Second):
		t.Fatal("COMMIT was not answered")
	}
	store.heldCommit.Wait()
}

// TestSchedulerPagesJobs: with more persistent scheduled messages than the scheduler's
// memory limit holds, the soonest stay in memory and the rest in the store, read back
// as time passes: every message is delivered once, in the order of its due time, and
// the memory held stays within the limit (plus one message).
func TestSchedulerPagesJobs(t *testing.T) {
	const (
		limit = 16 << 10
		n     = 300
		gap   = 3 // ms between two due times
	)
	dests, err := destinations.Parse("/queue/paged")
	require.NoError(t, err)
	body := make([]byte, 1000)
	// Every message must be stored before the first is due: the order is read from the
	// store, none delivered yet. Due times in a shuffled order, each gap ms apart,
	// starting offset after the sends began; a machine too busy to send them all within
	// the offset gets a fresh broker and twice the offset, so slowness lengthens the test
	// but does not fail it (issue 27).
	var (
		store *memstore.Store
		b     *Broker
		c     *client
		want  []string
	)
	for offset := 1500 * time.Millisecond; ; offset *= 2 {
		require.LessOrEqual(t, offset, time.Minute, "sending %d messages took over half a minute", n)
		store = memstore.New()
		b = newLimitsBroker(t, Options{Store: store, Scheduler: true, SchedulerMemoryLimit: limit}, nil)
		c = newClient(t, b, "")
		c.subscribe("s", "/queue/paged", AckAuto, 0)
		p := newClient(t, b, "")
		order := rand.Perm(n)
		start := time.Now().Add(offset)
		for _, i := range order {
			due := start.Add(time.Duration(i*gap) * time.Millisecond)
			m := &persistence.Message{Body: append([]byte(strconv.Itoa(i)+":"), body...), Persistent: true, Priority: 4,
				Headers: persistence.Headers{scheduler.HeaderDelay, strconv.FormatInt(max(time.Until(due), 0).Milliseconds(), 10)}}
			res := make(chan error, 1)
			p.do(func() {
				require.NoError(t, p.conn.Send(context.Background(), dests, m, "", func(err error) { res <- err }))
			})
			require.NoError(t, <-res)
		}
		want = storedJobOrder(t, store)
		// Read before any was due (the broker's due times, whole milliseconds counted
		// from when it got each SEND, fall at most 2ms before the test's): all are there.
		if time.Now().Add(2 * time.Millisecond).Before(start) {
			break
		}
		t.Logf("sending took over %v: again with twice that", offset)
	}
	require.Len(t, want, n)
	_, peak := b.sched.Memory()
	assert.LessOrEqual(t, peak, int64(limit+1200), "memory held while scheduling")
	for i := 0; i < n; i++ {
		d := c.recv()
		got, _, _ := strings.Cut(string(d.Msg.Body), ":")
		require.Equal(t, want[i], got, "delivery %d out of order", i)
	}
	_, peak = b.sched.Memory()
	assert.LessOrEqual(t, peak, int64(limit+1200), "memory held while delivering")
	eventually(t, func() bool { n, _ := store.Stats(scheduler.StoreDest); return n == 0 })
}

// TestSchedulerPagedRestart: a restart with more stored jobs than the memory limit
// holds loads only the soonest; every job is still delivered, in order.
func TestSchedulerPagedRestart(t *testing.T) {
	const limit, n = 8 << 10, 100
	dests, err := destinations.Parse("/queue/restarted")
	require.NoError(t, err)
	// The first broker must close before any job is due, or it delivers it: as in
	// TestSchedulerPagesJobs, a machine too busy for the offset gets twice the offset.
	var (
		store *memstore.Store
		want  []string
	)
	for offset := time.Second; ; offset *= 2 {
		require.LessOrEqual(t, offset, time.Minute, "sending %d messages and closing took over half a minute", n)
		store = memstore.New()
		b1, err := New(context.Background(), Options{Name: "t", Store: store, Scheduler: true, SchedulerMemoryLimit: limit})
		require.NoError(t, err)
		p := newClient(t, b1, "")
		start := time.Now().Add(offset)
		for i := n - 1; i >= 0; i-- {
			due := start.Add(time.Duration(i*3) * time.Millisecond)
			m := &persistence.Message{Body: append([]byte(strconv.Itoa(i)+":"), make([]byte, 500)...), Persistent: true, Priority: 4,
				Headers: persistence.Headers{scheduler.HeaderDelay, strconv.FormatInt(max(time.Until(due), 0).Milliseconds(), 10)}}
			res := make(chan error, 1)
			p.do(func() {
				require.NoError(t, p.conn.Send(context.Background(), dests, m, "", func(err error) { res <- err }))
			})
			require.NoError(t, <-res)
		}
		p.close()
		require.NoError(t, b1.closeForTest())
		want = storedJobOrder(t, store)
		if time.Now().Add(2 * time.Millisecond).Before(start) {
			break
		}
		t.Logf("sending and closing took over %v: again with twice that", offset)
	}
	require.Len(t, want, n)

	b2 := newLimitsBroker(t, Options{Store: store, Scheduler: true, SchedulerMemoryLimit: limit}, nil)
	now, _ := b2.sched.Memory()
	assert.LessOrEqual(t, now, int64(limit), "memory held after the restart")
	c := newClient(t, b2, "")
	c.subscribe("s", "/queue/restarted", AckAuto, 0)
	for i := 0; i < n; i++ {
		got, _, _ := strings.Cut(string(c.recv().Msg.Body), ":")
		require.Equal(t, want[i], got, "delivery %d out of order", i)
	}
}

// storedJobOrder returns the "<i>" prefixes of the bodies of the stored scheduled jobs
// in key order, the order of their due times: the order of their delivery. (The test's
// intended due times are only nearly the broker's: the delay is counted from when the
// broker got the message.)
func storedJobOrder(t *testing.T, store persistence.Store) []string {
	t.Helper()
	var out []string
	require.NoError(t, store.Scan(context.Background(), scheduler.StoreDest, 0, 0, func(m *persistence.Message) error {
		i, _, _ := strings.Cut(string(m.Body), ":")
		out = append(out, i)
		return nil
	}))
	return out
}

// logBuffer is a slog handler's destination that tests can read while the broker writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func bufferLogger() (*slog.Logger, *logBuffer) {
	lb := &logBuffer{}
	return slog.New(slog.NewTextHandler(lb, nil)), lb
}

// sendErr sends on c's owner goroutine and returns Send's own error.
func (c *client) sendErr(dest string, m *persistence.Message) error {
	c.t.Helper()
	ns, err := destinations.Parse(dest)
	require.NoError(c.t, err)
	var serr error
	c.do(func() { serr = c.conn.Send(context.Background(), ns, m, "", func(error) {}) })
	return serr
}

// subscribeTo subscribes on c's owner goroutine and returns Subscribe's error.
func (c *client) subscribeTo(id, dest string) error {
	c.t.Helper()
	n, err := destinations.ParseOne(dest)
	require.NoError(c.t, err)
	return c.subscribeErr(SubscribeRequest{ID: id, Dest: n})
}

// TestMaxDestinations: clients may create at most MaxDestinations queues and topics
// (temporary ones too); a SEND or SUBSCRIBE that would create one more gets an error
// and creates nothing, existing destinations stay usable, and the broker's own
// dead-letter queue is still made.
func TestMaxDestinations(t *testing.T) {
	log, lines := bufferLogger()
	b := newLimitsBroker(t, Options{MaxDestinations: 3, Logger: log}, nil)
	c := newClient(t, b, "")
	c.send("/queue/a", "x", true)
	c.subscribe("t", "/topic/b", AckAuto, 0)
	c.subscribe("q", "/queue/a", AckClientIndividual, 0)
	// Two more would be one too many: neither is made.
	require.ErrorIs(t, c.sendErr("/queue/c,/queue/d", msg("x")), ErrTooManyDestinations)
	c.send("/topic/c", "x", false) // the third
	for _, err := range []error{
		c.sendErr("/queue/d", msg("x")),
		c.subscribeTo("c", "/queue/d"),
		c.subscribeTo("d", "/topic/d"),
		c.sendErr("/temp-queue/replies", msg("x")),
	} {
		require.ErrorIs(t, err, ErrTooManyDestinations)
		assert.Contains(t, err.Error(), "maxDestinations 3")
	}
	assert.Len(t, b.Management().DestinationStats(), 3)
	assert.Contains(t, lines.String(), "destination limit reached")

	// Existing destinations work; a NACKed message still reaches the dead-letter queue.
	c.send("/queue/a", "y", true)
	d := c.recv()
	c.do(func() {
		require.NoError(t, c.conn.Nack(context.Background(), AckRef{Tag: d.Tag, HasTag: true}, "", func(error) {}))
	})
	eventually(t, func() bool { st, ok := b.QueueStats(DLQName); return ok && st.Pending == 1 })
}

// TestMaxDestinationsAdvisoryTopics: advisory topics neither count against
// MaxDestinations nor are refused at it, and removing one gives clients no room they
// did not have.
func TestMaxDestinationsAdvisoryTopics(t *testing.T) {
	ctx := context.Background()
	b := newLimitsBroker(t, Options{MaxDestinations: 1, AdvisorySupport: true}, nil)
	c := newClient(t, b, "")
	c.subscribe("adv", "/topic/ActiveMQ.Advisory.Queue", AckAuto, 0)
	c.send("/queue/a", "x", false)
	require.ErrorIs(t, c.sendErr("/queue/b", msg("x")), ErrTooManyDestinations)
	c.subscribe("adv2", "/topic/ActiveMQ.Advisory.Consumer.Queue.a", AckAuto, 0)
	c.do(func() {
		for _, id := range []string{"adv", "adv2"} {
			require.NoError(t, c.conn.Unsubscribe(ctx, UnsubscribeRequest{ID: id}))
		}
	})
	for _, name := range []string{"ActiveMQ.Advisory.Queue", "ActiveMQ.Advisory.Consumer.Queue.a"} {
		require.NoError(t, b.Management().RemoveDestination(ctx, "test", destinations.Name{Kind: destinations.Topic, Name: name}))
	}
	require.ErrorIs(t, c.sendErr("/queue/b", msg("x")), ErrTooManyDestinations, "still one client destination of one")
	require.NoError(t, b.Management().RemoveDestination(ctx, "test", destinations.Name{Kind: destinations.Queue, Name: "a"}))
	c.send("/queue/b", "x", false)
}

// TestGCInactiveDestinations: a destination whose policy has GCInactiveDestinations is removed once
// it has had no messages, subscribers or sends for its InactiveTimeoutBeforeGC; one in use, or
// whose policy does not collect it, stays. A removed destination is made again on
// its next use, with sequence numbers above its old ones.
func TestGCInactiveDestinations(t *testing.T) {
	log, lines := bufferLogger()
	b := newLimitsBroker(t, Options{DestinationGCPeriod: 5 * time.Millisecond, Logger: log, MaxDestinations: 7},
		func(_ destinations.Kind, name string, p *policy.Policy) {
			if strings.HasPrefix(name, "gc.") {
				p.GCInactiveDestinations, p.InactiveTimeoutBeforeGC = true, 30*time.Millisecond
			}
		})
	c := newClient(t, b, "")
	c.subscribe("q", "/queue/gc.q", AckAuto, 0)
	c.send("/queue/gc.q", "x", true)
	first := c.recv()
	// A topic with an offline durable subscription keeps it.
	dc := newClient(t, b, "app")
	n, err := destinations.ParseOne("/topic/gc.durable")
	require.NoError(t, err)
	require.NoError(t, dc.subscribeErr(SubscribeRequest{ID: "d", Dest: n, DurableName: "keep"}))
	dc.close()
	c.subscribe("t", "/topic/gc.t", AckAuto, 0)
	c.do(func() {
		require.NoError(t, c.conn.Unsubscribe(context.Background(), UnsubscribeRequest{ID: "q"}))
		require.NoError(t, c.conn.Unsubscribe(context.Background(), UnsubscribeRequest{ID: "t"}))
	})
	c.send("/queue/gc.busy", "waiting", true)          // has a message
	c.subscribe("c", "/queue/gc.consumed", AckAuto, 0) // has a consumer
	c.send("/queue/keep", "x", false)                  // not collected by its policy
	c.subscribe("k", "/queue/keep", AckAuto, 0)
	c.recv()
	c.do(func() { require.NoError(t, c.conn.Unsubscribe(context.Background(), UnsubscribeRequest{ID: "k"})) })

	has := func(name string) bool {
		for _, st := range b.Management().DestinationStats() {
			if st.Name == name {
				return true
			}
		}
		return false
	}
	eventually(t, func() bool { return !has("/queue/gc.q") && !has("/topic/gc.t") })
	start := b.dests.GCSweeps()
	eventually(t, func() bool { return b.dests.GCSweeps() >= start+10 })
	for _, name := range []string{"/queue/gc.busy", "/queue/gc.consumed", "/queue/keep", "/topic/gc.durable"} {
		assert.True(t, has(name), "%s was removed", name)
	}
	assert.Contains(t, lines.String(), "inactive destinations removed")

	// Made again on its next use; its sequence numbers continue above the old ones.
	c.subscribe("q2", "/queue/gc.q", AckAuto, 0)
	c.send("/queue/gc.q", "again", true)
	again := c.recv()
	assert.Equal(t, "again", string(again.Msg.Body))
	assert.Greater(t, again.Msg.Seq, first.Msg.Seq)
	// The removed ones no longer count against MaxDestinations (7).
	c.send("/queue/gc.new1", "x", false)
	c.send("/queue/gc.new2", "x", false)
}

// TestFailedAutoAckWriteRetried: when the store write acknowledging auto-acknowledged
// messages fails, the broker logs it and writes the acknowledgements again until the
// store takes them, instead of leaving the consumed messages in the store (to be
// delivered again after a restart).
func TestFailedAutoAckWriteRetried(t *testing.T) {
	store := newFaultStore()
	log, lines := bufferLogger()
	b := newLimitsBroker(t, Options{Store: store, Logger: log}, nil)
	p := newClient(t, b, "")
	p.send("/queue/auto", "consumed", true)
	var failures atomic.Int64
	store.set(func(s *faultStore) {
		s.commitErr = func(fb *faultBatch) error {
			if fb.acks > 0 && failures.Load() < 3 {
				failures.Add(1)
				return errors.New("disk on fire")
			}
			return nil
		}
	})
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/auto", AckAuto, 0)
	assert.Equal(t, "consumed", string(c.recv().Msg.Body))
	eventually(t, func() bool { return strings.Contains(lines.String(), "auto-ack store write failed") })
	eventually(t, func() bool { n, _ := store.Stats("queue://auto"); return n == 0 })
	assert.EqualValues(t, 3, failures.Load())
}

// TestDurableBacklogScanFailureFailsStart: sizing a durable subscription's stored
// backlog at start (for its offline maxPendingBytes limit; the store counts the messages
// without reading them) reads the store; if that read fails the broker does not start
// with a wrong size, it reports the error.
func TestDurableBacklogScanFailureFailsStart(t *testing.T) {
	store := newFaultStore()
	key := persistence.SubKey{ClientID: "app", Name: "sub"}
	batch := store.Begin()
	batch.AddSub(persistence.SubInfo{Key: key, Dest: "topic://prices", Created: 1})
	batch.Add(&persistence.Message{Dest: "topic://prices", Seq: 1, ID: "m1", Persistent: true, Subs: []persistence.SubKey{key}})
	require.NoError(t, batch.Commit(context.Background(), persistence.Sync))
	store.set(func(s *faultStore) {
		s.scanErr = func(string) error { return errors.New("disk on fire") }
	})
	_, err := New(context.Background(), Options{Name: "t", Store: store, Policies: func(k destinations.Kind, _ string) policy.Policy {
		p := policy.Default(k.IsTopic())
		p.MaxPendingBytes = 1 << 20
		return p
	}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "disk on fire")
	assert.Contains(t, err.Error(), key.String())
}

// TestFailedDispatchMarkWriteRetried: a failed write of a queue's dispatch mark (which
// flags messages possibly delivered before a crash as redelivered) is logged and tried
// again after a pause, not at once in a loop, until the store takes it.
func TestFailedDispatchMarkWriteRetried(t *testing.T) {
	store := newFaultStore()
	log, lines := bufferLogger()
	b := newLimitsBroker(t, Options{Store: store, Logger: log}, nil)
	p := newClient(t, b, "")
	p.send("/queue/marked", "x", true)
	var failures atomic.Int64
	store.set(func(s *faultStore) {
		s.commitErr = func(fb *faultBatch) error {
			for _, d := range fb.adds {
				if strings.HasPrefix(d, destinations.MarkerPrefix) && failures.Load() < 2 {
					failures.Add(1)
					return errors.New("disk on fire")
				}
			}
			return nil
		}
	})
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/marked", AckClientIndividual, 0)
	c.recv()
	eventually(t, func() bool { return strings.Contains(lines.String(), "dispatch mark") })
	eventually(t, func() bool { n, _ := store.Stats(destinations.MarkerPrefix + "marked"); return n == 1 })
	assert.EqualValues(t, 2, failures.Load())
}
