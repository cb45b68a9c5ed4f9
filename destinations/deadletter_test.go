package destinations

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
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
