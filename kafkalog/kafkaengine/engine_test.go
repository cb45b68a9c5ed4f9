package kafkaengine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/activemq-go/broker/destinations/streamlog"
)

// newCluster starts an in-process Kafka of three brokers.
func newCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.GroupMinSessionTimeout(time.Second))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// openEngine opens an engine on c; it is closed at the test's end.
func openEngine(t *testing.T, c *kfake.Cluster, prefix string) *Engine {
	t.Helper()
	e, err := Open(Options{SeedBrokers: c.ListenAddrs(), TopicPrefix: prefix, SessionTimeout: 3 * time.Second,
		extra: []kgo.Opt{kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond })}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e
}

func TestOpenNeedsSeedBrokers(t *testing.T) {
	_, err := Open(Options{})
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = Open(Options{SeedBrokers: []string{"x:1"}, Partitions: -1})
	require.ErrorIs(t, err, ErrInvalidOptions)
}

func TestCreateTopicAndTopics(t *testing.T) {
	c := newCluster(t)
	e := openEngine(t, c, "amq.")
	require.Equal(t, 0, e.Partitions("orders"))
	require.NoError(t, e.CreateTopicWith("orders", 3, streamlog.TopicConfig{Retention: time.Hour, RetentionBytes: -1}))
	require.Equal(t, 3, e.Partitions("orders"))
	// Declaring it again (every broker start) is fine; another count is not.
	require.NoError(t, e.CreateTopicWith("orders", 3, streamlog.TopicConfig{Retention: 2 * time.Hour}))
	require.ErrorIs(t, e.CreateTopicWith("orders", 4, streamlog.TopicConfig{}), streamlog.ErrTopicExists)

	// Another engine without the prefix sees the Kafka name; with it, the log name.
	other := openEngine(t, c, "")
	require.Contains(t, other.Topics(), "amq.orders")
	require.Equal(t, []string{"orders"}, e.Topics())
}

func TestPartitionsOverride(t *testing.T) {
	c := newCluster(t)
	e, err := Open(Options{SeedBrokers: c.ListenAddrs(), Partitions: 5})
	require.NoError(t, err)
	defer e.Close()
	require.Equal(t, 5, e.Partitions("s"))
	require.NoError(t, e.CreateTopicWith("s", 2, streamlog.TopicConfig{}))
	require.Equal(t, 5, e.Partitions("s"))
	// A topic that exists keeps its count, whatever the option says.
	plain := openEngine(t, c, "")
	require.NoError(t, plain.CreateTopicWith("t", 3, streamlog.TopicConfig{}))
	require.Equal(t, 3, e.Partitions("t"))
	require.NoError(t, e.CreateTopicWith("t", 3, streamlog.TopicConfig{Retention: time.Hour}))
}

func TestAppendReadRoundTrip(t *testing.T) {
	c := newCluster(t)
	e := openEngine(t, c, "")
	require.NoError(t, e.CreateTopicWith("s", 2, streamlog.TopicConfig{}))
	recs := []streamlog.Record{
		{Timestamp: 1000, Key: []byte("k1"), Value: []byte("v1"), Headers: [][2]string{{"a", "1"}, {"b", "2"}}},
		{Timestamp: 2000, Value: []byte("v2")},
		{Timestamp: 3000, Key: []byte{}, Value: []byte{}},
	}
	base, err := e.Append("s", 1, recs)
	require.NoError(t, err)
	require.Equal(t, int64(0), base)
	base, err = e.Append("s", 1, []streamlog.Record{{Value: []byte("v3")}})
	require.NoError(t, err)
	require.Equal(t, int64(3), base)

	got, err := e.Read("s", 1, 0, 1<<20)
	require.NoError(t, err)
	require.Len(t, got, 4)
	require.Equal(t, "k1", string(got[0].Key))
	require.Equal(t, [][2]string{{"a", "1"}, {"b", "2"}}, got[0].Headers)
	require.Equal(t, int64(1000), got[0].Timestamp)
	require.Nil(t, got[1].Key)
	require.Equal(t, "v2", string(got[1].Value))
	require.NotNil(t, got[2].Key, "an empty key is not a null key")
	for i, r := range got {
		require.Equal(t, int64(i), r.Offset)
	}
	require.Greater(t, got[3].Timestamp, int64(0), "a zero timestamp is stamped")

	got, err = e.Read("s", 1, 2, 1<<20)
	require.NoError(t, err)
	require.Equal(t, int64(2), got[0].Offset)
	got, err = e.Read("s", 1, 4, 1<<20)
	require.NoError(t, err)
	require.Empty(t, got, "at the high watermark")
	_, err = e.Read("s", 1, 10, 1<<20)
	require.ErrorIs(t, err, streamlog.ErrOffsetOutOfRange)
	_, err = e.Read("nope", 0, 0, 1<<20)
	require.ErrorIs(t, err, streamlog.ErrUnknownTopic)

	st, err := e.Stats("s", 1)
	require.NoError(t, err)
	require.Equal(t, int64(2), st.Appends)
	require.Positive(t, st.Bytes, "the leader reports the partition's size")
}

