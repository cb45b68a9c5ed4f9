package registry

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

// registerVirtual records a new queue that consumes a virtual topic. The caller holds
// r.mu.
func (r *Destinations) registerVirtual(q *destinations.QueueDest) {
	if topic, ok := r.virtual.virtualTopicOf(q.Name()); ok {
		r.vtQueues[topic] = append(r.vtQueues[topic], destinations.Name{Kind: destinations.Queue, Name: q.Name()})
	}
}

// unregisterVirtual forgets a removed virtual topic consumer queue. The caller holds
// r.mu.
func (r *Destinations) unregisterVirtual(q *destinations.QueueDest) {
	topic, ok := r.virtual.virtualTopicOf(q.Name())
	if !ok {
		return
	}
	qs := r.vtQueues[topic]
	for i, n := range qs {
		if n.Name == q.Name() {
			qs = append(qs[:i:i], qs[i+1:]...)
			break
		}
	}
	if len(qs) == 0 {
		delete(r.vtQueues, topic)
	} else {
		r.vtQueues[topic] = qs
	}
}

// VirtualQueues returns the consumer queues of the virtual topic called topic.
func (r *Destinations) VirtualQueues(topic string) []destinations.Name {
	if !r.virtual.Enabled {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.vtQueues[topic]
}
