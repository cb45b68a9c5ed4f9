package broker

import (
	"context"
	"fmt"
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

func newBroker(t testing.TB) *Broker {
	t.Helper()
	b, err := New(context.Background(), Options{Name: "test", Store: memstore.New()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// client drives a Conn the way a transport does: one goroutine owns it, writes what
// Take returns and reports it Delivered.
type client struct {
	t    testing.TB
	conn *Conn
	ops  chan func()
	got  chan *Delivery
	stop chan struct{}
	done chan struct{}
}

func newClient(t testing.TB, b *Broker, clientID string) *client {
	t.Helper()
	return connectClient(t, b, ConnectInfo{ClientID: clientID})
}

// connectClient is newClient connecting with info.
func connectClient(t testing.TB, b *Broker, info ConnectInfo) *client {
	t.Helper()
	conn, err := b.Connect(context.Background(), info)
	require.NoError(t, err)
	c := &client{t: t, conn: conn, ops: make(chan func()), got: make(chan *Delivery, 100000), stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	t.Cleanup(c.close)
	return c
}

func (c *client) loop() {
	defer close(c.done)
	var buf []*Delivery
	for {
		select {
		case op := <-c.ops:
			op()
		case <-c.conn.Wake():
		case <-c.stop:
			c.conn.Close()
			return
		}
		buf = c.conn.Take(buf)
		for _, d := range buf {
			c.got <- d
		}
		c.conn.Delivered(buf)
	}
}

// do runs fn on the owner goroutine and waits for it.
func (c *client) do(fn func()) {
	done := make(chan struct{})
	c.ops <- func() { fn(); close(done) }
	<-done
}

func (c *client) close() {
	select {
	case <-c.done:
		return
	default:
	}
	close(c.stop)
	<-c.done
}

func (c *client) subscribe(id, dest string, mode AckMode, prefetch int) {
	c.t.Helper()
	n, err := destinations.ParseOne(dest)
	require.NoError(c.t, err)
	var serr error
	c.do(func() {
		_, serr = c.conn.Subscribe(context.Background(), SubscribeRequest{ID: id, Dest: n, Mode: mode, Prefetch: prefetch})
	})
	require.NoError(c.t, serr)
}

// send sends and waits until the broker settled it.
func (c *client) send(dest, body string, persistent bool) {
	c.t.Helper()
	ns, err := destinations.Parse(dest)
	require.NoError(c.t, err)
	res := make(chan error, 1)
	var serr error
	c.do(func() {
		serr = c.conn.Send(context.Background(), ns, &persistence.Message{Body: []byte(body), Persistent: persistent, Priority: 4}, "", func(err error) { res <- err })
	})
	require.NoError(c.t, serr)
	require.NoError(c.t, <-res)
}

func (c *client) recv() *Delivery {
	c.t.Helper()
	select {
	case d := <-c.got:
		return d
	case <-time.After(10 * time.Second):
		c.t.Fatal("no delivery within 10s")
	}
	return nil
}

func (c *client) ack(d *Delivery) error {
	res := make(chan error, 1)
	var err error
	c.do(func() {
		err = c.conn.Ack(context.Background(), AckRef{Tag: d.Tag, HasTag: true}, "", func(e error) { res <- e })
	})
	if err != nil {
		return err
	}
	return <-res
}

// TestConcurrentProducersAndConsumers runs many producers and consumers on one queue at
// once (run it with -race): every message arrives exactly once, and per producer in order
// for each consumer.
func TestConcurrentProducersAndConsumers(t *testing.T) {
	b := newBroker(t)
	const producers, consumers, perProducer = 4, 4, 2000
	var cons []*client
	for i := 0; i < consumers; i++ {
		c := newClient(t, b, "")
		mode := AckAuto
		if i%2 == 1 {
			mode = AckClientIndividual
		}
		c.subscribe("s", "/queue/load", mode, 50)
		cons = append(cons, c)
	}
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			c := newClient(t, b, "")
			for i := 0; i < perProducer; i++ {
				c.send("/queue/load", fmt.Sprintf("%d:%d", p, i), i%3 == 0)
			}
		}(p)
	}
	seen := map[string]bool{}
	var mu sync.Mutex
	var cwg sync.WaitGroup
	total := producers * perProducer
	for _, c := range cons {
		cwg.Add(1)
		go func(c *client) {
			defer cwg.Done()
			last := map[int]int{}
			for {
				mu.Lock()
				n := len(seen)
				mu.Unlock()
				if n >= total {
					return
				}
				var d *Delivery
				select {
				case d = <-c.got:
				case <-time.After(200 * time.Millisecond):
					continue
				}
				var p, i int
				_, err := fmt.Sscanf(string(d.Msg.Body), "%d:%d", &p, &i)
				assert.NoError(t, err)
				if prev, ok := last[p]; ok {
					assert.Greater(t, i, prev, "producer %d out of order", p)
				}
				last[p] = i
				mu.Lock()
				assert.False(t, seen[string(d.Msg.Body)], "duplicate %s", d.Msg.Body)
				seen[string(d.Msg.Body)] = true
				mu.Unlock()
				if d.Sub.Mode != AckAuto {
					assert.NoError(t, c.ack(d))
				}
			}
		}(c)
	}
	wg.Wait()
	cwg.Wait()
	assert.Len(t, seen, total)
	st, ok := b.QueueStats("load")
	require.True(t, ok)
	assert.Equal(t, 0, st.Pending)
	assert.EqualValues(t, total, st.Dequeued)
	stored, _ := b.store.Stats("queue://load")
	assert.EqualValues(t, 0, stored, "every persistent message was acked and deleted")
}

func TestPrefetchBoundsOutstandingMessages(t *testing.T) {
	b := newBroker(t)
	p := newClient(t, b, "")
	for i := 0; i < 20; i++ {
		p.send("/queue/pf", strconv.Itoa(i), false)
	}
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/pf", AckClientIndividual, 3)
	var ds []*Delivery
	for i := 0; i < 3; i++ {
		ds = append(ds, c.recv())
	}
	c.do(func() {})
	select {
	case d := <-c.got:
		t.Fatalf("got a 4th message with prefetch 3: %s", d.Msg.Body)
	default:
	}
	st, _ := b.QueueStats("pf")
	assert.Equal(t, 17, st.Pending)
	require.NoError(t, c.ack(ds[0]))
	assert.Equal(t, "3", string(c.recv().Msg.Body))
}

func TestClientIDInUse(t *testing.T) {
	b := newBroker(t)
	newClient(t, b, "app")
	_, err := b.Connect(context.Background(), ConnectInfo{ClientID: "app"})
	var be *Error
	require.ErrorAs(t, err, &be)
	assert.True(t, be.Fatal)
	assert.ErrorIs(t, err, ErrClientIDInUse)
}

func BenchmarkQueueSendDispatch(b *testing.B) {
	br, err := New(context.Background(), Options{Name: "bench", Store: memstore.New()})
	require.NoError(b, err)
	defer br.Close()
	prod, _ := br.Connect(context.Background(), ConnectInfo{})
	cons, _ := br.Connect(context.Background(), ConnectInfo{})
	defer prod.Close()
	defer cons.Close()
	benchSendDispatch(b, prod, cons)
}

// benchSendDispatch sends b.N 256-byte messages from prod to /queue/bench, which cons
// consumes with auto-ack, taking its deliveries every 64 sends.
func benchSendDispatch(b *testing.B, prod, cons *Conn) {
	dest, _ := destinations.Parse("/queue/bench")
	_, err := cons.Subscribe(context.Background(), SubscribeRequest{ID: "s", Dest: dest[0], Mode: AckAuto, Prefetch: 1000})
	require.NoError(b, err)
	body := make([]byte, 256)
	var buf []*Delivery
	done := func(error) {}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := prod.Send(context.Background(), dest, &persistence.Message{Body: body, Priority: 4}, "", done); err != nil {
			b.Fatal(err)
		}
		if i%64 == 63 || i == b.N-1 {
			buf = cons.Take(buf)
			cons.Delivered(buf)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

func parseDests(s string) ([]destinations.Name, error) { return destinations.Parse(s) }

func msg(body string) *persistence.Message {
	return &persistence.Message{Body: []byte(body), Priority: 4}
}

// closeForTest stops the broker without closing its store, so a test can start another
// broker on the same (memory) store as a restart would.
func (b *Broker) closeForTest() error {
	b.conns.Close()
	b.bg.stop()
	if b.sched != nil {
		b.sched.Close()
	}
	b.bg.wg.Wait()
	return nil
}
