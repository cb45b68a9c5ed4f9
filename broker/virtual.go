package broker

import (
	"strings"

	"github.com/activemq-go/broker/destinations"
)

// VirtualTopics configures ActiveMQ's virtual topics: a message sent to a topic whose
// name matches Name is also put on every queue named Prefix (with its * replaced by a
// consumer group name) followed by the topic name, e.g. /topic/VirtualTopic.Orders →
// /queue/Consumer.A.VirtualTopic.Orders. Each such queue is an ordinary load-balanced
// queue; it receives messages once it exists (its first subscriber or sender made it).
type VirtualTopics struct {
	Enabled bool
	Name    string // topic pattern, default "VirtualTopic.>"
	Prefix  string // consumer queue prefix, default "Consumer.*."
}

// DefaultVirtualTopics is ActiveMQ's default virtual topic naming.
func DefaultVirtualTopics() VirtualTopics {
	return VirtualTopics{Enabled: true, Name: "VirtualTopic.>", Prefix: "Consumer.*."}
}

// virtualTopicOf reports the topic a consumer queue reads from, if name is one.
func (v VirtualTopics) virtualTopicOf(name string) (string, bool) {
	if !v.Enabled {
		return "", false
	}
	prefix := strings.Split(strings.TrimSuffix(v.Prefix, "."), ".")
	parts := strings.SplitN(name, ".", len(prefix)+1)
	if len(parts) != len(prefix)+1 {
		return "", false
	}
	for i, p := range prefix {
		if p != "*" && p != parts[i] {
			return "", false
		}
	}
	topic := parts[len(prefix)]
	return topic, destinations.Match(v.Name, topic)
}

// registerVirtual records a new queue that consumes a virtual topic. Called with b.mu held.
func (b *Broker) registerVirtual(q *destinations.QueueDest) {
	if topic, ok := b.virtual.virtualTopicOf(q.Name()); ok {
		b.vtQueues[topic] = append(b.vtQueues[topic], destinations.Name{Kind: destinations.Queue, Name: q.Name()})
	}
}

// virtualQueues returns the consumer queues of a virtual topic.
func (b *Broker) virtualQueues(topic string) []destinations.Name {
	if !b.virtual.Enabled {
		return nil
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.vtQueues[topic]
}
