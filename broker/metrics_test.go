package broker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker/limits"
	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
	"github.com/activemq-go/broker/security"
)

// SEND, delivery in client mode, ACK and NACK (to the DLQ) each move their counter;
// connections are counted opened, open and closed; a persistent SEND's latency is
// recorded once.
func TestCountersSendDeliverAckNack(t *testing.T) {
	b := newBroker(t)
	p := newClient(t, b, "")
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/m", AckClientIndividual, 10)
	for _, body := range []string{"1", "2", "3"} {
		p.send("/queue/m", body, true)
	}
	ds := []*Delivery{c.recv(), c.recv(), c.recv()}
	require.NoError(t, c.ack(ds[0]))
	require.NoError(t, c.ack(ds[1]))
	c.nack(ds[2])

	st := b.Management().Counters()
	assert.Equal(t, [management.NumProtocols]int64{2, 0}, st.Connections)
	assert.Equal(t, [management.NumProtocols]int64{2, 0}, st.Opened)
	assert.EqualValues(t, 3, st.Received[ProtocolSTOMP])
	assert.EqualValues(t, 3, st.Delivered[ProtocolSTOMP][management.DeliveredClient])
	assert.EqualValues(t, 0, st.Delivered[ProtocolSTOMP][management.DeliveredAuto])
	assert.EqualValues(t, 2, st.Acknowledged[ProtocolSTOMP])
	assert.EqualValues(t, 1, st.DeadLettered[destinations.DeadLetterNack])
	assert.EqualValues(t, 3, st.SendLatency[1].Count, "one observation per persistent SEND")
	assert.EqualValues(t, 0, st.SendLatency[0].Count)
	assert.False(t, st.Started.IsZero())

	qs, _ := b.QueueStats("m")
	assert.EqualValues(t, 3, qs.Dispatched)
	assert.Equal(t, 0, qs.InFlight)

	p.close()
	c.close()
	st = b.Management().Counters()
	assert.Equal(t, [management.NumProtocols]int64{2, 0}, st.Closed)
	assert.Equal(t, [management.NumProtocols]int64{0, 0}, st.Connections)
}

// A message given back unacknowledged and delivered again counts as redelivered; an
// auto-ack delivery as delivered with ack auto; a non-persistent SEND's latency goes to
// the persistent=false histogram. The queue's in-flight count follows.
func TestCountersRedeliveredAndInFlight(t *testing.T) {
	b := newBroker(t)
	p := newClient(t, b, "")
	c1 := newClient(t, b, "")
	c1.subscribe("s", "/queue/r", AckClientIndividual, 10)
	p.send("/queue/r", "m", false)
	c1.recv()
	qs, _ := b.QueueStats("r")
	assert.Equal(t, 1, qs.InFlight)
	c1.close() // gives it back

	c2 := newClient(t, b, "")
	c2.subscribe("s", "/queue/r", AckAuto, 10)
	d := c2.recv()
	assert.True(t, d.Redelivered)
	eventually(t, func() bool { qs, _ := b.QueueStats("r"); return qs.InFlight == 0 && qs.Dequeued == 1 })
	qs, _ = b.QueueStats("r")
	assert.EqualValues(t, 2, qs.Dispatched)
	st := b.Management().Counters()
	assert.EqualValues(t, 1, st.Redelivered)
	assert.EqualValues(t, 1, st.Delivered[ProtocolSTOMP][management.DeliveredAuto])
	assert.EqualValues(t, 1, st.Delivered[ProtocolSTOMP][management.DeliveredClient])
	assert.EqualValues(t, 1, st.SendLatency[0].Count)
}

// A queue message that expired before dispatch counts as expired, on the queue and
// broker-wide, and as dead-lettered (processExpired, ActiveMQ's default).
func TestCountersExpired(t *testing.T) {
	b := newBroker(t)
	p := newClient(t, b, "")
	p.sendMsg("/queue/e", &persistence.Message{Body: []byte("old"), Persistent: true, Priority: 4,
		Expires: time.Now().Add(-time.Second).UnixMilli()})
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/e", AckAuto, 10)
	eventually(t, func() bool { return b.Management().Counters().DeadLettered[destinations.DeadLetterExpired] == 1 })
	st := b.Management().Counters()
	assert.EqualValues(t, 1, st.Expired)
	qs, _ := b.QueueStats("e")
	assert.EqualValues(t, 1, qs.Expired)
	assert.EqualValues(t, 0, qs.Dispatched)
}

