// Package advisory publishes advisory messages, as ActiveMQ's advisorySupport publishes
// them (its AdvisoryBroker): the broker announces on topics under ActiveMQ.Advisory.
// what monitoring tools watch.
//
//	ActiveMQ.Advisory.Connection               a connection opened (ConnectionInfo) or closed (RemoveInfo)
//	ActiveMQ.Advisory.Consumer.Queue.<name>    a consumer of the queue added (ConsumerInfo) or removed
//	ActiveMQ.Advisory.Consumer.Topic.<name>    (RemoveInfo, also when the slow-consumer strategy aborts
//	                                           it; RemoveSubscriptionInfo for a deleted durable
//	                                           subscription), header consumerCount
//	ActiveMQ.Advisory.Producer.Queue.<name>    a producer of the destination added (ProducerInfo) or
//	ActiveMQ.Advisory.Producer.Topic.<name>    removed (RemoveInfo, also when its connection closes),
//	                                           header producerCount: OpenWire's (producers.go)
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
// The Producer topics hear of OpenWire clients' producers only, as from ActiveMQ: its
// STOMP transport registers one producer per connection, without a destination, and
// such a producer is not announced (anonymousProducerAdvisorySupport is off by
// default), so no STOMP SEND ever is.
//
// Every advisory is a non-persistent topic message with the headers type:Advisory,
// originBrokerName, originBrokerId, originBrokerURL and transformation:jms-advisory-json,
// and a JSON body (json.go): what ActiveMQ's STOMP transport sends, with or without
// transformation:jms-advisory-json on the SUBSCRIBE.
//
// As in ActiveMQ, a new subscription first gets what is already there: one of
// ActiveMQ.Advisory.Connection the open connections; one of .Queue, .Topic (each for
// its own kind) the existing destinations, of .TempQueue or .TempTopic the temporary
// ones; one under ActiveMQ.Advisory.Consumer. (a wildcard too) the existing consumers,
// one under ActiveMQ.Advisory.Producer. the existing producers.
// Consumers of advisory topics are not announced.
//
// Advisory topics are topics like others for authorization: subscribing needs read on
// them (a wildcard subscription hears those it may read: Host.MayRead). The broker
// publishes on them itself, with no write check. A subscription hears an advisory
// through its own name or a wildcard (ActiveMQ.Advisory.>, >): each advisory is handed
// to the subscriptions that hear it through a topic made for that advisory alone, so
// advisory topics exist only where clients named them, and a replay goes to the new
// subscription only. Durable subscriptions and streams hear none.
//
// Cost: the state replays need (connections, consumers, destinations) is kept at
// every connect, subscribe and destination creation; an advisory is built only when a
// subscription hears its topic, and an event that has no state to keep (an expiry, a
// dead letter, a slow subscriber) costs one atomic load while nobody listens.
//
// The broker keeps one Advisories (New; none when advisorySupport is off), tells it of
// connections, subscriptions and destinations as they come and go, and hands it to
// its destinations as their destinations.Advisor. It asks its Host for message ids and
// authorization, and imports nothing of the broker.
//
// Lock order: the broker's mu (destinations are created and removed under it) before
// the Advisories' own, before the locks of destinations and consumers (counted, and
// delivered to, under it). Expired, DeadLettered and SlowConsumer are called with no
// destination lock held.
package advisory

import (
	"bytes"
	"cmp"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/internal/loglimit"
	"github.com/activemq-go/broker/persistence"
)

const (
	prefix          = "ActiveMQ.Advisory."
	connectionTopic = prefix + "Connection"
	consumerPrefix  = prefix + "Consumer."
	jsonType        = "jms-advisory-json"
)

// maxBacklog is how many messages a subscription may have waiting beyond its
// prefetch and still be handed advisories: past it, those for it are dropped (and
// logged once a minute), so a client that subscribes and never reads cannot make the
// broker hold an unbounded backlog of them. (Advisories are published whatever the
// memory limits, as ActiveMQ publishes them without producer flow control.)
const maxBacklog = 10000

// Host is what the advisories ask of the broker they run in.
type Host interface {
	// NewMessageID is the id of a new message (an advisory's).
	NewMessageID() string
	// MayRead reports whether subscriber c, on a wildcard, may read the advisory topic
	// called topic (true when the broker authorizes nothing).
	MayRead(c *destinations.Consumer, topic string) bool
}

// Config is what New needs.
type Config struct {
	// Name and ID are the broker's name and id: the originBrokerName and
	// originBrokerId headers of every advisory.
	Name, ID string
	// Env is what the topics advisories are handed through are made with.
	Env  *destinations.Env
	Host Host
	// Log takes the line of advisories dropped for a subscriber behind; nil discards.
	Log *slog.Logger
}

// Conn is a client connection as advisories tell of it (ConnectionInfo).
type Conn struct {
	ID         string // the broker's id of it
	ClientID   string // "" when the client gave none
	RemoteAddr string
	User       string // who it acts as; "" for nobody
}

// Consumer is a client's subscription as advisories tell of it (ConsumerInfo) and,
// when it hears advisories, hand them to.
type Consumer struct {
	// Consumer is its destination side: its id, destination (resolved), prefetch,
	// selector, priority..., and where the advisories it hears are delivered.
	*destinations.Consumer
	Conn  string // the id of its connection
	Value uint64 // the value of its ActiveMQ consumer id, <Conn>:-1:<Value>
	// Durable is the name of the durable subscription it reads, "" for none.
	Durable string
	// Plain: it reads neither a durable subscription nor a stream. Only a plain
	// subscription hears advisories.
	Plain bool
}

