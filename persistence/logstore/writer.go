package logstore

import (
	"fmt"

	"github.com/activemq-go/broker/kafkalog"
	"github.com/activemq-go/broker/persistence/internal/logshell"
)

// Group-commit limits (the others are logshell's).
const (
	// maxGroupBytes caps the records one round takes from the queue (a larger record is
	// appended alone). A round is one log batch, and a log batch is the unit the log
	// reads and decodes: a scan needing one message of it decodes all of it, so it stays
	// small enough for that (1 MiB is still a thousand 1 KiB messages per fsync).
	maxGroupBytes = 1 << 20
)

// request is one committed batch on its way through the writer.
type request = logshell.Request[op]

// writer is the logstore's side of the shell's writer goroutine (logshell.Log): it
// appends each round's records as ONE kafkalog batch (one CRC frame: the round is
// atomic on disk) and, when the round must be synced, flushes the log. The log itself
// fsyncs every FlushInterval (FlushInterval), or when a segment rolls.
//
// After a failed fsync the kernel may have dropped the dirty pages, and only a reopen
// (which recovers the log) knows what is on disk: any append or sync error fails the
// store for good (see ErrFailed).
type writer struct {
	s *Store

	// Owned by the writer goroutine.
	recs []kafkalog.Record
	base int64 // the offset of the round's first record
}

// Due is false: the log syncs on its own interval.
func (w *writer) Due() bool { return false }

// Add takes r's record into the round.
func (w *writer) Add(r *request) error {
	w.recs = append(w.recs, kafkalog.Record{Value: r.Rec})
	return nil
}

// Write appends the round's records to the log, if any.
func (w *writer) Write() error {
	if len(w.recs) == 0 {
		return nil
	}
	base, err := w.s.log.Append(logTopic, 0, w.recs)
	clear(w.recs) // the log copied the records into its frame
	w.recs = w.recs[:0]
	if err != nil {
		return fmt.Errorf("append: %w", err)
	}
	w.base = base
	return nil
}

// Sync flushes the log.
func (w *writer) Sync() error {
	if err := w.s.log.Flush(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

// Final does nothing: Close's final checkpoint syncs the log.
func (w *writer) Final() error { return nil }

// Apply applies the batches of an appended round to the index. The records of the
// round got the offsets from the round's base on, in order.
func (w *writer) Apply(group []*request) {
	off := w.base
	for _, r := range group {
		if r.Err != nil || r.Rec == nil {
			continue
		}
		w.s.idx.applyRecord(off, r.Ops)
		off++
	}
}