// A topic message that expired before it could be written to its subscriber is
// counted expired (and not delivered).
func TestCountersTopicExpired(t *testing.T) {
	b := newBroker(t)
	conn, err := b.Connect(context.Background(), ConnectInfo{})
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Subscribe(context.Background(), SubscribeRequest{ID: "s", Dest: destinations.Name{Kind: destinations.Topic, Name: "t"}, Mode: AckAuto, Prefetch: 10})
	require.NoError(t, err)
	p := newClient(t, b, "")
	p.sendMsg("/topic/t", &persistence.Message{Body: []byte("x"), Priority: 4, Expires: time.Now().Add(-time.Second).UnixMilli()})
	assert.Empty(t, conn.Take(nil))
	assert.EqualValues(t, 1, b.Management().Counters().Expired)
}

// Past maximumRedeliveries a message goes to the DLQ with reason max_redeliveries; the
// discard NACK policy counts a discarded message.
func TestCountersMaxRedeliveriesAndNackDiscard(t *testing.T) {
	t.Run("max redeliveries", func(t *testing.T) {
		b := newPolicyBroker(t, func(p *policy.Policy) {
			p.NackPolicy = policy.NackRedeliver
			p.Redelivery.MaximumRedeliveries = 1
			p.Redelivery.InitialRedeliveryDelay, p.Redelivery.RedeliveryDelay = time.Millisecond, time.Millisecond
		})
		c := newClient(t, b, "")
		c.subscribe("s", "/queue/x", AckClientIndividual, 10)
		c.send("/queue/x", "m", true)
		c.nack(c.recv())
		c.nack(c.recv())
		eventually(t, func() bool {
			return b.Management().Counters().DeadLettered[destinations.DeadLetterMaxRedeliveries] == 1
		})
		assert.EqualValues(t, 1, b.Management().Counters().Redelivered)
	})
	t.Run("nack discard", func(t *testing.T) {
		b := newPolicyBroker(t, func(p *policy.Policy) { p.NackPolicy = policy.NackDiscard })
		c := newClient(t, b, "")
		c.subscribe("s", "/queue/x", AckClientIndividual, 10)
		c.send("/queue/x", "m", true)
		c.nack(c.recv())
		assert.EqualValues(t, 1, b.Management().Counters().Discarded[destinations.DiscardNack])
		assert.EqualValues(t, 0, b.Management().Counters().DeadLettered[destinations.DeadLetterNack])
	})
	t.Run("dead message of a DLQ", func(t *testing.T) {
		b := newBroker(t)
		c := newClient(t, b, "")
		c.subscribe("s", "/queue/"+DLQName, AckClientIndividual, 10)
		c.send("/queue/"+DLQName, "m", true)
		c.nack(c.recv())
		assert.EqualValues(t, 1, b.Management().Counters().Discarded[destinations.DiscardDeadLetterStrategy])
	})
}

// Refused connections count by reason; requests the authorization map refuses count by
// operation.
func TestCountersRejectedAndDenied(t *testing.T) {
	b := securedBroker(t, []security.Entry{{Kind: security.Queue, Pattern: "ok.>", Read: []string{"app"}, Write: []string{"app"}, Admin: []string{"app"}}})
	_, err := b.Connect(context.Background(), ConnectInfo{Login: "app", Passcode: "wrong", HasLogin: true, RemoteAddr: "127.0.0.1:1"})
	require.Error(t, err)
	app, err := b.Connect(context.Background(), ConnectInfo{Login: "app", Passcode: "pw", HasLogin: true, ClientID: "one", RemoteAddr: "127.0.0.1:1"})
	require.NoError(t, err)
	defer app.Close()
	_, err = b.Connect(context.Background(), ConnectInfo{Login: "app", Passcode: "pw", HasLogin: true, ClientID: "one", RemoteAddr: "127.0.0.1:1"})
	require.ErrorIs(t, err, ErrClientIDInUse)
	b.CountRejected(RejectTLS)

	err = app.Send(context.Background(), []destinations.Name{q("secret")}, msg("x"), "", func(error) {})
	require.ErrorIs(t, err, ErrNotAuthorized)
	_, err = app.Subscribe(context.Background(), SubscribeRequest{ID: "s", Dest: q("secret"), Mode: AckAuto})
	require.ErrorIs(t, err, ErrNotAuthorized)

	st := b.Management().Counters()
	assert.EqualValues(t, 1, st.Rejected[management.RejectAuth])
	assert.EqualValues(t, 1, st.Rejected[management.RejectClientID])
	assert.EqualValues(t, 1, st.Rejected[RejectTLS])
	assert.EqualValues(t, 0, st.Rejected[RejectLimit])
	assert.EqualValues(t, 1, st.Denied[management.OpSend])
	assert.EqualValues(t, 1, st.Denied[management.OpSubscribe])
	assert.EqualValues(t, 1, st.Opened[ProtocolSTOMP], "refused connections are not opened")
}

