package broker

import (
	"bytes"
	"cmp"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/security"
)

// Advisory messages, as ActiveMQ's advisorySupport publishes them (its AdvisoryBroker):
// the broker announces on topics under ActiveMQ.Advisory. what monitoring tools watch.
//
//	ActiveMQ.Advisory.Connection               a connection opened (ConnectionInfo) or closed (RemoveInfo)
//	ActiveMQ.Advisory.Consumer.Queue.<name>    a consumer of the queue added (ConsumerInfo) or removed
//	ActiveMQ.Advisory.Consumer.Topic.<name>    (RemoveInfo, also when the slow-consumer strategy aborts
//	                                           it; RemoveSubscriptionInfo for a deleted durable
//	                                           subscription), header consumerCount
//	ActiveMQ.Advisory.Queue, .Topic,           a destination created (DestinationInfo, operationType 0)
//	.TempQueue, .TempTopic                     or removed (operationType 1)
//	ActiveMQ.Advisory.Expired.Queue.<name>,    a message expired (the message, without its body),
//	.Expired.Topic.<name>                      header orignalMessageId (sic)
//	ActiveMQ.Advisory.MessageDLQd.Queue.<name>, a message went to its dead-letter destination (the
//	.MessageDLQd.Topic.<name>                  message as it was, without its body)
//	ActiveMQ.Advisory.SlowConsumer.Topic.<name> a subscriber has more than its prefetch of messages
//	                                           waiting, once until it catches up (policy
//	                                           advisoryForSlowConsumers, off by default as in
//	                                           ActiveMQ; ConsumerInfo, header consumerId)
//
// The Producer topics get nothing, as from ActiveMQ: its STOMP transport registers one
// producer per connection, without a destination, and such a producer is not announced
// (anonymousProducerAdvisorySupport is off by default), so no STOMP SEND ever is.
//
// Every advisory is a non-persistent topic message with the headers type:Advisory,
// originBrokerName, originBrokerId, originBrokerURL and transformation:jms-advisory-json,
// and a JSON body (advisory_json.go): what ActiveMQ's STOMP transport sends, with or
// without transformation:jms-advisory-json on the SUBSCRIBE.
//
// As in ActiveMQ, a new subscription first gets what is already there: one of
// ActiveMQ.Advisory.Connection the open connections; one of .Queue, .Topic (each for
// its own kind) the existing destinations, of .TempQueue or .TempTopic the temporary
// ones; one under ActiveMQ.Advisory.Consumer. (a wildcard too) the existing consumers.
// Consumers of advisory topics are not announced.
//
// Advisory topics are topics like others for authorization: subscribing needs read on
// them (a wildcard subscription hears those it may read). The broker publishes on them
// itself, with no write check. A subscription hears an advisory through its own name
// or a wildcard (ActiveMQ.Advisory.>, >): each advisory is handed to the subscriptions
// that hear it through a topic made for that advisory alone, so advisory topics exist
// only where clients named them, and a replay goes to the new subscription only.
// Durable subscriptions and streams hear none.
//
// Cost: the state replays need (connections, consumers, destinations) is kept at
// every connect, subscribe and destination creation; an advisory is built only when a
// subscription hears its topic, and an event that has no state to keep (an expiry, a
// dead letter, a slow subscriber) costs one atomic load while nobody listens.
//
// Lock order: the broker's mu (destinations are created and removed under it) before
// advisories.mu, before the locks of destinations and consumers (counted, and
// delivered to, under it). Expired, DeadLettered and SlowConsumer are called with no
// destination lock held.

const (
	advisoryPrefix   = "ActiveMQ.Advisory."
	connectionTopic  = advisoryPrefix + "Connection"
	consumerPrefix   = advisoryPrefix + "Consumer."
	advisoryJSONType = "jms-advisory-json"
)

// maxAdvisoryBacklog is how many messages a subscription may have waiting beyond its
// prefetch and still be handed advisories: past it, those for it are dropped (and
// logged once a minute), so a client that subscribes and never reads cannot make the
// broker hold an unbounded backlog of them. (Advisories are published whatever the
// memory limits, as ActiveMQ publishes them without producer flow control.)
const maxAdvisoryBacklog = 10000

// advisories publishes the advisory messages; nil when advisorySupport is off.
type advisories struct {
	b        *Broker
	brokerID string
	url      atomic.Pointer[string]
	// listeners is len(subs), read without mu: an event with no state to keep is
	// dropped at once while it is 0.
	listeners atomic.Int32
	dropped   logLimit // the log line of advisories dropped for a subscriber behind

	mu   sync.Mutex
	seq  uint64          // orders the entries below, for replays
	subs []*Subscription // the subscriptions that may hear advisories
	// What replays tell of, each with its place in the order of events.
	conns     map[*Conn]uint64
	consumers map[*Subscription]uint64
	dests     map[destinations.Name]*advDest // by resolved name (Kind Queue or Topic)
}

