package broker

import (
	"time"

	"github.com/activemq-go/broker/broker/management"
)

// Metrics: the broker counts what happens to connections and messages as it happens,
// each count one atomic add on the path that does it, in a management.Meter (two
// histograms take one observation per SEND and per store sync); the exporter
// (admin/metrics) reads them at scrape time through the management surface.

// Protocol is how a client speaks to the broker, a label of the connection counters.
type Protocol = management.Protocol

// The protocols.
const (
	ProtocolSTOMP          = management.ProtocolSTOMP          // STOMP over TCP or TLS
	ProtocolSTOMPWebSocket = management.ProtocolSTOMPWebSocket // STOMP over WebSocket
	ProtocolOpenWire       = management.ProtocolOpenWire       // OpenWire over TCP or TLS
)

// RejectReason is why a connection was refused.
type RejectReason = management.RejectReason

// The reasons a transport refuses a connection before the broker sees it.
const (
	RejectLimit    = management.RejectLimit    // a connection limit: the connector's maxConnections
	RejectProtocol = management.RejectProtocol // not STOMP: no CONNECT first, an unsupported version, a bad frame before CONNECT
	RejectTLS      = management.RejectTLS      // its TLS handshake failed
)

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
	b.counters.SendLatency[i].Since(start)
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
	if r < management.NumRejectReasons {
		b.counters.Rejected[r].Add(1)
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
		return management.RejectAuth, true
	case ErrTooManyUserConnections:
		return RejectLimit, true
	case ErrClientIDInUse:
		return management.RejectClientID, true
	}
	return 0, false
}

// SetBlocked tells the broker whether a SEND of the connection is held by producer flow
// control (the transport holds it until there is room): broker_producers_blocked
// counts the connections held now, and every hold counts once in SendsBlocked.
func (c *Conn) SetBlocked(held bool) {
	if c.blocked.Swap(held) != held && held {
		c.meter.SendsBlocked.Add(1)
	}
}
