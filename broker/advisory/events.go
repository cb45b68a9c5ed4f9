package advisory

import (
	"slices"
	"strconv"
	"strings"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// Connected announces a new connection.
func (a *Advisories) Connected(c Conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	a.conns[c.ID] = connEntry{c: c, seq: a.seq}
	a.publishLocked(connectionTopic, nil, func() (any, []string) { return connectionJSON(c), nil })
}

// Disconnected announces that the connection called id closed.
func (a *Advisories) Disconnected(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.conns[id]; !ok {
		return
	}
	delete(a.conns, id)
	a.producersGoneLocked(id)
	a.publishLocked(connectionTopic, nil, func() (any, []string) { return removeConnectionJSON(id), nil })
}

// Subscribed takes in a new subscription: one that hears advisories gets what is
// there already and then hears them; a consumer of anything but an advisory topic is
// announced.
func (a *Advisories) Subscribed(c Consumer) {
	s := &c
	a.mu.Lock()
	defer a.mu.Unlock()
	if hearsAdvisories(s) {
		a.replayLocked(s)
		a.subs = append(a.subs, s)
		a.listeners.Store(int32(len(a.subs)))
	}
	if IsAdvisory(s.Dest) {
		return
	}
	a.seq++
	a.consumers[s.Consumer] = consumerEntry{c: s, seq: a.seq}
	a.consumerLocked(s, nil, false)
}

// Unsubscribed announces that the subscription whose destination side is c ended.
func (a *Advisories) Unsubscribed(c *destinations.Consumer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i := slices.IndexFunc(a.subs, func(s *Consumer) bool { return s.Consumer == c }); i >= 0 {
		a.subs = slices.Delete(a.subs, i, i+1)
		a.listeners.Store(int32(len(a.subs)))
	}
	e, ok := a.consumers[c]
	if !ok {
		return
	}
	delete(a.consumers, c)
	a.consumerLocked(e.c, nil, true)
}

// consumerLocked announces s (removed: its end) to the listeners, or to one.
func (a *Advisories) consumerLocked(s *Consumer, to *Consumer, removed bool) {
	a.publishLocked(consumerTopic(s.Dest), to, func() (any, []string) {
		hs := []string{"consumerCount", strconv.Itoa(a.countLocked(s.Dest))}
		if removed {
			return removeConsumerJSON(s), hs
		}
		return consumerJSON(s, a.isTempLocked(s.Dest)), hs
	})
}

// DurableDeleted announces that the connection called conn deleted the durable
// subscription key of topic.
func (a *Advisories) DurableDeleted(conn string, key persistence.SubKey, topic string) {
	d := destinations.Name{Kind: destinations.Topic, Name: topic}
	if IsAdvisory(d) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.publishLocked(consumerTopic(d), nil, func() (any, []string) {
		return removeSubscriptionJSON(conn, key), []string{"consumerCount", strconv.Itoa(a.countLocked(d))}
	})
}

// DestinationAdded announces a new queue or topic (d resolved: Kind Queue or Topic,
// one of q and t set; temp: a temporary one, d its broker-wide name), made by the
// connection called by ("": by the broker). The caller holds the broker's mu.
func (a *Advisories) DestinationAdded(d destinations.Name, temp bool, by string, q *destinations.QueueDest, t *destinations.TopicDest) {
	if IsAdvisory(d) {
		return // ActiveMQ does not announce its advisory topics
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	e := &dest{seq: a.seq, temp: temp, by: by, q: q, t: t}
	a.dests[d] = e
	a.publishLocked(destinationTopic(d, temp), nil, func() (any, []string) {
		return destinationInfoJSON(d, temp, e.by, destinationAdded), nil
	})
}

// DestinationRemoved announces that the queue or topic d (resolved, as
// DestinationAdded has it) is gone. The caller holds the broker's mu.
func (a *Advisories) DestinationRemoved(d destinations.Name) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.dests[d]
	if e == nil {
		return
	}
	delete(a.dests, d)
	a.publishLocked(destinationTopic(d, e.temp), nil, func() (any, []string) {
		return destinationInfoJSON(d, e.temp, e.by, destinationRemoved), nil
	})
}

// Expired announces that m, a message of dest, expired (destinations.Advisor).
func (a *Advisories) Expired(dest destinations.Name, m *persistence.Message) {
	if a.listeners.Load() == 0 {
		return
	}
	topic := prefix + "Expired.Queue."
	if dest.Kind.IsTopic() {
		topic = prefix + "Expired.Topic."
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.publishLocked(topic+dest.Name, nil, func() (any, []string) {
		return messageJSON(dest, a.isTempLocked(dest), m), []string{"orignalMessageId", m.ID}
	})
}

// DeadLettered announces that m, a message of dest, went to its dead-letter
// destination (destinations.Advisor).
func (a *Advisories) DeadLettered(dest destinations.Name, m *persistence.Message) {
	if a.listeners.Load() == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	temp := a.isTempLocked(dest)
	a.publishLocked(prefix+"MessageDLQd."+typeName(dest, temp)+"."+dest.Name, nil, func() (any, []string) {
		return messageJSON(dest, temp, m), nil
	})
}

// SlowConsumer announces that c, a subscriber of t, fell behind
// (destinations.Advisor). A consumer that is no client's subscription (that
// Subscribed did not take in) is not announced.
func (a *Advisories) SlowConsumer(t *destinations.TopicDest, c *destinations.Consumer) {
	if a.listeners.Load() == 0 {
		return
	}
	d := destinations.Name{Kind: destinations.Topic, Name: t.Name()}
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.subscriptionLocked(c)
	if s == nil {
		return
	}
	temp := a.isTempLocked(d)
	a.publishLocked(prefix+"SlowConsumer."+typeName(d, temp)+"."+d.Name, nil, func() (any, []string) {
		return consumerJSON(s, a.isTempLocked(s.Dest)), []string{"consumerId", consumerIDString(s)}
	})
}

// subscriptionLocked is the subscription taken in whose destination side is c: a
// consumer announced, or one of an advisory topic; nil for none.
func (a *Advisories) subscriptionLocked(c *destinations.Consumer) *Consumer {
	if e, ok := a.consumers[c]; ok {
		return e.c
	}
	if i := slices.IndexFunc(a.subs, func(s *Consumer) bool { return s.Consumer == c }); i >= 0 {
		return a.subs[i]
	}
	return nil
}

// replayLocked gives s, a subscription that hears advisories, what is there already,
// in the order it came, as ActiveMQ replays it to a new advisory consumer.
func (a *Advisories) replayLocked(s *Consumer) {
	name := s.Dest.Name
	if name == connectionTopic {
		for _, id := range inOrder(a.conns, func(e connEntry) uint64 { return e.seq }) {
			c := a.conns[id].c
			a.publishLocked(connectionTopic, s, func() (any, []string) { return connectionJSON(c), nil })
		}
	}
	tempOnly := name == prefix+"TempQueue" || name == prefix+"TempTopic"
	if tempOnly || name == prefix+"Queue" || name == prefix+"Topic" {
		for _, d := range inOrder(a.dests, func(e *dest) uint64 { return e.seq }) {
			e := a.dests[d]
			if tempOnly && !e.temp {
				continue
			}
			a.publishLocked(destinationTopic(d, e.temp), s, func() (any, []string) {
				return destinationInfoJSON(d, e.temp, e.by, destinationAdded), nil
			})
		}
	}
	if strings.HasPrefix(name, consumerPrefix) {
		for _, c := range inOrder(a.consumers, func(e consumerEntry) uint64 { return e.seq }) {
			a.consumerLocked(a.consumers[c].c, s, false)
		}
	}
	a.replayProducersLocked(s)
}
