package journal

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/batchrec"
)

// Format constants. They are part of the on-disk format (see the package comment) and
// must not change without a new formatVersion.
const (
	formatVersion   = 1 // of a segment
	segMagic        = "AMQGOJNL"
	segHeaderSize   = 16
	frameHeaderSize = 12
	recordAlign     = 8
	recTypeBatch    = 1
	// recVersion is a record's version when none of its messages has a typed part;
	// recVersionTyped when one has (batchrec's flag bit 1 may be set only there).
	recVersion      = 1
	recVersionTyped = 2
	// MaxRecordSize is the largest record (one batch) the journal writes: 1 GiB.
	MaxRecordSize = 1 << 30
)

// opKind is the first byte of an operation inside a batch record: batchrec's codes
// (batchrec.OpAdd, ...) and the journal's own opMove.
type opKind = byte

// opMove is the journal's own operation: a live message the compactor copied forward.
const opMove = opKind(7)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Decoding errors, both ErrCorrupt. errShort says the data ends inside a record, which
// at the end of the last segment is a torn write.
var (
	errShort = wrapCorrupt("data ends inside the record")
	errFrame = wrapCorrupt("bad frame header or checksum")
)

// corruptError is an ErrCorrupt with a detail.
type corruptError struct{ what string }

func (e *corruptError) Error() string { return "journal: corrupt record: " + e.what }
func (e *corruptError) Unwrap() error { return ErrCorrupt }

func wrapCorrupt(what string) error { return &corruptError{what} }

// op is one operation of a batch, decoded (or as recorded by Batch): batchrec's Op
// (a Move's Dest and Seq are its message's) and where the message is. For Add and Move
// the message itself is only in the record bytes, at msgOff from the start of the
// record; loc tells where it is in the journal once the record has a place.
type op struct {
	batchrec.Op
	msgOff uint32 // Add, Move
	loc    loc    // Add, Move: the message's place (seg, off, n, body)
	oldSeg uint32 // Move: where the message was
	oldOff uint32
}

// --- frames ---------------------------------------------------------------------------

// newRecord returns a buffer holding the frame header (to be filled by finishRecord) and
// the batch's operation count (likewise).
func newRecord(buf []byte) []byte {
	return append(buf[:0], make([]byte, frameHeaderSize+4)...)
}

// markTyped records in the frame header of rec that it holds a message with a typed
// part: finishRecord then writes recVersionTyped.
func markTyped(rec []byte) { rec[9] = recVersionTyped }

// finishRecord fills in the frame header and the op count of rec and pads it to the
// record alignment.
func finishRecord(rec []byte, nops int) []byte {
	binary.LittleEndian.PutUint32(rec[frameHeaderSize:], uint32(nops))
	binary.LittleEndian.PutUint32(rec[4:], uint32(len(rec)-frameHeaderSize))
	version := byte(recVersion)
	if rec[9] == recVersionTyped {
		version = recVersionTyped
	}
	rec[8], rec[9], rec[10], rec[11] = recTypeBatch, version, 0, 0
	binary.LittleEndian.PutUint32(rec[0:], crc(rec[4:]))
	if pad := alignUp(len(rec)) - len(rec); pad > 0 {
		rec = append(rec, make([]byte, pad)...)
	}
	return rec
}

func alignUp(n int) int { return (n + recordAlign - 1) &^ (recordAlign - 1) }

// decodeFrame checks the record at the start of b and returns its payload (the op count
// and the ops) and its size on disk, padding included. errShort means b ends inside the
// record as its header describes it; errFrame means the header or the checksum is bad.
func decodeFrame(b []byte) (payload []byte, size int, err error) {
	if len(b) < frameHeaderSize {
		return nil, 0, errShort
	}
	n := binary.LittleEndian.Uint32(b[4:])
	if b[8] != recTypeBatch || !knownRecVersion(b[9]) || b[10] != 0 || b[11] != 0 ||
		n < 4 || n > MaxRecordSize {
		return nil, 0, errFrame
	}
	end := frameHeaderSize + int(n)
	if len(b) < end {
		return nil, 0, errShort
	}
	if crc(b[4:end]) != binary.LittleEndian.Uint32(b) {
		return nil, 0, errFrame
	}
	return b[frameHeaderSize:end], min(alignUp(end), len(b)), nil
}

func knownRecVersion(v byte) bool { return v == recVersion || v == recVersionTyped }

// plausibleFrame is the cheap part of decodeFrame, used when searching for the next
// record after a corrupt one.
func plausibleFrame(b []byte) bool {
	return len(b) >= frameHeaderSize && b[8] == recTypeBatch && knownRecVersion(b[9]) &&
		b[10] == 0 && b[11] == 0 && binary.LittleEndian.Uint32(b[4:]) >= 4
}

// --- encoding -------------------------------------------------------------------------
//
// The operations and the message are batchrec's encoding; the journal adds the record
// frame, the op count, the u32 length of an Add and the message checksum.

