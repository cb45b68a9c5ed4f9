package broker

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// heldStore is a memstore whose cancelable commits wait until the test releases them,
// as a journal's queued writes wait behind a running fsync.
type heldStore struct {
	persistence.Store
	mu   sync.Mutex
	held []*heldCommit
}

type heldCommit struct {
	b     persistence.Batch
	d     persistence.Durability
	done  func(error)
	state int // 0 queued, 1 taken, 2 withdrawn
}

type heldBatch struct {
	persistence.Batch
	s *heldStore
}

func (s *heldStore) Begin() persistence.Batch { return &heldBatch{s.Store.Begin(), s} }

func (b *heldBatch) CommitAsync(d persistence.Durability, done func(error)) {
	done(b.Batch.Commit(context.Background(), d))
}

func (b *heldBatch) CommitCancelable(d persistence.Durability, done func(error)) func() bool {
	c := &heldCommit{b: b.Batch, d: d, done: done}
	b.s.mu.Lock()
	b.s.held = append(b.s.held, c)
	b.s.mu.Unlock()
	return func() bool {
		b.s.mu.Lock()
		defer b.s.mu.Unlock()
		if c.state != 0 {
			return false
		}
		c.state = 2
		return true
	}
}

// release writes every held commit that was not withdrawn and completes all of them.
func (s *heldStore) release() {
	s.mu.Lock()
	held := s.held
	s.held = nil
	for _, c := range held {
		if c.state == 0 {
			c.state = 1
		}
	}
	s.mu.Unlock()
	for _, c := range held {
		if c.state == 2 {
			c.b.Rollback()
			c.done(persistence.ErrCanceled)
			continue
		}
		c.done(c.b.Commit(context.Background(), c.d))
	}
}

func newHeldBroker(t *testing.T) (*Broker, *heldStore) {
	st := &heldStore{Store: memstore.New()}
	b, err := New(context.Background(), Options{Name: "test", Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { st.release(); require.NoError(t, b.Close()) })
	return b, st
}

// sendAsync sends a persistent message and returns the channel its outcome arrives on.
func (c *client) sendAsync(dest, body string) <-chan error {
	c.t.Helper()
	ns, err := parseDests(dest)
	require.NoError(c.t, err)
	res := make(chan error, 1)
	var serr error
	c.do(func() {
		serr = c.conn.Send(context.Background(), ns, &persistence.Message{Body: []byte(body), Persistent: true, Priority: 4}, "", func(err error) { res <- err })
	})
	require.NoError(c.t, serr)
	return res
}

// TestConsumedBeforeStoredNeedsNoWrite: with a store that can withdraw queued writes, a
// persistent message is dispatched while its write waits; an auto-ack consumer taking it
// withdraws the write and the producer is answered without the disk.
func TestConsumedBeforeStoredNeedsNoWrite(t *testing.T) {
	b, st := newHeldBroker(t)
	cons := newClient(t, b, "")
	cons.subscribe("s", "/queue/csd", AckAuto, 10)
	prod := newClient(t, b, "")
	res := prod.sendAsync("/queue/csd", "one")
	require.Equal(t, "one", string(cons.recv().Msg.Body), "dispatched while its write is queued")
	require.NoError(t, <-res, "answered once consumed")
	n, _ := st.Stats("queue://csd")
	require.Zero(t, n)
	st.release()
	n, _ = st.Stats("queue://csd")
	require.Zero(t, n, "the withdrawn write never reaches the store")
}

// TestUnackedWhileStoringIsKept: a client-ack consumer that has not acknowledged holds
// no claim on the write: the producer is answered after the write, and the message stays
// stored until the ACK; a consumer that leaves gives it back.
func TestUnackedWhileStoringIsKept(t *testing.T) {
	b, st := newHeldBroker(t)
	cons := newClient(t, b, "")
	cons.subscribe("s", "/queue/csd", AckClientIndividual, 10)
	prod := newClient(t, b, "")
	res := prod.sendAsync("/queue/csd", "one")
	d := cons.recv()
	select {
	case err := <-res:
		t.Fatalf("answered before the write or an ack: %v", err)
	default:
	}
	st.release()
	require.NoError(t, <-res)
	n, _ := st.Stats("queue://csd")
	require.EqualValues(t, 1, n, "stored: nobody acknowledged it")
	cons.close()

	again := newClient(t, b, "")
	again.subscribe("s", "/queue/csd", AckClientIndividual, 10)
	d = again.recv()
	require.True(t, d.Redelivered)
	require.NoError(t, again.ack(d))
	n, _ = st.Stats("queue://csd")
	require.Zero(t, n)
}

// TestAckWhileStoringWithdrawsBoth: a client ACK that arrives while the write still waits
// withdraws it, and the ACK itself needs no write.
func TestAckWhileStoringWithdrawsBoth(t *testing.T) {
	b, st := newHeldBroker(t)
	cons := newClient(t, b, "")
	cons.subscribe("s", "/queue/csd", AckClient, 10)
	prod := newClient(t, b, "")
	res := prod.sendAsync("/queue/csd", "one")
	require.NoError(t, cons.ack(cons.recv()))
	require.NoError(t, <-res)
	st.release()
	n, _ := st.Stats("queue://csd")
	require.Zero(t, n)
	rec, err := st.Recover(context.Background())
	require.NoError(t, err)
	for _, d := range rec.Destinations {
		require.NotEqual(t, "queue://csd", d.Name, "nothing of the queue was written")
	}
}

// TestStoreFailureWhileDispatching: a write that fails after its message was dispatched
// fails the producer; the consumer's later ACK is harmless.
func TestStoreFailureWhileDispatching(t *testing.T) {
	b, st := newHeldBroker(t)
	cons := newClient(t, b, "")
	cons.subscribe("s", "/queue/csd", AckClientIndividual, 10)
	prod := newClient(t, b, "")
	res := prod.sendAsync("/queue/csd", "one")
	d := cons.recv()
	st.mu.Lock()
	c := st.held[0]
	st.held = nil
	c.state = 1
	st.mu.Unlock()
	c.b.Rollback()
	boom := errors.New("disk on fire")
	c.done(boom)
	err := <-res
	require.ErrorIs(t, err, ErrStore)
	require.NoError(t, cons.ack(d))
}