// advDest is a destination as the advisories know it.
type advDest struct {
	seq  uint64
	temp bool
	by   string // the connection that created it; "" for the broker
	q    *destinations.QueueDest
	t    *destinations.TopicDest
}

var _ destinations.Advisor = (*advisories)(nil)

func newAdvisories(b *Broker) *advisories {
	a := &advisories{
		b:         b,
		brokerID:  strings.TrimSuffix(b.idBase, "-"),
		conns:     map[*Conn]uint64{},
		consumers: map[*Subscription]uint64{},
		dests:     map[destinations.Name]*advDest{},
	}
	return a
}

// SetAdvisoryURL sets the originBrokerURL header of advisory messages: ActiveMQ's
// publishable connect string of the transport connector, such as
// stomp://127.0.0.1:61613. The caller sets it once the connectors listen.
func (b *Broker) SetAdvisoryURL(url string) {
	if b.adv != nil {
		b.adv.url.Store(&url)
	}
}

// adviseRemovedLocked announces that the queue or topic d (resolved: Kind Queue or
// Topic, a temporary one's broker-wide name) was removed. Whatever removes a
// destination calls it, holding b.mu.
func (b *Broker) adviseRemovedLocked(d destinations.Name) {
	if b.adv != nil {
		b.adv.destinationRemoved(d)
	}
}

// adviseSubscribed takes in s, a new subscription, for advisories.
func (b *Broker) adviseSubscribed(s *Subscription) {
	if b.adv != nil {
		b.adv.subscribed(s)
	}
}

// isAdvisoryTopic reports whether d is an advisory topic (or a wildcard under them).
func isAdvisoryTopic(d destinations.Name) bool {
	return d.Kind == destinations.Topic && strings.HasPrefix(d.Name, advisoryPrefix)
}

// hearsAdvisories reports whether s may hear advisories: a plain subscription of a
// topic under ActiveMQ.Advisory., or of a wildcard that may match one.
func hearsAdvisories(s *Subscription) bool {
	if s.durable != nil || s.stream != nil || s.Dest.Kind != destinations.Topic {
		return false
	}
	name := s.Dest.Name
	if strings.HasPrefix(name, advisoryPrefix) {
		return true
	}
	if !destinations.IsWildcard(name) {
		return false
	}
	first, rest, more := strings.Cut(name, ".")
	switch first {
	case ">":
		return true
	case "ActiveMQ", "*":
	default:
		return false
	}
	if !more {
		return false
	}
	second, _, more := strings.Cut(rest, ".")
	switch second {
	case ">":
		return true
	case "Advisory", "*":
		return more // advisory topics have three elements or more
	}
	return false
}

// hears reports whether s, one of a.subs, hears the advisory topic called topic.
func (a *advisories) hears(s *Subscription, topic string) bool {
	if !s.Dest.IsWildcard() {
		return s.Dest.Name == topic
	}
	if !destinations.Match(s.Dest.Name, topic) {
		return false
	}
	return !a.b.authorizing() || a.b.sec.Authorize(s.conn.subject, security.Topic, topic, security.Read)
}

// publishLocked hands the advisory on topic to the subscriptions that hear it (to
// alone, for a replay); build makes its body and extra headers, only if one does.
func (a *advisories) publishLocked(topic string, to *Subscription, build func() (body any, headers []string)) {
	var targets []*Subscription
	if to != nil {
		if a.hears(to, topic) {
			targets = []*Subscription{to}
		}
	} else {
		for _, s := range a.subs {
			if a.hears(s, topic) {
				targets = append(targets, s)
			}
		}
	}
	targets = slices.DeleteFunc(targets, a.behind)
	if len(targets) == 0 {
		return
	}
	body, extra := build()
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false) // ">" of a wildcard name as ActiveMQ writes it
	if err := enc.Encode(body); err != nil {
		panic("broker: advisory body not encodable: " + err.Error()) // the types are ours
	}
	url := ""
	if p := a.url.Load(); p != nil {
		url = *p
	}
	hs := make(persistence.Headers, 0, 10+len(extra))
	hs = append(hs, "type", "Advisory", "originBrokerName", a.b.name, "originBrokerId", a.brokerID, "originBrokerURL", url)
	hs = append(hs, extra...)
	hs = append(hs, "transformation", advisoryJSONType)
	m := &persistence.Message{ID: a.b.newMessageID(), Headers: hs, Body: bytes.TrimSuffix(js.Bytes(), []byte("\n"))}
	// A topic of its own, for these subscribers: see the comment above.
	t := destinations.NewTopic(&a.b.env, topic, policy.Default(true), 0, false)
	for _, s := range targets {
		t.Add(&s.Consumer)
	}
	t.Publish(m, nil)
}