// appendMessage appends the encoding of m (see the package comment); subs are the
// subscriptions a topic message names (nil for a queue message).
func appendMessage(b []byte, m *persistence.Message, subs []persistence.SubKey) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0) // CRC, filled in below
	b = batchrec.AppendMessage(b, m, subs)
	binary.LittleEndian.PutUint32(b[start:], crc(b[start+4:]))
	return b
}

// appendAdd appends an Add operation to the record b and returns the offset of the
// message in b.
func appendAdd(b []byte, m *persistence.Message, subs []persistence.SubKey) ([]byte, uint32) {
	if m.Typed() {
		markTyped(b)
	}
	b = append(b, byte(batchrec.OpAdd), 0, 0, 0, 0)
	msgOff := len(b)
	b = appendMessage(b, m, subs)
	binary.LittleEndian.PutUint32(b[msgOff-4:], uint32(len(b)-msgOff))
	return b, uint32(msgOff)
}

// appendMove appends a Move of the encoded message raw from (oldSeg, oldOff) to the
// record b and returns the offset of the message in b.
func appendMove(b []byte, oldSeg, oldOff uint32, raw []byte) ([]byte, uint32) {
	if rawTyped(raw) {
		markTyped(b)
	}
	b = append(b, byte(opMove))
	b = binary.LittleEndian.AppendUint32(b, oldSeg)
	b = binary.LittleEndian.AppendUint32(b, oldOff)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(raw)))
	msgOff := len(b)
	return append(b, raw...), uint32(msgOff)
}

// --- decoding -------------------------------------------------------------------------

// decoder reads the primitive types of the format from b; the first failure sets bad and
// every later read returns zero values.
type decoder struct {
	b   []byte
	off int
	bad bool
}

func (d *decoder) fail() { d.bad, d.off = true, len(d.b) }

func (d *decoder) byte() byte {
	if d.off >= len(d.b) {
		d.fail()
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

func (d *decoder) u32() uint32 {
	if len(d.b)-d.off < 4 {
		d.fail()
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail()
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.fail()
		return 0
	}
	d.off += n
	return v
}

// bytes returns the next length-prefixed byte string, aliasing b.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)-d.off) {
		d.fail()
		return nil
	}
	p := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return p
}

// take returns the next n bytes, aliasing b.
func (d *decoder) take(n int) []byte {
	if n < 0 || n > len(d.b)-d.off {
		d.fail()
		return nil
	}
	p := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return p
}

// msgMeta is what recovery needs of a stored message, read without allocating.
type msgMeta struct {
	seq  uint64
	dest []byte
	body int
	subs []byte // the encoded subscription list (count, then pairs)
}

// peekMessage checks the checksum of the encoded message raw and reads its metadata.
func peekMessage(raw []byte) (msgMeta, error) {
	if len(raw) < 4 || crc(raw[4:]) != binary.LittleEndian.Uint32(raw) {
		return msgMeta{}, wrapCorrupt("message checksum mismatch")
	}
	d := decoder{b: raw, off: 4}
	var mm msgMeta
	mm.seq = d.uvarint()
	mm.dest = d.bytes()
	flags := d.byte()
	d.byte() // priority
	d.varint()
	d.varint()
	d.uvarint()
	d.bytes() // id
	nh := d.uvarint()
	if nh > uint64(len(raw)) {
		d.fail()
	}
	for i := uint64(0); i < nh && !d.bad; i++ {
		d.bytes()
	}
	mm.body = len(d.bytes())
	if flags&batchrec.FlagTyped != 0 {
		// Checked, not decoded: replay refuses what Scan could not read.
		if typed := d.bytes(); !d.bad && persistence.CheckTyped(typed) != nil {
			d.fail()
		}
	}
	mm.subs = d.b[d.off:]
	if d.bad {
		return msgMeta{}, wrapCorrupt("malformed message")
	}
	return mm, nil
}

// eachSub calls fn for every (clientID, name) pair of an encoded subscription list.
func eachSub(b []byte, fn func(clientID, name []byte)) error {
	d := decoder{b: b}
	n := d.uvarint()
	if n > uint64(len(b)) {
		d.fail()
	}
	for i := uint64(0); i < n && !d.bad; i++ {
		c, nm := d.bytes(), d.bytes()
		if !d.bad {
			fn(c, nm)
		}
	}
	if d.bad || d.off != len(b) {
		return wrapCorrupt("malformed subscription list")
	}
	return nil
}

