// Package oprec records the operations of an adapter's batch (persistence.Batch) until
// they are committed: the kinds of operation, the rules every adapter applies to them,
// and the life of a batch, which records until it is committed or rolled back and
// ignores everything after.
//
// An adapter embeds a Recorder and adds Add, which keeps its own copy of the message
// (the payload P: a store entry, an encoded record, ...), and the commit methods. It
// overrides an operation whose rules it extends, calling the Check methods for the
// shared rules.
package oprec

import (
	"fmt"
	"slices"

	"github.com/activemq-go/broker/persistence"
)

// Kind is the kind of a recorded operation, one per method of persistence.Batch.
type Kind uint8

// The kinds of operation.
const (
	Add Kind = iota + 1
	Ack
	AckSub
	AddSub
	RemoveSub
	Purge
)

// Op is one recorded operation. Dest and Seq are those of the message for Add, the
// arguments for Ack, Purge (Dest) and AckSub (Seq). Sub is the subscription of AckSub,
// AddSub and RemoveSub, Info the whole SubInfo of AddSub. Msg, set for Add only, is
// the adapter's copy of the message. An Op is kept small (80 bytes with a pointer P):
// a deep queue's drain records an Ack per message, and the acknowledgements waiting
// for a slow store are held as Ops.
type Op[P any] struct {
	Kind Kind
	Seq  uint64
	Dest string
	Sub  persistence.SubKey
	Info *persistence.SubInfo
	Msg  P
}

// Recorder is the recording half of an adapter's batch, meant to be embedded. Of
// persistence.Batch it provides Len, Rollback and every operation but Add.
//
// A Recorder is used by one goroutine at a time. Once taken (committed) or rolled back
// it is done: later operations are ignored and Take returns persistence.ErrBatchDone.
type Recorder[P any] struct {
	ops   []Op[P]
	one   [1]Op[P] // backing array for the common single-operation batch
	bytes int      // the sizes given to RecordAdd, for sizing a group commit
	done  bool
	// failed tells what err is: the first invalid operation, which Take returns, or
	// (sharing the field keeps a batch in a smaller size class) the sentinel it wraps.
	failed bool
	err    error
}

// Init readies r; invalid operations will fail the commit with errors wrapping sentinel.
// r must not be copied afterwards.
func (r *Recorder[P]) Init(sentinel error) {
	r.ops = r.one[:0]
	r.err = sentinel
}

// Done reports whether r was taken or rolled back.
func (r *Recorder[P]) Done() bool { return r.done }

// Invalid records, unless r is done or already holds one, the invalid operation that
// fails the commit: fmt.Errorf("%w: "+format, sentinel, args...).
func (r *Recorder[P]) Invalid(format string, args ...any) {
	if !r.failed && !r.done {
		r.err = fmt.Errorf("%w: "+format, append([]any{r.err}, args...)...)
		r.failed = true
	}
}

// Record appends o unless r is done.
func (r *Recorder[P]) Record(o Op[P]) {
	if !r.done {
		r.ops = append(r.ops, o)
	}
}

// RecordAdd records the Add of m, whose copy is msg, of bytes bytes as far as group
// sizing is concerned (0 if the adapter does not size groups). m must have passed
// CheckAdd or the adapter's stricter rules.
func (r *Recorder[P]) RecordAdd(m *persistence.Message, msg P, bytes int) {
	if !r.done {
		r.ops = append(r.ops, Op[P]{Kind: Add, Dest: m.Dest, Seq: m.Seq, Msg: msg})
		r.bytes += bytes
	}
}

// CheckAdd reports whether Add should record m: not when r is done, nor when m is nil,
// has no Dest or has Seq 0, which is recorded as invalid.
func (r *Recorder[P]) CheckAdd(m *persistence.Message) bool {
	switch {
	case r.done:
		return false
	case m == nil:
		r.Invalid("Add of a nil message")
		return false
	case m.Dest == "" || m.Seq == 0:
		r.Invalid("Add needs Dest and a Seq > 0 (dest %q, seq %d)", m.Dest, m.Seq)
		return false
	}
	return true
}

// CheckAddSub reports whether AddSub should record info: not when r is done, nor when
// info.Dest is not a topic, which is recorded as invalid.
func (r *Recorder[P]) CheckAddSub(info persistence.SubInfo) bool {
	switch {
	case r.done:
		return false
	case persistence.KindOf(info.Dest) != persistence.KindTopic:
		r.Invalid("AddSub %s needs a topic, not %q", info.Key, info.Dest)
		return false
	}
	return true
}

// Subs returns the copy of m.Subs an Add keeps: the subscriptions a topic message is
// owed to, nil for a queue message, which has none.
func Subs(m *persistence.Message) []persistence.SubKey {
	if len(m.Subs) > 0 && persistence.KindOf(m.Dest) == persistence.KindTopic {
		return slices.Clone(m.Subs)
	}
	return nil
}

// Ack records the deletion of the message seq of dest.
func (r *Recorder[P]) Ack(dest string, seq uint64) {
	r.Record(Op[P]{Kind: Ack, Dest: dest, Seq: seq})
}

// AckSub records that sub acknowledged the topic message seq.
func (r *Recorder[P]) AckSub(sub persistence.SubKey, seq uint64) {
	r.Record(Op[P]{Kind: AckSub, Sub: sub, Seq: seq})
}

// AddSub records the creation or replacement of a durable subscription.
func (r *Recorder[P]) AddSub(info persistence.SubInfo) {
	if r.CheckAddSub(info) {
		r.Record(Op[P]{Kind: AddSub, Sub: info.Key, Info: &info})
	}
}

// RemoveSub records the removal of a durable subscription.
func (r *Recorder[P]) RemoveSub(sub persistence.SubKey) {
	r.Record(Op[P]{Kind: RemoveSub, Sub: sub})
}

// Purge records the deletion of every message of dest.
func (r *Recorder[P]) Purge(dest string) {
	r.Record(Op[P]{Kind: Purge, Dest: dest})
}

// Len is the number of operations recorded.
func (r *Recorder[P]) Len() int { return len(r.ops) }

// Take ends the recording and returns what a commit hands on: the operations, the sum
// of their RecordAdd sizes and the error that fails the commit at once, if any: the
// first invalid operation, or persistence.ErrBatchDone (with nothing else) if r was
// already done.
func (r *Recorder[P]) Take() (ops []Op[P], bytes int, err error) {
	if r.done {
		return nil, 0, persistence.ErrBatchDone
	}
	ops, bytes = r.ops, r.bytes
	if r.failed {
		err = r.err
	}
	r.done, r.ops, r.bytes = true, nil, 0
	return ops, bytes, err
}

// Rollback discards what was recorded; r is done.
func (r *Recorder[P]) Rollback() {
	r.done, r.ops, r.bytes = true, nil, 0
}
