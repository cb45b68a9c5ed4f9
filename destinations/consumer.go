package destinations

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/destinations/selector"
	"github.com/activemq-go/broker/persistence"
)

// AckMode is how a consumer acknowledges.
type AckMode uint8

const (
	// AckAuto: a message is consumed once it is written to the client.
	AckAuto AckMode = iota
	// AckClient: ACK is cumulative over the subscription's dispatched messages.
	AckClient
	// AckClientIndividual: ACK and NACK name one message.
	AckClientIndividual
)

// Sink is the connection a consumer's deliveries go to. Its methods may be called from
// any goroutine.
type Sink interface {
	// Push queues a delivery for the client, giving it its tag; PushAll does so for
	// several in one go.
	Push(d *Delivery)
	PushAll(ds []*Delivery)
	// AbortConsumer ends a consumer the slow-consumer strategy gave up on: the consumer alone
	// (the client is told reason), or with its whole connection.
	AbortConsumer(c *Consumer, reason string, withConnection bool)
	// ConnectionID names the connection in log lines.
	ConnectionID() string
}

// Consumer is the side of a subscription a destination dispatches to: its prefetch
// credit, what it selects, how it ranks among the destination's consumers, and the
// connection it pushes deliveries to.
type Consumer struct {
	Sink Sink
	// Owner is the subscription the consumer belongs to, for the Sink's own use:
	// destinations never looks at it.
	Owner any

	ID       string
	Dest     Name
	Mode     AckMode
	Prefetch int32
	// Credit is what remains of the prefetch window: a destination takes one per
	// delivery, the connection gives it back as deliveries are consumed.
	Credit atomic.Int32
	// Quota, when not nil, bounds the bytes dispatched to the consumer (and the
	// others sharing it) and not yet acknowledged (quota.go).
	Quota     *Quota
	Selector  *selector.Selector
	Exclusive bool // asks to be the queue's only consumer while it lives
	Priority  int  // higher-priority consumers are dispatched to first
	NoLocal   bool // skips topic messages sent on its own connection

	// Topic messages waiting beyond prefetch (slowconsumer.go), guarded by mu: since
	// when and how often the subscriber was behind, what the pending limit dropped,
	// and whether it ended (it takes no more).
	mu            sync.Mutex
	overflow      []*waiting
	slowSince     time.Time
	slowCount     int64
	dropped       int64
	droppedLogged time.Time
	ended         bool
	// advisedSlow: the SlowConsumer advisory went out for this time behind.
	advisedSlow bool
}

// ready reports whether a queue may dispatch to the consumer now: it has credit and
// is not held.
func (s *Consumer) ready() bool {
	return s.Credit.Load() > 0 && !s.Quota.full()
}

// Delivery is one message handed to one consumer.
type Delivery struct {
	Sub           *Consumer
	Msg           *persistence.Message
	Destination   string // where the message was sent, as the client names it
	Redelivered   bool
	DeliveryCount uint32 // 1 on the first delivery
	// GroupFirst marks the first message of a message group this consumer gets
	// (JMSXGroupFirstForConsumer).
	GroupFirst bool
	// Tag identifies the delivery on its connection; STOMP 1.2 ack ids are made from it.
	Tag uint64
	// Stream is set for a message read from a stream, with its partition and offset.
	Stream          bool
	StreamPartition int
	StreamOffset    int64
	// Queue is the queue (or durable subscription's view) the message came from; nil
	// for topic and stream messages.
	Queue *QueueDest

	// The connection's bookkeeping, owned by its goroutine: Written once the client was
	// sent the message, Settled once acknowledged (or given back), and SameID the next
	// unsettled delivery of the same message id on the connection, in tag order.
	Written bool
	Settled bool
	SameID  *Delivery

	entry *Entry        // queue deliveries
	track *partTracker  // stream deliveries
	ss    *StreamReader // stream deliveries
}

// Size is the memory the delivered queue message holds (0 for other deliveries).
func (d *Delivery) Size() int64 {
	if d.entry == nil {
		return 0
	}
	return d.entry.Size
}

// Withdrawn reports whether the acknowledged delivery's store write was withdrawn
// (concurrent store and dispatch), so the acknowledgement needs no store write.
func (d *Delivery) Withdrawn() bool {
	if d.entry == nil {
		return false
	}
	w := d.entry.withdraw.Load()
	return w != nil && (*w)()
}