// A user over its connection limit is rejected with reason limit; a connection says its
// protocol.
func TestCountersLimitAndProtocol(t *testing.T) {
	sec, err := security.New(security.Config{Users: []security.User{{Name: "app", Password: "pw", MaxConnections: 1}}}, nil)
	require.NoError(t, err)
	b, err := New(context.Background(), Options{Name: "t", Store: memstore.New(), Security: sec})
	require.NoError(t, err)
	defer b.Close()
	info := ConnectInfo{Login: "app", Passcode: "pw", HasLogin: true, RemoteAddr: "127.0.0.1:1", Protocol: ProtocolSTOMPWebSocket}
	c, err := b.Connect(context.Background(), info)
	require.NoError(t, err)
	defer c.Close()
	_, err = b.Connect(context.Background(), info)
	require.ErrorIs(t, err, ErrTooManyUserConnections)
	st := b.Management().Counters()
	assert.EqualValues(t, 1, st.Rejected[RejectLimit])
	assert.Equal(t, [management.NumProtocols]int64{0, 1}, st.Connections)
}

// SetBlocked counts each held SEND once and the connections held now.
func TestCountersBlocked(t *testing.T) {
	b := newBroker(t)
	c := newClient(t, b, "")
	c.conn.SetBlocked(true)
	c.conn.SetBlocked(true) // the same SEND, tried again
	st := b.Management().Counters()
	assert.EqualValues(t, 1, st.SendsBlocked)
	assert.EqualValues(t, 1, st.ProducersBlocked)
	c.conn.SetBlocked(false)
	c.conn.SetBlocked(true)
	st = b.Management().Counters()
	assert.EqualValues(t, 2, st.SendsBlocked)
	c.close()
	assert.EqualValues(t, 0, b.Management().Counters().ProducersBlocked, "a closed connection holds nothing")
}

// syncStore is a memory store that reports syncs, as the journal does.
type syncStore struct {
	persistence.Store
	obs func(time.Duration)
}

func (s *syncStore) SetSyncObserver(fn func(time.Duration)) { s.obs = fn }

// The broker hands a store that reports syncs its histogram.
func TestCountersStoreSync(t *testing.T) {
	assert.False(t, newBroker(t).Management().Counters().StoreSyncs, "the memory store does not sync")
	s := &syncStore{Store: memstore.New()}
	b, err := New(context.Background(), Options{Store: s})
	require.NoError(t, err)
	defer b.Close()
	require.NotNil(t, s.obs)
	s.obs(3 * time.Millisecond)
	st := b.Management().Counters()
	assert.True(t, st.StoreSyncs)
	assert.EqualValues(t, 1, st.StoreSync.Count)
	assert.Equal(t, 3*time.Millisecond, st.StoreSync.Sum)
}