// Advisories publishes the advisory messages.
type Advisories struct {
	host Host
	env  *destinations.Env
	log  *slog.Logger
	name string
	id   string
	url  atomic.Pointer[string]
	// listeners is len(subs), read without mu: an event with no state to keep is
	// dropped at once while it is 0.
	listeners atomic.Int32
	dropped   loglimit.Limit // the log line of advisories dropped for a subscriber behind

	mu   sync.Mutex
	seq  uint64      // orders the entries below, for replays
	subs []*Consumer // the subscriptions that may hear advisories
	// What replays tell of, each with its place in the order of events.
	conns     map[string]connEntry                     // by Conn.ID
	consumers map[*destinations.Consumer]consumerEntry // but those of advisory topics
	producers map[producerKey]producerEntry            // of one destination each
	dests     map[destinations.Name]*dest              // by resolved name (Kind Queue or Topic)
}

type connEntry struct {
	c   Conn
	seq uint64
}

type consumerEntry struct {
	c   *Consumer
	seq uint64
}

// dest is a destination as the advisories know it.
type dest struct {
	seq  uint64
	temp bool
	by   string // the connection that created it; "" for the broker
	q    *destinations.QueueDest
	t    *destinations.TopicDest
}

var _ destinations.Advisor = (*Advisories)(nil)

// New returns the advisories of a broker that has no connection, consumer or
// destination yet.
func New(c Config) *Advisories {
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return &Advisories{
		host:      c.Host,
		env:       c.Env,
		log:       c.Log,
		name:      c.Name,
		id:        c.ID,
		conns:     map[string]connEntry{},
		consumers: map[*destinations.Consumer]consumerEntry{},
		producers: map[producerKey]producerEntry{},
		dests:     map[destinations.Name]*dest{},
	}
}

// SetURL sets the originBrokerURL header of advisory messages: ActiveMQ's publishable
// connect string of the transport connector, such as stomp://127.0.0.1:61613.
func (a *Advisories) SetURL(url string) { a.url.Store(&url) }

// IsAdvisory reports whether d is an advisory topic (or a wildcard under them).
func IsAdvisory(d destinations.Name) bool {
	return d.Kind == destinations.Topic && strings.HasPrefix(d.Name, prefix)
}

// hearsAdvisories reports whether s may hear advisories: a plain subscription of a
// topic under ActiveMQ.Advisory., or of a wildcard that may match one.
func hearsAdvisories(s *Consumer) bool {
	if !s.Plain || s.Dest.Kind != destinations.Topic {
		return false
	}
	name := s.Dest.Name
	if strings.HasPrefix(name, prefix) {
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
func (a *Advisories) hears(s *Consumer, topic string) bool {
	if !s.Dest.IsWildcard() {
		return s.Dest.Name == topic
	}
	if !destinations.Match(s.Dest.Name, topic) {
		return false
	}
	return a.host.MayRead(s.Consumer, topic)
}

// publishLocked hands the advisory on topic to the subscriptions that hear it (to
// alone, for a replay); build makes its body and extra headers, only if one does.
func (a *Advisories) publishLocked(topic string, to *Consumer, build func() (body any, headers []string)) {
	var targets []*Consumer
	if to != nil {
		if a.hears(to, topic) {
			targets = []*Consumer{to}
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
	hs = append(hs, "type", "Advisory", "originBrokerName", a.name, "originBrokerId", a.id, "originBrokerURL", url)
	hs = append(hs, extra...)
	hs = append(hs, "transformation", jsonType)
	m := &persistence.Message{ID: a.host.NewMessageID(), Headers: hs, Body: bytes.TrimSuffix(js.Bytes(), []byte("\n"))}
	// A topic of its own, for these subscribers: see the package comment.
	t := destinations.NewTopic(a.env, topic, policy.Default(true), 0, false)
	for _, s := range targets {
		t.Add(s.Consumer)
	}
	t.Publish(m, nil)
}

// behind reports whether s has too many messages waiting to be handed an advisory,
// logging it (once a minute).
func (a *Advisories) behind(s *Consumer) bool {
	n := s.Waiting()
	if n < maxBacklog {
		return false
	}
	if ok, more := a.dropped.Allow(time.Now()); ok {
		attrs := []any{slog.String("conn", s.Conn), slog.String("subscription", s.ID), slog.String("dest", s.Dest.String()),
			slog.Int("waiting", n)}
		if more > 0 {
			attrs = append(attrs, slog.Int("droppedSinceLastLine", more))
		}
		a.log.Warn("advisory not delivered: its subscriber has too many messages waiting (logged once a minute)", attrs...)
	}
	return true
}

// isTempLocked reports whether d, resolved, is a temporary destination.
func (a *Advisories) isTempLocked(d destinations.Name) bool {
	e := a.dests[d]
	return e != nil && e.temp
}

// countLocked is the consumerCount of an advisory about a consumer of d: the
// consumers of d, or of every destination a wildcard d matches.
func (a *Advisories) countLocked(d destinations.Name) int {
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

func (e *dest) count() int {
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

// destinationTopic is where d's creation and removal are announced.
func destinationTopic(d destinations.Name, temp bool) string {
	return prefix + typeName(d, temp)
}

// inOrder returns the keys of m in the order of their events, seq of their values.
func inOrder[K comparable, V any](m map[K]V, seq func(V) uint64) []K {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(x, y K) int { return cmp.Compare(seq(m[x]), seq(m[y])) })
	return keys
}
