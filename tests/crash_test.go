package tests

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// durableAdapters are the persistence adapters whose messages must survive kill -9. store
// returns the persistenceAdapter YAML of a fresh, empty store for the test (a new data
// directory is the caller's; jdbc gets a new database on the shared PostgreSQL server);
// starting brokers again with the same YAML and data directory reopens that store.
var durableAdapters = []struct {
	name  string
	store func(t testing.TB) string
}{
	{"kahadb", func(testing.TB) string { return "kahaDB: {}" }},
	{"bbolt", func(testing.TB) string { return "bbolt: {}" }},
	{"kafkalog", func(testing.TB) string { return "kafkaLog: {}" }},
	{"jdbc", sharedJDBCAdapter},
}

// TestKill9LosesNothingReceipted: 4 producers send persistent messages with a receipt on
// each while one consumer acknowledges with receipts and another without; the broker is
// killed with SIGKILL at different points. After a restart every message whose RECEIPT
// arrived is delivered exactly once (redelivered ones may be flagged), none whose ACK
// was receipted comes back, nor one whose unreceipted ACK a later receipt on its
// connection followed; those still in flight may come back (at-least-once), counted.
func TestKill9LosesNothingReceipted(t *testing.T) {
	for _, a := range durableAdapters {
		for _, killAfter := range []int{50, 400, 1500} {
			t.Run(fmt.Sprintf("%s/after-%d-receipts", a.name, killAfter), func(t *testing.T) {
				kill9Run(t, a.store(t), killAfter)
			})
		}
	}
}

func kill9Run(t *testing.T, adapter string, killAfter int) {
	dir := t.TempDir()
	b := startBroker(t, brokerConfig{Adapter: adapter, DataDir: dir})

	var mu sync.Mutex
	receipted := map[string]bool{}
	acked := map[string]bool{}   // ACK committed with a receipt: must never come back
	ackSent := map[string]bool{} // ACK sent: may or may not come back (no receipt seen)
	// The second consumer's ACKs ask for no receipt: they ride the store's next sync, and
	// kill -9 may undo those still in flight. One that a later receipted frame of its
	// connection followed (a SEND every few ACKs) is confirmed: frames are handled in
	// order, so it was stored first, and it must never come back.
	unconfirmed := map[string]bool{}
	confirmed := map[string]bool{}
	var receipts atomic.Int64
	// go-stomp may leave a receipt wait to its timeout (30 s by default) when the
	// connection dies under it: the kill would hold wg.Wait that long.
	opts := []func(*stomp.Conn) error{stomp.ConnOpt.Logger(quietLogger{}), stomp.ConnOpt.RcvReceiptTimeout(5 * time.Second)}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			c, err := stomp.Dial("tcp", b.Addr, opts...)
			if err != nil {
				return
			}
			defer c.MustDisconnect()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("%d-%d", p, i)
				if err := c.Send("/queue/crash", "text/plain", []byte(id), stomp.SendOpt.Receipt,
					stomp.SendOpt.Header("persistent", "true")); err != nil {
					return // the broker died
				}
				mu.Lock()
				receipted[id] = true
				mu.Unlock()
				receipts.Add(1)
			}
		}(p)
	}
	// A consumer acknowledging every message with a receipt while traffic flows, and one
	// acknowledging without; what they hold unacknowledged when the broker dies must be
	// redelivered.
	wg.Add(2)
	go func() {
		defer wg.Done()
		consumeCrash(b.Addr, opts, stop, func(c *stomp.Conn, m *stomp.Message) bool {
			// An ACK with a receipt: go-stomp puts receipts on COMMIT, so ack in a
			// transaction and commit it.
			mu.Lock()
			ackSent[string(m.Body)] = true
			mu.Unlock()
			tx := c.Begin()
			if tx.Ack(m) != nil || tx.CommitWithReceipt() != nil {
				return false
			}
			mu.Lock()
			acked[string(m.Body)] = true
			mu.Unlock()
			return true
		})
	}()
	go func() {
		defer wg.Done()
		unreceiptedAcks(b.Addr, opts, stop, &mu, ackSent, unconfirmed, confirmed)
	}()
	eventually(t, 60*time.Second, fmt.Sprintf("%d receipts", killAfter), func() bool { return receipts.Load() >= int64(killAfter) })
	b.Kill()
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	b2 := startBroker(t, brokerConfig{Adapter: adapter, DataDir: dir})
	c := dial(t, b2.Addr)
	sub, err := c.Subscribe("/queue/crash", stomp.AckAuto)
	require.NoError(t, err)
	got := map[string]int{}
	flagged := map[string]bool{} // delivered with redelivered:true
	want := 0
	for id := range receipted {
		if !ackSent[id] {
			want++
		}
	}
	deadline := time.After(20 * time.Second)
	for {
		missing := 0
		for id := range receipted {
			if !ackSent[id] && got[id] == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		select {
		case m := <-sub.C:
			require.NoError(t, m.Err)
			got[string(m.Body)]++
			flagged[string(m.Body)] = m.Header.Get("redelivered") == "true"
		case <-deadline:
			t.Fatalf("after restart %d receipted, unacknowledged messages never arrived (of %d)", missing, want)
		}
	}
	// Anything else still queued arrives now; a receipt proves the queue was drained to us.
	require.NoError(t, c.Send("/queue/crash-sync", "", nil, stomp.SendOpt.Receipt))
	drain := time.After(300 * time.Millisecond)
loop:
	for {
		select {
		case m := <-sub.C:
			got[string(m.Body)]++
			flagged[string(m.Body)] = m.Header.Get("redelivered") == "true"
		case <-drain:
			break loop
		}
	}
	var dups, resurrected, undone []string
	// Unreceipted ACKs whose message came back (redelivered after the crash), and how many
	// of those were flagged redelivered (the dispatch mark covered them).
	inFlight, inFlightFlagged := 0, 0
	for id, n := range got {
		if n > 1 {
			dups = append(dups, id)
		}
		if acked[id] {
			resurrected = append(resurrected, id)
		}
		if confirmed[id] {
			undone = append(undone, id)
		}
		if unconfirmed[id] {
			inFlight++
			if flagged[id] {
				inFlightFlagged++
			}
		}
	}
	assert.Empty(t, dups, "delivered more than once after restart")
	assert.Empty(t, resurrected, "acknowledged (receipted) messages came back")
	assert.Empty(t, undone, "ACKs followed by a receipt on their connection were undone")
	t.Logf("killed after %d receipts; %d receipted, %d acked with receipts, %d without (%d confirmed); "+
		"%d delivered after restart, %d of them redelivered after an ACK without receipt (of %d in flight; %d flagged redelivered)",
		killAfter, len(receipted), len(acked), len(confirmed)+len(unconfirmed), len(confirmed), len(got), inFlight, len(unconfirmed), inFlightFlagged)
}

