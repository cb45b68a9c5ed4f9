package registry

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// host records what the registry announces and lets every subject read everything.
type host struct {
	mu      sync.Mutex
	added   []string
	removed []string
}

func (h *host) MayRead(*destinations.Consumer, bool, string) bool { return true }

func (h *host) Added(d destinations.Name, temp bool, by string, q *destinations.QueueDest, t *destinations.TopicDest) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.added = append(h.added, d.String())
}

func (h *host) Removed(d destinations.Name) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removed = append(h.removed, d.String())
}

// conn is a connection that owns temporary destinations and takes no delivery.
type conn string

func (c conn) Push(*destinations.Delivery)                        {}
func (c conn) PushAll([]*destinations.Delivery)                   {}
func (c conn) AbortConsumer(*destinations.Consumer, string, bool) {}
func (c conn) ConnectionID() string                               { return string(c) }

func (c conn) consumer(dest destinations.Name) *destinations.Consumer {
	return &destinations.Consumer{Sink: c, Dest: dest}
}

func newRegistry(t *testing.T, max int, pol func(policy.Policy) policy.Policy) (*Destinations, *host) {
	t.Helper()
	var wg sync.WaitGroup
	done := make(chan struct{})
	t.Cleanup(func() { close(done); wg.Wait() })
	env := &destinations.Env{
		Store: memstore.New(), Log: slog.New(slog.DiscardHandler), Memory: destinations.NewUsage(1 << 30),
		Space: &destinations.SpaceSignal{}, Background: &wg, Stopping: func() bool { return false }, Done: done,
		Policy: func(k destinations.Kind, name string) policy.Policy { return pol(policy.Default(k.IsTopic())) },
		Commit: func(b persistence.Batch, d persistence.Durability, fn func(error)) {
			fn(b.Commit(context.Background(), d))
		},
	}
	h := &host{}
	return New(Config{Env: env, Host: h, Virtual: DefaultVirtualTopics(), MaxDestinations: max}), h
}

func same(p policy.Policy) policy.Policy { return p }

func queue(name string) destinations.Name {
	return destinations.Name{Kind: destinations.Queue, Name: name}
}
func topic(name string) destinations.Name {
	return destinations.Name{Kind: destinations.Topic, Name: name}
}

// TestAdmitCountsAgainstMaxDestinations: what clients create counts against
// MaxDestinations, advisory topics and wildcards do not, and a refused Admit creates
// nothing of its destinations.
func TestAdmitCountsAgainstMaxDestinations(t *testing.T) {
	r, h := newRegistry(t, 2, same)
	require.NoError(t, r.Admit(Creator{Conn: "c1"}, []destinations.Name{queue("a"), topic("ActiveMQ.Advisory.Queue"), topic("x.>")}))
	require.NoError(t, r.Admit(Creator{Conn: "c1"}, []destinations.Name{topic("b")}))
	err := r.Admit(Creator{Conn: "c1"}, []destinations.Name{queue("a"), queue("c")})
	require.ErrorIs(t, err, ErrTooManyDestinations)
	assert.Equal(t, "maximum number of destinations reached (systemUsage maxDestinations 2): /queue/a not created", err.Error())
	assert.Nil(t, r.FindQueue("c"))
	assert.Equal(t, []string{"/queue/a", "/topic/b"}, h.added, "the advisory topic is made on use, not by Admit")
	r.Topic("ActiveMQ.Advisory.Topic") // the broker's own: never refused, never counted
	require.NoError(t, r.Admit(Creator{Conn: "c1"}, []destinations.Name{queue("a"), topic("b")}))
}

