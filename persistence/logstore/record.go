package logstore

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/batchrec"
)

// recordVersion is the format version of a batch record (see the package comment);
// recordVersionTyped that of a record holding a message with a typed part.
const (
	recordVersion      = 1
	recordVersionTyped = 2
)

// maxSeq is the largest sequence number the store accepts (signed 64-bit, as the
// Store contract promises).
const maxSeq = math.MaxInt64

// op is one decoded operation: what the batch recorded and what replay decodes, so one
// apply serves both (TestRecordRoundTrip holds them equal): batchrec's Op, whose Kind
// is one of batchrec's codes (batchrec.OpAdd, ...), the values the format's, and where
// an Add's message is.
type op struct {
	batchrec.Op
	// Add: where the length-prefixed message starts in the record value (messageAt reads
	// it), and its body length (for Stats without reading the message back).
	pos, body uint32
}

// newRecord starts a record in buf.
func newRecord(buf []byte) []byte { return append(buf, recordVersion) }

// The operations and the message are batchrec's encoding; the logstore adds the record
// version and the uvarint length of an Add.

// appendAdd appends an Add of m (naming subs) to the record b and returns the record and
// the position of the length-prefixed message in it.
func appendAdd(b []byte, m *persistence.Message, subs []persistence.SubKey) ([]byte, uint32) {
	if m.Typed() {
		b[0] = recordVersionTyped
	}
	b = append(b, byte(batchrec.OpAdd))
	pos := len(b)
	b = binary.AppendUvarint(b, uint64(batchrec.MessageLen(m, subs)))
	return batchrec.AppendMessage(b, m, subs), uint32(pos)
}

// reader decodes the primitives of the format with bounds checks; the first error
// sticks, so callers check once at the end.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at byte %d", ErrCorrupt, what, r.off)
	}
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad uvarint")
		return 0
	}
	r.off += n
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.off += n
	return v
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail("truncated")
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

// bytes returns a length-prefixed field, aliasing the input.
func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.off) {
		r.fail("field longer than its record")
		return nil
	}
	p := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return p
}

func (r *reader) str() string { return string(r.bytes()) }

// count reads a count of items that take at least min bytes each, refusing one the
// remaining input cannot hold (so a damaged count never allocates much).
func (r *reader) count(min int) int {
	n := r.uvarint()
	if r.err == nil && n > uint64((len(r.b)-r.off)/min) {
		r.fail("count larger than its record")
		return 0
	}
	return int(n)
}

func (r *reader) subKeys() []persistence.SubKey {
	n := r.count(2)
	if n == 0 {
		return nil
	}
	keys := make([]persistence.SubKey, n)
	for i := range keys {
		keys[i] = persistence.SubKey{ClientID: r.str(), Name: r.str()}
	}
	return keys
}

// decodeRecord decodes the operations of a record value, appending them to ops.
func decodeRecord(v []byte, ops []op) ([]op, error) {
	if len(v) == 0 || (v[0] != recordVersion && v[0] != recordVersionTyped) {
		if len(v) == 0 {
			return ops, fmt.Errorf("%w: empty record", ErrCorrupt)
		}
		return ops, fmt.Errorf("%w: record format version %d, want %d or %d", ErrCorrupt, v[0], recordVersion, recordVersionTyped)
	}
	r := reader{b: v, off: 1}
	for r.err == nil && r.off < len(v) {
		o := op{Op: batchrec.Op{Kind: r.byte()}}
		switch o.Kind {
		case batchrec.OpAdd:
			o.pos = uint32(r.off)
			if msg := r.bytes(); r.err == nil {
				r.err = decodeAddOp(msg, &o)
			}
		case batchrec.OpAck:
			o.Dest, o.Seq = r.str(), r.uvarint()
		case batchrec.OpAckSub:
			o.Key = persistence.SubKey{ClientID: r.str(), Name: r.str()}
			o.Seq = r.uvarint()
		case batchrec.OpAddSub:
			o.Info.Key = persistence.SubKey{ClientID: r.str(), Name: r.str()}
			o.Info.Dest, o.Info.Selector = r.str(), r.str()
			o.Info.Created = r.varint()
		case batchrec.OpRemoveSub:
			o.Key = persistence.SubKey{ClientID: r.str(), Name: r.str()}
		case batchrec.OpPurge:
			o.Dest = r.str()
		default:
			r.fail(fmt.Sprintf("unknown operation %d", o.Kind))
		}
		if r.err == nil {
			ops = append(ops, o)
		}
	}
	return ops, r.err
}

