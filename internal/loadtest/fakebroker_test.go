package loadtest

import (
	"fmt"
	"net"
	"os"
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
// the subscription's list), and it has no durable subscriptions. It knows
// CONNECT, SUBSCRIBE, UNSUBSCRIBE, SEND, ACK, BEGIN, ABORT and DISCONNECT,
// answers every receipt, dispatches a queue round-robin and a topic to all,
// and records every ACK. An ACK naming no outstanding message gets an ERROR.
//
// Durable subscriptions work as in ActiveMQ: keyed by client-id and
// activemq.subscriptionName, a client-id is held by one connection at a time
// and released before the DISCONNECT receipt, an offline subscription
// keeps the topic's messages and hands them over when its consumer
// returns, and UNSUBSCRIBE with the name deletes it unless a consumer is
// attached. Messages published while a backlog is handed over may overtake
// it; the tests publish only while every subscriber is offline.
type fakeBroker struct {
	l net.Listener

	mu      sync.Mutex
	subs    map[string][]*fakeSub // by destination
	next    int                   // round-robin position
	lastID  int
	pending map[string]bool // ack ids delivered and not yet acked
	acked   int

	clientIDs   map[string]bool         // held by a connection
	durables    map[string]*fakeDurable // by client-id and name
	active      int                     // durable subscriptions with a consumer
	maxDraining int                     // the most attached at once when a backlog was handed over
	attached    []int                   // backlog sizes handed over, in order (0 on creation)

	// Knobs, set before the run starts.
	refuseReconnect   bool            // refuse the first CONNECT of a released client-id
	released          map[string]bool // client-ids to refuse once more
	refused           int
	refuseDurable     string   // client-id whose durable SUBSCRIBE gets an ERROR
	dropFromBacklog   int      // messages the first non-empty backlog handed over loses
	refuseUnsubscribe bool     // UNSUBSCRIBE with a subscription name gets an ERROR
	store             *os.File // offline messages' bodies are appended here
}

type fakeConn struct {
	mu       sync.Mutex // serialises writes
	w        *frame.Writer
	clientID string // held, once connected
}

type fakeSub struct {
	c   *fakeConn
	id  string
	ack string
}

// fakeDurable is a durable subscription: its consumer, or the messages it
// missed while it had none.
type fakeDurable struct {
	dest    string
	active  *fakeSub
	backlog []*frame.Frame
}

func startFakeBroker(t testing.TB) *fakeBroker {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &fakeBroker{
		l: l, subs: map[string][]*fakeSub{}, pending: map[string]bool{},
		clientIDs: map[string]bool{}, durables: map[string]*fakeDurable{}, released: map[string]bool{},
	}
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

// durableCount returns the number of durable subscriptions.
func (b *fakeBroker) durableCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.durables)
}

// durableStats returns the backlog sizes handed over, the most
// subscriptions draining at once, and the CONNECTs refused.
func (b *fakeBroker) durableStats() (attached []int, maxDraining, refused int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.attached...), b.maxDraining, b.refused
}

func (b *fakeBroker) serve(nc net.Conn) {
	defer nc.Close()
	r := frame.NewReader(nc)
	c := &fakeConn{w: frame.NewWriter(nc)}
	defer b.release(c)
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
		if err := b.hold(c, f.Header.Get("client-id")); err != nil {
			return err
		}
		c.write(frame.New(frame.CONNECTED, frame.Version, "1.2", frame.HeartBeat, "0,0"))
	case frame.SUBSCRIBE:
		s := &fakeSub{c: c, id: f.Header.Get(frame.Id), ack: f.Header.Get(frame.Ack)}
		dest := f.Header.Get(frame.Destination)
		if name := f.Header.Get("activemq.subscriptionName"); name != "" {
			return b.attach(s, dest, name)
		}
		b.mu.Lock()
		b.subs[dest] = append(b.subs[dest], s)
		b.mu.Unlock()
	case frame.UNSUBSCRIBE:
		return b.unsubscribe(c, f.Header.Get(frame.Id), f.Header.Get("activemq.subscriptionName"))
	case frame.DISCONNECT:
		b.release(c)
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
	case frame.BEGIN, frame.ABORT:
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
	subs = append([]*fakeSub(nil), subs...)
	for _, d := range b.durables {
		switch {
		case d.dest != dest:
		case d.active != nil:
			subs = append(subs, d.active)
		default:
			d.backlog = append(d.backlog, f.Clone())
			if b.store != nil {
				_, _ = b.store.Write(f.Body)
			}
		}
	}
	msgs := make([]*frame.Frame, len(subs))
	for i, s := range subs {
		msgs[i] = b.message(f, s)
	}
	b.mu.Unlock()
	for i, s := range subs {
		s.c.write(msgs[i])
	}
}

