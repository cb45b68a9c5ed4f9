package broker

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStreamRetentionFollowsBrokerClock: a producer's timestamp far in the future does
// not pin its segment. Time retention, the time index and timestamp starts go by the
// broker's clock (the time the message was appended); the producer's timestamp rides
// along to consumers.
func TestStreamRetentionFollowsBrokerClock(t *testing.T) {
	e := newStreamEnv(t, 1)
	e.retention = time.Hour
	e.restart()
	p := newClient(t, e.b, "")
	future := time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	big := strings.Repeat("x", 40<<10) // segments are 64 KiB: one message each
	for i := range 3 {
		m := msg(big)
		if i == 0 {
			m.Timestamp = future
		}
		p.sendMsg("/topic/s.future", m)
	}
	st, err := e.log.Stats("s.future", 0)
	require.NoError(t, err)
	require.GreaterOrEqual(t, st.Segments, 3, "the test needs sealed segments")

	c := newClient(t, e.b, "")
	c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("s.future"), StreamOffset: "first"})
	require.Equal(t, future, c.recv().Msg.Timestamp, "the producer's timestamp reaches the consumer")
	c.recvN(2)

	// A timestamp start goes by the time of the append: the future message is not
	// after now.
	ts := newClient(t, e.b, "")
	ts.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("s.future"),
		StreamOffset: "timestamp=" + formatMs(e.clock.Now().Add(time.Minute))})
	select {
	case d := <-ts.got:
		t.Fatalf("a timestamp start after now got offset %d", d.StreamOffset)
	case <-time.After(50 * time.Millisecond):
	}

	require.NoError(t, e.log.EnforceRetention())
	oldest, err := e.log.OldestOffset("s.future", 0)
	require.NoError(t, err)
	require.Zero(t, oldest, "nothing is an hour old yet")

	e.clock.Set(2 * time.Hour)
	require.NoError(t, e.log.EnforceRetention())
	oldest, err = e.log.OldestOffset("s.future", 0)
	require.NoError(t, err)
	next, err := e.log.NextOffset("s.future", 0)
	require.NoError(t, err)
	st, err = e.log.Stats("s.future", 0)
	require.NoError(t, err)
	require.Equal(t, 1, st.Segments, "every sealed segment is past the retention by the broker's clock")
	require.Positive(t, oldest)
	require.LessOrEqual(t, oldest, next)
}

func formatMs(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
