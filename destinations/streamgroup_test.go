package destinations

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/destinations/streamlog"
	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/kafkalog"
	"github.com/activemq-go/broker/persistence"
)

// testStream opens stream s.g of parts partitions on a kafkalog in memory; closed at
// the end of the test.
func testStream(t *testing.T, parts int) *Stream {
	t.Helper()
	l, err := kafkalog.Open(kafkalog.Options{FS: vfs.NewMem(), Dir: "/streams", RetentionCheckInterval: -1})
	require.NoError(t, err)
	streams := NewStreams(l, slog.New(slog.DiscardHandler))
	pol := func(Kind, string) policy.Policy {
		p := policy.Default(true)
		p.Type, p.Partitions, p.RebalanceTimeout = policy.StreamType, parts, time.Hour // no handover by timeout here
		return p
	}
	env := &Env{Log: slog.New(slog.DiscardHandler), Policy: pol, Streams: streams, Stopping: func() bool { return false }}
	st, err := NewTopic(env, "s.g", pol(Topic, "s.g"), 0, false).Stream()
	require.NoError(t, err)
	t.Cleanup(func() {
		st.close()
		streams.Close()
		require.NoError(t, l.Close())
	})
	return st
}

// appendTo writes n messages to partition p of st.
func appendTo(t *testing.T, st *Stream, p, n int) {
	t.Helper()
	recs := make([]streamlog.Record, n)
	for i := range recs {
		recs[i] = encodeRecord(&persistence.Message{ID: "ID:" + strconv.Itoa(i), Body: []byte("m")}, "", time.Now().UnixMilli())
	}
	_, err := st.log.Append(st.logTopic, p, recs)
	require.NoError(t, err)
}

// groupMember is a member of group G on st with prefetch credit, its deliveries
// recorded.
type groupMember struct {
	c    *Consumer
	sink *recordSink
	ss   *StreamReader
}

func joinG(t *testing.T, st *Stream, member string, prefetch int32) *groupMember {
	t.Helper()
	m := &groupMember{sink: &recordSink{}}
	m.c = &Consumer{Sink: m.sink, ID: member, Mode: AckClientIndividual, Prefetch: prefetch}
	m.c.Credit.Store(prefetch)
	ss, err := st.Subscribe(context.Background(), m.c, "first", "G", member)
	require.NoError(t, err)
	m.ss = ss
	return m
}

// of returns the member's deliveries of partition p, in order.
func (m *groupMember) of(p int) []*Delivery {
	var ds []*Delivery
	for _, d := range m.sink.all() {
		if d.StreamPartition == p {
			ds = append(ds, d)
		}
	}
	return ds
}

// ack settles ds and gives their credit back, as the connection does on ACK.
func (m *groupMember) ack(t *testing.T, ds ...*Delivery) {
	t.Helper()
	done := make(chan error, 1)
	m.ss.Ack(ds, func(err error) { done <- err })
	require.NoError(t, <-done)
	m.credit(int32(len(ds)))
}

func (m *groupMember) credit(n int32) {
	m.c.Credit.Add(n)
	m.ss.Kick()
}

func offsets(ds []*Delivery) []int64 {
	offs := make([]int64, len(ds))
	for i, d := range ds {
		offs[i] = d.StreamOffset
	}
	return offs
}

// TestStreamGroupRevokeThenAssign: a member that joins gets a partition another holds
// as Kafka's cooperative rebalance hands it over. The holder gets no new message of it
// from the rebalance on, while it goes on getting those of the partition it keeps; the
// new owner gets none until the holder settled the last it held, then reads on from
// there. When the new owner leaves holding messages unsettled, the partition comes
// back, those messages flagged redelivered.
func TestStreamGroupRevokeThenAssign(t *testing.T) {
	st := testStream(t, 2)
	g := func() *groupState { st.mu.Lock(); defer st.mu.Unlock(); return st.groups["G"] }
	owner := func(p int) *StreamReader { gs := g(); gs.mu.Lock(); defer gs.mu.Unlock(); return gs.owners[p] }
	appendTo(t, st, 1, 10)

	a := joinG(t, st, "a", 4)
	waitFor(t, "the first member's prefetch of partition 1", func() bool { return len(a.of(1)) == 4 })
	held := a.of(1)
	require.Equal(t, []int64{0, 1, 2, 3}, offsets(held))

	// b joins: the sticky rebalance gives it partition 1 (a keeps 0). Its SUBSCRIBE
	// returns once a stopped reading 1; a still holds 4 of it.
	b := joinG(t, st, "b", 10)
	require.True(t, owner(1) == a.ss, "a holds partition 1 until it settled what it holds of it")
	require.True(t, func() bool { gs := g(); gs.mu.Lock(); defer gs.mu.Unlock(); return gs.quiet[1] }())

	// a settles 3 of the 4: each ACK's credit goes to partition 0, none to 1.
	appendTo(t, st, 0, 3)
	for i, d := range held[:3] {
		a.ack(t, d)
		waitFor(t, "a message of partition 0 for the credit", func() bool { return len(a.of(0)) == i+1 })
		require.Len(t, a.of(1), 4, "no new message of a revoked partition")
		require.True(t, owner(1) == a.ss, "partition 1 is a's")
		require.Zero(t, b.sink.count(), "b reads partition 1 only once a settled it")
	}
	require.Equal(t, []int64{0, 1, 2}, offsets(a.of(0)))

	// The last one: partition 1 goes to b, which starts after it.
	a.ack(t, held[3])
	waitFor(t, "b's messages of partition 1", func() bool { return b.sink.count() == 6 })
	got := b.of(1)
	require.Equal(t, []int64{4, 5, 6, 7, 8, 9}, offsets(got))
	for _, d := range got {
		require.False(t, d.Redelivered, "offset %d", d.StreamOffset)
	}
	require.True(t, owner(1) == b.ss, "partition 1 is b's")
	require.Len(t, a.of(1), 4, "partition 1: 4 to a, 6 to b, each once")

	// b settles 3 and leaves holding 3: a takes partition 1 back from the group's
	// position, the 3 flagged redelivered.
	b.ack(t, got[:3]...)
	b.ss.Close()
	a.credit(10)
	waitFor(t, "partition 1 back at a", func() bool { return len(a.of(1)) == 7 })
	back := a.of(1)[4:]
	require.Equal(t, []int64{7, 8, 9}, offsets(back))
	for _, d := range back {
		require.True(t, d.Redelivered, "offset %d was handed to b, unsettled", d.StreamOffset)
		require.EqualValues(t, 2, d.DeliveryCount)
	}
	require.True(t, owner(1) == a.ss, "partition 1 is a's")
	require.Len(t, a.of(0), 3)
}
