package broker

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/internal/histogram"
	"github.com/activemq-go/broker/persistence"
)

// Metrics: the broker counts what happens to connections and messages as it happens,
// each count one atomic add on the path that does it (two histograms take one
// observation per SEND and per store sync), and an exporter (admin/metrics) reads them
// at scrape time through Counters, DestinationMetrics, Subscriptions and Resources.
// Counters only grow, whatever is removed: a destination that goes away takes nothing
// from the broker-wide totals.

// Protocol is how a client speaks to the broker, a label of the connection counters.
type Protocol uint8

// The protocols.
const (
	ProtocolSTOMP          Protocol = iota // STOMP over TCP or TLS
	ProtocolSTOMPWebSocket                 // STOMP over WebSocket
	NumProtocols
)

func (p Protocol) String() string {
	if p == ProtocolSTOMPWebSocket {
		return "stomp_ws"
	}
	return "stomp"
}

// RejectReason is why a connection was refused.
type RejectReason uint8

// The reasons a connection is refused.
const (
	RejectAuth     RejectReason = iota // its credentials were refused (or its address is throttled)
	RejectLimit                        // a connection limit: the connector's maxConnections, the user's
	RejectClientID                     // its client-id is in use (and link stealing is off)
	RejectProtocol                     // not STOMP: no CONNECT first, an unsupported version, a bad frame before CONNECT
	RejectTLS                          // its TLS handshake failed
	NumRejectReasons
)

func (r RejectReason) String() string {
	switch r {
	case RejectAuth:
		return "auth"
	case RejectLimit:
		return "limit"
	case RejectClientID:
		return "client_id"
	case RejectProtocol:
		return "protocol"
	case RejectTLS:
		return "tls"
	}
	return "unknown"
}

// Operation is what a request that was not authorized tried to do.
type Operation uint8

// The operations the authorization map checks.
const (
	OpSend      Operation = iota // write: SEND
	OpSubscribe                  // read: SUBSCRIBE, browsing, removing a durable subscription
	OpCreate                     // admin: a request that would create its destination
	NumOperations
)

func (o Operation) String() string {
	switch o {
	case OpSend:
		return "send"
	case OpSubscribe:
		return "subscribe"
	case OpCreate:
		return "create"
	}
	return "unknown"
}

// Ack-mode indexes of Counters.Delivered.
const (
	DeliveredAuto   = 0 // ack: auto, consumed once written
	DeliveredClient = 1 // ack: client or client-individual
)

// counters are the broker's own counts; the destinations' are in dests.
type counters struct {
	started time.Time

	opened    [NumProtocols]atomic.Int64
	closed    [NumProtocols]atomic.Int64
	rejected  [NumRejectReasons]atomic.Int64
	received  [NumProtocols]atomic.Int64
	delivered [NumProtocols][2]atomic.Int64
	acked     [NumProtocols]atomic.Int64
	denied    [NumOperations]atomic.Int64

	redelivered  atomic.Int64
	duplicates   atomic.Int64 // messages dropped by duplicate detection
	topicExpired atomic.Int64 // topic messages that expired waiting for a slow subscriber
	sendsBlocked atomic.Int64
	nonDurable   atomic.Int64 // live subscriptions that are not durable ones

	sendLatency [2]*histogram.Histogram // by persistent: [0] false, [1] true
	storeSync   *histogram.Histogram
	syncing     bool // the store reports its syncs

	dests destinations.Counters
}

func (c *counters) init(store persistence.Store) {
	c.started = time.Now()
	c.sendLatency = [2]*histogram.Histogram{histogram.New(nil), histogram.New(nil)}
	c.storeSync = histogram.New(nil)
	if so, ok := store.(persistence.SyncObserver); ok {
		so.SetSyncObserver(c.storeSync.Observe)
		c.syncing = true
	}
}

// sent records the latency of a SEND that was accepted: from the SEND to its RECEIPT
// (for a persistent message, once the store has it). A zero start records nothing.
func (b *Broker) sent(persistent bool, start time.Time) {
	if start.IsZero() {
		return
	}
	i := 0
	if persistent {
		i = 1
	}
	b.counters.sendLatency[i].Since(start)
}

// timedDone wraps a SEND's done so that it records the SEND's latency on success.
func (b *Broker) timedDone(done func(error), persistent bool, start time.Time) func(error) {
	return func(err error) {
		if err == nil {
			b.sent(persistent, start)
		}
		done(err)
	}
}

