package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker/scheduler"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

func newPolicyBroker(t testing.TB, p func(*policy.Policy)) *Broker {
	t.Helper()
	b, err := New(context.Background(), Options{Name: "t", Store: memstore.New(), Policies: func(k destinations.Kind, name string) policy.Policy {
		pol := policy.Default(k.IsTopic())
		if p != nil {
			p(&pol)
		}
		return pol
	}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

func (c *client) subscribeReq(r SubscribeRequest) {
	c.t.Helper()
	var err error
	c.do(func() { _, err = c.conn.Subscribe(context.Background(), r) })
	require.NoError(c.t, err)
}

func (c *client) sendMsg(dest string, m *persistence.Message) {
	c.t.Helper()
	ns, err := destinations.Parse(dest)
	require.NoError(c.t, err)
	res := make(chan error, 1)
	var serr error
	c.do(func() { serr = c.conn.Send(context.Background(), ns, m, "", func(err error) { res <- err }) })
	require.NoError(c.t, serr)
	require.NoError(c.t, <-res)
}

func (c *client) nack(d *Delivery) {
	c.t.Helper()
	res := make(chan error, 1)
	var err error
	c.do(func() {
		err = c.conn.Nack(context.Background(), AckRef{Tag: d.Tag, HasTag: true}, "", func(e error) { res <- e })
	})
	require.NoError(c.t, err)
	require.NoError(c.t, <-res)
}

func (c *client) expectNone(d time.Duration) {
	c.t.Helper()
	select {
	case got := <-c.got:
		c.t.Fatalf("unexpected delivery %q", got.Msg.Body)
	case <-time.After(d):
	}
}

func q(name string) destinations.Name { return destinations.Name{Kind: destinations.Queue, Name: name} }

func hdrMsg(body string, kv ...string) *persistence.Message {
	return &persistence.Message{Body: []byte(body), Priority: 4, Headers: persistence.Headers(kv)}
}

func TestQueueSelectorsRouteAndPassOver(t *testing.T) {
	b := newBroker(t)
	red, blue := newClient(t, b, ""), newClient(t, b, "")
	rs, bs := "color = 'red'", "color = 'blue' AND n > 1"
	red.subscribeReq(SubscribeRequest{ID: "r", Dest: q("sel"), Selector: rs})
	blue.subscribeReq(SubscribeRequest{ID: "b", Dest: q("sel"), Selector: bs})
	p := newClient(t, b, "")
	p.sendMsg("/queue/sel", hdrMsg("green", "color", "green"))
	p.sendMsg("/queue/sel", hdrMsg("blue1", "color", "blue", "n", "1"))
	p.sendMsg("/queue/sel", hdrMsg("red", "color", "red"))
	p.sendMsg("/queue/sel", hdrMsg("blue2", "color", "blue", "n", "2"))
	assert.Equal(t, "red", string(red.recv().Msg.Body))
	assert.Equal(t, "blue2", string(blue.recv().Msg.Body))
	st, _ := b.QueueStats("sel")
	assert.Equal(t, 2, st.Pending, "messages no selector matches stay queued")
}

func TestMessageGroupsStickToOneConsumer(t *testing.T) {
	b := newBroker(t)
	c1, c2 := newClient(t, b, ""), newClient(t, b, "")
	c1.subscribe("s", "/queue/g", AckAuto, 100)
	c2.subscribe("s", "/queue/g", AckAuto, 100)
	p := newClient(t, b, "")
	for i := 0; i < 20; i++ {
		gid := "A"
		if i%2 == 1 {
			gid = "B"
		}
		p.sendMsg("/queue/g", hdrMsg(gid+strconv.Itoa(i), "JMSXGroupID", gid, "JMSXGroupSeq", strconv.Itoa(i/2+1)))
	}
	owner := map[string]*client{}
	firsts := 0
	for n := 0; n < 20; n++ {
		var d *Delivery
		var from *client
		select {
		case d = <-c1.got:
			from = c1
		case d = <-c2.got:
			from = c2
		case <-time.After(5 * time.Second):
			t.Fatal("stalled")
		}
		gid := string(d.Msg.Body[:1])
		if owner[gid] == nil {
			owner[gid] = from
		}
		assert.Same(t, owner[gid], from, "group %s moved while its consumer lives", gid)
		if d.GroupFirst {
			firsts++
		}
	}
	assert.Equal(t, 2, firsts, "JMSXGroupFirstForConsumer once per group")
	// The owner of A leaves: the group moves to the other consumer.
	leaver, stayer := owner["A"], c1
	if leaver == c1 {
		stayer = c2
	}
	leaver.close()
	p.sendMsg("/queue/g", hdrMsg("A-after", "JMSXGroupID", "A"))
	d := stayer.recv()
	assert.Equal(t, "A-after", string(d.Msg.Body))
	assert.True(t, d.GroupFirst)
}

func TestExclusiveAndConsumerPriority(t *testing.T) {
	b := newBroker(t)
	normal, excl := newClient(t, b, ""), newClient(t, b, "")
	normal.subscribeReq(SubscribeRequest{ID: "n", Dest: q("x"), Prefetch: 100})
	excl.subscribeReq(SubscribeRequest{ID: "e", Dest: q("x"), Prefetch: 100, Exclusive: true})
	p := newClient(t, b, "")
	for i := 0; i < 10; i++ {
		p.send("/queue/x", strconv.Itoa(i), false)
	}
	for i := 0; i < 10; i++ {
		assert.Equal(t, strconv.Itoa(i), string(excl.recv().Msg.Body))
	}
	normal.expectNone(50 * time.Millisecond)
	excl.close()
	p.send("/queue/x", "after", false)
	assert.Equal(t, "after", string(normal.recv().Msg.Body))

	lo, hi := newClient(t, b, ""), newClient(t, b, "")
	lo.subscribeReq(SubscribeRequest{ID: "lo", Dest: q("prio"), Prefetch: 5, Priority: 1, Mode: AckClientIndividual})
	hi.subscribeReq(SubscribeRequest{ID: "hi", Dest: q("prio"), Prefetch: 5, Priority: 9, Mode: AckClientIndividual})
	for i := 0; i < 7; i++ {
		p.send("/queue/prio", strconv.Itoa(i), false)
	}
	for i := 0; i < 5; i++ {
		assert.Equal(t, strconv.Itoa(i), string(hi.recv().Msg.Body), "the high-priority consumer fills first")
	}
	assert.Equal(t, "5", string(lo.recv().Msg.Body))
}

func TestEveryRedeliveryCountsAndPoisonGoesToDLQ(t *testing.T) {
	b := newPolicyBroker(t, func(p *policy.Policy) { p.Redelivery.MaximumRedeliveries = 2 })
	p := newClient(t, b, "")
	p.send("/queue/poison", "bad", true)
	// Three consumers each take it and vanish without acknowledging.
	for i := 1; i <= 3; i++ {
		c := newClient(t, b, "")
		c.subscribe("s", "/queue/poison", AckClientIndividual, 1)
		d := c.recv()
		assert.EqualValues(t, i, d.DeliveryCount)
		assert.Equal(t, i > 1, d.Redelivered)
		c.close()
	}
	dlq := newClient(t, b, "")
	dlq.subscribe("s", "/queue/ActiveMQ.DLQ", AckAuto, 10)
	d := dlq.recv()
	assert.Equal(t, "bad", string(d.Msg.Body))
	v, _ := d.Msg.Headers.Get("dlqDeliveryFailureCause")
	assert.Contains(t, v, "maximum redeliveries (2)")
	v, _ = d.Msg.Headers.Get("original-destination")
	assert.Equal(t, "/queue/poison", v)
	eventually(t, func() bool { n, _ := b.store.Stats("queue://poison"); return n == 0 })
}

func eventually(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestNackPolicies(t *testing.T) {
	t.Run("redeliver with delay", func(t *testing.T) {
		b := newPolicyBroker(t, func(p *policy.Policy) {
			p.NackPolicy = policy.NackRedeliver
			p.Redelivery.InitialRedeliveryDelay = 100 * time.Millisecond
		})
		c := newClient(t, b, "")
		c.subscribe("s", "/queue/n", AckClientIndividual, 10)
		c.send("/queue/n", "m", true)
		d := c.recv()
		start := time.Now()
		c.nack(d)
		d2 := c.recv()
		assert.GreaterOrEqual(t, time.Since(start), 90*time.Millisecond)
		assert.True(t, d2.Redelivered)
		assert.EqualValues(t, 2, d2.DeliveryCount)
	})
	t.Run("discard", func(t *testing.T) {
		b := newPolicyBroker(t, func(p *policy.Policy) { p.NackPolicy = policy.NackDiscard })
		c := newClient(t, b, "")
		c.subscribe("s", "/queue/n", AckClientIndividual, 10)
		c.send("/queue/n", "m", true)
		c.nack(c.recv())
		eventually(t, func() bool { n, _ := b.store.Stats("queue://n"); return n == 0 })
		_, ok := b.QueueStats("ActiveMQ.DLQ")
		assert.False(t, ok, "nothing dead-lettered")
	})
	t.Run("individual dead-letter queue", func(t *testing.T) {
		b := newPolicyBroker(t, func(p *policy.Policy) { p.DeadLetter.Individual = true; p.DeadLetter.QueuePrefix = "DLQ." })
		c := newClient(t, b, "")
		c.subscribe("s", "/queue/orders", AckClientIndividual, 10)
		c.send("/queue/orders", "m", true)
		c.nack(c.recv())
		dlq := newClient(t, b, "")
		dlq.subscribe("s", "/queue/DLQ.orders", AckAuto, 10)
		assert.Equal(t, "m", string(dlq.recv().Msg.Body))
	})
}

func TestExpiredMessagesAreNeverDelivered(t *testing.T) {
	b := newBroker(t)
	p := newClient(t, b, "")
	past := time.Now().Add(-time.Second).UnixMilli()
	m := hdrMsg("old")
	m.Expires, m.Persistent = past, true
	p.sendMsg("/queue/ttl", m)
	p.send("/queue/ttl", "fresh", false)
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/ttl", AckAuto, 10)
	assert.Equal(t, "fresh", string(c.recv().Msg.Body))
	dlq := newClient(t, b, "")
	dlq.subscribe("s", "/queue/ActiveMQ.DLQ", AckAuto, 10)
	d := dlq.recv()
	assert.Equal(t, "old", string(d.Msg.Body))
	v, _ := d.Msg.Headers.Get("dlqDeliveryFailureCause")
	assert.Equal(t, "java.lang.Throwable: Message Expired. Expiration:"+strconv.FormatInt(past, 10), v, "ActiveMQ's words")
}

func TestDefaultTimeToLiveAndSweep(t *testing.T) {
	b, err := New(context.Background(), Options{Name: "t", Store: memstore.New(), ExpirySweep: 20 * time.Millisecond,
		Policies: func(k destinations.Kind, name string) policy.Policy {
			p := policy.Default(k.IsTopic())
			p.DefaultTimeToLive = 30 * time.Millisecond
			p.ExpireMessagesPeriod = 20 * time.Millisecond
			p.DeadLetter.ProcessExpired = false
			return p
		}})
	require.NoError(t, err)
	defer b.Close()
	p := newClient(t, b, "")
	p.send("/queue/sweep", "x", true)
	eventually(t, func() bool { n, _ := b.store.Stats("queue://sweep"); return n == 0 })
	st, _ := b.QueueStats("sweep")
	assert.Zero(t, st.Pending)
}

func TestBrowseSeesWithoutConsuming(t *testing.T) {
	b := newSmallBroker(t, 4<<10, 1<<30)
	p := newClient(t, b, "")
	for i := 0; i < 20; i++ {
		p.send("/queue/browse", strconv.Itoa(i)+string(make([]byte, 500)), true)
	}
	var got []*persistence.Message
	var err error
	p.do(func() { got, err = p.conn.Browse(context.Background(), q("browse"), "", 0) })
	require.NoError(t, err)
	require.Len(t, got, 20, "in-memory and paged-out messages")
	for i, m := range got {
		assert.Equal(t, strconv.Itoa(i), string(m.Body[:len(strconv.Itoa(i))]))
	}
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/browse", AckAuto, 100)
	for i := 0; i < 20; i++ {
		c.recv()
	}
}

func TestTemporaryQueueRequestReply(t *testing.T) {
	b := newBroker(t)
	requester, server := newClient(t, b, ""), newClient(t, b, "")
	server.subscribe("s", "/queue/service", AckAuto, 10)
	requester.subscribe("r", "/temp-queue/replies", AckAuto, 10)
	requester.sendMsg("/queue/service", hdrMsg("ping", "reply-to", "/temp-queue/replies"))
	req := server.recv()
	replyTo, _ := req.Msg.Headers.Get("reply-to")
	require.Contains(t, replyTo, "/remote-temp-queue/")
	server.sendMsg(replyTo, hdrMsg("pong"))
	d := requester.recv()
	assert.Equal(t, "pong", string(d.Msg.Body))
	assert.Equal(t, "/temp-queue/replies", d.Destination)

	// Nobody else may consume it, and it is gone with its owner.
	n, _ := destinations.ParseOne(replyTo)
	var err error
	server.do(func() { _, err = server.conn.Subscribe(context.Background(), SubscribeRequest{ID: "steal", Dest: n}) })
	assert.ErrorIs(t, err, ErrInvalidDestination)
	requester.close()
	ns, _ := destinations.Parse(replyTo)
	server.do(func() { err = server.conn.Send(context.Background(), ns, hdrMsg("late"), "", func(error) {}) })
	assert.ErrorIs(t, err, ErrInvalidDestination)
}

func TestVirtualTopicFansOutToConsumerQueues(t *testing.T) {
	b, err := New(context.Background(), Options{Name: "t", Store: memstore.New(), VirtualTopics: DefaultVirtualTopics()})
	require.NoError(t, err)
	defer b.Close()
	a1, a2, bb := newClient(t, b, ""), newClient(t, b, ""), newClient(t, b, "")
	a1.subscribe("s", "/queue/Consumer.A.VirtualTopic.Orders", AckAuto, 100)
	a2.subscribe("s", "/queue/Consumer.A.VirtualTopic.Orders", AckAuto, 100)
	bb.subscribe("s", "/queue/Consumer.B.VirtualTopic.Orders", AckAuto, 100)
	p := newClient(t, b, "")
	for i := 0; i < 10; i++ {
		p.send("/topic/VirtualTopic.Orders", strconv.Itoa(i), true)
	}
	for i := 0; i < 10; i++ {
		assert.Equal(t, strconv.Itoa(i), string(bb.recv().Msg.Body))
	}
	got := 0
	for got < 10 {
		select {
		case <-a1.got:
		case <-a2.got:
		case <-time.After(5 * time.Second):
			t.Fatalf("group A got %d of 10", got)
		}
		got++
	}
	a1.expectNone(20 * time.Millisecond)
	a2.expectNone(20 * time.Millisecond)
}

func TestScheduledDelivery(t *testing.T) {
	st := memstore.New()
	b, err := New(context.Background(), Options{Name: "t", Store: st, Scheduler: true})
	require.NoError(t, err)
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/later", AckAuto, 10)
	start := time.Now()
	m := hdrMsg("delayed", scheduler.HeaderDelay, "150")
	m.Persistent = true
	c.sendMsg("/queue/later", m)
	r := hdrMsg("repeat", scheduler.HeaderDelay, "0", scheduler.HeaderPeriod, "30", scheduler.HeaderRepeat, "2")
	c.sendMsg("/queue/later", r)
	var repeats, delayed int
	for repeats+delayed < 4 {
		d := c.recv()
		switch string(d.Msg.Body) {
		case "repeat":
			repeats++
		case "delayed":
			delayed++
			assert.GreaterOrEqual(t, time.Since(start), 140*time.Millisecond)
		}
	}
	assert.Equal(t, 3, repeats, "first delivery plus 2 repeats")
	c.expectNone(100 * time.Millisecond)
	eventually(t, func() bool { n, _ := st.Stats(scheduler.StoreDest); return n == 0 })

	// A persistent job survives a restart of the broker on the same store.
	m2 := hdrMsg("after-restart", scheduler.HeaderDelay, "200")
	m2.Persistent = true
	c.sendMsg("/queue/later", m2)
	c.close()
	require.NoError(t, b.closeForTest())
	b2, err := New(context.Background(), Options{Name: "t", Store: st, Scheduler: true})
	require.NoError(t, err)
	defer b2.Close()
	c2 := newClient(t, b2, "")
	c2.subscribe("s", "/queue/later", AckAuto, 10)
	assert.Equal(t, "after-restart", string(c2.recv().Msg.Body))

	var serr error
	c2.do(func() {
		ns, _ := destinations.Parse("/queue/later")
		serr = c2.conn.Send(context.Background(), ns, hdrMsg("cron", scheduler.HeaderCron, "* * * * *"), "", func(error) {})
	})
	assert.ErrorContains(t, serr, "CRON")
}