func TestOffsets(t *testing.T) {
	c := newCluster(t)
	e := openEngine(t, c, "")
	require.NoError(t, e.CreateTopicWith("s", 1, streamlog.TopicConfig{}))
	hw, err := e.HighWatermark("s", 0)
	require.NoError(t, err)
	require.Equal(t, int64(0), hw)
	for i := range 5 {
		_, err := e.Append("s", 0, []streamlog.Record{{Timestamp: int64(1000 * (i + 1)), Value: []byte{byte(i)}}})
		require.NoError(t, err)
	}
	oldest, err := e.OldestOffset("s", 0)
	require.NoError(t, err)
	require.Equal(t, int64(0), oldest)
	next, err := e.NextOffset("s", 0)
	require.NoError(t, err)
	require.Equal(t, int64(5), next)
	off, err := e.OffsetForTime("s", 0, 2500)
	require.NoError(t, err)
	require.Equal(t, int64(2), off)
	off, err = e.OffsetForTime("s", 0, 9999)
	require.NoError(t, err)
	require.Equal(t, int64(5), off, "past every record: the high watermark")
	_, err = e.HighWatermark("s", 7)
	require.ErrorIs(t, err, streamlog.ErrUnknownPartition)
}

func TestWaitWakesOnAppend(t *testing.T) {
	c := newCluster(t)
	e := openEngine(t, c, "")
	require.NoError(t, e.CreateTopicWith("s", 1, streamlog.TopicConfig{}))
	done := make(chan error, 1)
	go func() { done <- e.Wait(context.Background(), "s", 0, 0) }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned before any record: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	_, err := e.Append("s", 0, []streamlog.Record{{Value: []byte("x")}})
	require.NoError(t, err)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not wake on the append")
	}

	// A canceled context ends it, and so does Close.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- e.Wait(ctx, "s", 0, 1) }()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	go func() { done <- e.Wait(context.Background(), "s", 0, 1) }()
	require.NoError(t, e.Close())
	require.ErrorIs(t, <-done, streamlog.ErrClosed)
	_, err = e.Append("s", 0, []streamlog.Record{{Value: []byte("y")}})
	require.ErrorIs(t, err, streamlog.ErrClosed)
}

func TestPartitionForKeyIsKafkas(t *testing.T) {
	c := newCluster(t)
	e := openEngine(t, c, "")
	// murmur2 of these keys as Kafka's Java client computes it (its UtilsTest); the
	// default partitioner puts a key at toPositive(murmur2(key)) % n.
	for key, h := range map[string]int32{
		"21": -973932308, "foobar": -790332482, "a-little-bit-long-string": -985981536,
		"a-little-bit-longer-string": -1486304829, "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		for _, n := range []int{3, 10, 64} {
			want := int(uint32(h)&0x7fffffff) % n
			require.Equal(t, want, e.PartitionForKey("s", []byte(key), n), "key %q among %d", key, n)
		}
	}
}

