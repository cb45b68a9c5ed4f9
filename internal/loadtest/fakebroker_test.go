package loadtest

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"
)

// fakeBroker is a minimal STOMP 1.2 broker for what go-stomp's server cannot
// do: its client-ack support rejects 1.2 ACKs and, with 1.1, panics on the
// second message of a subscription (SubscriptionList.Ack forgets to clear
// the subscription's list). It knows CONNECT, SUBSCRIBE, SEND, ACK, BEGIN,
// ABORT and DISCONNECT, answers every receipt, dispatches a queue round-robin
// and a topic to all, and records every ACK. An ACK naming no outstanding
// message gets an ERROR.
type fakeBroker struct {
	l net.Listener

	mu      sync.Mutex
	subs    map[string][]*fakeSub // by destination
	next    int                   // round-robin position
	lastID  int
	pending map[string]bool // ack ids delivered and not yet acked
	acked   int
}

type fakeConn struct {
	mu sync.Mutex // serialises writes
	w  *frame.Writer
}

type fakeSub struct {
	c   *fakeConn
	id  string
	ack string
}

func startFakeBroker(t testing.TB) *fakeBroker {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &fakeBroker{l: l, subs: map[string][]*fakeSub{}, pending: map[string]bool{}}
	go b.accept()
	t.Cleanup(func() { l.Close() })
	return b
}

func (b *fakeBroker) addr() string { return b.l.Addr().String() }

// ackCount returns the number of valid ACKs received.
func (b *fakeBroker) ackCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.acked
}

func (b *fakeBroker) accept() {
	for {
		nc, err := b.l.Accept()
		if err != nil {
			return
		}
		go b.serve(nc)
	}
}

func (b *fakeBroker) serve(nc net.Conn) {
	defer nc.Close()
	r := frame.NewReader(nc)
	c := &fakeConn{w: frame.NewWriter(nc)}
	for {
		f, err := r.Read()
		if err != nil {
			return
		}
		if f == nil {
			continue // heart-beat
		}
		if err := b.handle(c, f); err != nil {
			c.write(frame.New(frame.ERROR, frame.Message, err.Error()))
			return
		}
		if id, ok := f.Header.Contains(frame.Receipt); ok {
			c.write(frame.New(frame.RECEIPT, frame.ReceiptId, id))
		}
		if f.Command == frame.DISCONNECT {
			return
		}
	}
}

func (b *fakeBroker) handle(c *fakeConn, f *frame.Frame) error {
	switch f.Command {
	case frame.CONNECT, frame.STOMP:
		c.write(frame.New(frame.CONNECTED, frame.Version, "1.2", frame.HeartBeat, "0,0"))
	case frame.SUBSCRIBE:
		b.mu.Lock()
		dest := f.Header.Get(frame.Destination)
		b.subs[dest] = append(b.subs[dest], &fakeSub{c: c, id: f.Header.Get(frame.Id), ack: f.Header.Get(frame.Ack)})
		b.mu.Unlock()
	case frame.SEND:
		b.dispatch(f)
	case frame.ACK:
		id := f.Header.Get(frame.Id)
		b.mu.Lock()
		defer b.mu.Unlock()
		if !b.pending[id] {
			return fmt.Errorf("ACK of unknown message %q", id)
		}
		delete(b.pending, id)
		b.acked++
	case frame.BEGIN, frame.ABORT, frame.DISCONNECT:
	default:
		return fmt.Errorf("unsupported command %s", f.Command)
	}
	return nil
}

// dispatch delivers a SEND; the broker lock is not held while writing.
func (b *fakeBroker) dispatch(f *frame.Frame) {
	dest := f.Header.Get(frame.Destination)
	b.mu.Lock()
	subs := b.subs[dest]
	if len(subs) > 0 && !strings.HasPrefix(dest, "/topic/") {
		subs = []*fakeSub{subs[b.next%len(subs)]}
		b.next++
	}
	msgs := make([]*frame.Frame, len(subs))
	for i, s := range subs {
		b.lastID++
		id := strconv.Itoa(b.lastID)
		m := f.Clone()
		m.Command = frame.MESSAGE
		m.Header.Set(frame.MessageId, id)
		m.Header.Set(frame.Subscription, s.id)
		if s.ack != "" && s.ack != frame.AckAuto {
			m.Header.Set(frame.Ack, id)
			b.pending[id] = true
		}
		msgs[i] = m
	}
	b.mu.Unlock()
	for i, s := range subs {
		s.c.write(msgs[i])
	}
}

func (c *fakeConn) write(f *frame.Frame) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.w.Write(f)
}
