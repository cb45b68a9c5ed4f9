package boltstore

import (
	"encoding/binary"
	"fmt"

	"github.com/activemq-go/broker/persistence"
)

// The value encodings of format version 1 (message records version 1 and 2). doc.go
// describes them for a reader of the file; this file is the one place that writes and
// reads them.

// formatVersion is the layout version stored under meta/"format".
const formatVersion = 1

// msgRecordVersion is the first byte of a message record without a typed part,
// msgRecordVersionTyped of one with it.
const (
	msgRecordVersion      = 1
	msgRecordVersionTyped = 2
)

// subRecordVersion is the first byte of every subscription record.
const subRecordVersion = 1

// Message record layout (offsets in bytes):
//
//	0      version (1; 2 with a typed part)
//	1      flags: bit 0 Persistent, other bits zero
//	2      priority
//	3..7   redelivery count, uint32
//	7..15  expires, int64 (two's complement)
//	15..23 timestamp, int64
//	23..27 body length, uint32
//	27..   version 2 only: uvarint length, the typed part (persistence.AppendTyped),
//	       uvarint len(ID), ID,
//	       uvarint number of header strings n, then n times uvarint len, bytes,
//	       body (exactly body length bytes, the rest of the record)
const (
	offFlags      = 1
	offPriority   = 2
	offRedelivery = 3
	offExpires    = 7
	offTimestamp  = 15
	offBodyLen    = 23
	msgFixedLen   = 27

	flagPersistent = 1 << 0
)

// encodedSize returns the exact length of m's record.
func encodedSize(m *persistence.Message) int {
	n := msgFixedLen + uvarintLen(uint64(len(m.ID))) + len(m.ID) + uvarintLen(uint64(len(m.Headers)))
	for _, h := range m.Headers {
		n += uvarintLen(uint64(len(h))) + len(h)
	}
	if m.Typed() {
		t := persistence.TypedLen(m)
		n += uvarintLen(uint64(t)) + t
	}
	return n + len(m.Body)
}

// encodeMessage returns the record of m in a new slice of exactly its size. Dest, Seq
// and Subs are not part of the record: they are the bucket, the key and the owners
// record.
func encodeMessage(m *persistence.Message) []byte {
	b := make([]byte, msgFixedLen, encodedSize(m))
	b[0] = msgRecordVersion
	if m.Persistent {
		b[offFlags] = flagPersistent
	}
	b[offPriority] = m.Priority
	binary.BigEndian.PutUint32(b[offRedelivery:], m.RedeliveryCount)
	binary.BigEndian.PutUint64(b[offExpires:], uint64(m.Expires))
	binary.BigEndian.PutUint64(b[offTimestamp:], uint64(m.Timestamp))
	binary.BigEndian.PutUint32(b[offBodyLen:], uint32(len(m.Body)))
	if m.Typed() {
		b[0] = msgRecordVersionTyped
		b = binary.AppendUvarint(b, uint64(persistence.TypedLen(m)))
		b = persistence.AppendTyped(b, m)
	}
	b = appendString(b, m.ID)
	b = binary.AppendUvarint(b, uint64(len(m.Headers)))
	for _, h := range m.Headers {
		b = appendString(b, h)
	}
	return append(b, m.Body...)
}

// recordBodyLen returns the body length a message record declares, without decoding
// the rest: what Ack and a replacing Add need for the byte count.
func recordBodyLen(rec []byte) (int64, error) {
	if len(rec) < msgFixedLen || (rec[0] != msgRecordVersion && rec[0] != msgRecordVersionTyped) {
		return 0, fmt.Errorf("%w: message record of %d bytes, version %d", ErrCorrupt, len(rec), firstByte(rec))
	}
	return int64(binary.BigEndian.Uint32(rec[offBodyLen:])), nil
}

// arena holds the memory a scan decodes a page of messages into. Bodies and header
// slices are reused from page to page (fn may not keep a message past its return
// unless it clones it); strings are always fresh, since strings are immutable and a
// clone shares them.
type arena struct {
	body []byte
	strs []string
}

func (a *arena) reset() {
	a.body = a.body[:0]
	clear(a.strs) // let the collector have the previous page's strings
	a.strs = a.strs[:0]
}

