package broker

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker/scheduler"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/kafkalog"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// streamEnv is a broker whose topics named "s.*" are streams, over a kafkalog.Log on an
// in-memory file system that survives restart (reopen).
type streamEnv struct {
	t         *testing.T
	fs        vfs.FS
	clock     *skewClock // the log's clock: the broker's for streams
	parts     int
	retention time.Duration
	rebalance time.Duration // the streams' RebalanceTimeout (0: the default)
	log       *kafkalog.Log
	b         *Broker
}

// skewClock is the wall clock moved by a settable offset.
type skewClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *skewClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Set moves the clock to the wall clock plus d.
func (c *skewClock) Set(d time.Duration) {
	c.mu.Lock()
	c.offset = d
	c.mu.Unlock()
}

func newStreamEnv(t *testing.T, parts int) *streamEnv {
	e := &streamEnv{t: t, fs: vfs.NewMem(), clock: &skewClock{}, parts: parts}
	e.open()
	t.Cleanup(e.shut)
	return e
}

func (e *streamEnv) open() {
	e.t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := kafkalog.Open(kafkalog.Options{FS: e.fs, Dir: "/streams", Flush: kafkalog.FlushBatch,
		SegmentBytes: 64 << 10, RetentionCheckInterval: -1, Now: e.clock.Now, Logger: quiet})
	require.NoError(e.t, err)
	b, err := New(context.Background(), Options{Name: "t", Store: memstore.New(), Streams: l, Logger: quiet, Scheduler: true,
		Policies: func(k destinations.Kind, name string) policy.Policy {
			p := policy.Default(k.IsTopic())
			if k == destinations.Topic && destinations.Match("s.>", name) {
				p.Type, p.Partitions, p.Retention, p.RebalanceTimeout = policy.StreamType, e.parts, e.retention, e.rebalance
			}
			return p
		}})
	require.NoError(e.t, err)
	e.log, e.b = l, b
}

// shut closes the broker, then the log, as cmd does.
func (e *streamEnv) shut() {
	if e.b == nil {
		return
	}
	require.NoError(e.t, e.b.Close())
	require.NoError(e.t, e.log.Close())
	e.b, e.log = nil, nil
}

func (e *streamEnv) restart() {
	e.shut()
	e.open()
}

func (c *client) subscribeErr(r SubscribeRequest) error {
	var err error
	c.do(func() { _, err = c.conn.Subscribe(context.Background(), r) })
	return err
}

// sendN sends n messages body-<i> (from first) to dest, each with headers kv, waiting
// for every receipt.
func (c *client) sendN(dest string, first, n int, kv ...string) {
	c.t.Helper()
	for i := first; i < first+n; i++ {
		c.sendMsg(dest, hdrMsg("body-"+strconv.Itoa(i), kv...))
	}
}

// recvN receives n deliveries.
func (c *client) recvN(n int) []*Delivery {
	c.t.Helper()
	out := make([]*Delivery, n)
	for i := range out {
		out[i] = c.recv()
	}
	return out
}

func bodies(ds []*Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d.Msg.Body)
	}
	return out
}

func bodyRange(first, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "body-" + strconv.Itoa(first+i)
	}
	return out
}

func TestStreamStartOffsets(t *testing.T) {
	e := newStreamEnv(t, 1)
	p := newClient(t, e.b, "")
	now := time.Now()
	ms := func(d time.Duration) string { return strconv.FormatInt(now.Add(-d).UnixMilli(), 10) }
	cases := []struct {
		offset string
		want   []string
	}{
		{"first", bodyRange(0, 10)},
		{"", []string(nil)},
		{"next", nil},
		{"last", bodyRange(9, 1)},
		{"7", bodyRange(7, 3)},
		{"1000", nil},
		{"timestamp=" + ms(3*time.Hour), bodyRange(0, 10)},
		{"timestamp=" + ms(time.Hour), bodyRange(5, 5)},
		{"1h", bodyRange(5, 5)},
		{"3h", bodyRange(0, 10)},
	}
	for i, tc := range cases {
		t.Run(tc.offset, func(t *testing.T) {
			dest := "/topic/s.a" + strconv.Itoa(i)
			// Five messages appended two hours ago, five half an hour ago, by the
			// broker's clock; what their producer says does not count.
			for j := range 10 {
				age := 2 * time.Hour
				if j >= 5 {
					age = 30 * time.Minute
				}
				e.clock.Set(-age)
				m := msg("body-" + strconv.Itoa(j))
				m.Timestamp = now.Add(age).UnixMilli()
				p.sendMsg(dest, m)
			}
			e.clock.Set(0)
			c := newClient(t, e.b, "")
			c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName(dest[len("/topic/"):]), StreamOffset: tc.offset})
			got := c.recvN(len(tc.want))
			require.Equal(t, tc.want, append([]string(nil), bodies(got)...))
			for _, d := range got {
				require.True(t, d.Stream)
				require.Equal(t, 0, d.StreamPartition)
				require.Equal(t, "body-"+strconv.FormatInt(d.StreamOffset, 10), string(d.Msg.Body))
			}
			// Live messages follow wherever the subscription started.
			p.sendMsg(dest, msg("live"))
			require.Equal(t, "live", string(c.recv().Msg.Body))
		})
	}
}

