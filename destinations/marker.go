package destinations

import (
	"log/slog"
	"math"
	"strconv"
	"time"

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

// DispatchHWMHint is a racy read of the mark, only to skip taking the lock when a
// delivery cannot move it.
func (q *QueueDest) DispatchHWMHint() uint64 { return q.hwmHint.Load() }

// MarkWritten records that persistent messages up to seq were written to a consumer.
func (q *QueueDest) MarkWritten(seq uint64) {
	q.mu.Lock()
	if seq > q.dispatchHWM {
		q.dispatchHWM = seq
		q.hwmHint.Store(seq)
		q.writeMarkerLocked()
	}
	q.mu.Unlock()
}

// writeMarkerLocked stores the dispatch high-water mark if it moved, one write in flight
// per queue at a time; the write is asynchronous and batched with other store traffic.
func (q *QueueDest) writeMarkerLocked() {
	if q.markerInFlight || q.dispatchHWM <= q.markerWritten {
		return
	}
	q.markerInFlight = true
	hwm := q.dispatchHWM
	batch := q.env.Store.Begin()
	batch.Add(MarkerMessage(q.MarkerDest(), hwm))
	q.env.Background.Add(1)
	go q.env.Commit(batch, persistence.Async, func(err error) {
		defer q.env.Background.Done()
		q.mu.Lock()
		var ready []func()
		if err != nil {
			// Tried again after a pause (with a log line at most once a minute); the
			// write in flight meanwhile keeps others from starting. Who waits for the
			// mark is let go: the store is failing, and their own writes with it.
			if now := q.env.Time(); now.Sub(q.markerLogged) > time.Minute {
				q.markerLogged = now
				q.env.Log.Error("storing a queue's dispatch mark failed; trying again", slog.String("dest", q.client),
					slog.Duration("in", markerRetryDelay), slog.Any("err", err))
			}
			ready = q.takeMarkWaitersLocked(math.MaxUint64)
			time.AfterFunc(markerRetryDelay, func() {
				q.mu.Lock()
				defer q.mu.Unlock()
				q.markerInFlight = false
				if !q.env.Stopping() {
					q.writeMarkerLocked()
				}
			})
		} else {
			q.markerInFlight = false
			q.markerWritten = hwm
			ready = q.takeMarkWaitersLocked(hwm)
			q.writeMarkerLocked()
		}
		q.mu.Unlock()
		for _, fn := range ready {
			fn()
		}
	})
}

// markWaiter is a WhenMarked caller: fn runs once the stored mark reaches need.
type markWaiter struct {
	need uint64
	fn   func()
}

// WhenMarked calls fn once the stored dispatch mark covers every persistent message
// dispatched from q so far: at once if it does already, else from the store's
// completion of the mark's write (or of its failure). An acknowledgement's answer waits
// for it, so that the messages a client was given before the RECEIPT of an ACK or
// COMMIT come back flagged redelivered after a crash that follows it: the mark is
// written asynchronously, and without the wait a fast client could get its RECEIPT
// first. The mark is usually stored long before the client acknowledges anything.
func (q *QueueDest) WhenMarked(fn func()) {
	q.mu.Lock()
	if q.dispatchHWM <= q.markerWritten {
		q.mu.Unlock()
		fn()
		return
	}
	q.markWaiters = append(q.markWaiters, markWaiter{need: q.dispatchHWM, fn: fn})
	q.writeMarkerLocked()
	q.mu.Unlock()
}

// takeMarkWaitersLocked removes and returns the callbacks of the waiters the stored mark
// upto now satisfies.
func (q *QueueDest) takeMarkWaitersLocked(upto uint64) []func() {
	var ready []func()
	kept := q.markWaiters[:0]
	for _, w := range q.markWaiters {
		if w.need <= upto {
			ready = append(ready, w.fn)
		} else {
			kept = append(kept, w)
		}
	}
	clear(q.markWaiters[len(kept):])
	q.markWaiters = kept
	return ready
}

// markerRetryDelay is the pause before a failed dispatch mark write is tried again.
const markerRetryDelay = 500 * time.Millisecond