// behind reports whether s has too many messages waiting to be handed an advisory,
// logging it (once a minute).
func (a *advisories) behind(s *Subscription) bool {
	n := s.Waiting()
	if n < maxAdvisoryBacklog {
		return false
	}
	if ok, more := a.dropped.allow(time.Now()); ok {
		attrs := []any{slog.String("conn", s.conn.ID), slog.String("subscription", s.ID), slog.String("dest", s.Dest.String()),
			slog.Int("waiting", n)}
		if more > 0 {
			attrs = append(attrs, slog.Int("droppedSinceLastLine", more))
		}
		a.b.log.Warn("advisory not delivered: its subscriber has too many messages waiting (logged once a minute)", attrs...)
	}
	return true
}

// isTempLocked reports whether d, resolved, is a temporary destination.
func (a *advisories) isTempLocked(d destinations.Name) bool {
	e := a.dests[d]
	return e != nil && e.temp
}

// countLocked is the consumerCount of an advisory about a consumer of d: the
// consumers of d, or of every destination a wildcard d matches.
func (a *advisories) countLocked(d destinations.Name) int {
	if !d.IsWildcard() {
		return a.dests[d].count()
	}
	n := 0
	for name, e := range a.dests {
		if name.Kind == d.Kind && destinations.Match(d.Name, name.Name) {
			n += e.count()
		}
	}
	return n
}

func (e *advDest) count() int {
	switch {
	case e == nil:
		return 0
	case e.q != nil:
		return e.q.ConsumerCount()
	}
	return e.t.ConsumerCount()
}

// typeName is ActiveMQ's getDestinationTypeAsString.
func typeName(d destinations.Name, temp bool) string {
	switch {
	case d.Kind.IsTopic() && temp:
		return "TempTopic"
	case d.Kind.IsTopic():
		return "Topic"
	case temp:
		return "TempQueue"
	}
	return "Queue"
}

// consumerTopic is where the consumers of d are announced (a temporary queue's with
// the queues', as ActiveMQ does).
func consumerTopic(d destinations.Name) string {
	if d.Kind.IsTopic() {
		return consumerPrefix + "Topic." + d.Name
	}
	return consumerPrefix + "Queue." + d.Name
}

// connected announces a new connection.
func (a *advisories) connected(c *Conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	a.conns[c] = a.seq
	a.publishLocked(connectionTopic, nil, func() (any, []string) { return connectionJSON(c), nil })
}

// disconnected announces that c closed.
func (a *advisories) disconnected(c *Conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.conns[c]; !ok {
		return
	}
	delete(a.conns, c)
	a.publishLocked(connectionTopic, nil, func() (any, []string) { return removeConnectionJSON(c), nil })
}

// subscribed takes in a new subscription: one that hears advisories gets what is
// there already and then hears them; a consumer of anything but an advisory topic is
// announced.
func (a *advisories) subscribed(s *Subscription) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if hearsAdvisories(s) {
		a.replayLocked(s)
		a.subs = append(a.subs, s)
		a.listeners.Store(int32(len(a.subs)))
	}
	if isAdvisoryTopic(s.Dest) {
		return
	}
	a.seq++
	a.consumers[s] = a.seq
	a.consumerLocked(s, nil, false)
}

// unsubscribed announces that s ended.
func (a *advisories) unsubscribed(s *Subscription) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i := slices.Index(a.subs, s); i >= 0 {
		a.subs = slices.Delete(a.subs, i, i+1)
		a.listeners.Store(int32(len(a.subs)))
	}
	if _, ok := a.consumers[s]; !ok {
		return
	}
	delete(a.consumers, s)
	a.consumerLocked(s, nil, true)
}

// consumerLocked announces s (removed: its end) to the listeners, or to one.
func (a *advisories) consumerLocked(s *Subscription, to *Subscription, removed bool) {
	a.publishLocked(consumerTopic(s.Dest), to, func() (any, []string) {
		hs := []string{"consumerCount", strconv.Itoa(a.countLocked(s.Dest))}
		if removed {
			return removeConsumerJSON(s), hs
		}
		return consumerJSON(s, a.isTempLocked(s.Dest)), hs
	})
}