// assignedParts waits for the next assignment on ch and returns its partitions.
func assignedParts(t *testing.T, ch <-chan streamlog.Assignment, want func([]int) bool) []int {
	t.Helper()
	deadline := time.After(20 * time.Second)
	var last []int
	for {
		select {
		case a, ok := <-ch:
			require.True(t, ok, "changes closed")
			last = last[:0]
			for _, tp := range a.Partitions {
				last = append(last, tp.Partition)
			}
			if want(last) {
				return last
			}
		case <-deadline:
			t.Fatalf("no wanted assignment; last %v", last)
		}
	}
}

func TestGroupSplitsAndRebalancesOnLeave(t *testing.T) {
	c := newCluster(t)
	e1 := openEngine(t, c, "")
	e2 := openEngine(t, c, "") // another broker node
	require.NoError(t, e1.CreateTopicWith("s", 4, streamlog.TopicConfig{}))

	a, err := e1.Join("g", "m1", "s")
	require.NoError(t, err)
	ch1, err := e1.Changes("g", "m1")
	require.NoError(t, err)
	if len(a.Partitions) != 4 {
		assignedParts(t, ch1, func(ps []int) bool { return len(ps) == 4 })
	}
	_, err = e2.Join("g", "m2", "s")
	require.NoError(t, err)
	ch2, err := e2.Changes("g", "m2")
	require.NoError(t, err)
	p2 := assignedParts(t, ch2, func(ps []int) bool { return len(ps) == 2 })
	p1 := assignedParts(t, ch1, func(ps []int) bool { return len(ps) == 2 })
	all := append(slices.Clone(p1), p2...)
	slices.Sort(all)
	require.Equal(t, []int{0, 1, 2, 3}, all)

	// Commits go through a member, and are seen from the other node.
	require.NoError(t, e2.CommitOffsets([]streamlog.GroupOffset{{Group: "g", Topic: "s", Partition: p2[0], Offset: 7}}))
	off, ok, err := e1.Committed("g", "s", p2[0])
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(7), off)
	_, ok, err = e1.Committed("g", "s", p1[0])
	require.NoError(t, err)
	require.False(t, ok)

	// m2 leaves; its final commit still counts, and m1 gets everything.
	require.NoError(t, e2.Leave("g", "m2"))
	_, open := <-ch2
	require.False(t, open, "Changes closes on Leave")
	require.NoError(t, e2.CommitOffsets([]streamlog.GroupOffset{{Group: "g", Topic: "s", Partition: p2[1], Offset: 3}}))
	assignedParts(t, ch1, func(ps []int) bool { return len(ps) == 4 })
	off, ok, err = e1.Committed("g", "s", p2[1])
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(3), off)
	require.ErrorIs(t, e2.Leave("g", "m2"), streamlog.ErrUnknownMember)

	// With every member gone the commit is a simple one.
	require.NoError(t, e1.Leave("g", "m1"))
	require.Eventually(t, func() bool {
		return e1.CommitOffsets([]streamlog.GroupOffset{{Group: "g", Topic: "s", Partition: 0, Offset: 9}}) == nil
	}, 15*time.Second, 100*time.Millisecond)
	off, _, err = e2.Committed("g", "s", 0)
	require.NoError(t, err)
	require.Equal(t, int64(9), off)
}

func TestJoinTwiceIsRefused(t *testing.T) {
	c := newCluster(t)
	e := openEngine(t, c, "")
	require.NoError(t, e.CreateTopicWith("s", 1, streamlog.TopicConfig{}))
	_, err := e.Join("g", "m", "s")
	require.NoError(t, err)
	_, err = e.Join("g", "m", "s")
	require.ErrorIs(t, err, ErrMemberExists)
}