func TestStreamBadOffsetIsRefused(t *testing.T) {
	e := newStreamEnv(t, 2)
	c := newClient(t, e.b, "")
	for _, v := range []string{"soon", "-1", "timestamp=x", "-5m", "1.5"} {
		err := c.subscribeErr(SubscribeRequest{ID: "s", Dest: topicName("s.a"), StreamOffset: v})
		require.ErrorIs(t, err, ErrInvalidStreamOffset, v)
		require.Contains(t, err.Error(), "x-stream-offset")
		require.Contains(t, err.Error(), "timestamp=")
	}
	// The id is free again and the stream works.
	c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("s.a"), StreamOffset: "first"})
	c.sendMsg("/topic/s.a", hdrMsg("x"))
	require.Equal(t, "x", string(c.recv().Msg.Body))
}

func TestStreamPartitionKeyKeepsOrder(t *testing.T) {
	e := newStreamEnv(t, 4)
	p := newClient(t, e.b, "")
	keys := []string{"alice", "bob", "carol", "dave", "erin"}
	for i := range 50 {
		k := keys[i%len(keys)]
		p.sendMsg("/topic/s.k", hdrMsg(k+"-"+strconv.Itoa(i), destinations.PartitionKeyProperty, k))
	}
	c := newClient(t, e.b, "")
	c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("s.k"), StreamOffset: "first"})
	partOf := map[string]int{}
	last := map[string]int{}
	for _, d := range c.recvN(50) {
		k, num, _ := strings.Cut(string(d.Msg.Body), "-")
		n, _ := strconv.Atoi(num)
		if p, ok := partOf[k]; ok {
			require.Equal(t, p, d.StreamPartition, "one key, one partition")
			require.Greater(t, n, last[k], "per-key order")
		}
		partOf[k], last[k] = d.StreamPartition, n
		v, _ := d.Msg.Headers.Get(destinations.PartitionKeyProperty)
		require.Equal(t, k, v, "application headers pass through")
	}
	require.Len(t, partOf, len(keys))
}

func TestStreamRoundRobinAndFieldsSurviveRestart(t *testing.T) {
	e := newStreamEnv(t, 3)
	p := newClient(t, e.b, "")
	for i := range 9 {
		p.sendMsg("/topic/s.rr", &persistence.Message{Body: []byte("m" + strconv.Itoa(i)), Priority: 7,
			Expires: time.Now().Add(time.Hour).UnixMilli(), Headers: persistence.Headers{"color", "red"}})
	}
	p.close()
	e.restart()
	stats := streamStats(t, e.b, "/topic/s.rr")
	require.Equal(t, int64(9), stats.Enqueued)
	require.Equal(t, int64(9), stats.Stored)
	require.Len(t, stats.Partitions, 3)
	for _, ps := range stats.Partitions {
		require.Equal(t, int64(3), ps.Next, "round-robin spreads evenly")
	}
	c := newClient(t, e.b, "")
	c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("s.rr"), StreamOffset: "first"})
	ids := map[string]bool{}
	for _, d := range c.recvN(9) {
		require.Equal(t, uint8(7), d.Msg.Priority)
		require.NotZero(t, d.Msg.Expires)
		require.NotZero(t, d.Msg.Timestamp)
		v, _ := d.Msg.Headers.Get("color")
		require.Equal(t, "red", v)
		require.Equal(t, "/topic/s.rr", d.Destination)
		ids[d.Msg.ID] = true
	}
	require.Len(t, ids, 9, "message ids are kept")
	c.expectNone(50 * time.Millisecond)
}

func streamStats(t *testing.T, b *Broker, name string) DestinationStats {
	t.Helper()
	for _, s := range b.Management().DestinationStats() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("%s not in Stats", name)
	return DestinationStats{}
}