// durableDeleted announces that c deleted the durable subscription key of topic.
func (a *advisories) durableDeleted(c *Conn, key persistence.SubKey, topic string) {
	d := destinations.Name{Kind: destinations.Topic, Name: topic}
	if isAdvisoryTopic(d) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.publishLocked(consumerTopic(d), nil, func() (any, []string) {
		return removeSubscriptionJSON(c, key), []string{"consumerCount", strconv.Itoa(a.countLocked(d))}
	})
}

// destinationTopic is where d's creation and removal are announced.
func destinationTopic(d destinations.Name, temp bool) string {
	return advisoryPrefix + typeName(d, temp)
}

// destinationAdded announces a new queue or topic (d resolved: Kind Queue or Topic),
// made by connection by (nil: by the broker). The caller holds the broker's mu.
func (a *advisories) destinationAdded(d destinations.Name, temp bool, by *Conn, q *destinations.QueueDest, t *destinations.TopicDest) {
	if isAdvisoryTopic(d) {
		return // ActiveMQ does not announce its advisory topics
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	e := &advDest{seq: a.seq, temp: temp, q: q, t: t}
	if by != nil {
		e.by = by.ID
	}
	a.dests[d] = e
	a.publishLocked(destinationTopic(d, temp), nil, func() (any, []string) {
		return destinationInfoJSON(d, temp, e.by, destinationAdded), nil
	})
}

// destinationRemoved announces that d is gone. The caller holds the broker's mu.
func (a *advisories) destinationRemoved(d destinations.Name) {
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
func (a *advisories) Expired(dest destinations.Name, m *persistence.Message) {
	if a.listeners.Load() == 0 {
		return
	}
	prefix := advisoryPrefix + "Expired.Queue."
	if dest.Kind.IsTopic() {
		prefix = advisoryPrefix + "Expired.Topic."
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.publishLocked(prefix+dest.Name, nil, func() (any, []string) {
		return messageJSON(dest, a.isTempLocked(dest), m), []string{"orignalMessageId", m.ID}
	})
}

// DeadLettered announces that m, a message of dest, went to its dead-letter
// destination (destinations.Advisor).
func (a *advisories) DeadLettered(dest destinations.Name, m *persistence.Message) {
	if a.listeners.Load() == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	temp := a.isTempLocked(dest)
	a.publishLocked(advisoryPrefix+"MessageDLQd."+typeName(dest, temp)+"."+dest.Name, nil, func() (any, []string) {
		return messageJSON(dest, temp, m), nil
	})
}

// SlowConsumer announces that c, a subscriber of t, fell behind
// (destinations.Advisor).
func (a *advisories) SlowConsumer(t *destinations.TopicDest, c *destinations.Consumer) {
	s, ok := c.Owner.(*Subscription)
	if !ok || a.listeners.Load() == 0 {
		return
	}
	d := destinations.Name{Kind: destinations.Topic, Name: t.Name()}
	a.mu.Lock()
	defer a.mu.Unlock()
	temp := a.isTempLocked(d)
	a.publishLocked(advisoryPrefix+"SlowConsumer."+typeName(d, temp)+"."+d.Name, nil, func() (any, []string) {
		return consumerJSON(s, a.isTempLocked(s.Dest)), []string{"consumerId", consumerIDString(s)}
	})
}

// replayLocked gives s, a subscription that hears advisories, what is there already,
// in the order it came, as ActiveMQ replays it to a new advisory consumer.
func (a *advisories) replayLocked(s *Subscription) {
	name := s.Dest.Name
	if name == connectionTopic {
		for _, c := range inOrder(a.conns, func(n uint64) uint64 { return n }) {
			a.publishLocked(connectionTopic, s, func() (any, []string) { return connectionJSON(c), nil })
		}
	}
	tempOnly := name == advisoryPrefix+"TempQueue" || name == advisoryPrefix+"TempTopic"
	if tempOnly || name == advisoryPrefix+"Queue" || name == advisoryPrefix+"Topic" {
		for _, d := range inOrder(a.dests, func(e *advDest) uint64 { return e.seq }) {
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
		for _, c := range inOrder(a.consumers, func(n uint64) uint64 { return n }) {
			a.consumerLocked(c, s, false)
		}
	}
}

// inOrder returns the keys of m in the order of their events, seq of their values.
func inOrder[K comparable, V any](m map[K]V, seq func(V) uint64) []K {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(x, y K) int { return cmp.Compare(seq(m[x]), seq(m[y])) })
	return keys
}
