package destinations

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// The dead-letter destinations of ActiveMQ's shared and individual strategies
// (IndividualDeadLetterStrategy.createDestination).
func TestDeadLetterDestination(t *testing.T) {
	q := func(n string) Name { return Name{Kind: Queue, Name: n} }
	tp := func(n string) Name { return Name{Kind: Topic, Name: n} }
	ind := policy.Default(false).DeadLetter
	ind.Individual = true
	perSub := ind
	perSub.DestinationPerDurableSubscriber = true
	custom := perSub
	custom.QueueSuffix, custom.TopicSuffix = ".q", ".t"
	custom.UseQueueForQueueMessages, custom.UseQueueForTopicMessages = false, false
	sub := &persistence.SubKey{ClientID: "app", Name: "s1"}
	for _, tc := range []struct {
		s    policy.DeadLetter
		from Name
		sub  *persistence.SubKey
		want Name
	}{
		{policy.Default(false).DeadLetter, q("A"), nil, q(policy.SharedDLQ)},
		{policy.Default(true).DeadLetter, tp("T"), sub, q(policy.SharedDLQ)},
		{ind, q("A"), nil, q("ActiveMQ.DLQ.Queue.A")},
		{ind, tp("T"), nil, q("ActiveMQ.DLQ.Topic.T")},
		{ind, tp("T"), sub, q("ActiveMQ.DLQ.Topic.T")},
		{perSub, tp("T"), sub, q("ActiveMQ.DLQ.Topic.T.app:s1")},
		{perSub, tp("T"), nil, q("ActiveMQ.DLQ.Topic.T")},
		{perSub, q("A"), nil, q("ActiveMQ.DLQ.Queue.A")},
		{custom, tp("T"), sub, tp("ActiveMQ.DLQ.Topic.T.app:s1.t")},
		{custom, q("A"), nil, tp("ActiveMQ.DLQ.Queue.A.q")},
	} {
		assert.Equal(t, tc.want, DeadLetterDest(tc.s, tc.from, tc.sub), "%+v from %v", tc.s, tc.from)
	}
}

// An expired persistent message's move to the dead-letter queue (its copy and the
// deletion of the original, one batch) is committed Async: nobody waits for it, and a
// crash that undoes it leaves the message where it was, to expire again. It rides the
// store's next sync instead of forcing one.
func TestDeadLetteringRidesTheNextSync(t *testing.T) {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		durs   []persistence.Durability
		copied = make(chan string, 1)
	)
	store := memstore.New()
	env := &Env{
		Store: store, Log: slog.New(slog.DiscardHandler), Memory: NewUsage(1 << 30),
		Space: &SpaceSignal{}, Policy: func(Kind, string) policy.Policy { return policy.Default(true) },
		Background: &wg, Stopping: func() bool { return false }, Done: make(chan struct{}),
		Commit: func(b persistence.Batch, d persistence.Durability, done func(error)) {
			mu.Lock()
			durs = append(durs, d)
			mu.Unlock()
			done(b.Commit(context.Background(), d))
		},
		DeadLetter: func(_ persistence.Batch, dlq Name, copies []*persistence.Message) []Accepted {
			copied <- dlq.String() + " " + string(copies[0].Body)
			return nil
		},
	}
	q := NewQueue(env, "ttl", policy.Policy{ExpireMessagesPeriod: time.Second, DeadLetter: policy.Default(true).DeadLetter}, 0)
	m := &persistence.Message{Persistent: true, Priority: 4, Body: []byte("old"), Expires: time.Now().Add(time.Minute).UnixMilli()}
	e, err := q.Accept(m, false)
	require.NoError(t, err)
	require.NotNil(t, e)
	batch := store.Begin()
	stored := m.Clone()
	stored.Dest = q.Qualified()
	batch.Add(stored)
	require.NoError(t, batch.Commit(context.Background(), persistence.Sync))
	Accepted{Q: q, E: e, Seq: m.Seq}.Settle(nil)

	q.SweepExpired(time.Now().Add(time.Hour))
	select {
	case got := <-copied:
		assert.Equal(t, "/queue/"+policy.SharedDLQ+" old", got)
	case <-time.After(10 * time.Second):
		t.Fatal("the expired message was not dead-lettered")
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []persistence.Durability{persistence.Async}, durs)
	n, _ := store.Stats(q.Qualified())
	assert.Zero(t, n, "the original is deleted in the same batch")
}