func TestStreamGroupSharesPartitionsAndRebalances(t *testing.T) {
	e := newStreamEnv(t, 4)
	a, b := newClient(t, e.b, ""), newClient(t, e.b, "")
	for _, c := range []*client{a, b} {
		c.subscribeReq(SubscribeRequest{ID: "g", Dest: topicName("s.g"), ConsumerGroup: "G", Mode: AckClientIndividual})
	}
	p := newClient(t, e.b, "")
	p.sendN("/topic/s.g", 0, 40)
	got := map[string]int{}
	parts := map[*client]map[int]bool{a: {}, b: {}}
	collect := func(cs []*client, n int) {
		deadline := time.Now().Add(10 * time.Second)
		for total := 0; total < n; {
			require.True(t, time.Now().Before(deadline), "only %d of %d arrived", total, n)
			for _, c := range cs {
				select {
				case d := <-c.got:
					got[string(d.Msg.Body)]++
					if parts[c] != nil {
						parts[c][d.StreamPartition] = true
					}
					require.NoError(t, c.ack(d))
					total++
				case <-time.After(time.Millisecond):
				}
			}
		}
	}
	collect([]*client{a, b}, 40)
	require.Len(t, got, 40)
	for body, n := range got {
		require.Equal(t, 1, n, body)
	}
	require.Len(t, parts[a], 2)
	require.Len(t, parts[b], 2)
	for pa := range parts[a] {
		require.False(t, parts[b][pa], "disjoint partitions")
	}

	// A third member takes partitions over; nothing acknowledged comes again.
	c := newClient(t, e.b, "")
	c.subscribeReq(SubscribeRequest{ID: "g", Dest: topicName("s.g"), ConsumerGroup: "G", Mode: AckClientIndividual})
	parts[c] = map[int]bool{}
	clear(got)
	p.sendN("/topic/s.g", 40, 40)
	collect([]*client{a, b, c}, 40)
	require.Len(t, got, 40)
	require.NotEmpty(t, parts[c], "the new member reads")

	// One leaves: its partitions move on, from the group's position.
	require.NoError(t, a.unsubscribe("g", ""))
	clear(got)
	p.sendN("/topic/s.g", 80, 40)
	collect([]*client{b, c}, 40)
	require.Len(t, got, 40)
	for body, n := range got {
		require.Equal(t, 1, n, body)
	}
}

func TestStreamGroupResumesAtFirstUnacked(t *testing.T) {
	e := newStreamEnv(t, 1)
	p := newClient(t, e.b, "")
	p.sendN("/topic/s.r", 0, 10)
	sub := SubscribeRequest{ID: "g", Dest: topicName("s.r"), ConsumerGroup: "G", Mode: AckClientIndividual, StreamOffset: "first"}
	c := newClient(t, e.b, "")
	c.subscribeReq(sub)
	ds := c.recvN(10)
	for _, i := range []int{0, 1, 2, 4, 5} { // 3 stays unacknowledged
		require.NoError(t, c.ack(ds[i]))
	}
	off, ok, err := e.log.Committed("G", "s.r", 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(3), off, "committed when the ACK returned")
	require.NoError(t, c.unsubscribe("g", ""))

	// Reconnect: from the first unacknowledged; x-stream-offset no longer matters.
	c2 := newClient(t, e.b, "")
	sub.StreamOffset = "next"
	c2.subscribeReq(sub)
	require.Equal(t, bodyRange(3, 7), bodies(c2.recvN(7)))
	c2.close()
	c.close()

	// Restart: the same.
	e.restart()
	c3 := newClient(t, e.b, "")
	sub.Mode = AckClient
	c3.subscribeReq(sub)
	ds = c3.recvN(7)
	require.Equal(t, bodyRange(3, 7), bodies(ds))
	require.NoError(t, c3.ack(ds[6])) // cumulative
	off, _, _ = e.log.Committed("G", "s.r", 0)
	require.Equal(t, int64(10), off)
}

func TestStreamAutoAckCommitsAsWritten(t *testing.T) {
	e := newStreamEnv(t, 2)
	p := newClient(t, e.b, "")
	p.sendN("/topic/s.auto", 0, 20)
	c := newClient(t, e.b, "x")
	c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("s.auto"), DurableName: "D", StreamOffset: "first"})
	c.recvN(20)
	eventually(t, func() bool {
		var sum int64
		for part := range 2 {
			off, _, _ := e.log.Committed("D", "s.auto", part)
			sum += off
		}
		return sum == 20
	})
	// Without a client-id the subscription name cannot name a group.
	n := newClient(t, e.b, "")
	err := n.subscribeErr(SubscribeRequest{ID: "s", Dest: topicName("s.auto"), DurableName: "D"})
	require.ErrorIs(t, err, ErrInvalidDestination)
	// UNSUBSCRIBE with the name only detaches: the group keeps its position.
	require.NoError(t, c.unsubscribe("s", "D"))
	off, ok, _ := e.log.Committed("D", "s.auto", 0)
	require.True(t, ok)
	require.Positive(t, off)
}