// TestAppendExactlyOnceThroughFaults has the cluster answer the first produce
// requests with NOT_LEADER_FOR_PARTITION, then a timeout, then drop a connection: every
// append succeeds and each record is in the log once.
func TestAppendExactlyOnceThroughFaults(t *testing.T) {
	c := newCluster(t)
	e := openEngine(t, c, "")
	require.NoError(t, e.CreateTopicWith("s", 1, streamlog.TopicConfig{}))
	var faults atomic.Int32
	fail := func(code int16) func(kmsg.Request) (kmsg.Response, error, bool) {
		return func(kr kmsg.Request) (kmsg.Response, error, bool) {
			req := kr.(*kmsg.ProduceRequest)
			resp := req.ResponseKind().(*kmsg.ProduceResponse)
			for _, rt := range req.Topics {
				st := kmsg.NewProduceResponseTopic()
				st.Topic, st.TopicID = rt.Topic, rt.TopicID
				for _, rp := range rt.Partitions {
					sp := kmsg.NewProduceResponseTopicPartition()
					sp.Partition, sp.ErrorCode = rp.Partition, code
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			faults.Add(1)
			return resp, nil, true
		}
	}
	c.ControlKey(int16(kmsg.Produce), fail(kerr.NotLeaderForPartition.Code))
	c.ControlKey(int16(kmsg.Produce), fail(kerr.RequestTimedOut.Code))
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		faults.Add(1)
		return nil, errors.New("connection dropped"), true
	})
	const n = 20
	for i := range n {
		_, err := e.Append("s", 0, []streamlog.Record{{Value: fmt.Appendf(nil, "m%d", i)}})
		require.NoError(t, err)
	}
	require.Equal(t, int32(3), faults.Load(), "every fault was hit")
	got, err := e.Read("s", 0, 0, 1<<20)
	require.NoError(t, err)
	var values []string
	for _, r := range got {
		values = append(values, string(r.Value))
	}
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("m%d", i)
	}
	require.Equal(t, want, values)
}

// TestLeaderMoves: after the partition's leader moves to another broker, reads (sent
// to the old leader, which answers NOT_LEADER_FOR_PARTITION) and appends follow it,
// and a read whose connection drops is retried.
func TestLeaderMoves(t *testing.T) {
	c := newCluster(t)
	e := openEngine(t, c, "")
	require.NoError(t, e.CreateTopicWith("s", 1, streamlog.TopicConfig{}))
	_, err := e.Append("s", 0, []streamlog.Record{{Value: []byte("a")}})
	require.NoError(t, err)
	got, err := e.Read("s", 0, 0, 1<<20)
	require.NoError(t, err)
	require.Len(t, got, 1)

	old := c.LeaderFor("s", 0)
	require.NoError(t, c.MoveTopicPartition("s", 0, (old+1)%3))
	require.NotEqual(t, old, c.LeaderFor("s", 0))
	_, err = e.Append("s", 0, []streamlog.Record{{Value: []byte("b")}})
	require.NoError(t, err)
	got, err = e.Read("s", 0, 0, 1<<20)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "b", string(got[1].Value))

	// A fetch whose connection drops is sent again (the old leader answering
	// NOT_LEADER_FOR_PARTITION was the case above).
	var hits atomic.Int32
	c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		hits.Add(1)
		return nil, errors.New("connection dropped"), true
	})
	got, err = e.Read("s", 0, 1, 1<<20)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, int32(1), hits.Load())
}

// TestLargeRecord: a record of several MiB goes through when MaxMessageBytes lets it
// (the topic gets it as max.message.bytes), and is refused, not lost, when it does not.
func TestLargeRecord(t *testing.T) {
	c := newCluster(t)
	e, err := Open(Options{SeedBrokers: c.ListenAddrs(), MaxMessageBytes: 4 << 20})
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.CreateTopicWith("big", 1, streamlog.TopicConfig{}))
	body := make([]byte, 3<<20)
	body[len(body)-1] = 7
	_, err = e.Append("big", 0, []streamlog.Record{{Value: body}})
	require.NoError(t, err)
	got, err := e.Read("big", 0, 0, 1<<20)
	require.NoError(t, err)
	require.Len(t, got, 1, "a read returns a whole first batch larger than maxBytes")
	require.Equal(t, body, got[0].Value)

	small := openEngine(t, c, "")
	require.NoError(t, small.CreateTopicWith("small", 1, streamlog.TopicConfig{}))
	_, err = small.Append("small", 0, []streamlog.Record{{Value: body}})
	require.Error(t, err)
	hw, err := small.HighWatermark("small", 0)
	require.NoError(t, err)
	require.Zero(t, hw)
}
