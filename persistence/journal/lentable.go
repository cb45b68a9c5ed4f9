package journal

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
)

// lenChunk is how many seqs a chunk of a lenTable covers: a lookup decodes the items of
// one chunk at most.
const lenChunk = 64

// The items of a lenTable, each a uvarint v whose low bits say what it is:
//
//	v&1 == 0  the message at the cursor has body length v>>1 (and the current
//	          overhead); the cursor moves on by one
//	v&3 == 1  the v>>2 messages from the cursor have the lengths of the one before
//	          (its body length, the current overhead); the cursor moves on by v>>2
//	v&7 == 3  v>>3 seqs from the cursor were not added; the cursor moves on by v>>3
//	v&7 == 7  the overhead of the messages that follow is v>>3, zigzag-coded (as
//	          encoding/binary's varint); the cursor stays
//
// A message's overhead is its encoded length minus its body length and the length of
// the body's uvarint length prefix: its other fields (headers, ID, seq), which change
// rarely from one message to the next while the body length does (a prefix of 1 or 2
// bytes for bodies below or above 128 bytes would otherwise change it at random). A
// chunk's items start with the cursor at the chunk's first seq and no lengths known.
const (
	itemRepeat = 1
	itemSkip   = 3
	itemOver   = 7
)

// lenTable holds the encoded and body lengths of the messages of an extent. While they
// change at most maxLenRuns-1 times (equal sizes: the seq and ID grow by a byte now and
// then) it holds runs: in items, per run a uvarint start seq (the first: the seq, the
// others: the difference from the one before), uvarint length, uvarint body length,
// for the seqs from there to the next run. Otherwise it holds items (above) in chunks
// of lenChunk seqs, chunk i covering the seqs from base+lenChunk*i, with the offset of
// each chunk's first item: equal sizes cost a few bytes a chunk, a body length of less
// than 8192 bytes that differs from the one before two bytes.
type lenTable struct {
	base   uint64   // chunks: first seq of chunk 0, a multiple of lenChunk
	end    uint64   // chunks: the seq after the last one added; runs: the last run's start
	chunks []uint32 // offset in items of each chunk's first item; none while in runs
	items  []byte
	tail   lenTail
	runs   int    // how many runs items holds (0 with chunks, or when empty)
	n0     uint32 // runs: the lengths of the last one
	body0  uint32
}

// maxLenRuns is how many runs a lenTable holds before it changes to chunks.
const maxLenRuns = 16

// lenTail is what add needs to know of the last chunk's items.
type lenTail struct {
	last    uint32 // offset of the last item, when it is a repeat
	body    uint32
	over    int64
	hasBody bool // body is the body length of the last message
	hasOver bool // over is the current overhead
	repeat  bool // the last item is a repeat
}

// overhead returns the overhead (see the items above) of a message of encoded length n
// and body length body.
func overhead(n, body uint32) int64 {
	return int64(n) - int64(body) - int64(uvarintLen(body))
}

// encodedLen returns the encoded length of a message with this body length and
// overhead.
func encodedLen(body uint32, over int64) int64 {
	return int64(body) + int64(uvarintLen(body)) + over
}

// uvarintLen returns the length of v as a uvarint.
func uvarintLen(v uint32) int {
	return (bits.Len32(v|1) + 6) / 7
}

// zigzag and unzigzag map an overhead to an unsigned integer and back, as
// encoding/binary's varint does.
func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

func (t *lenTable) put(v uint64) {
	t.items = binary.AppendUvarint(t.items, v)
}