// decodeMessage decodes the encoded message raw into m, checking its checksum. The ID
// and the headers share one new string (one allocation per message; a typed part costs
// two more, its Props and its names); Body and the typed part's byte arrays alias raw,
// so the caller must not reuse raw while m is in use. hdrs is reused for m.Headers.
// m.Dest is set only if it differs; m.Subs is left alone.
func decodeMessage(raw []byte, m *persistence.Message, hdrs []string) error {
	if len(raw) < 4 || crc(raw[4:]) != binary.LittleEndian.Uint32(raw) {
		return wrapCorrupt("message checksum mismatch")
	}
	d := decoder{b: raw, off: 4}
	seq := d.uvarint()
	dest := d.bytes()
	flags := d.byte()
	prio := d.byte()
	expires := d.varint()
	ts := d.varint()
	red := d.uvarint()
	// First pass over the ID and the headers, which are adjacent: find where they end.
	strStart := d.off
	d.bytes()
	nh := d.uvarint()
	if nh > uint64(len(raw)) || red > 1<<32-1 {
		d.fail()
	}
	for i := uint64(0); i < nh && !d.bad; i++ {
		d.bytes()
	}
	strEnd := d.off
	body := d.bytes()
	var typed []byte
	if flags&batchrec.FlagTyped != 0 {
		typed = d.bytes()
	}
	if d.bad {
		return wrapCorrupt("malformed message")
	}
	m.Kind, m.Props = persistence.BodyPlain, nil
	if typed != nil {
		if err := persistence.ReadTyped(typed, m); err != nil {
			return wrapCorrupt(err.Error())
		}
	}
	// Second pass: slice one string.
	strs := string(raw[strStart:strEnd])
	sd := decoder{b: raw[:strEnd], off: strStart}
	slice := func() string {
		p := sd.bytes()
		to := sd.off - strStart
		return strs[to-len(p) : to]
	}
	m.ID = slice()
	sd.uvarint()
	hdrs = hdrs[:0]
	for range nh {
		hdrs = append(hdrs, slice())
	}
	if string(dest) != m.Dest {
		m.Dest = string(dest)
	}
	m.Seq, m.Priority, m.Expires, m.Timestamp = seq, prio, expires, ts
	m.RedeliveryCount = uint32(red)
	m.Persistent = flags&1 != 0
	m.Headers = hdrs
	m.Body = body
	return nil
}

// rawTyped reports whether the encoded message raw (checked already) has a typed part.
func rawTyped(raw []byte) bool {
	d := decoder{b: raw, off: 4}
	d.uvarint()
	d.bytes()
	return d.byte()&batchrec.FlagTyped != 0
}

// interner returns one string for equal byte strings, so recovery allocates each
// destination and subscription name once.
type interner map[string]string

func (in interner) get(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	in[s] = s
	return s
}

// decodeBatch decodes the payload of a batch record into ops (reusing its backing
// array). Offsets of messages are relative to the start of the record (payload offset
// frameHeaderSize). Strings are interned with in.
func decodeBatch(payload []byte, in interner, ops []op) ([]op, error) {
	d := decoder{b: payload}
	n := d.u32()
	if uint64(n) > uint64(len(payload)) {
		return ops[:0], wrapCorrupt("op count larger than the record")
	}
	ops = ops[:0]
	for i := uint32(0); i < n && !d.bad; i++ {
		var o op
		o.Kind = d.byte()
		switch o.Kind {
		case batchrec.OpAdd, opMove:
			if o.Kind == opMove {
				o.oldSeg, o.oldOff = d.u32(), d.u32()
			}
			size := int(d.u32())
			off := d.off
			raw := d.take(size)
			if d.bad {
				break
			}
			mm, err := peekMessage(raw)
			if err != nil {
				return ops, err
			}
			o.Dest, o.Seq = in.get(mm.dest), mm.seq
			o.msgOff = uint32(frameHeaderSize + off)
			o.loc = loc{n: uint32(size), body: uint32(mm.body)}
			if o.Kind == batchrec.OpAdd && len(mm.subs) > 1 {
				err := eachSub(mm.subs, func(c, nm []byte) {
					o.Subs = append(o.Subs, persistence.SubKey{ClientID: in.get(c), Name: in.get(nm)})
				})
				if err != nil {
					return ops, err
				}
			}
		case batchrec.OpAck:
			o.Dest, o.Seq = in.get(d.bytes()), d.uvarint()
		case batchrec.OpAckSub:
			o.Key = persistence.SubKey{ClientID: in.get(d.bytes()), Name: in.get(d.bytes())}
			o.Seq = d.uvarint()
		case batchrec.OpAddSub:
			o.Info.Key = persistence.SubKey{ClientID: in.get(d.bytes()), Name: in.get(d.bytes())}
			o.Info.Dest = in.get(d.bytes())
			o.Info.Selector = string(d.bytes())
			o.Info.Created = d.varint()
		case batchrec.OpRemoveSub:
			o.Key = persistence.SubKey{ClientID: in.get(d.bytes()), Name: in.get(d.bytes())}
		case batchrec.OpPurge:
			o.Dest = in.get(d.bytes())
		default:
			return ops, wrapCorrupt("unknown operation")
		}
		if d.bad {
			break
		}
		if (o.Kind == batchrec.OpAdd || o.Kind == opMove) && (o.Seq == 0 || o.Seq > maxSeq || o.Dest == "") {
			return ops, wrapCorrupt("invalid message in record")
		}
		ops = append(ops, o)
	}
	if d.bad || d.off != len(payload) {
		return ops, wrapCorrupt("malformed batch")
	}
	return ops, nil
}
