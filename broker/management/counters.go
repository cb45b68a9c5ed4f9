package management

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/internal/histogram"
	"github.com/activemq-go/broker/persistence"
)

// Metrics: the broker counts what happens to connections and messages as it happens
// (Meter), each count one atomic add on the path that does it (two histograms take one
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
	ProtocolOpenWire                       // OpenWire (ActiveMQ's own client) over TCP or TLS
	NumProtocols
)

func (p Protocol) String() string {
	switch p {
	case ProtocolSTOMPWebSocket:
		return "stomp_ws"
	case ProtocolOpenWire:
		return "openwire"
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

// Meter is where the broker counts, as things happen; the destinations count in Dests.
// Init it before use.
type Meter struct {
	started time.Time

	Opened    [NumProtocols]atomic.Int64
	Closed    [NumProtocols]atomic.Int64
	Rejected  [NumRejectReasons]atomic.Int64
	Received  [NumProtocols]atomic.Int64
	Delivered [NumProtocols][2]atomic.Int64
	Acked     [NumProtocols]atomic.Int64
	Denied    [NumOperations]atomic.Int64

	Redelivered  atomic.Int64
	Duplicates   atomic.Int64 // messages dropped by duplicate detection
	TopicExpired atomic.Int64 // topic messages that expired waiting for a slow subscriber
	SendsBlocked atomic.Int64
	NonDurable   atomic.Int64 // live subscriptions that are not durable ones
	// ClosedReceived and ClosedDelivered are the message counts of the connections
	// that closed (the host's Traffic adds the live ones').
	ClosedReceived, ClosedDelivered atomic.Int64

	SendLatency [2]*histogram.Histogram // by persistent: [0] false, [1] true
	StoreSync   *histogram.Histogram
	syncing     bool // the store reports its syncs

	Dests destinations.Counters
}

// Init starts the meter's clock and histograms, and has store report its syncs when
// it can (persistence.SyncObserver).
func (c *Meter) Init(store persistence.Store) {
	c.started = time.Now()
	c.SendLatency = [2]*histogram.Histogram{histogram.New(nil), histogram.New(nil)}
	c.StoreSync = histogram.New(nil)
	if so, ok := store.(persistence.SyncObserver); ok {
		so.SetSyncObserver(c.StoreSync.Observe)
		c.syncing = true
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
func (m *Manager) Counters() Counters {
	c := m.c.Meter
	tr := m.c.Host.Traffic()
	out := Counters{Started: c.started, Connections: tr.Open, ProducersBlocked: tr.Blocked}
	for p := range NumProtocols {
		out.Opened[p] = c.Opened[p].Load()
		out.Closed[p] = c.Closed[p].Load()
		out.Received[p] = c.Received[p].Load()
		out.Acknowledged[p] = c.Acked[p].Load()
		out.Delivered[p] = [2]int64{c.Delivered[p][0].Load(), c.Delivered[p][1].Load()}
	}
	for r := range NumRejectReasons {
		out.Rejected[r] = c.Rejected[r].Load()
	}
	for o := range NumOperations {
		out.Denied[o] = c.Denied[o].Load()
	}
	out.Redelivered = c.Redelivered.Load()
	out.Duplicates = c.Duplicates.Load()
	out.Expired = c.Dests.Expired.Load() + c.TopicExpired.Load()
	for r := range destinations.NumDeadLetterReasons {
		out.DeadLettered[r] = c.Dests.DeadLettered[r].Load()
	}
	for r := range destinations.NumDiscardReasons {
		out.Discarded[r] = c.Dests.Discarded[r].Load()
	}
	out.SendsBlocked = c.SendsBlocked.Load()
	out.SendLatency = [2]histogram.Snapshot{c.SendLatency[0].Snapshot(), c.SendLatency[1].Snapshot()}
	out.StoreSync, out.StoreSyncs = c.StoreSync.Snapshot(), c.syncing
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
func (m *Manager) DestinationMetrics() []DestinationMetrics {
	ds := m.c.Host.Destinations()
	out := make([]DestinationMetrics, len(ds))
	for i, d := range ds {
		out[i].Dest = d.Name
		switch {
		case d.Q != nil:
			out[i].Type, out[i].DestinationStats = TypeQueue, d.Q.MemoryStats()
			if d.Temp {
				out[i].Type = TypeTempQueue
			}
		default:
			out[i].Type, out[i].DestinationStats = TypeTopic, d.T.Stats()
			if d.Temp {
				out[i].Type = TypeTempTopic
			} else if d.T.IsStream() {
				out[i].Type = TypeStream
			}
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
func (m *Manager) Subscriptions() SubscriptionCounts {
	out := SubscriptionCounts{NonDurable: m.c.Meter.NonDurable.Load()}
	for _, d := range m.c.Durables.All() {
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
func (m *Manager) Resources(ctx context.Context) []ResourceUsage {
	used, limit := m.c.Memory.Used()
	out := []ResourceUsage{{Resource: ResourceMemory, Used: used, Limit: limit, Alarm: used >= limit}}
	if sz, ok := m.c.Store.(persistence.Sizer); ok {
		if n, err := sz.Size(ctx); err == nil {
			out = append(out, ResourceUsage{Resource: ResourceStore, Used: n, Limit: m.c.StoreUsage, Alarm: m.c.StoreFull.Load()})
		}
	}
	if s := m.c.Scheduler; s != nil {
		used, _ := s.Memory()
		out = append(out, ResourceUsage{Resource: ResourceScheduler, Used: used, Limit: s.MemoryLimit(), Alarm: used >= s.MemoryLimit()})
	}
	return out
}
