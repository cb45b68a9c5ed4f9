package destinations

import (
	"strconv"

	"github.com/activemq-go/broker/persistence"
)

// Dispatch markers. Each queue, and each durable subscription's view, keeps its dispatch
// high-water mark in the store (QueueDest.writeMarkerLocked): a destination holding one
// message, sequence 1, whose body is the mark in decimal, replaced as the mark moves.
// After a restart the messages up to the mark come back flagged redelivered.
//
// The marker of a queue is MarkerPrefix + the queue's name; the marker of a durable
// subscription is SubMarkerPrefix + its key's String(), whose escaped client-id keeps
// two subscriptions apart however their client-ids and names read.
//
// Stores written before SubMarkerPrefix hold LegacyViewMarkerPrefix + client-id + ":" +
// name instead, which is ambiguous ("a:b" + "c" and "a" + "b:c" share one) and may also
// be the marker of a queue whose name starts with "durable:". At recovery (the broker's)
// such a marker gives its mark to every subscription it may belong to that has no
// marker of its own (a mark too high only flags more messages redelivered); their own
// markers are then written, and the legacy one deleted unless a queue of that name may
// own it.
const (
	MarkerPrefix           = "meta://dispatched/"
	SubMarkerPrefix        = "meta://dispatched-sub/"
	LegacyViewMarkerPrefix = MarkerPrefix + "durable:"
)

// MarkerDest is the store destination of q's dispatch marker.
func (q *QueueDest) MarkerDest() string {
	if q.sub != nil {
		return SubMarkerPrefix + q.sub.String()
	}
	return MarkerPrefix + q.name
}

// MarkerMessage is the marker message holding the mark hwm, stored in dest.
func MarkerMessage(dest string, hwm uint64) *persistence.Message {
	return &persistence.Message{Dest: dest, Seq: 1, ID: "marker",
		Body: strconv.AppendUint(nil, hwm, 10), Persistent: true, Priority: 4}
}

// ParseMarker reads the mark of a marker message.
func ParseMarker(m *persistence.Message) uint64 {
	hwm, _ := strconv.ParseUint(string(m.Body), 10, 64)
	return hwm
}

// RecoverHWM sets q's dispatch high-water mark as recovered from its marker.
func (q *QueueDest) RecoverHWM(hwm uint64) {
	q.recoveredHWM, q.dispatchHWM, q.markerWritten = hwm, hwm, hwm
	// A message consumed before its store write (concurrent store and dispatch) left no
	// trace in the store but may be in the marker: sequences are never reused.
	q.nextSeq = max(q.nextSeq, hwm+1)
	q.hwmHint.Store(hwm)
}

// DispatchHWM is q's dispatch high-water mark. The caller makes sure nothing dispatches
// meanwhile (recovery).
func (q *QueueDest) DispatchHWM() uint64 { return q.dispatchHWM }

// MarkerWritten reports whether q ever stored a dispatch mark.
func (q *QueueDest) MarkerWritten() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.markerWritten > 0
}