// CountRejected counts a connection the transport refused before the broker saw it
// (the connector's connection limit, a failed TLS handshake, no CONNECT).
func (b *Broker) CountRejected(r RejectReason) {
	if r < NumRejectReasons {
		b.counters.rejected[r].Add(1)
	}
}

// rejectReason is the RejectReason of an error of Connect; false for a refusal that
// is no rejection (the broker shutting down).
func rejectReason(err error) (RejectReason, bool) {
	be, ok := err.(*Error)
	if !ok {
		return 0, false
	}
	switch be.Err {
	case ErrNotAuthenticated, ErrLoginThrottled:
		return RejectAuth, true
	case ErrTooManyUserConnections:
		return RejectLimit, true
	case ErrClientIDInUse:
		return RejectClientID, true
	}
	return 0, false
}

// SetBlocked tells the broker whether a SEND of the connection is held by producer flow
// control (the transport holds it until there is room): broker_producers_blocked
// counts the connections held now, and every hold counts once in SendsBlocked.
func (c *Conn) SetBlocked(held bool) {
	if c.blocked.Swap(held) != held && held {
		c.b.counters.sendsBlocked.Add(1)
	}
}

// Counters is a snapshot of the broker-wide counters. Arrays are indexed by Protocol,
// RejectReason, Operation and the destinations package's reasons.
type Counters struct {
	Started time.Time
	// Connections are those open now; Opened and Closed count them since start.
	Connections    [NumProtocols]int64
	Opened, Closed [NumProtocols]int64
	Rejected       [NumRejectReasons]int64
	// Received counts the messages clients sent; Delivered the messages written to
	// consumers, by ack mode (DeliveredAuto, DeliveredClient); Acknowledged those
	// clients acknowledged (ACK, in client modes; a committed transaction's ACKs).
	Received, Acknowledged [NumProtocols]int64
	Delivered              [NumProtocols][2]int64
	// Redelivered counts deliveries of messages delivered before.
	Redelivered int64
	Expired     int64
	// Duplicates counts the messages dropped as duplicates (duplicate detection).
	Duplicates   int64
	DeadLettered [destinations.NumDeadLetterReasons]int64
	Discarded    [destinations.NumDiscardReasons]int64
	// Denied counts the requests the authorization map refused, by operation.
	Denied [NumOperations]int64
	// ProducersBlocked is the connections with a SEND held by producer flow control now;
	// SendsBlocked counts the SENDs held since start.
	ProducersBlocked int64
	SendsBlocked     int64
	// SendLatency is the time from SEND to acceptance, by persistent ([0] false, [1]
	// true); StoreSync the store's sync durations, when StoreSyncs says the store
	// reports them (persistence.SyncObserver).
	SendLatency [2]histogram.Snapshot
	StoreSync   histogram.Snapshot
	StoreSyncs  bool
}

// Counters returns the broker-wide counters.
func (b *Broker) Counters() Counters {
	c := &b.counters
	out := Counters{Started: c.started}
	b.mu.RLock()
	for conn := range b.conns {
		out.Connections[conn.proto]++
		if conn.blocked.Load() {
			out.ProducersBlocked++
		}
	}
	b.mu.RUnlock()
	for p := range NumProtocols {
		out.Opened[p] = c.opened[p].Load()
		out.Closed[p] = c.closed[p].Load()
		out.Received[p] = c.received[p].Load()
		out.Acknowledged[p] = c.acked[p].Load()
		out.Delivered[p] = [2]int64{c.delivered[p][0].Load(), c.delivered[p][1].Load()}
	}
	for r := range NumRejectReasons {
		out.Rejected[r] = c.rejected[r].Load()
	}
	for o := range NumOperations {
		out.Denied[o] = c.denied[o].Load()
	}
	out.Redelivered = c.redelivered.Load()
	out.Duplicates = c.duplicates.Load()
	out.Expired = c.dests.Expired.Load() + c.topicExpired.Load()
	for r := range destinations.NumDeadLetterReasons {
		out.DeadLettered[r] = c.dests.DeadLettered[r].Load()
	}
	for r := range destinations.NumDiscardReasons {
		out.Discarded[r] = c.dests.Discarded[r].Load()
	}
	out.SendsBlocked = c.sendsBlocked.Load()
	out.SendLatency = [2]histogram.Snapshot{c.sendLatency[0].Snapshot(), c.sendLatency[1].Snapshot()}
	out.StoreSync, out.StoreSyncs = c.storeSync.Snapshot(), c.syncing
	return out
}

