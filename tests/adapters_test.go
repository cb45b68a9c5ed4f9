package tests

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests of this file run one scenario per durable adapter (durableAdapters, in
// crash_test.go) through go-stomp clients, across a restart of the broker process on the
// same store.

// restarts are the two ways these tests take a broker down before starting it again on
// the same store: a clean stop (SIGTERM, which must exit 0) and a crash (SIGKILL).
var restarts = []struct {
	name string
	down func(*brokerProc)
}{
	{"sigterm", (*brokerProc).Stop},
	{"kill-9", (*brokerProc).Kill},
}

// eachDurableAdapter runs fn as a subtest per durable adapter, with the configuration of
// a fresh store: starting brokers with bc again reopens that store.
func eachDurableAdapter(t *testing.T, fn func(t *testing.T, bc brokerConfig)) {
	for _, a := range durableAdapters {
		t.Run(a.name, func(t *testing.T) {
			fn(t, brokerConfig{Adapter: a.store(t), DataDir: t.TempDir()})
		})
	}
}

// eachDurableAdapterAndRestart is eachDurableAdapter with a subtest per way of restarting.
func eachDurableAdapterAndRestart(t *testing.T, fn func(t *testing.T, bc brokerConfig, down func(*brokerProc))) {
	for _, a := range durableAdapters {
		for _, r := range restarts {
			t.Run(a.name+"/"+r.name, func(t *testing.T) {
				fn(t, brokerConfig{Adapter: a.store(t), DataDir: t.TempDir()}, r.down)
			})
		}
	}
}

// seqBody is the body of message i of a sequence named prefix.
func seqBody(prefix string, i int) string { return fmt.Sprintf("%s-%04d", prefix, i) }

// sendSeq sends messages from..to-1 of sequence prefix to dest, persistent, each with a
// receipt (so each is stored before the next is sent), with its number in header seq.
func sendSeq(t testing.TB, c *stomp.Conn, dest, prefix string, from, to int, opts ...func(*stomp.Conn) error) {
	t.Helper()
	for i := from; i < to; i++ {
		require.NoError(t, c.Send(dest, "text/plain", []byte(seqBody(prefix, i)), stomp.SendOpt.Receipt,
			stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Header("seq", strconv.Itoa(i))),
			"send %s", seqBody(prefix, i))
	}
}

// recvSeq requires the next messages of sub to be messages from..to-1 of sequence prefix,
// in that order, persistent, and returns them.
func recvSeq(t testing.TB, sub *stomp.Subscription, prefix string, from, to int) []*stomp.Message {
	t.Helper()
	var got []*stomp.Message
	for i := from; i < to; i++ {
		m := recv(t, sub)
		require.Equal(t, seqBody(prefix, i), string(m.Body), "message %d of %d", i-from, to-from)
		require.Equal(t, strconv.Itoa(i), m.Header.Get("seq"))
		require.Equal(t, "true", m.Header.Get("persistent"))
		got = append(got, m)
	}
	return got
}

// expectDrained requires that sub, on connection c, receives nothing more.
func expectDrained(t testing.TB, c *stomp.Conn, sub *stomp.Subscription) {
	t.Helper()
	syncSubscriptions(t, c)
	expectNone(t, sub, 300*time.Millisecond)
}

// TestAdaptersPersistentMessagesSurviveRestart: persistent messages sent with receipts are
// all delivered, in order and once, by the broker restarted on the same store, after a
// SIGTERM as after a kill -9; a queue untouched before the restart survives too.
func TestAdaptersPersistentMessagesSurviveRestart(t *testing.T) {
	eachDurableAdapterAndRestart(t, func(t *testing.T, bc brokerConfig, down func(*brokerProc)) {
		const n = 200
		b := startBroker(t, bc)
		p := dial(t, b.Addr)
		sendSeq(t, p, "/queue/survive", "m", 0, n)
		sendSeq(t, p, "/queue/survive.other", "o", 0, 3)
		down(b)

		b2 := startBroker(t, bc)
		c := dial(t, b2.Addr)
		sub, err := c.Subscribe("/queue/survive", stomp.AckAuto)
		require.NoError(t, err)
		recvSeq(t, sub, "m", 0, n)
		expectDrained(t, c, sub)
		other, err := c.Subscribe("/queue/survive.other", stomp.AckAuto)
		require.NoError(t, err)
		recvSeq(t, other, "o", 0, 3)
		expectDrained(t, c, other)
	})
}

// TestAdaptersUnackedRedeliveredAfterRestart: a client-individual consumer holds ten
// messages and acknowledges the even ones (an ACK transaction committed with a receipt)
// when the broker goes down. After the restart the odd ones, and only they, are
// delivered again, in order, flagged redelivered:true.
func TestAdaptersUnackedRedeliveredAfterRestart(t *testing.T) {
	eachDurableAdapterAndRestart(t, func(t *testing.T, bc brokerConfig, down func(*brokerProc)) {
		const n = 10
		b := startBroker(t, bc)
		p := dial(t, b.Addr)
		sendSeq(t, p, "/queue/unacked", "u", 0, n)
		c := dial(t, b.Addr)
		sub, err := c.Subscribe("/queue/unacked", stomp.AckClientIndividual, stomp.SubscribeOpt.Header("activemq.prefetchSize", "20"))
		require.NoError(t, err)
		got := recvSeq(t, sub, "u", 0, n)
		for _, m := range got {
			assert.Empty(t, m.Header.Get("redelivered"), "first delivery of %s", m.Body)
		}
		tx := c.Begin()
		for i := 0; i < n; i += 2 {
			require.NoError(t, tx.Ack(got[i]))
		}
		require.NoError(t, tx.CommitWithReceipt())
		down(b) // the consumer is still connected, holding the odd messages

		b2 := startBroker(t, bc)
		c2 := dial(t, b2.Addr)
		sub2, err := c2.Subscribe("/queue/unacked", stomp.AckAuto)
		require.NoError(t, err)
		var again []*stomp.Message
		for i := 1; i < n; i += 2 {
			m := recv(t, sub2)
			require.Equal(t, seqBody("u", i), string(m.Body), "only the unacknowledged messages, in order")
			again = append(again, m)
		}
		expectDrained(t, c2, sub2)
		// Its own subtest, so that a broker that forgets deliveries across a restart
		// fails under a name that says so.
		t.Run("redelivered-flag", func(t *testing.T) {
			for _, m := range again {
				assert.Equal(t, "true", m.Header.Get("redelivered"),
					"%s was delivered before the restart and never acknowledged: redelivered:true expected", m.Body)
			}
		})
	})
}

// TestAdaptersNackToDLQSurvivesRestart: a persistent message NACKed (in a transaction
// committed with a receipt) is in ActiveMQ.DLQ after a restart, with its headers and
// original-destination, and gone from its queue.
func TestAdaptersNackToDLQSurvivesRestart(t *testing.T) {
	eachDurableAdapterAndRestart(t, func(t *testing.T, bc brokerConfig, down func(*brokerProc)) {
		b := startBroker(t, bc)
		p := dial(t, b.Addr)
		require.NoError(t, p.Send("/queue/poison", "text/plain", []byte("bad"), stomp.SendOpt.Receipt,
			stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Header("app", "1")))
		sendSeq(t, p, "/queue/poison", "good", 0, 1)
		c := dial(t, b.Addr)
		sub, err := c.Subscribe("/queue/poison", stomp.AckClientIndividual, stomp.SubscribeOpt.Header("activemq.prefetchSize", "1"))
		require.NoError(t, err)
		m := recv(t, sub)
		require.Equal(t, "bad", string(m.Body))
		tx := c.Begin()
		require.NoError(t, tx.Nack(m))
		require.NoError(t, tx.CommitWithReceipt())
		down(b)

		b2 := startBroker(t, bc)
		c2 := dial(t, b2.Addr)
		// The queue first: "bad" was stored before "good", so a NACK the store does not
		// remember shows as "bad" coming back here first.
		q, err := c2.Subscribe("/queue/poison", stomp.AckAuto)
		require.NoError(t, err)
		if first := recv(t, q); string(first.Body) != seqBody("good", 0) {
			t.Fatalf("after the restart /queue/poison delivered %q (redelivered=%q) first: the receipted NACK "+
				"was forgotten, the dead-letter move was not stored before the COMMIT's RECEIPT", first.Body, first.Header.Get("redelivered"))
		}
		expectDrained(t, c2, q)
		dlq, err := c2.Subscribe("/queue/ActiveMQ.DLQ", stomp.AckAuto)
		require.NoError(t, err)
		d := recv(t, dlq)
		assert.Equal(t, "bad", string(d.Body))
		assert.Equal(t, "/queue/poison", d.Header.Get("original-destination"))
		assert.Equal(t, m.Header.Get("message-id"), d.Header.Get("message-id"))
		assert.Equal(t, "1", d.Header.Get("app"))
		assert.Equal(t, "true", d.Header.Get("persistent"))
		expectDrained(t, c2, dlq)
	})
}

// TestAdaptersTransactionAtomicAndDurable: the persistent sends of a transaction are
// invisible to a waiting consumer until COMMIT, then all there, in order; an aborted
// transaction leaves nothing. After a restart (a receipted COMMIT is durable) the
// committed messages, which the consumer held unacknowledged, are all delivered again
// and the aborted ones still do not exist.
func TestAdaptersTransactionAtomicAndDurable(t *testing.T) {
	eachDurableAdapterAndRestart(t, func(t *testing.T, bc brokerConfig, down func(*brokerProc)) {
		const n = 5
		b := startBroker(t, bc)
		c := dial(t, b.Addr)
		sub, err := c.Subscribe("/queue/txq", stomp.AckClientIndividual)
		require.NoError(t, err)
		syncSubscriptions(t, c)

		p := dial(t, b.Addr)
		tx := p.Begin()
		for i := 0; i < n; i++ {
			require.NoError(t, tx.Send("/queue/txq", "text/plain", []byte(seqBody("t", i)),
				stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Header("seq", strconv.Itoa(i))))
		}
		aborted := p.Begin()
		require.NoError(t, aborted.Send("/queue/txq", "text/plain", []byte("aborted"), stomp.SendOpt.Header("persistent", "true")))
		require.NoError(t, aborted.AbortWithReceipt())
		syncSubscriptions(t, p)
		expectNone(t, sub, 200*time.Millisecond) // nothing before COMMIT
		require.NoError(t, tx.CommitWithReceipt())
		recvSeq(t, sub, "t", 0, n)
		expectDrained(t, c, sub)
		down(b)

		b2 := startBroker(t, bc)
		c2 := dial(t, b2.Addr)
		sub2, err := c2.Subscribe("/queue/txq", stomp.AckAuto)
		require.NoError(t, err)
		recvSeq(t, sub2, "t", 0, n)
		expectDrained(t, c2, sub2)
	})
}

// smallQueueMemory gives every queue a 16 KiB memory limit, so that a queue of a few
// hundred kilobytes lives mostly in the store and is paged in as it drains.
const smallQueueMemory = `destinationPolicy:
  - queue: ">"
    memoryLimit: 16kb
`

// TestAdaptersDeepQueueDrainsAfterRestart: 1000 persistent 512-byte messages (about 30
// times the queue's 16 KiB memory limit) queued with receipts drain completely, in order
// and once, from the broker restarted on the same store.
func TestAdaptersDeepQueueDrainsAfterRestart(t *testing.T) {
	eachDurableAdapterAndRestart(t, func(t *testing.T, bc brokerConfig, down func(*brokerProc)) {
		const n = 1000
		bc.Extra = smallQueueMemory
		b := startBroker(t, bc)
		p := dial(t, b.Addr)
		pad := make([]byte, 512)
		for i := range pad {
			pad[i] = 'x'
		}
		for i := 0; i < n; i++ {
			require.NoError(t, p.Send("/queue/deep", "text/plain", pad, stomp.SendOpt.Receipt,
				stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Header("seq", strconv.Itoa(i))), "send %d", i)
		}
		down(b)

		b2 := startBroker(t, bc)
		c := dial(t, b2.Addr)
		sub, err := c.Subscribe("/queue/deep", stomp.AckClientIndividual, stomp.SubscribeOpt.Header("activemq.prefetchSize", "16"))
		require.NoError(t, err)
		for i := 0; i < n; i++ {
			m := recv(t, sub)
			if m.Header.Get("seq") != strconv.Itoa(i) {
				t.Fatalf("message %d of %d: got seq %s", i, n, m.Header.Get("seq"))
			}
			require.Len(t, m.Body, len(pad))
			require.NoError(t, c.Ack(m))
		}
		expectDrained(t, c, sub)
	})
}