// TestVirtualTopicConsumerQueues: a queue named after a virtual topic's consumer
// prefix is one of its consumer queues until it is removed.
func TestVirtualTopicConsumerQueues(t *testing.T) {
	r, h := newRegistry(t, 0, same)
	r.Queue("Consumer.A.VirtualTopic.Orders")
	r.Queue("Consumer.B.VirtualTopic.Orders")
	r.Queue("Other.A.VirtualTopic.Orders")
	assert.Equal(t, []destinations.Name{queue("Consumer.A.VirtualTopic.Orders"), queue("Consumer.B.VirtualTopic.Orders")},
		r.VirtualQueues("VirtualTopic.Orders"))
	q, tp, err := r.Detach(queue("Consumer.A.VirtualTopic.Orders"))
	require.NoError(t, err)
	assert.NotNil(t, q)
	assert.Nil(t, tp)
	assert.Equal(t, []destinations.Name{queue("Consumer.B.VirtualTopic.Orders")}, r.VirtualQueues("VirtualTopic.Orders"))
	assert.Equal(t, []string{"/queue/Consumer.A.VirtualTopic.Orders"}, h.removed)
	q, tp, err = r.Detach(queue("Consumer.A.VirtualTopic.Orders"))
	assert.NoError(t, err)
	assert.True(t, q == nil && tp == nil, "a destination that does not exist is not detached")
}

// TestTempDestinations: a temporary destination belongs to the connection that named
// it first and is a kind of its own: no queue name reaches it (management, wildcard
// subscriptions, a queue of its name, which Admit refuses while it exists), and it goes
// when the owner drops it.
func TestTempDestinations(t *testing.T) {
	r, h := newRegistry(t, 0, same)
	owner, other := conn("c1"), conn("c2")
	d := destinations.Name{Kind: destinations.TempQueue, Name: "replies"}
	real, created, err := r.Temp(owner, d)
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, destinations.Name{Kind: destinations.TempQueue, Name: "c1:replies", Remote: true}, real)
	_, created, err = r.Temp(owner, d)
	require.NoError(t, err)
	assert.False(t, created, "made once")
	assert.Equal(t, destinations.Sink(owner), r.TempOwner(false, "c1:replies"))
	assert.True(t, r.OwnsTemp(owner, d))
	assert.False(t, r.OwnsTemp(other, d))
	tq := r.QueueOf(real)
	require.NotNil(t, tq)
	assert.Equal(t, "/temp-queue/replies", tq.ClientName())
	for _, q := range []*destinations.QueueDest{r.FindQueue("c1:replies"), r.QueueOf(queue("c1:replies"))} {
		assert.Nil(t, q, "a queue name reaches no temporary queue")
	}
	q, _ := r.Find(queue("c1:replies"))
	assert.Nil(t, q, "management does not see temporary destinations")
	err = r.Admit(Creator{Conn: "c2"}, []destinations.Name{queue("other"), queue("c1:replies")})
	require.ErrorIs(t, err, destinations.ErrInvalidDestination)
	assert.Equal(t, "/queue/c1:replies names a temporary queue, which no queue name reaches: send to it as /remote-temp-queue/c1:replies; only the connection that created it reads it", err.Error())
	assert.Nil(t, r.FindQueue("other"), "a refused Admit makes nothing")
	require.NoError(t, r.Admit(Creator{Conn: "c2"}, []destinations.Name{topic("c1:replies")}), "a topic is another kind")
	wMine := r.AddWildcardQueue(owner.consumer(queue(">")))
	wTheirs := r.AddWildcardQueue(other.consumer(queue(">")))
	assert.Empty(t, r.WildcardQueues(wMine), "no wildcard reaches a temporary queue, its owner's neither")
	assert.Empty(t, r.WildcardQueues(wTheirs))
	r.Queue("plain")
	assert.Len(t, r.WildcardQueues(wMine), 1)
	assert.Len(t, r.WildcardQueues(wTheirs), 1)

	r.DropTemps([]destinations.Name{real})
	assert.Nil(t, r.QueueOf(real))
	assert.Nil(t, r.TempOwner(false, "c1:replies"))
	assert.Equal(t, []string{"/remote-temp-queue/c1:replies"}, h.removed)
	require.NoError(t, r.Admit(Creator{Conn: "c2"}, []destinations.Name{queue("c1:replies")}), "the name is free once the temporary queue is gone")
	r.RemoveWildcardQueue(wMine)
	assert.Empty(t, r.WildcardQueues(wMine))
}