// messageAt returns the length-prefixed message at pos of a record value.
func messageAt(v []byte, pos uint32) ([]byte, error) {
	if int64(pos) >= int64(len(v)) {
		return nil, fmt.Errorf("%w: message at byte %d of a record of %d", ErrCorrupt, pos, len(v))
	}
	r := reader{b: v, off: int(pos)}
	msg := r.bytes()
	return msg, r.err
}

// decodeAddOp reads what the index needs of an encoded message (dest, seq, body length,
// subscriptions) without copying its headers or body.
func decodeAddOp(msg []byte, o *op) error {
	r := reader{b: msg}
	o.Seq = r.uvarint()
	o.Dest = r.str()
	flags := r.byte()
	r.byte()
	r.varint()
	r.varint()
	r.uvarint()
	r.bytes()
	for range r.count(1) {
		r.bytes()
	}
	o.body = uint32(len(r.bytes()))
	if flags&batchrec.FlagTyped != 0 {
		// Checked, not decoded: replay refuses what Scan could not read.
		if typed := r.bytes(); r.err == nil {
			if err := persistence.CheckTyped(typed); err != nil {
				r.fail(err.Error())
			}
		}
	}
	o.Subs = r.subKeys()
	if r.err == nil && r.off != len(msg) {
		r.fail("trailing bytes after a message")
	}
	if r.err == nil && (o.Dest == "" || o.Seq == 0 || o.Seq > maxSeq) {
		r.fail(fmt.Sprintf("message without dest or seq (%q, %d)", o.Dest, o.Seq))
	}
	if r.err != nil {
		return fmt.Errorf("add: %w", r.err)
	}
	return nil
}

// decodeMessage decodes an encoded message into m. The body aliases msg; every string is
// a copy, but for the destination, which is dest when it is equal (a scan knows it, and
// saves an allocation per message).
func decodeMessage(msg []byte, m *persistence.Message, dest string) error {
	r := reader{b: msg}
	m.Seq = r.uvarint()
	if d := r.bytes(); string(d) == dest {
		m.Dest = dest
	} else {
		m.Dest = string(d)
	}
	flags := r.byte()
	m.Persistent = flags&1 != 0
	m.Priority = r.byte()
	m.Expires = r.varint()
	m.Timestamp = r.varint()
	red := r.uvarint()
	if red > math.MaxUint32 {
		r.fail("redelivery count out of range")
	}
	m.RedeliveryCount = uint32(red)
	m.ID = r.str()
	m.Headers = nil
	if n := r.count(1); n > 0 {
		m.Headers = make(persistence.Headers, n)
		for i := range m.Headers {
			m.Headers[i] = r.str()
		}
	}
	m.Body = r.bytes()
	m.Kind, m.Props = persistence.BodyPlain, nil
	if flags&batchrec.FlagTyped != 0 {
		if typed := r.bytes(); r.err == nil {
			if err := persistence.ReadTyped(typed, m); err != nil {
				r.fail(err.Error())
			}
		}
	}
	m.Subs = r.subKeys()
	if r.err == nil && r.off != len(msg) {
		r.fail("trailing bytes after a message")
	}
	if r.err != nil {
		return fmt.Errorf("message: %w", r.err)
	}
	return nil
}
