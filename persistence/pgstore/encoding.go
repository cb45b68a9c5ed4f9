package pgstore

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/activemq-go/broker/persistence"
)

// msgFormat is the version byte that starts a MSG value without a typed part,
// msgFormatTyped one with it. A reader refuses a version it does not know (ErrCorrupt)
// rather than guess.
const (
	msgFormat      = 1
	msgFormatTyped = 2
)

const flagPersistent = 1 << 0

// encodeMessage appends the MSG column encoding of m (format 1, or 2 with a typed part;
// described in the package comment) to dst. Dest, Seq and Subs are not part of it: they are columns
// and rows of their own.
func encodeMessage(dst []byte, m *persistence.Message) []byte {
	var flags byte
	if m.Persistent {
		flags |= flagPersistent
	}
	format := byte(msgFormat)
	if m.Typed() {
		format = msgFormatTyped
	}
	dst = append(dst, format, flags, m.Priority)
	dst = binary.AppendVarint(dst, m.Expires)
	dst = binary.AppendVarint(dst, m.Timestamp)
	dst = binary.AppendUvarint(dst, uint64(m.RedeliveryCount))
	if format == msgFormatTyped {
		dst = binary.AppendUvarint(dst, uint64(persistence.TypedLen(m)))
		dst = persistence.AppendTyped(dst, m)
	}
	// Strings: the ID, then the header keys and values; all lengths first, then all
	// bytes, so that a reader makes one string of the block and slices it.
	dst = binary.AppendUvarint(dst, uint64(1+len(m.Headers)))
	dst = binary.AppendUvarint(dst, uint64(len(m.ID)))
	for _, h := range m.Headers {
		dst = binary.AppendUvarint(dst, uint64(len(h)))
	}
	dst = append(dst, m.ID...)
	for _, h := range m.Headers {
		dst = append(dst, h...)
	}
	return append(dst, m.Body...)
}

// EncodeMessage appends the MSG encoding of m (format 1 or 2, in the package comment)
// to dst, for the other tables of the jdbc adapter that store messages in the same form
// (package pgshared's shared queues). Dest, Seq and Subs are not encoded.
func EncodeMessage(dst []byte, m *persistence.Message) []byte { return encodeMessage(dst, m) }

// DecodeMessage reads a value written by EncodeMessage into m, as the store does its
// MSG column: m.Body aliases b, the strings are copied; an unknown version or flag,
// or a length past the end, is ErrCorrupt.
func DecodeMessage(b []byte, m *persistence.Message) error { return decodeMessage(b, m) }

// encodedSize is an upper bound of len(encodeMessage(nil, m)).
func encodedSize(m *persistence.Message) int {
	n := 3 + 3*binary.MaxVarintLen64 + len(m.ID) + len(m.Body)
	for _, h := range m.Headers {
		n += binary.MaxVarintLen64 + len(h)
	}
	if m.Typed() {
		n += binary.MaxVarintLen64 + persistence.TypedLen(m)
	}
	return n
}

// decodeMessage fills every field of m but Dest, Seq and Subs from b. m.Body aliases
// b; the strings are copied (into one allocation). m.Headers reuses its capacity.
// Lengths are checked against what is left of b before anything is allocated.
func decodeMessage(b []byte, m *persistence.Message) error {
	d := decoder{b: b}
	format := d.byte()
	if format != msgFormat && format != msgFormatTyped {
		if d.err != nil {
			return d.err
		}
		return fmt.Errorf("%w: format version %d, this broker reads %d and %d", ErrCorrupt, format, msgFormat, msgFormatTyped)
	}
	flags := d.byte()
	prio := d.byte()
	expires := d.varint()
	ts := d.varint()
	redeliveries := d.uvarint()
	var typed []byte
	if format == msgFormatTyped {
		if n := d.uvarint(); n > uint64(len(d.b)) {
			d.fail("typed part")
		} else {
			typed, d.b = d.b[:n], d.b[n:]
		}
	}
	count := d.uvarint()
	if d.err != nil {
		return d.err
	}
	switch {
	case flags&^flagPersistent != 0:
		return fmt.Errorf("%w: unknown flags %#x", ErrCorrupt, flags)
	case redeliveries > math.MaxUint32:
		return fmt.Errorf("%w: redelivery count %d", ErrCorrupt, redeliveries)
	case count == 0 || count > uint64(len(d.b)):
		return fmt.Errorf("%w: %d strings", ErrCorrupt, count)
	}
	// The lengths are read twice (to size the block, then to cut it), so that nothing
	// is allocated for a corrupt value.
	lens := decoder{b: d.b}
	var total uint64
	for range count {
		total += lens.uvarint()
		if lens.err != nil || total > uint64(len(lens.b)) {
			return fmt.Errorf("%w: strings longer than the value", ErrCorrupt)
		}
	}
	block := string(lens.b[:total])
	body := lens.b[total:]
	m.Kind, m.Props = persistence.BodyPlain, nil
	if typed != nil {
		if err := persistence.ReadTyped(typed, m); err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}

	m.Persistent = flags&flagPersistent != 0
	m.Priority = prio
	m.Expires, m.Timestamp = expires, ts
	m.RedeliveryCount = uint32(redeliveries)
	var off uint64
	next := func() string {
		l := d.uvarint() // cannot fail: checked above
		s := block[off : off+l]
		off += l
		return s
	}
	m.ID = next()
	m.Headers = m.Headers[:0]
	for range count - 1 {
		m.Headers = append(m.Headers, next())
	}
	if len(body) == 0 {
		body = nil
	}
	m.Body = body
	return nil
}

// decoder reads from b and keeps the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated %s", ErrCorrupt, what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail("header")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("number")
		return 0
	}
	d.b = d.b[n:]
	return v
}
