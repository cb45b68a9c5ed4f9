package broker

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/internal/vfs"
)

// holdStreamSyncs makes the fsyncs of stream topic's partitions wait until the returned
// func is called (also at the end of the test).
func (e *streamEnv) holdStreamSyncs(topic string) (release func()) {
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	e.t.Cleanup(release)
	e.fs.(*vfs.Mem).Inject(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasPrefix(path, "/streams/"+topic+"-") {
			<-ch
		}
		return nil
	})
	return release
}

// sendWithin is Conn.Send on the client's goroutine, failing the test if it does not
// return within 5s (a SEND must never wait for the disk).
func (c *client) sendWithin(dests []destinations.Name, body string) error {
	c.t.Helper()
	res := make(chan error, 1)
	go c.do(func() {
		res <- c.conn.Send(context.Background(), dests, msg(body), "", func(error) {})
	})
	select {
	case err := <-res:
		return err
	case <-time.After(5 * time.Second):
		c.t.Fatal("Send waited for the stream's disk")
		return nil
	}
}

// TestStreamSendHeldWhileAppendQueueFull: with a partition's append queue full, a SEND
// to it returns at once with an Error whose Retry closes once the queue was taken, and
// queues nothing, not even in the other streams of a composite destination (the
// transport sends the whole SEND again); then it goes through, once per stream.
func TestStreamSendHeldWhileAppendQueueFull(t *testing.T) {
	e := newStreamEnv(t, 1)
	p := newClient(t, e.b, "")
	p.sendMsg("/topic/s.a", msg("warm-a"))
	p.sendMsg("/topic/s.b", msg("warm-b"))
	release := e.holdStreamSyncs("s.b")

	// The appender of s.b takes one message and waits for the disk; the queue fills.
	queued := func() int { return streamStats(t, e.b, "/topic/s.b").Pending }
	require.NoError(t, p.sendWithin([]destinations.Name{topicName("s.b")}, "stuck"))
	eventually(t, func() bool { return queued() == 0 })
	for {
		err := p.sendWithin([]destinations.Name{topicName("s.b")}, "fill")
		if err != nil {
			require.ErrorIs(t, err, destinations.ErrStreamBusy)
			break
		}
	}
	filled := queued()

	both := []destinations.Name{topicName("s.a"), topicName("s.b")}
	var held *Error
	for _, dests := range [][]destinations.Name{both[1:], both} {
		err := p.sendWithin(dests, "both")
		require.ErrorAs(t, err, &held)
		require.ErrorIs(t, err, destinations.ErrStreamBusy)
		require.NotNil(t, held.Retry, "the transport holds the SEND until there is room")
		require.False(t, held.Fatal)
		require.Contains(t, held.Message, "/topic/s.b")
		require.Equal(t, filled, queued(), "nothing queued")
	}
	next, err := e.log.NextOffset("s.a", 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), next, "the composite SEND left s.a alone too")

	release()
	select {
	case <-held.Retry:
	case <-time.After(10 * time.Second):
		t.Fatal("Retry did not close once the disk moved")
	}
	p.sendMsg("/topic/s.a,/topic/s.b", msg("both"))
	for _, topic := range []string{"s.a", "s.b"} {
		c := newClient(t, e.b, "")
		c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName(topic), StreamOffset: "last"})
		require.Equal(t, "both", string(c.recv().Msg.Body), topic)
		c.expectNone(20 * time.Millisecond)
	}
}