// TestCollectRemovesInactive: the collector removes the destinations its policy
// collects once they have been inactive long enough, leaves temporary ones to their
// owner, and a destination made again numbers its messages above the removed one's.
func TestCollectRemovesInactive(t *testing.T) {
	r, h := newRegistry(t, 0, func(p policy.Policy) policy.Policy {
		p.GCInactiveDestinations = true
		p.InactiveTimeoutBeforeGC = time.Millisecond
		return p
	})
	q := r.Queue("idle")
	q.RecoverStored(41, 0)
	temp, _, err := r.Temp(conn("c1"), destinations.Name{Kind: destinations.TempQueue, Name: "t"})
	require.NoError(t, err)
	before := r.Removals()
	now := time.Now()
	r.Collect(context.Background(), now) // found idle from now on
	assert.NotNil(t, r.FindQueue("idle"))
	r.Collect(context.Background(), now.Add(time.Hour))
	assert.Equal(t, int64(2), r.GCSweeps())
	assert.Nil(t, r.FindQueue("idle"))
	assert.NotNil(t, r.QueueOf(temp), "temporary destinations go with their connection")
	assert.Equal(t, before+1, r.Removals())
	assert.Contains(t, h.removed, "/queue/idle")
	assert.GreaterOrEqual(t, r.Queue("idle").NextSeq(), q.NextSeq())
}

// TestAdmitCountsAgainstUserQuota: the destinations a user creates count against its
// quota, across its connections, not against another user's nor against no user's
// (the broker's, or a creator without a quota); a refused Admit creates nothing; a
// destination removed (by an administrator, or the collector) stops counting.
func TestAdmitCountsAgainstUserQuota(t *testing.T) {
	r, _ := newRegistry(t, 0, func(p policy.Policy) policy.Policy {
		p.GCInactiveDestinations, p.InactiveTimeoutBeforeGC = true, time.Millisecond
		return p
	})
	a1, a2 := Creator{Conn: "c1", User: "a", Max: 2}, Creator{Conn: "c2", User: "a", Max: 2}
	require.NoError(t, r.Admit(a1, []destinations.Name{queue("q1")}))
	require.NoError(t, r.Admit(a2, []destinations.Name{topic("t1"), queue("q1")}))
	err := r.Admit(a1, []destinations.Name{queue("q1"), queue("q2"), queue("q3")})
	require.ErrorIs(t, err, ErrTooManyDestinations)
	assert.Equal(t, "user a reached its quota of 2 destinations created (plugins.maxDestinationsPerUser): /queue/q2 not created", err.Error())
	assert.Nil(t, r.FindQueue("q2"))
	require.NoError(t, r.Admit(Creator{Conn: "c3", User: "b", Max: 2}, []destinations.Name{queue("b1"), queue("b2")}))
	require.NoError(t, r.Admit(Creator{}, []destinations.Name{queue("mgmt")}))
	require.NoError(t, r.Admit(Creator{Conn: "c4", User: "a"}, []destinations.Name{queue("free")}), "no quota")
	assert.Equal(t, 2, r.UserDestinations("a"))

	_, _, err = r.Detach(queue("q1"))
	require.NoError(t, err)
	assert.Equal(t, 1, r.UserDestinations("a"))
	require.NoError(t, r.Admit(a1, []destinations.Name{queue("q2")}))
	require.Error(t, r.Admit(a1, []destinations.Name{queue("q3")}))

	now := time.Now()
	r.Collect(context.Background(), now) // found idle from now on
	r.Collect(context.Background(), now.Add(time.Hour))
	assert.Nil(t, r.FindTopic("t1"), "collected")
	assert.Nil(t, r.FindQueue("q2"), "collected")
	assert.Equal(t, 0, r.UserDestinations("a"))
	assert.Equal(t, 0, r.UserDestinations("b"))
	require.NoError(t, r.Admit(a1, []destinations.Name{queue("q3")}))
}