// decodeMessage decodes rec into m, leaving m.Dest, m.Seq and m.Subs alone. The body
// is copied into a.body and the strings into one new string per message that ID and
// the headers share, so the record may be released (a bbolt value is only valid inside
// its transaction) as soon as it returns.
func decodeMessage(rec []byte, m *persistence.Message, a *arena) error {
	bodyLen, err := recordBodyLen(rec)
	if err != nil {
		return err
	}
	if rec[offFlags]&^flagPersistent != 0 {
		return fmt.Errorf("%w: message record with unknown flags %#x", ErrCorrupt, rec[offFlags])
	}
	if bodyLen > int64(len(rec)-msgFixedLen) {
		return fmt.Errorf("%w: message record of %d bytes declares a body of %d", ErrCorrupt, len(rec), bodyLen)
	}
	strEnd := len(rec) - int(bodyLen)
	strStart := msgFixedLen
	var typed []byte
	if rec[0] == msgRecordVersionTyped {
		n, k := binary.Uvarint(rec[strStart:strEnd])
		if k <= 0 || n > uint64(strEnd-strStart-k) {
			return fmt.Errorf("%w: message record: bad typed part", ErrCorrupt)
		}
		typed = rec[strStart+k : strStart+k+int(n)]
		strStart += k + int(n)
	}
	region := rec[strStart:strEnd] // ID and headers: lengths interleaved with bytes
	// One string holds the whole region; ID and headers are substrings of it.
	all := string(region)
	pos := 0
	next := func() (string, bool) {
		n, k := binary.Uvarint(region[pos:])
		if k <= 0 || n > uint64(len(region)-pos-k) {
			return "", false
		}
		pos += k
		s := all[pos : pos+int(n)]
		pos += int(n)
		return s, true
	}
	id, ok := next()
	if !ok {
		return fmt.Errorf("%w: message record: bad ID", ErrCorrupt)
	}
	count, k := binary.Uvarint(region[pos:])
	if k <= 0 || count > uint64(len(region)-pos-k) { // every string takes at least a byte
		return fmt.Errorf("%w: message record: bad header count", ErrCorrupt)
	}
	pos += k
	first := len(a.strs)
	for range count {
		h, ok := next()
		if !ok {
			return fmt.Errorf("%w: message record: bad header", ErrCorrupt)
		}
		a.strs = append(a.strs, h)
	}
	if pos != len(region) {
		return fmt.Errorf("%w: message record: %d stray bytes before the body", ErrCorrupt, len(region)-pos)
	}
	m.Kind, m.Props = persistence.BodyPlain, nil
	if typed != nil {
		// The part's byte arrays alias the arena, like the body.
		start := len(a.body)
		a.body = append(a.body, typed...)
		if err := persistence.ReadTyped(a.body[start:len(a.body):len(a.body)], m); err != nil {
			return fmt.Errorf("%w: message record: %v", ErrCorrupt, err)
		}
	}
	start := len(a.body)
	a.body = append(a.body, rec[strEnd:]...)

	m.ID = id
	m.Headers = nil
	if count > 0 {
		m.Headers = a.strs[first:len(a.strs):len(a.strs)]
	}
	m.Body = a.body[start:len(a.body):len(a.body)]
	m.Persistent = rec[offFlags]&flagPersistent != 0
	m.Priority = rec[offPriority]
	m.RedeliveryCount = binary.BigEndian.Uint32(rec[offRedelivery:])
	m.Expires = int64(binary.BigEndian.Uint64(rec[offExpires:]))
	m.Timestamp = int64(binary.BigEndian.Uint64(rec[offTimestamp:]))
	return nil
}

// seqKey returns the 8-byte big-endian key of seq: keys sort in numeric order, so a
// cursor walks a destination in sequence order.
func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq) }

// keySeq is the inverse of seqKey.
func keySeq(k []byte) (uint64, error) {
	if len(k) != 8 {
		return 0, fmt.Errorf("%w: sequence key of %d bytes", ErrCorrupt, len(k))
	}
	return binary.BigEndian.Uint64(k), nil
}

// destMeta is the per-destination record under destmeta/<name>: three big-endian
// uint64s, LastSeq, message count and body bytes. Its presence means an Add was
// committed to the destination.
type destMeta struct {
	lastSeq uint64
	msgs    int64
	bytes   int64
}

const destMetaLen = 24

func (d destMeta) encode() []byte {
	b := make([]byte, 0, destMetaLen)
	b = binary.BigEndian.AppendUint64(b, d.lastSeq)
	b = binary.BigEndian.AppendUint64(b, uint64(d.msgs))
	return binary.BigEndian.AppendUint64(b, uint64(d.bytes))
}