// unreceiptedAcks consumes /queue/crash acknowledging each message without a receipt
// (client-individual, as a JMS-style STOMP client does) until stop or the broker dies.
// Every ackEvery ACKs it sends a persistent SEND with a receipt on the same connection;
// once that RECEIPT arrives, the ACKs sent before it move from unconfirmed to confirmed.
func unreceiptedAcks(addr string, opts []func(*stomp.Conn) error, stop <-chan struct{}, mu *sync.Mutex,
	ackSent, unconfirmed, confirmed map[string]bool) {
	const ackEvery = 16
	var sent []string // ACKs since the last confirmation
	consumeCrash(addr, opts, stop, func(c *stomp.Conn, m *stomp.Message) bool {
		id := string(m.Body)
		mu.Lock()
		ackSent[id], unconfirmed[id] = true, true
		mu.Unlock()
		if c.Ack(m) != nil {
			return false
		}
		if sent = append(sent, id); len(sent) < ackEvery {
			return true
		}
		if c.Send("/queue/crash-confirm", "text/plain", nil, stomp.SendOpt.Receipt,
			stomp.SendOpt.Header("persistent", "true")) != nil {
			return false
		}
		mu.Lock()
		for _, id := range sent {
			delete(unconfirmed, id)
			confirmed[id] = true
		}
		mu.Unlock()
		sent = sent[:0]
		return true
	})
}

// consumeCrash subscribes to /queue/crash (client-individual) and hands each message to
// fn until fn returns false, stop is closed or the broker dies. The prefetch stays under
// go-stomp's subscription buffer: a larger one can deadlock that client, whose reader
// blocks handing MESSAGEs over while a RECEIPT waits behind them.
func consumeCrash(addr string, opts []func(*stomp.Conn) error, stop <-chan struct{}, fn func(*stomp.Conn, *stomp.Message) bool) {
	c, err := stomp.Dial("tcp", addr, opts...)
	if err != nil {
		return
	}
	defer c.MustDisconnect()
	sub, err := c.Subscribe("/queue/crash", stomp.AckClientIndividual, stomp.SubscribeOpt.Header("activemq.prefetchSize", "8"))
	if err != nil {
		return
	}
	for {
		var m *stomp.Message
		select {
		case m = <-sub.C:
		case <-stop:
			return
		}
		if m == nil || m.Err != nil || !fn(c, m) {
			return
		}
	}
}
