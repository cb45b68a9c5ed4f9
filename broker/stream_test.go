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

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/selector"
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
		Policies: func(k destinations.Kind, name string) destinations.Policy {
			p := destinations.DefaultPolicy(k.IsTopic())
			if k == destinations.Topic && destinations.Match("s.>", name) {
				p.Stream, p.Partitions, p.Retention, p.RebalanceTimeout = true, e.parts, e.retention, e.rebalance
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
		p.sendMsg("/topic/s.k", hdrMsg(k+"-"+strconv.Itoa(i), HeaderPartitionKey, k))
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
		v, _ := d.Msg.Headers.Get(HeaderPartitionKey)
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
	for _, s := range b.Stats() {
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
	sel, err := selector.Parse("color = 'blue'")
	require.NoError(t, err)
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
			hdrMsg("x", HeaderScheduledDelay, "1000"), "", func(error) {})
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

func TestLogTopicNameRoundTrip(t *testing.T) {
	for _, name := range []string{"events.orders", "a-b", "a_b", "with space", "ü", ".", "..", "x/y:z", "_", "__x_"} {
		ln, ok := logTopicName(name)
		require.True(t, ok, name)
		require.True(t, kafkalog.ValidTopicName(ln), ln)
		back, ok := brokerTopicName(ln)
		require.True(t, ok, ln)
		require.Equal(t, name, back)
	}
	ln, _ := logTopicName("events.orders")
	require.Equal(t, "events.orders", ln, "plain names stay")
	for _, bad := range []string{"a_zz", "a_", "a_4"} {
		_, ok := brokerTopicName(bad)
		require.False(t, ok, bad)
	}
	_, ok := logTopicName(string(make([]byte, 300)))
	require.False(t, ok)
}

func TestParseStreamStart(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	for v, want := range map[string]streamStart{
		"":                {kind: startNext},
		"NEXT":            {kind: startNext},
		"first":           {kind: startFirst},
		"last":            {kind: startLast},
		"0":               {kind: startOffset},
		"42":              {kind: startOffset, value: 42},
		"timestamp=12345": {kind: startTime, value: 12345},
		"10s":             {kind: startTime, value: 990_000},
	} {
		got, err := parseStreamStart(v, now)
		require.NoError(t, err, v)
		require.Equal(t, want, got, v)
	}
}

func TestPartTracker(t *testing.T) {
	tr := newPartTracker(10)
	for off := int64(10); off < 15; off++ {
		tr.add(off)
	}
	tr.skip(15)
	tr.add(16)
	_, moved := tr.ack(12)
	require.False(t, moved)
	p, moved := tr.ack(10)
	require.True(t, moved)
	require.Equal(t, int64(11), p)
	p, _ = tr.ack(11)
	require.Equal(t, int64(13), p, "past 12, acknowledged earlier")
	_, moved = tr.ack(11)
	require.False(t, moved, "twice")
	tr.ack(13)
	p, _ = tr.ack(14)
	require.Equal(t, int64(16), p, "past the skipped 15")
	p, _ = tr.ack(16)
	require.Equal(t, int64(17), p)
	tr.skip(17)
	point, unsettled := tr.retire()
	require.Equal(t, int64(18), point)
	require.Zero(t, unsettled, "everything handed out was acknowledged")
	_, moved = tr.ack(17)
	require.False(t, moved)
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
	b := newPolicyBroker(t, func(p *destinations.Policy) { p.Stream = true })
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

func TestStreamRecordRoundTrip(t *testing.T) {
	st := &stream{t: newTopic(nil, "s.x"), logTopic: "s.x"}
	m := &persistence.Message{ID: "ID:a;b", Body: []byte("body"), Priority: 9, Expires: 123, Persistent: true,
		Timestamp: 456, Headers: persistence.Headers{"amq", "app's own", "k", "v"}}
	r := encodeRecord(m, "key", 999)
	require.Equal(t, []byte("key"), r.Key)
	require.Equal(t, int64(999), r.Timestamp, "the record has the time of the append")
	r.Offset = 7
	got := st.decodeRecord(&r, 2)
	require.Equal(t, m.ID, got.ID)
	require.Equal(t, m.Body, got.Body)
	require.Equal(t, m.Priority, got.Priority)
	require.Equal(t, m.Expires, got.Expires)
	require.True(t, got.Persistent)
	require.Equal(t, m.Timestamp, got.Timestamp)
	require.Equal(t, m.Headers, got.Headers, "an application header named like the broker's stays")
	require.Equal(t, "topic://s.x", got.Dest)

	// A record another kafkalog user wrote.
	foreign := kafkalog.Record{Offset: 3, Value: []byte("v"), Headers: [][2]string{{"amq", "not ours"}}}
	got = st.decodeRecord(&foreign, 1)
	require.Equal(t, "ID:stream:s.x:1:3", got.ID)
	require.Equal(t, uint8(4), got.Priority)
	require.Equal(t, persistence.Headers{"amq", "not ours"}, got.Headers)
}

func TestSplitMeta(t *testing.T) {
	for _, v := range []string{"", "1", "1;4;0;1", "1;4;0;1;", "1;4;0;1;ID:a;b;c", ";;;;", "1;4;0;0;ID:x",
		"2;4;0;1", "2;4;0;1;5", "2;4;0;1;5;", "2;4;0;1;5;ID:a;b", "3;4;0;1;5;ID:x", "21;4;0;1;5;ID:x"} {
		n := 0
		switch {
		case strings.HasPrefix(v, "1;"):
			n = 5
		case strings.HasPrefix(v, "2;"):
			n = 6
		}
		want := strings.SplitN(v, ";", max(n, 1))
		got, gotN := splitMeta(v)
		if n > 0 && len(want) < n {
			n = 0
		}
		if gotN != n || n > 0 && [6]string(append(want, make([]string, 6-n)...)) != got {
			t.Errorf("splitMeta(%q) = %q, %d; SplitN: %q", v, got, gotN, want)
		}
	}
}

// Records written before the message's timestamp had a field of its own (version 1)
// still read, with the record's timestamp.
func TestStreamRecordVersion1(t *testing.T) {
	st := &stream{t: newTopic(nil, "s.x"), logTopic: "s.x"}
	r := kafkalog.Record{Offset: 1, Timestamp: 1234, Value: []byte("v"),
		Headers: [][2]string{{"amq", "1;7;99;1;ID:a;b"}, {"k", "v"}}}
	got := st.decodeRecord(&r, 0)
	require.Equal(t, "ID:a;b", got.ID)
	require.Equal(t, uint8(7), got.Priority)
	require.Equal(t, int64(99), got.Expires)
	require.True(t, got.Persistent)
	require.Equal(t, int64(1234), got.Timestamp)
	require.Equal(t, persistence.Headers{"k", "v"}, got.Headers)
}

// A batch's records share storage, and each decodes to its own message.
func TestStreamRecordBuilder(t *testing.T) {
	st := &stream{t: newTopic(nil, "s.x"), logTopic: "s.x"}
	msgs := []*persistence.Message{
		{ID: "ID:1", Body: []byte("a"), Priority: 4, Timestamp: 1},
		{ID: "ID:2;x", Body: []byte("b"), Priority: 0, Expires: 99, Persistent: true, Timestamp: 2,
			Headers: persistence.Headers{"k1", "v1", "k2", "v2"}},
		{ID: "ID:3", Body: []byte("c"), Priority: 9, Timestamp: 3, Headers: persistence.Headers{"amq", "x"}},
	}
	var b recordBuilder
	for round := range 2 {
		var reqs []appendReq
		for i, m := range msgs {
			reqs = append(reqs, newAppendReq(m, []string{"", "key", ""}[i], nil))
		}
		recs := b.build(reqs, 1000)
		require.Len(t, recs, len(msgs))
		for i, m := range msgs {
			require.Equal(t, encodeRecord(m, []string{"", "key", ""}[i], 1000), recs[i], "round %d, message %d", round, i)
			got := st.decodeRecord(&recs[i], 0)
			require.Equal(t, m.ID, got.ID)
			require.Equal(t, m.Priority, got.Priority)
			require.Equal(t, m.Expires, got.Expires)
			require.Equal(t, m.Persistent, got.Persistent)
			require.Equal(t, m.Timestamp, got.Timestamp)
			require.Equal(t, len(m.Headers), len(got.Headers))
			if len(m.Headers) > 0 {
				require.Equal(t, m.Headers, got.Headers)
			}
		}
		b.reset()
	}
}