// DestinationMetrics types every destination; a queue reports its oldest waiting
// message and its memory limit.
func TestDestinationMetrics(t *testing.T) {
	b := newPolicyBroker(t, func(p *policy.Policy) { p.MemoryLimit = 1 << 20 })
	c := newClient(t, b, "")
	first := time.Now().Add(-time.Minute).UnixMilli()
	c.sendMsg("/queue/a", &persistence.Message{Body: []byte("1"), Priority: 4, Timestamp: first})
	c.send("/queue/a", "2", false)
	c.send("/topic/t", "x", false)
	c.send("/temp-queue/mine", "x", false)
	c.subscribe("tt", "/temp-topic/mine", AckAuto, 1)

	byType := map[string][]management.DestinationMetrics{}
	for _, dm := range b.Management().DestinationMetrics() {
		byType[dm.Type] = append(byType[dm.Type], dm)
	}
	require.Len(t, byType[management.TypeQueue], 1)
	qa := byType[management.TypeQueue][0]
	assert.Equal(t, "a", qa.Dest)
	assert.Equal(t, "/queue/a", qa.Name)
	assert.Equal(t, 2, qa.Pending)
	assert.Equal(t, first, qa.OldestTimestamp)
	assert.EqualValues(t, 1<<20, qa.MemoryLimit)
	assert.Positive(t, qa.MemoryBytes)
	require.Len(t, byType[management.TypeTopic], 1)
	require.Len(t, byType[management.TypeTempQueue], 1)
	assert.Contains(t, byType[management.TypeTempQueue][0].Dest, ":mine")
	require.Len(t, byType[management.TypeTempTopic], 1)
	assert.Equal(t, 1, byType[management.TypeTempTopic][0].Consumers)
}

// Subscriptions counts the durable ones active and offline and the others.
func TestSubscriptionCounts(t *testing.T) {
	b := newBroker(t)
	c := newClient(t, b, "app")
	c.subscribe("q", "/queue/a", AckAuto, 1)
	c.subscribeReq(SubscribeRequest{ID: "d", Dest: destinations.Name{Kind: destinations.Topic, Name: "t"}, DurableName: "sub", Mode: AckAuto})
	assert.Equal(t, management.SubscriptionCounts{DurableActive: 1, NonDurable: 1}, b.Management().Subscriptions())
	c.close()
	assert.Equal(t, management.SubscriptionCounts{DurableOffline: 1}, b.Management().Subscriptions())
}

// Resources reports memory and the store (the memory store tells its size), and the
// scheduler's memory when scheduling is on.
func TestResources(t *testing.T) {
	b, err := New(context.Background(), Options{Store: memstore.New(), Scheduler: true, MemoryUsage: 64 << 20, StoreUsage: 1 << 30})
	require.NoError(t, err)
	defer b.Close()
	c := newClient(t, b, "")
	c.send("/queue/a", "hello", true)
	rs := map[string]management.ResourceUsage{}
	for _, r := range b.Management().Resources(context.Background()) {
		rs[r.Resource] = r
	}
	assert.EqualValues(t, 64<<20, rs[management.ResourceMemory].Limit)
	assert.Positive(t, rs[management.ResourceMemory].Used)
	assert.EqualValues(t, 1<<30, rs[management.ResourceStore].Limit)
	assert.Positive(t, rs[management.ResourceStore].Used)
	assert.False(t, rs[management.ResourceStore].Alarm)
	assert.EqualValues(t, limits.DefaultSchedulerMemoryLimit, rs[management.ResourceScheduler].Limit)
}

// A stream's metrics carry its consumer groups' positions and lag.
func TestStreamGroupMetrics(t *testing.T) {
	e := newStreamEnv(t, 2)
	p := newClient(t, e.b, "")
	sendKeyed(p, "s.m", "m", 10)
	c := newClient(t, e.b, "")
	groupMember(c, "s.m", "first")
	for _, d := range takeUntil(t, 10, "m", c)[0] {
		require.NoError(t, c.ack(d))
	}
	c.close()
	stream := func() management.DestinationMetrics {
		for _, dm := range e.b.Management().DestinationMetrics() {
			if dm.Type == management.TypeStream {
				return dm
			}
		}
		t.Fatal("no stream in DestinationMetrics")
		return management.DestinationMetrics{}
	}
	lag := func(dm management.DestinationMetrics) (committed, lag int64) {
		for _, g := range dm.Groups {
			for _, gp := range g.Partitions {
				committed += gp.Position
				lag += gp.Lag
			}
		}
		return committed, lag
	}
	eventually(t, func() bool { n, _ := lag(stream()); return n == 10 })
	sendKeyed(p, "s.m", "n", 5)
	dm := stream()
	assert.Equal(t, "s.m", dm.Dest)
	require.Len(t, dm.Groups, 1)
	assert.Equal(t, "G", dm.Groups[0].Group)
	require.Len(t, dm.Partitions, 2)
	assert.EqualValues(t, 15, dm.Partitions[0].Next+dm.Partitions[1].Next)
	committed, l := lag(dm)
	assert.EqualValues(t, 10, committed)
	assert.EqualValues(t, 5, l)
}
