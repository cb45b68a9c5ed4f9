package broker

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker/dedup"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

func dupMsg(body, id string, persistent bool) *persistence.Message {
	m := hdrMsg(body, dedup.IDHeader, id)
	m.Persistent = persistent
	return m
}

// sendDup sends m and returns the error its done reports (the producer's answer).
func (c *client) sendDup(dest string, m *persistence.Message) error {
	c.t.Helper()
	ns, err := destinations.Parse(dest)
	require.NoError(c.t, err)
	res := make(chan error, 1)
	var serr error
	c.do(func() { serr = c.conn.Send(context.Background(), ns, m, "", func(err error) { res <- err }) })
	if serr != nil {
		return serr
	}
	return <-res
}

func (b *Broker) dups(d destinations.Name) int64 {
	for _, s := range b.Management().DestinationStats() {
		if s.Name == d.String() {
			return s.Duplicates
		}
	}
	return -1
}

// bodies drains what c has received within a short time after the last delivery.
func drain(c *client) []string {
	var out []string
	for {
		select {
		case d := <-c.got:
			out = append(out, string(d.Msg.Body))
		case <-time.After(200 * time.Millisecond):
			return out
		}
	}
}

func TestDuplicateDropped(t *testing.T) {
	for _, persistent := range []bool{false, true} {
		t.Run("persistent="+strconv.FormatBool(persistent), func(t *testing.T) {
			b := newBroker(t)
			c := newClient(t, b, "")
			c.subscribe("s", "/queue/dd", AckAuto, 100)
			require.NoError(t, c.sendDup("/queue/dd", dupMsg("a", "id-1", persistent)))
			require.NoError(t, c.sendDup("/queue/dd", dupMsg("a again", "id-1", persistent)), "the retry is answered")
			// RabbitMQ's header name is the same id space.
			require.NoError(t, c.sendDup("/queue/dd", hdrMsg("rabbit", dedup.RabbitIDHeader, "id-1")))
			require.NoError(t, c.sendDup("/queue/dd", dupMsg("b", "id-2", persistent)))
			require.NoError(t, c.sendDup("/queue/dd", hdrMsg("no id")))
			require.NoError(t, c.sendDup("/queue/dd", hdrMsg("no id")))
			assert.Equal(t, []string{"a", "b", "no id", "no id"}, drain(c))
			assert.Equal(t, int64(2), b.dups(q("dd")))
			assert.Equal(t, int64(2), b.Management().Counters().Duplicates)
		})
	}
}

func TestDuplicateDetectionDisabled(t *testing.T) {
	b := newPolicyBroker(t, func(p *policy.Policy) { p.DuplicateDetection.Enabled = false })
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/off", AckAuto, 100)
	require.NoError(t, c.sendDup("/queue/off", dupMsg("a", "x", true)))
	require.NoError(t, c.sendDup("/queue/off", dupMsg("a", "x", true)))
	assert.Equal(t, []string{"a", "a"}, drain(c))
	assert.Zero(t, b.Management().Counters().Duplicates)
}