func decodeDestMeta(v []byte) (destMeta, error) {
	if len(v) != destMetaLen {
		return destMeta{}, fmt.Errorf("%w: destination record of %d bytes", ErrCorrupt, len(v))
	}
	d := destMeta{
		lastSeq: binary.BigEndian.Uint64(v),
		msgs:    int64(binary.BigEndian.Uint64(v[8:])),
		bytes:   int64(binary.BigEndian.Uint64(v[16:])),
	}
	if d.msgs < 0 || d.bytes < 0 {
		return destMeta{}, fmt.Errorf("%w: destination record with negative counts", ErrCorrupt)
	}
	return d, nil
}

// encodeSubKey returns the key of a durable subscription in the subs bucket:
// uvarint len(ClientID), ClientID, Name. The length prefix keeps the two fields
// apart, so {"a:b","c"} and {"a","b:c"} are different keys.
func encodeSubKey(k persistence.SubKey) []byte {
	b := make([]byte, 0, uvarintLen(uint64(len(k.ClientID)))+len(k.ClientID)+len(k.Name))
	b = appendString(b, k.ClientID)
	return append(b, k.Name...)
}

func decodeSubKey(b []byte) (persistence.SubKey, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return persistence.SubKey{}, fmt.Errorf("%w: subscription key", ErrCorrupt)
	}
	return persistence.SubKey{ClientID: string(b[k : k+int(n)]), Name: string(b[k+int(n):])}, nil
}

// subRecord is the value under subs/<key>: the subscription's internal id (which names
// its pending bucket and appears in owners records) and its SubInfo without the key.
//
//	0      version (1)
//	1..9   id, uint64
//	9..17  created, int64
//	17..   uvarint len(Dest), Dest, uvarint len(Selector), Selector
type subRecord struct {
	id   uint64
	info persistence.SubInfo // Key is filled in from the bucket key
}

const subFixedLen = 17

func (r subRecord) encode() []byte {
	b := make([]byte, subFixedLen, subFixedLen+2*binary.MaxVarintLen64+len(r.info.Dest)+len(r.info.Selector))
	b[0] = subRecordVersion
	binary.BigEndian.PutUint64(b[1:], r.id)
	binary.BigEndian.PutUint64(b[9:], uint64(r.info.Created))
	b = appendString(b, r.info.Dest)
	return appendString(b, r.info.Selector)
}

func decodeSubRecord(key persistence.SubKey, v []byte) (subRecord, error) {
	if len(v) < subFixedLen || v[0] != subRecordVersion {
		return subRecord{}, fmt.Errorf("%w: subscription record of %d bytes, version %d", ErrCorrupt, len(v), firstByte(v))
	}
	r := subRecord{id: binary.BigEndian.Uint64(v[1:])}
	r.info.Key = key
	r.info.Created = int64(binary.BigEndian.Uint64(v[9:]))
	rest := v[subFixedLen:]
	var ok bool
	if r.info.Dest, rest, ok = cutString(rest); !ok {
		return subRecord{}, fmt.Errorf("%w: subscription record: bad destination", ErrCorrupt)
	}
	if r.info.Selector, rest, ok = cutString(rest); !ok || len(rest) != 0 {
		return subRecord{}, fmt.Errorf("%w: subscription record: bad selector", ErrCorrupt)
	}
	if r.id == 0 {
		return subRecord{}, fmt.Errorf("%w: subscription record with id 0", ErrCorrupt)
	}
	return r, nil
}

// subIDKey returns the 8-byte big-endian key of a subscription id.
func subIDKey(id uint64) []byte { return seqKey(id) }

// Owners record: the value under owners/<topic>/<seq>, the ids of the subscriptions that
// still owe an acknowledgement for the message, 8 bytes big-endian each, in the order
// the Add named them. A stored topic message always has one with at least one id.

func encodeOwners(ids []uint64) []byte {
	b := make([]byte, 0, 8*len(ids))
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, id)
	}
	return b
}

func decodeOwners(v []byte, ids []uint64) ([]uint64, error) {
	if len(v) == 0 || len(v)%8 != 0 {
		return ids, fmt.Errorf("%w: owners record of %d bytes", ErrCorrupt, len(v))
	}
	for i := 0; i < len(v); i += 8 {
		ids = append(ids, binary.BigEndian.Uint64(v[i:]))
	}
	return ids, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// cutString reads a uvarint-prefixed string from b and returns the rest.
func cutString(b []byte) (string, []byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", b, false
	}
	return string(b[k : k+int(n)]), b[k+int(n):], true
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}