func TestStreamSelectorAndNackAndPrefetch(t *testing.T) {
	e := newStreamEnv(t, 1)
	p := newClient(t, e.b, "")
	for i := range 10 {
		color := "red"
		if i%2 == 1 {
			color = "blue"
		}
		p.sendMsg("/topic/s.sel", hdrMsg("body-"+strconv.Itoa(i), "color", color))
	}
	sel := "color = 'blue'"
	c := newClient(t, e.b, "")
	c.subscribeReq(SubscribeRequest{ID: "g", Dest: topicName("s.sel"), ConsumerGroup: "G", Mode: AckClientIndividual,
		StreamOffset: "first", Selector: sel, Prefetch: 2})
	first := c.recvN(2)
	require.Equal(t, []string{"body-1", "body-3"}, bodies(first))
	c.expectNone(50 * time.Millisecond) // prefetch 2
	c.nack(first[0])                    // a NACK moves on: streams keep everything
	require.Equal(t, "body-5", string(c.recv().Msg.Body))
	require.NoError(t, c.ack(first[1]))
	off, _, _ := e.log.Committed("G", "s.sel", 0)
	require.Equal(t, int64(5), off, "passed-over messages count as done")
}

// A SEND to a stream cannot be part of a COMMIT atomically: inside a transaction it is
// refused, also as part of a composite destination, and the transaction goes on.
func TestStreamTransactionSendIsRefused(t *testing.T) {
	e := newStreamEnv(t, 2)
	c := newClient(t, e.b, "")
	c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("s.tx")})
	p := newClient(t, e.b, "")
	p.do(func() {
		require.NoError(t, p.conn.Begin("t1"))
		for _, ns := range [][]destinations.Name{{topicName("s.tx")}, {q("plain"), topicName("s.tx")}} {
			err := p.conn.Send(context.Background(), ns, msg("tx"), "t1", func(error) {})
			require.ErrorIs(t, err, ErrInvalidDestination)
			require.Contains(t, err.Error(), "stream destinations do not take part in transactions")
			var be *Error
			require.ErrorAs(t, err, &be)
			require.False(t, be.Fatal)
		}
		require.NoError(t, p.conn.Send(context.Background(), []destinations.Name{q("plain")}, msg("in-tx"), "t1", func(error) {}))
	})
	res := make(chan error, 1)
	p.do(func() { require.NoError(t, p.conn.Commit(context.Background(), "t1", func(err error) { res <- err })) })
	require.NoError(t, <-res)
	st, ok := e.b.QueueStats("plain")
	require.True(t, ok)
	require.Equal(t, 1, st.Pending, "only the queue SEND of the transaction")
	c.expectNone(50 * time.Millisecond)
	p.sendMsg("/topic/s.tx", msg("after"))
	require.Equal(t, "after", string(c.recv().Msg.Body))
}

func TestStreamWildcardGetsLiveMessages(t *testing.T) {
	e := newStreamEnv(t, 2)
	p := newClient(t, e.b, "")
	p.sendMsg("/topic/s.w", msg("before"))
	w := newClient(t, e.b, "")
	w.subscribe("w", "/topic/s.>", AckAuto, 0)
	p.sendMsg("/topic/s.w", msg("live"))
	d := w.recv()
	require.Equal(t, "live", string(d.Msg.Body))
	require.False(t, d.Stream)
	w.expectNone(50 * time.Millisecond)
}

func TestStreamScheduledSendIsRefused(t *testing.T) {
	e := newStreamEnv(t, 1)
	p := newClient(t, e.b, "")
	var err error
	p.do(func() {
		err = p.conn.Send(context.Background(), []destinations.Name{topicName("s.x")},
			hdrMsg("x", scheduler.HeaderDelay, "1000"), "", func(error) {})
	})
	require.ErrorIs(t, err, ErrInvalidDestination)
	require.Contains(t, err.Error(), "AMQ_SCHEDULED")
}