// message turns a SEND into the MESSAGE for s; called with the lock held.
func (b *fakeBroker) message(f *frame.Frame, s *fakeSub) *frame.Frame {
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
	return m
}

// hold gives clientID, if any, to c.
func (b *fakeBroker) hold(c *fakeConn, clientID string) error {
	if clientID == "" {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.clientIDs[clientID] || b.released[clientID] {
		delete(b.released, clientID)
		b.refused++
		return fmt.Errorf("Client: %s already connected", clientID)
	}
	b.clientIDs[clientID] = true
	c.clientID = clientID
	return nil
}

// release detaches c's durable subscriptions and frees its client-id.
func (b *fakeBroker) release(c *fakeConn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.clientID == "" {
		return
	}
	for _, d := range b.durables {
		if d.active != nil && d.active.c == c {
			d.active = nil
			b.active--
		}
	}
	delete(b.clientIDs, c.clientID)
	if b.refuseReconnect {
		b.released[c.clientID] = true
	}
	c.clientID = ""
}

// attach attaches s to the durable subscription name of its client-id,
// creating it, and hands over the backlog.
func (b *fakeBroker) attach(s *fakeSub, dest, name string) error {
	b.mu.Lock()
	if s.c.clientID == "" || s.c.clientID == b.refuseDurable {
		b.mu.Unlock()
		return fmt.Errorf("durable subscription refused")
	}
	key := s.c.clientID + "/" + name
	d := b.durables[key]
	if d == nil {
		d = &fakeDurable{dest: dest}
		b.durables[key] = d
	}
	if d.active != nil {
		b.mu.Unlock()
		return fmt.Errorf("Durable consumer is in use")
	}
	d.active = s
	b.active++
	backlog := d.backlog
	if len(backlog) > 0 {
		b.maxDraining = max(b.maxDraining, b.active)
	}
	d.backlog = nil
	if len(backlog) > 0 && b.dropFromBacklog > 0 {
		backlog = backlog[:len(backlog)-b.dropFromBacklog]
		b.dropFromBacklog = 0
	}
	b.attached = append(b.attached, len(backlog))
	msgs := make([]*frame.Frame, len(backlog))
	for i, f := range backlog {
		msgs[i] = b.message(f, s)
	}
	b.mu.Unlock()
	for _, m := range msgs {
		s.c.write(m)
	}
	return nil
}

// unsubscribe deletes the durable subscription name of c's client-id, or,
// without a name, detaches subscription id of c.
func (b *fakeBroker) unsubscribe(c *fakeConn, id, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if name == "" {
		for _, d := range b.durables {
			if d.active != nil && d.active.c == c && d.active.id == id {
				d.active = nil
				b.active--
			}
		}
		return nil
	}
	key := c.clientID + "/" + name
	d := b.durables[key]
	switch {
	case b.refuseUnsubscribe:
		return fmt.Errorf("deleting refused")
	case d == nil:
		return fmt.Errorf("No durable subscription exists for %s", key)
	case d.active != nil:
		return fmt.Errorf("Durable consumer is in use")
	}
	delete(b.durables, key)
	return nil
}

func (c *fakeConn) write(f *frame.Frame) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.w.Write(f)
}