// add records the lengths of seq as items, seq at or after t.end (or t empty).
func (t *lenTable) add(seq uint64, n, body uint32) {
	over := overhead(n, body)
	c := seq &^ (lenChunk - 1)
	if len(t.chunks) == 0 {
		t.base, t.end, t.items = c, c, t.items[:0]
		t.chunks = append(t.chunks, 0)
		t.tail = lenTail{}
	}
	for start := t.base + uint64(len(t.chunks)-1)*lenChunk; start < c; start += lenChunk {
		t.chunks = append(t.chunks, uint32(len(t.items)))
		t.end, t.tail = start+lenChunk, lenTail{}
	}
	if seq > t.end {
		t.put((seq-t.end)<<3 | itemSkip)
		t.tail.repeat = false
	}
	if !t.tail.hasOver || t.tail.over != over {
		t.put(zigzag(over)<<3 | itemOver)
		t.tail.over, t.tail.hasOver, t.tail.repeat = over, true, false
	}
	switch {
	case t.tail.hasBody && t.tail.body == body && t.tail.repeat:
		k, _ := binary.Uvarint(t.items[t.tail.last:])
		t.items = t.items[:t.tail.last]
		t.put((k>>2+1)<<2 | itemRepeat)
	case t.tail.hasBody && t.tail.body == body:
		t.tail.last, t.tail.repeat = uint32(len(t.items)), true
		t.put(1<<2 | itemRepeat)
	default:
		t.put(uint64(body) << 1)
		t.tail.body, t.tail.hasBody, t.tail.repeat = body, true, false
	}
	t.end = seq + 1
}

// set records the lengths of seq, which must be after every seq added before. When
// runs no longer do, it changes to chunks, adding stored (the seqs that still need
// their lengths, in order) as items.
func (t *lenTable) set(seq uint64, n, body uint32, stored func(fn func(seq uint64) bool)) {
	if len(t.chunks) == 0 {
		switch {
		case t.runs == 0:
			t.items = appendRun(t.items[:0], seq, n, body)
			t.runs, t.end, t.n0, t.body0 = 1, seq, n, body
			return
		case n == t.n0 && body == t.body0:
			return
		case t.runs < maxLenRuns:
			t.items = appendRun(t.items, seq-t.end, n, body)
			t.runs, t.end, t.n0, t.body0 = t.runs+1, seq, n, body
			return
		}
		old := *t
		*t = lenTable{}
		stored(func(s uint64) bool {
			if s >= seq {
				return false
			}
			n, body := old.runLengths(s)
			t.add(s, n, body)
			return true
		})
	}
	t.add(seq, n, body)
}

func appendRun(b []byte, from uint64, n, body uint32) []byte {
	b = binary.AppendUvarint(b, from)
	b = binary.AppendUvarint(b, uint64(n))
	return binary.AppendUvarint(b, uint64(body))
}

// eachRun calls fn for the runs of t (which holds runs): each one's start and lengths.
func (t *lenTable) eachRun(fn func(from uint64, n, body uint32) bool) {
	p, from := 0, uint64(0)
	for range t.runs {
		d, k1 := binary.Uvarint(t.items[p:])
		n, k2 := binary.Uvarint(t.items[p+k1:])
		body, k3 := binary.Uvarint(t.items[p+k1+k2:])
		p, from = p+k1+k2+k3, from+d
		if !fn(from, uint32(n), uint32(body)) {
			return
		}
	}
}

// runLengths returns the lengths of seq from the runs of t.
func (t *lenTable) runLengths(seq uint64) (n, body uint32) {
	t.eachRun(func(from uint64, rn, rbody uint32) bool {
		if from > seq {
			return false
		}
		n, body = rn, rbody
		return true
	})
	return n, body
}

// get returns the encoded and body length of seq, which was added to t.
func (t *lenTable) get(seq uint64) (n, body uint32) {
	var r lenReader
	return r.get(t, seq)
}

// lenReader looks lengths up in a lenTable, resuming from the last lookup when the next
// is further on in the same chunk (a scan's lookups decode each chunk once).
type lenReader struct {
	t         *lenTable
	chunk     int
	p         int    // offset in t.items of the next item
	from, cur uint64 // the seqs in [from, cur) have the lengths below; cur: the cursor
	body      uint32
	over      int64
}