func TestStreamAppendsAreGroupCommitted(t *testing.T) {
	e := newStreamEnv(t, 1)
	p := newClient(t, e.b, "")
	const n = 2000
	var wg sync.WaitGroup
	wg.Add(n)
	dest := []destinations.Name{topicName("s.gc")}
	p.do(func() {
		for i := range n {
			require.NoError(t, p.conn.Send(context.Background(), dest, msg(strconv.Itoa(i)), "", func(err error) {
				require.NoError(t, err)
				wg.Done()
			}))
		}
	})
	wg.Wait()
	st, err := e.log.Stats("s.gc", 0)
	require.NoError(t, err)
	require.Less(t, st.Appends, int64(n/4), "many messages per append")
	c := newClient(t, e.b, "")
	c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("s.gc"), StreamOffset: "first"})
	for i, d := range c.recvN(n) {
		require.Equal(t, strconv.Itoa(i), string(d.Msg.Body), "one partition keeps send order")
	}
}

func TestStreamCloseStopsReaders(t *testing.T) {
	e := newStreamEnv(t, 8)
	cs := make([]*client, 4)
	for i := range cs {
		cs[i] = newClient(t, e.b, "")
		cs[i].subscribeReq(SubscribeRequest{ID: "g", Dest: topicName("s.c"), ConsumerGroup: "G", Prefetch: 1})
	}
	p := newClient(t, e.b, "")
	p.sendN("/topic/s.c", 0, 100) // readers block on credit
	done := make(chan error, 1)
	go func() { done <- e.b.Close() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Broker.Close did not return")
	}
}

func TestStreamPolicyRetentionIsAppliedAtEveryStart(t *testing.T) {
	e := newStreamEnv(t, 2)
	e.retention = time.Hour
	e.restart()
	p := newClient(t, e.b, "")
	p.sendMsg("/topic/s.ret", msg("x"))
	cfg, err := e.log.TopicConfig("s.ret")
	require.NoError(t, err)
	require.Equal(t, kafkalog.TopicConfig{Retention: time.Hour, RetentionBytes: -1}, cfg)
	p.close()

	// A new policy applies at the next start, before anyone uses the stream; the
	// partition count stays what it was.
	e.retention, e.parts = 0, 4
	e.restart()
	cfg, err = e.log.TopicConfig("s.ret")
	require.NoError(t, err)
	require.Equal(t, kafkalog.TopicConfig{Retention: -1, RetentionBytes: -1}, cfg, "0: whatever the age")
	require.Equal(t, 2, e.log.Partitions("s.ret"))
	require.Len(t, streamStats(t, e.b, "/topic/s.ret").Partitions, 2)
}

func TestStreamWithoutLogIsRefused(t *testing.T) {
	b := newPolicyBroker(t, func(p *policy.Policy) { p.Type = policy.StreamType })
	c := newClient(t, b, "")
	var err error
	c.do(func() {
		err = c.conn.Send(context.Background(), []destinations.Name{topicName("x")}, msg("x"), "", func(error) {})
	})
	require.ErrorIs(t, err, ErrInvalidDestination)
	require.Contains(t, err.Error(), "no streams log")
	n, _ := destinations.ParseOne("/queue/q")
	c.subscribeReq(SubscribeRequest{ID: "q", Dest: n}) // queues are not streams
}

// A stream's consumer group member prefetches as the group's durable form does
// (durableTopicPrefetch) unless its SUBSCRIBE asks otherwise: with the topic's 32767 one
// member would hold a whole backlog, which a member that joins could not share. A
// reader without a group keeps the topic's prefetch.
func TestStreamGroupMemberPrefetch(t *testing.T) {
	e := newStreamEnv(t, 2)
	c := newClient(t, e.b, "")
	var subs []*Subscription
	for _, r := range []SubscribeRequest{
		{ID: "plain", Dest: topicName("s.p")},
		{ID: "member", Dest: topicName("s.p"), ConsumerGroup: "G"},
		{ID: "asks", Dest: topicName("s.p"), ConsumerGroup: "G", Prefetch: 5000},
		{ID: "topic", Dest: topicName("t.p"), ConsumerGroup: "G"}, // not a stream: no group
	} {
		c.do(func() {
			s, err := c.conn.Subscribe(context.Background(), r)
			require.NoError(t, err)
			subs = append(subs, s)
		})
	}
	require.EqualValues(t, policy.DefaultTopicPrefetch, subs[0].Prefetch)
	require.EqualValues(t, policy.DefaultDurableTopicPrefetch, subs[1].Prefetch)
	require.EqualValues(t, 5000, subs[2].Prefetch)
	require.EqualValues(t, policy.DefaultTopicPrefetch, subs[3].Prefetch)
}