// The cache keeps idCacheSize ids, the oldest forgotten first; the store's id log is
// pruned along.
func TestDuplicateCacheEviction(t *testing.T) {
	st := memstore.New()
	b, err := New(context.Background(), Options{Name: "t", Store: st, Policies: func(k destinations.Kind, name string) policy.Policy {
		p := policy.Default(k.IsTopic())
		p.DuplicateDetection.IDCacheSize = 3
		return p
	}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/ev", AckAuto, 100)
	for i := range 5 {
		require.NoError(t, c.sendDup("/queue/ev", dupMsg("m"+strconv.Itoa(i), "id"+strconv.Itoa(i), true)))
	}
	// id0 and id1 are forgotten: they are accepted again; id2..id4 are remembered.
	// id2..id4 are remembered; id0 and id1 are forgotten.
	for _, i := range []int{4, 3, 2, 0, 2} {
		require.NoError(t, c.sendDup("/queue/ev", dupMsg("again"+strconv.Itoa(i), "id"+strconv.Itoa(i), true)))
	}
	// again0 made the cache forget id2, so the second again2 is taken.
	assert.Equal(t, []string{"m0", "m1", "m2", "m3", "m4", "again0", "again2"}, drain(c))
	assert.Equal(t, int64(3), b.dups(q("ev")))
	n, _ := st.Stats(dedup.LogPrefix + "queue://ev")
	assert.Equal(t, int64(3), n, "the id log is pruned to idCacheSize")
}

func TestDuplicateWindow(t *testing.T) {
	b := newPolicyBroker(t, func(p *policy.Policy) { p.DuplicateDetection.Window = 100 * time.Millisecond })
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/win", AckAuto, 100)
	require.NoError(t, c.sendDup("/queue/win", dupMsg("a", "w", true)))
	require.NoError(t, c.sendDup("/queue/win", dupMsg("a", "w", true)))
	time.Sleep(150 * time.Millisecond) // the window is what is tested: let it pass
	require.NoError(t, c.sendDup("/queue/win", dupMsg("b", "w", true)))
	assert.Equal(t, []string{"a", "b"}, drain(c))
	assert.Equal(t, int64(1), b.dups(q("win")))
}

// A transaction's sends are checked at COMMIT: an id sent twice in it, or one accepted
// before, is dropped then; an aborted transaction records nothing.
func TestDuplicateInTransaction(t *testing.T) {
	b := newBroker(t)
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/tx", AckAuto, 100)
	require.NoError(t, c.sendDup("/queue/tx", dupMsg("before", "t1", true)))
	txSend := func(tx string, m *persistence.Message) {
		ns, _ := destinations.Parse("/queue/tx")
		var err error
		c.do(func() { err = c.conn.Send(context.Background(), ns, m, tx, func(error) {}) })
		require.NoError(t, err)
	}
	var err error
	c.do(func() { err = c.conn.Begin("aborted") })
	require.NoError(t, err)
	txSend("aborted", dupMsg("aborted", "t3", true))
	c.do(func() { err = c.conn.Abort("aborted") })
	require.NoError(t, err)

	c.do(func() { err = c.conn.Begin("tx") })
	require.NoError(t, err)
	txSend("tx", dupMsg("dup of before", "t1", true))
	txSend("tx", dupMsg("new", "t2", true))
	txSend("tx", dupMsg("new twice", "t2", true))
	txSend("tx", dupMsg("t3 was aborted", "t3", true))
	assert.Equal(t, []string{"before"}, drain(c), "nothing before COMMIT")
	res := make(chan error, 1)
	c.do(func() { err = c.conn.Commit(context.Background(), "tx", func(e error) { res <- e }) })
	require.NoError(t, err)
	require.NoError(t, <-res)
	assert.Equal(t, []string{"new", "t3 was aborted"}, drain(c))
	assert.Equal(t, int64(2), b.dups(q("tx")))
}

// A composite send checks each member: the one that has the id drops it, the other
// takes it.
func TestDuplicateComposite(t *testing.T) {
	b := newBroker(t)
	c := newClient(t, b, "")
	c.subscribe("a", "/queue/ca", AckAuto, 100)
	c.subscribe("b", "/queue/cb", AckAuto, 100)
	require.NoError(t, c.sendDup("/queue/ca", dupMsg("first", "c1", true)))
	require.NoError(t, c.sendDup("/queue/ca,/queue/cb", dupMsg("both", "c1", true)))
	var ca, cb []string
	for d := range 2 {
		_ = d
		dl := <-c.got
		if dl.Msg.Dest == persistence.QueueName("ca") {
			ca = append(ca, string(dl.Msg.Body))
		} else {
			cb = append(cb, string(dl.Msg.Body))
		}
	}
	c.expectNone(150 * time.Millisecond)
	assert.Equal(t, []string{"first"}, ca)
	assert.Equal(t, []string{"both"}, cb)
	assert.Equal(t, int64(1), b.dups(q("ca")))
	assert.Equal(t, int64(0), b.dups(q("cb")))
}

// A retried publish to a topic is not fanned out twice.
func TestDuplicateTopic(t *testing.T) {
	b := newBroker(t)
	s1, s2 := newClient(t, b, ""), newClient(t, b, "")
	s1.subscribe("s", "/topic/tt", AckAuto, 100)
	s2.subscribe("s", "/topic/tt", AckAuto, 100)
	p := newClient(t, b, "")
	for range 3 {
		require.NoError(t, p.sendDup("/topic/tt", dupMsg("once", "p1", true)))
	}
	assert.Equal(t, []string{"once"}, drain(s1))
	assert.Equal(t, []string{"once"}, drain(s2))
	assert.Equal(t, int64(2), b.dups(destinations.Name{Kind: destinations.Topic, Name: "tt"}))
}

// The ids survive a restart on the same store, and the message's consumption: the
// retry of a message already consumed is still a duplicate.
func TestDuplicateAfterRestartAndConsume(t *testing.T) {
	st := memstore.New()
	b, err := New(context.Background(), Options{Name: "t", Store: st})
	require.NoError(t, err)
	c := newClient(t, b, "")
	require.NoError(t, c.sendDup("/queue/rs", dupMsg("one", "r1", true)))
	require.NoError(t, c.sendDup("/queue/rs", dupMsg("two", "r2", true)))
	c.subscribe("s", "/queue/rs", AckClient, 1)
	d := c.recv()
	require.Equal(t, "one", string(d.Msg.Body))
	require.NoError(t, c.ack(d))
	c.close()
	require.NoError(t, b.closeForTest())

	b2, err := New(context.Background(), Options{Name: "t", Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b2.Close()) })
	c2 := newClient(t, b2, "")
	require.NoError(t, c2.sendDup("/queue/rs", dupMsg("one", "r1", true)), "consumed, still a duplicate")
	require.NoError(t, c2.sendDup("/queue/rs", dupMsg("two", "r2", true)), "stored, a duplicate")
	require.NoError(t, c2.sendDup("/queue/rs", dupMsg("three", "r3", true)))
	c2.subscribe("s", "/queue/rs", AckAuto, 100)
	assert.Equal(t, []string{"two", "three"}, drain(c2))
	assert.Equal(t, int64(2), b2.dups(q("rs")))
}

// A send whose store write fails does not leave its id behind: the producer's retry
// is stored.
func TestDuplicateIDForgottenWhenStoreFails(t *testing.T) {
	st := newFaultStore()
	b, err := New(context.Background(), Options{Name: "t", Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	c := newClient(t, b, "")
	st.set(func(s *faultStore) { s.commitErr = func(*faultBatch) error { return errors.New("disk on fire") } })
	require.Error(t, c.sendDup("/queue/f", dupMsg("x", "f1", true)))
	st.set(func(s *faultStore) { s.commitErr = nil })
	require.NoError(t, c.sendDup("/queue/f", dupMsg("x", "f1", true)))
	c.subscribe("s", "/queue/f", AckAuto, 100)
	assert.Equal(t, []string{"x"}, drain(c))
	assert.Zero(t, b.dups(q("f")))
}

// sendMsgAsync sends m and returns the channel its answer comes on.
func (c *client) sendMsgAsync(dest string, m *persistence.Message) <-chan error {
	c.t.Helper()
	ns, err := destinations.Parse(dest)
	require.NoError(c.t, err)
	res := make(chan error, 1)
	var serr error
	c.do(func() { serr = c.conn.Send(context.Background(), ns, m, "", func(err error) { res <- err }) })
	require.NoError(c.t, serr)
	return res
}

// A retry that arrives while the first copy is still being written is answered with
// the first copy's result: not before it is stored, and with an error if it fails (the
// id is forgotten then, and the next retry is taken).
func TestDuplicateOfPendingWaitsForTheFirstWrite(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run("fail="+strconv.FormatBool(fail), func(t *testing.T) {
			st := newFaultStore()
			b, err := New(context.Background(), Options{Name: "t", Store: st})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, b.Close()) })
			p1, p2 := newClient(t, b, ""), newClient(t, b, "")
			hold := make(chan struct{})
			st.set(func(s *faultStore) {
				s.hold = hold
				if fail {
					s.commitErr = func(*faultBatch) error { return errors.New("disk on fire") }
				}
			})
			first := p1.sendMsgAsync("/queue/pend", dupMsg("x", "p1", true))
			retry := p2.sendMsgAsync("/queue/pend", dupMsg("x", "p1", true))
			select {
			case err := <-retry:
				t.Fatalf("the retry was answered (%v) before the first copy was written", err)
			case <-time.After(100 * time.Millisecond):
			}
			st.set(func(s *faultStore) { s.hold = nil })
			close(hold)
			if fail {
				require.Error(t, <-first)
				err := <-retry
				require.Error(t, err)
				assert.Contains(t, err.Error(), "first copy")
				st.set(func(s *faultStore) { s.commitErr = nil })
				require.NoError(t, p2.sendDup("/queue/pend", dupMsg("x", "p1", true)), "the next retry is taken")
			} else {
				require.NoError(t, <-first)
				require.NoError(t, <-retry)
			}
			p1.subscribe("s", "/queue/pend", AckAuto, 100)
			assert.Equal(t, []string{"x"}, drain(p1))
		})
	}
}