// get returns the encoded and body length of seq, which was added to t.
func (r *lenReader) get(t *lenTable, seq uint64) (n, body uint32) {
	if len(t.chunks) == 0 {
		return t.runLengths(seq)
	}
	i := int((seq - t.base) / lenChunk)
	if r.t != t || r.chunk != i || seq < r.from {
		r.t, r.chunk, r.p = t, i, int(t.chunks[i])
		r.cur = t.base + uint64(i)*lenChunk
		r.from = r.cur
	}
	for seq >= r.cur {
		var v uint64
		if b := t.items[r.p]; b < 0x80 {
			v = uint64(b)
			r.p++
		} else if c := t.items[r.p+1]; c < 0x80 { // a body length below 8192
			v = uint64(b&0x7f) | uint64(c)<<7
			r.p += 2
		} else {
			var k int
			v, k = binary.Uvarint(t.items[r.p:])
			r.p += k
		}
		switch {
		case v&1 == 0:
			r.body, r.from = uint32(v>>1), r.cur
			r.cur++
		case v&3 == itemRepeat:
			r.from = r.cur
			r.cur += v >> 2
		case v&7 == itemSkip:
			r.cur += v >> 3
			r.from = r.cur
		default:
			r.over, r.from = unzigzag(v>>3), r.cur
		}
	}
	return uint32(encodedLen(r.body, r.over)), r.body
}

// trim drops the chunks below the one of first (the first seq still stored) once they
// are more than half of the table, so a drain copies each item O(1) times.
func (t *lenTable) trim(first uint64) {
	if len(t.chunks) == 0 || first < t.base {
		return
	}
	k := min(int((first-t.base)/lenChunk), len(t.chunks)-1)
	if k <= len(t.chunks)/2 {
		return
	}
	off := t.chunks[k]
	t.items = slices.Clone(t.items[off:])
	chunks := make([]uint32, len(t.chunks)-k)
	for i := range chunks {
		chunks[i] = t.chunks[k+i] - off
	}
	t.chunks = chunks
	if t.tail.repeat {
		t.tail.last -= off
	}
	t.base += uint64(k) * lenChunk
}

// clone returns a deep copy of t.
func (t *lenTable) clone() lenTable {
	c := *t
	c.chunks = slices.Clone(t.chunks)
	c.items = slices.Clone(t.items)
	return c
}

// chunkEnd returns the offset in t.items after chunk i's last item.
func (t *lenTable) chunkEnd(i int) uint32 {
	if i+1 < len(t.chunks) {
		return t.chunks[i+1]
	}
	return uint32(len(t.items))
}

// walk decodes every item of t, checking that each chunk's items are well formed (a
// message's lengths known when it is given, its encoded length at least its body length
// and below 2^32, the cursor
// within the chunk, and at t.end after the last chunk), and calls fn for each range of
// seqs [from, to) given the same lengths. It returns false, and leaves t.tail unset, if
// an item is malformed; otherwise it sets t.tail to what add needs to continue.
func (t *lenTable) walk(fn func(from, to uint64, n, body uint32)) bool {
	for i := range t.chunks {
		start := t.base + uint64(i)*lenChunk
		cur, limit := start, start+lenChunk
		b := t.items[t.chunks[i]:t.chunkEnd(i)]
		tail := lenTail{}
		for p := 0; p < len(b); {
			v, k := binary.Uvarint(b[p:])
			if k <= 0 {
				return false
			}
			at := p
			p += k
			switch {
			case v&1 == 0:
				body := v >> 1
				if !tail.hasOver || cur >= limit || body > math.MaxUint32 {
					return false
				}
				tail.body, tail.hasBody, tail.repeat = uint32(body), true, false
				n := encodedLen(tail.body, tail.over)
				if n < int64(tail.body) || n > math.MaxUint32 {
					return false
				}
				fn(cur, cur+1, uint32(n), tail.body)
				cur++
			case v&3 == itemRepeat:
				c := v >> 2
				if !tail.hasBody || c == 0 || c > limit-cur {
					return false
				}
				n := encodedLen(tail.body, tail.over)
				if n < int64(tail.body) || n > math.MaxUint32 {
					return false
				}
				tail.last, tail.repeat = t.chunks[i]+uint32(at), true
				fn(cur, cur+c, uint32(n), tail.body)
				cur += c
			case v&7 == itemSkip:
				c := v >> 3
				if c == 0 || c > limit-cur {
					return false
				}
				cur += c
				tail.repeat = false
			default:
				over := unzigzag(v >> 3)
				if over < -math.MaxUint32 || over > math.MaxUint32 {
					return false
				}
				tail.over, tail.hasOver, tail.repeat = over, true, false
			}
		}
		if i == len(t.chunks)-1 {
			if cur != t.end {
				return false
			}
			t.tail = tail
		}
	}
	return true
}
