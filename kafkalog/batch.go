package kafkalog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// Batch frame layout (format version 1, big-endian); see the package comment.
const (
	formatVersion   = 1
	batchHeaderSize = 43
	// offsets of the fixed fields
	bhBaseOffset  = 0
	bhLength      = 8
	bhMagic       = 12
	bhCRC         = 13
	bhAttributes  = 17
	bhLastDelta   = 19
	bhFirstTime   = 23
	bhMaxTime     = 31
	bhRecordCount = 39
	// bhCRCStart is where the checksummed bytes start.
	bhCRCStart = bhAttributes
	// batchLengthAdjust is the number of bytes before and including the length field.
	batchLengthAdjust = 12
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchHeader is the fixed part of a batch frame.
type batchHeader struct {
	BaseOffset      int64
	Length          int32 // bytes after the length field
	Magic           uint8
	CRC             uint32
	Attributes      uint16
	LastOffsetDelta int32
	FirstTimestamp  int64
	MaxTimestamp    int64
	Count           int32
}

// size is the whole frame's size in bytes.
func (h *batchHeader) size() int { return int(h.Length) + batchLengthAdjust }

// lastOffset is the offset of the batch's last record.
func (h *batchHeader) lastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// parseBatchHeader decodes and sanity-checks the fixed header in b (at least
// batchHeaderSize bytes). maxSize bounds the frame size.
func parseBatchHeader(b []byte, maxSize int) (batchHeader, error) {
	var h batchHeader
	if len(b) < batchHeaderSize {
		return h, fmt.Errorf("%w: short batch header (%d bytes)", ErrCorrupt, len(b))
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b[bhBaseOffset:]))
	h.Length = int32(binary.BigEndian.Uint32(b[bhLength:]))
	h.Magic = b[bhMagic]
	h.CRC = binary.BigEndian.Uint32(b[bhCRC:])
	h.Attributes = binary.BigEndian.Uint16(b[bhAttributes:])
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[bhLastDelta:]))
	h.FirstTimestamp = int64(binary.BigEndian.Uint64(b[bhFirstTime:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[bhMaxTime:]))
	h.Count = int32(binary.BigEndian.Uint32(b[bhRecordCount:]))
	switch {
	case h.Magic != formatVersion:
		return h, fmt.Errorf("%w: batch format version %d, want %d", ErrCorrupt, h.Magic, formatVersion)
	case h.BaseOffset < 0:
		return h, fmt.Errorf("%w: negative base offset", ErrCorrupt)
	case h.Length < batchHeaderSize-batchLengthAdjust || h.size() > maxSize:
		return h, fmt.Errorf("%w: batch length %d out of range", ErrCorrupt, h.Length)
	case h.Count <= 0 || h.LastOffsetDelta != h.Count-1:
		return h, fmt.Errorf("%w: record count %d, last offset delta %d", ErrCorrupt, h.Count, h.LastOffsetDelta)
	case int(h.Count) > int(h.Length): // every record takes at least one byte
		return h, fmt.Errorf("%w: record count %d exceeds batch length", ErrCorrupt, h.Count)
	case h.BaseOffset > math.MaxInt64-int64(h.Count):
		return h, fmt.Errorf("%w: base offset overflows", ErrCorrupt)
	}
	return h, nil
}