// Destination types, the type label of the per-destination metrics.
const (
	TypeQueue     = "queue"
	TypeTopic     = "topic"
	TypeTempQueue = "temp_queue"
	TypeTempTopic = "temp_topic"
	TypeStream    = "stream"
)

// DestinationMetrics is one destination's counters with its type.
type DestinationMetrics struct {
	Type string // TypeQueue, TypeTopic, TypeTempQueue, TypeTempTopic, TypeStream
	// Dest is the destination's name without kind prefix, unique within its type (a
	// temporary destination's is its broker-wide name, "<connection id>:NAME").
	Dest string
	DestinationStats
}

// DestinationMetrics returns every queue, topic and stream with its counters, in no
// particular order. It reads what the destinations keep in memory: nothing is asked of
// the store, so a queue's Stored is 0 (a stream's is what its log holds).
func (b *Broker) DestinationMetrics() []DestinationMetrics {
	type ref struct {
		typ, name string
		q         *destinations.QueueDest
		t         *destinations.TopicDest
	}
	b.mu.RLock()
	refs := make([]ref, 0, len(b.queues)+len(b.topics))
	for name, q := range b.queues {
		typ := TypeQueue
		if b.temps[tempKey{false, name}] != nil {
			typ = TypeTempQueue
		}
		refs = append(refs, ref{typ: typ, name: name, q: q})
	}
	for name, t := range b.topics {
		typ := TypeTopic
		switch {
		case b.temps[tempKey{true, name}] != nil:
			typ = TypeTempTopic
		case t.IsStream():
			typ = TypeStream
		}
		refs = append(refs, ref{typ: typ, name: name, t: t})
	}
	b.mu.RUnlock()
	out := make([]DestinationMetrics, len(refs))
	for i, r := range refs {
		out[i].Type, out[i].Dest = r.typ, r.name
		if r.q != nil {
			out[i].DestinationStats = r.q.MemoryStats()
		} else {
			out[i].DestinationStats = r.t.Stats()
		}
	}
	return out
}

// SubscriptionCounts counts the subscriptions: durable ones active (a consumer
// attached) and offline, and the others (all active).
type SubscriptionCounts struct {
	DurableActive, DurableOffline, NonDurable int64
}

// Subscriptions counts the subscriptions.
func (b *Broker) Subscriptions() SubscriptionCounts {
	out := SubscriptionCounts{NonDurable: b.counters.nonDurable.Load()}
	for _, d := range b.durables.All() {
		if d.Active() {
			out.DurableActive++
		} else {
			out.DurableOffline++
		}
	}
	return out
}

// Resource names, the resource label of the resource metrics.
const (
	ResourceMemory    = "memory"
	ResourceStore     = "store"
	ResourceScheduler = "scheduler"
)

// ResourceUsage is what the broker uses of one of its systemUsage limits.
type ResourceUsage struct {
	Resource string
	Used     int64
	Limit    int64 // 0: none
	// Alarm is set while the limit refuses or holds producers (memory full, store
	// over storeUsage).
	Alarm bool
}

// Resources reports memory (messages held in memory against memoryUsage), store (the
// store's size against storeUsage, when the store can tell its size) and scheduler
// (persistent scheduled messages held in memory against schedulerMemoryLimit, when
// scheduling is on). ctx bounds a store that asks a server for its size.
func (b *Broker) Resources(ctx context.Context) []ResourceUsage {
	used, limit := b.mem.Used()
	out := []ResourceUsage{{Resource: ResourceMemory, Used: used, Limit: limit, Alarm: used >= limit}}
	if sz, ok := b.store.(persistence.Sizer); ok {
		if n, err := sz.Size(ctx); err == nil {
			out = append(out, ResourceUsage{Resource: ResourceStore, Used: n, Limit: b.storeUsage, Alarm: b.storeFull.Load()})
		}
	}
	if s := b.sched; s != nil {
		used, _ := s.Memory()
		out = append(out, ResourceUsage{Resource: ResourceScheduler, Used: used, Limit: s.MemoryLimit(), Alarm: used >= s.MemoryLimit()})
	}
	return out
}