// appendBatch encodes recs as one batch frame with the given base offset, appending it to
// dst. Records with a zero Timestamp get now (ms). It returns the frame's header too.
func appendBatch(dst []byte, base int64, recs []Record, now int64) ([]byte, batchHeader) {
	start := len(dst)
	dst = append(dst, make([]byte, batchHeaderSize)...)
	first := recs[0].Timestamp
	if first == 0 {
		first = now
	}
	maxTs := first
	for i := range recs {
		r := &recs[i]
		ts := r.Timestamp
		if ts == 0 {
			ts = now
		}
		maxTs = max(maxTs, ts)
		dst = appendRecord(dst, r, ts-first, int64(i))
	}
	h := batchHeader{
		BaseOffset:      base,
		Length:          int32(len(dst) - start - batchLengthAdjust),
		Magic:           formatVersion,
		LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp:  first,
		MaxTimestamp:    maxTs,
		Count:           int32(len(recs)),
	}
	b := dst[start:]
	binary.BigEndian.PutUint64(b[bhBaseOffset:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(b[bhLength:], uint32(h.Length))
	b[bhMagic] = h.Magic
	binary.BigEndian.PutUint16(b[bhAttributes:], h.Attributes)
	binary.BigEndian.PutUint32(b[bhLastDelta:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(b[bhFirstTime:], uint64(h.FirstTimestamp))
	binary.BigEndian.PutUint64(b[bhMaxTime:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint32(b[bhRecordCount:], uint32(h.Count))
	h.CRC = crc32.Checksum(b[bhCRCStart:], castagnoli)
	binary.BigEndian.PutUint32(b[bhCRC:], h.CRC)
	return dst, h
}

// appendRecord appends one record: uvarint body length, then the body.
func appendRecord(dst []byte, r *Record, tsDelta, offDelta int64) []byte {
	var body [3 * binary.MaxVarintLen64]byte
	n := binary.PutVarint(body[:], tsDelta)
	n += binary.PutUvarint(body[n:], uint64(offDelta))
	bodyLen := n + bytesFieldLen(r.Key) + bytesFieldLen(r.Value) + uvarintLen(uint64(len(r.Headers)))
	for _, h := range r.Headers {
		bodyLen += uvarintLen(uint64(len(h[0]))) + len(h[0]) + uvarintLen(uint64(len(h[1]))) + len(h[1])
	}
	dst = binary.AppendUvarint(dst, uint64(bodyLen))
	dst = append(dst, body[:n]...)
	dst = appendBytesField(dst, r.Key)
	dst = appendBytesField(dst, r.Value)
	dst = binary.AppendUvarint(dst, uint64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.AppendUvarint(dst, uint64(len(h[0])))
		dst = append(dst, h[0]...)
		dst = binary.AppendUvarint(dst, uint64(len(h[1])))
		dst = append(dst, h[1]...)
	}
	return dst
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func varintLen(v int64) int {
	u := uint64(v) << 1
	if v < 0 {
		u = ^u
	}
	return uvarintLen(u)
}

// bytesFieldLen is the encoded size of a nullable byte string: varint length (-1 for
// nil), then the bytes.
func bytesFieldLen(b []byte) int {
	if b == nil {
		return varintLen(-1)
	}
	return varintLen(int64(len(b))) + len(b)
}

func appendBytesField(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// verifyBatch checks b (exactly one frame, header already parsed into h) against its
// checksum.
func verifyBatch(b []byte, h *batchHeader) error {
	if len(b) != h.size() {
		return fmt.Errorf("%w: batch is %d bytes, header says %d", ErrCorrupt, len(b), h.size())
	}
	if c := crc32.Checksum(b[bhCRCStart:], castagnoli); c != h.CRC {
		return fmt.Errorf("%w: batch at offset %d: crc %08x, want %08x", ErrCorrupt, h.BaseOffset, c, h.CRC)
	}
	return nil
}

// decodeBatch decodes one whole batch frame b, checking framing and checksum, and appends
// its records to dst. Key and Value alias b. maxSize bounds the frame.
func decodeBatch(dst []Record, b []byte, maxSize int) ([]Record, batchHeader, error) {
	h, err := parseBatchHeader(b, maxSize)
	if err != nil {
		return dst, h, err
	}
	if err := verifyBatch(b, &h); err != nil {
		return dst, h, err
	}
	p := b[batchHeaderSize:]
	var arena [][2]string // the batch's headers, shared by its records
	for i := range int(h.Count) {
		var r Record
		var rest []byte
		r, rest, err = decodeRecord(p, &h, int64(i), &arena)
		if err != nil {
			return dst, h, err
		}
		p = rest
		dst = append(dst, r)
	}
	if len(p) != 0 {
		return dst, h, fmt.Errorf("%w: %d trailing bytes in batch", ErrCorrupt, len(p))
	}
	return dst, h, nil
}

// decodeRecord decodes the record at the start of p, which must have offset delta i.
// Its Headers are carved out of *arena, which it refills as needed, sized for the rest of
// the batch; the header names and values share one string per record.
func decodeRecord(p []byte, h *batchHeader, i int64, arena *[][2]string) (Record, []byte, error) {
	var r Record
	bodyLen, n := binary.Uvarint(p)
	if n <= 0 || bodyLen > uint64(len(p)-n) {
		return r, nil, fmt.Errorf("%w: record %d: bad length", ErrCorrupt, i)
	}
	body, rest := p[n:n+int(bodyLen)], p[n+int(bodyLen):]
	tsDelta, n := binary.Varint(body)
	if n <= 0 {
		return r, nil, fmt.Errorf("%w: record %d: bad timestamp", ErrCorrupt, i)
	}
	body = body[n:]
	offDelta, n := binary.Uvarint(body)
	if n <= 0 || offDelta != uint64(i) {
		return r, nil, fmt.Errorf("%w: record %d: offset delta %d", ErrCorrupt, i, offDelta)
	}
	body = body[n:]
	r.Offset = h.BaseOffset + i
	r.Timestamp = h.FirstTimestamp + tsDelta
	var err error
	if r.Key, body, err = decodeBytesField(body); err != nil {
		return r, nil, fmt.Errorf("%w: record %d key", err, i)
	}
	if r.Value, body, err = decodeBytesField(body); err != nil {
		return r, nil, fmt.Errorf("%w: record %d value", err, i)
	}
	nh, n := binary.Uvarint(body)
	if n <= 0 || nh > uint64(len(body)-n)/2 { // each header takes at least two bytes
		return r, nil, fmt.Errorf("%w: record %d: bad header count", ErrCorrupt, i)
	}
	body = body[n:]
	if nh > 0 {
		if uint64(cap(*arena)-len(*arena)) < nh {
			// Guess that the records left have as many headers as this one, within what
			// the bytes left can hold (a header takes at least two bytes).
			n := min(nh*uint64(int64(h.Count)-i), max(nh, uint64(len(p))/2))
			*arena = make([][2]string, 0, n)
		}
		a := len(*arena)
		*arena = (*arena)[:a+int(nh)]
		r.Headers = (*arena)[a : a+int(nh) : a+int(nh)]
		hs := string(body) // every name and value, in one allocation
		at := 0
		for j := range r.Headers {
			for k := range 2 {
				l, n := binary.Uvarint(body)
				if n <= 0 || l > uint64(len(body)-n) {
					return r, nil, fmt.Errorf("%w: record %d: bad header", ErrCorrupt, i)
				}
				at += n
				r.Headers[j][k] = hs[at : at+int(l)]
				at += int(l)
				body = body[n+int(l):]
			}
		}
	}
	if len(body) != 0 {
		return r, nil, fmt.Errorf("%w: record %d: %d trailing bytes", ErrCorrupt, i, len(body))
	}
	return r, rest, nil
}

// decodeBytesField decodes a nullable byte string; the result aliases b.
func decodeBytesField(b []byte) ([]byte, []byte, error) {
	l, n := binary.Varint(b)
	switch {
	case n <= 0 || l < -1 || l > int64(len(b)-n):
		return nil, nil, ErrCorrupt
	case l == -1:
		return nil, b[n:], nil
	}
	return b[n : n+int(l) : n+int(l)], b[n+int(l):], nil
}
