package journal

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/activemq-go/broker/internal/vfs"
)

// Run file constants (part of the on-disk format, see the package comment).
const (
	runMagic     = "AMQGORUN"
	runVersion   = 1
	runHeaderLen = 24 // before the destination's name
	runEntryLen  = 20
	runTrailer   = 4
	// runFence is how many entries of a run one in-memory fence covers: a lookup
	// reads at most that many entries (1,280 bytes) of the file.
	runFence = 64
	// runBloomBits is the bits of a run's membership filter per entry, so an Add or
	// an Ack of a seq no run holds reads no file. The filter is blocked: a seq's
	// runBloomHashes bits are in one 64-bit word, so a probe costs one cache miss
	// (a destination's lookup probes every run); about 1% false positives.
	runBloomBits   = 12
	runBloomHashes = 5
	// spillMin is the fewest messages of one destination in one segment that a
	// checkpoint moves from the destination's log to a run file.
	spillMin = 1024
)

// runName is the file name of run id, made of segment seg's messages.
func runName(seg uint32, id uint64) string {
	return "run-" + strconv.FormatUint(uint64(seg), 10) + "-" + strconv.FormatUint(id, 10) + ".idx"
}

// parseRunName returns the segment and id of a run file name.
func parseRunName(name string) (uint32, uint64, bool) {
	s, ok := strings.CutPrefix(name, "run-")
	if !ok {
		return 0, 0, false
	}
	s, ok = strings.CutSuffix(s, ".idx")
	if !ok {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, false
	}
	seg, err1 := strconv.ParseUint(a, 10, 32)
	id, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil || seg == 0 || id == 0 || runName(uint32(seg), id) != name {
		return 0, 0, false
	}
	return uint32(seg), id, true
}

// run is a sorted run: the places of messages of one destination in one segment
// (sealed, or the active one at Close), sorted by seq, in a file of their own (written once, never changed), and
// in memory only what finds them: per position a liveness bit, a fence every runFence
// entries and a membership filter. About 1.7 bytes a message, plus ≈200 bytes a run.
//
// The file is immutable; live, n, bytes and body change under the Store's lock.
type run struct {
	id    uint64
	seg   uint32
	count int    // entries in the file
	crc   uint32 // of the file, as its trailer says
	hdr   int64  // offset of the first entry
	lo    uint64 // first and last seq of the file
	hi    uint64
	// fences[i] is the seq of entry i*runFence.
	fences []uint64
	bloom  []uint64
	live   []uint64 // bit p: the entry at position p is stored
	n      int64    // live entries
	bytes  int64    // their encoded lengths
	body   int64    // their body lengths
	maxEnd uint32   // the largest offset + length of an entry
	f      vfs.File
	path   string
}

// runEntry is one entry of a run file.
type runEntry struct {
	seq uint64
	l   loc
}

// mix64 is a 64-bit finaliser (splitmix64's), for the membership filter.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// bloomProbe returns the word of r's filter a seq of hash h (mix64 of the seq) sets
// bits in, and those bits: runBloomHashes 6-bit fields of h's low bits.
func (r *run) bloomProbe(h uint64) (int, uint64) {
	w := int((h >> 32) * uint64(len(r.bloom)) >> 32)
	var mask uint64
	for i := 0; i < runBloomHashes; i++ {
		mask |= 1 << (h >> (6 * i) & 63)
	}
	return w, mask
}

func (r *run) bloomAdd(seq uint64) {
	w, mask := r.bloomProbe(mix64(seq))
	r.bloom[w] |= mask
}

// mayHold reports whether the run's file may hold seq, whose mix64 is h (false: it
// certainly does not).
func (r *run) mayHold(seq, h uint64) bool {
	if seq < r.lo || seq > r.hi || r.n == 0 {
		return false
	}
	w, mask := r.bloomProbe(h)
	return r.bloom[w]&mask == mask
}

// isLive reports whether the entry at position p is stored.
func (r *run) isLive(p int) bool { return r.live[p>>6]&(1<<(p&63)) != 0 }

// nextLive returns the first live position after p (which is dead), or a position
// at or past count; dead words are skipped whole.
func (r *run) nextLive(p int) int {
	for w := p >> 6; w < len(r.live); w++ {
		word := r.live[w]
		if w == p>>6 {
			word &^= 1<<(p&63+1) - 1
		}
		if word != 0 {
			return w<<6 + bits.TrailingZeros64(word)
		}
	}
	return r.count
}

// setLive marks the entry e at position p stored.
func (r *run) setLive(p int, e runEntry) {
	r.live[p>>6] |= 1 << (p & 63)
	r.n++
	r.bytes += int64(e.l.n)
	r.body += int64(e.l.body)
}

// clear marks the entry e at position p no longer stored.
func (r *run) clear(p int, e runEntry) {
	r.live[p>>6] &^= 1 << (p & 63)
	r.n--
	r.bytes -= int64(e.l.n)
	r.body -= int64(e.l.body)
}

// index builds what finds a run's entries in memory: range, fences, filter.
func (r *run) index(entries func(yield func(p int, e runEntry))) {
	r.fences = make([]uint64, 0, (r.count+runFence-1)/runFence)
	r.bloom = make([]uint64, max(1, (r.count*runBloomBits+63)/64))
	r.live = make([]uint64, (r.count+63)/64)
	entries(func(p int, e runEntry) {
		if p == 0 {
			r.lo = e.seq
		}
		r.hi = e.seq
		if p%runFence == 0 {
			r.fences = append(r.fences, e.seq)
		}
		r.bloomAdd(e.seq)
		r.maxEnd = max(r.maxEnd, e.l.off+e.l.n)
	})
}

// decodeRunEntry decodes the entry at the start of b of a run of segment seg.
func decodeRunEntry(b []byte, seg uint32) runEntry {
	return runEntry{seq: binary.LittleEndian.Uint64(b), l: loc{seg: seg,
		off: binary.LittleEndian.Uint32(b[8:]), n: binary.LittleEndian.Uint32(b[12:]), body: binary.LittleEndian.Uint32(b[16:])}}
}

// runHeader returns the header of a run of dest's count messages in segment seg.
func runHeader(seg uint32, dest string, count int) []byte {
	h := make([]byte, 0, runHeaderLen+len(dest))
	h = append(h, runMagic...)
	h = binary.LittleEndian.AppendUint32(h, runVersion)
	h = binary.LittleEndian.AppendUint32(h, seg)
	h = binary.LittleEndian.AppendUint32(h, uint32(count))
	h = binary.LittleEndian.AppendUint32(h, uint32(len(dest)))
	return append(h, dest...)
}

// writeRun writes the run file id of dest's entries (sorted by seq, all in segment
// seg) to dir (write temp, fsync, rename, fsync directory) and opens it for reading.
// Every entry starts dead: the caller marks those still stored.
func writeRun(fsys vfs.FS, dir string, id uint64, seg uint32, dest string, entries []runEntry) (*run, error) {
	path := filepath.Join(dir, runName(seg, id))
	crc := crc32.New(castagnoli)
	err := vfs.WriteFileAtomicFunc(fsys, path, func(w io.Writer) error {
		bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<16)
		bw.Write(runHeader(seg, dest, len(entries)))
		var b [runEntryLen]byte
		for _, e := range entries {
			binary.LittleEndian.PutUint64(b[:], e.seq)
			binary.LittleEndian.PutUint32(b[8:], e.l.off)
			binary.LittleEndian.PutUint32(b[12:], e.l.n)
			binary.LittleEndian.PutUint32(b[16:], e.l.body)
			bw.Write(b[:])
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		_, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("journal: run %s: %w", path, err)
	}
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("journal: open run %s: %w", path, err)
	}
	r := &run{id: id, seg: seg, count: len(entries), crc: crc.Sum32(), hdr: int64(runHeaderLen + len(dest)), f: f, path: path}
	r.index(func(yield func(int, runEntry)) {
		for p, e := range entries {
			yield(p, e)
		}
	})
	return r, nil
}

// openRun opens run file id of segment seg, which a checkpoint says holds count
// entries of dest with checksum crc, and checks all of it: header, size, order and
// checksum. live is its liveness bitmap; the run counts what it marks.
func openRun(fsys vfs.FS, dir string, id uint64, seg uint32, dest string, count int, crc uint32, live []uint64) (*run, error) {
	path := filepath.Join(dir, runName(seg, id))
	data, err := readFile(fsys, path)
	if err != nil {
		return nil, err
	}
	hdr := runHeaderLen + len(dest)
	switch {
	case len(data) != hdr+count*runEntryLen+runTrailer:
		return nil, fmt.Errorf("%w: run %s is %d bytes, want %d", ErrCorrupt, path, len(data), hdr+count*runEntryLen+runTrailer)
	case string(data[:hdr]) != string(runHeader(seg, dest, count)):
		return nil, fmt.Errorf("%w: run %s: bad header", ErrCorrupt, path)
	case binary.LittleEndian.Uint32(data[len(data)-runTrailer:]) != crc || crc32.Checksum(data[:len(data)-runTrailer], castagnoli) != crc:
		return nil, fmt.Errorf("%w: run %s: checksum mismatch", ErrCorrupt, path)
	case len(live) != (count+63)/64 || (count%64 != 0 && len(live) > 0 && live[len(live)-1]>>(count%64) != 0):
		return nil, fmt.Errorf("%w: run %s: liveness bitmap does not match its %d entries", ErrCorrupt, path, count)
	}
	r := &run{id: id, seg: seg, count: count, crc: crc, hdr: int64(hdr), path: path}
	ents := data[hdr : len(data)-runTrailer]
	sorted := true
	r.index(func(yield func(int, runEntry)) {
		for p := range count {
			e := decodeRunEntry(ents[p*runEntryLen:], seg)
			if e.seq == 0 || e.seq > maxSeq || (p > 0 && e.seq <= r.hi) {
				sorted = false
			}
			yield(p, e)
		}
	})
	if !sorted {
		return nil, fmt.Errorf("%w: run %s: entries not sorted", ErrCorrupt, path)
	}
	r.live = slices.Clone(live)
	for w, word := range r.live {
		for ; word != 0; word &= word - 1 {
			p := w<<6 + bits.TrailingZeros64(word)
			e := decodeRunEntry(ents[p*runEntryLen:], seg)
			r.n++
			r.bytes += int64(e.l.n)
			r.body += int64(e.l.body)
		}
	}
	if r.f, err = fsys.Open(path); err != nil {
		return nil, fmt.Errorf("journal: open run %s: %w", path, err)
	}
	return r, nil
}

// readEntries reads the entries at positions [from, to) into buf.
func (r *run) readEntries(from, to int, buf []byte) ([]byte, error) {
	n := (to - from) * runEntryLen
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	got, err := r.f.ReadAt(buf, r.hdr+int64(from)*runEntryLen)
	if got == n {
		return buf, nil
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return nil, fmt.Errorf("journal: read run %s: %w", r.path, err)
}

// fenceOf returns the fence block whose range may hold seq (the last whose first
// seq is at most seq).
func (r *run) fenceOf(seq uint64) int {
	i, _ := slices.BinarySearch(r.fences, seq+1)
	return max(i-1, 0)
}

// find looks seq up in the file (one read of at most runFence entries) and returns
// its position and entry, live or not.
func (r *run) find(seq uint64, bufp *[]byte) (int, runEntry, bool, error) {
	blk := r.fenceOf(seq)
	from := blk * runFence
	to := min(from+runFence, r.count)
	buf, err := r.readEntries(from, to, *bufp)
	if err != nil {
		return 0, runEntry{}, false, err
	}
	*bufp = buf
	lo, hi := 0, to-from
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if binary.LittleEndian.Uint64(buf[m*runEntryLen:]) < seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < to-from {
		if e := decodeRunEntry(buf[lo*runEntryLen:], r.seg); e.seq == seq {
			return from + lo, e, true, nil
		}
	}
	return 0, runEntry{}, false, nil
}

// each calls fn for the live entries of r from position from on, until fn returns
// false; it reads the file a fence block at a time.
func (r *run) each(from int, bufp *[]byte, fn func(p int, e runEntry) bool) error {
	for p := from; p < r.count; {
		if !r.isLive(p) {
			p = r.nextLive(p)
			continue
		}
		start, to := p, min((p/runFence+1)*runFence, r.count)
		b, err := r.readEntries(start, to, *bufp)
		if err != nil {
			return err
		}
		*bufp = b
		for ; p < to; p++ {
			if r.isLive(p) && !fn(p, decodeRunEntry(b[(p-start)*runEntryLen:], r.seg)) {
				return nil
			}
		}
	}
	return nil
}

// runCursor walks the live entries of a run in seq order for Scan.
type runCursor struct {
	r    *run
	p    int    // position of the next entry to consider
	from int    // position of buf's first entry
	buf  []byte // entries read
	err  error
}

// seek places c on the first entry after afterSeq.
func (c *runCursor) seek(afterSeq uint64) {
	c.p = 0
	if afterSeq >= c.r.hi {
		c.p = c.r.count
		return
	}
	if afterSeq >= c.r.lo {
		c.p = c.r.fenceOf(afterSeq) * runFence
		for {
			s, _, ok := c.head()
			if !ok || s > afterSeq {
				return
			}
			c.p++
		}
	}
}

// head returns the next live entry, or false at the end (or after a read error,
// kept in c.err).
func (c *runCursor) head() (uint64, loc, bool) {
	r := c.r
	for c.err == nil && c.p < r.count {
		if !r.isLive(c.p) {
			c.p = r.nextLive(c.p)
			continue
		}
		if c.p < c.from || c.p >= c.from+len(c.buf)/runEntryLen {
			c.from = c.p
			c.buf, c.err = r.readEntries(c.p, min(c.p+runFence, r.count), c.buf)
			if c.err != nil {
				return 0, loc{}, false
			}
		}
		e := decodeRunEntry(c.buf[(c.p-c.from)*runEntryLen:], r.seg)
		return e.seq, e.l, true
	}
	return 0, loc{}, false
}

// runFind returns the run of d that stores seq, with its position and entry. It
// reads at most a fence block of the runs whose filter says they may hold seq.
func (d *destination) runFind(seq uint64, buf *[]byte) (*run, int, runEntry, bool, error) {
	h := mix64(seq)
	for _, r := range d.runs {
		if !r.mayHold(seq, h) {
			continue
		}
		p, e, ok, err := r.find(seq, buf)
		if err != nil {
			return nil, 0, runEntry{}, false, err
		}
		if ok && r.isLive(p) {
			return r, p, e, true, nil
		}
	}
	return nil, 0, runEntry{}, false, nil
}

// runRemove marks the entry e at position p of r no longer stored; a run left with
// nothing stored leaves d (its file stays until its segment is deleted).
func (d *destination) runRemove(r *run, p int, e runEntry) {
	r.clear(p, e)
	if r.n == 0 {
		d.runs = slices.DeleteFunc(d.runs, func(x *run) bool { return x == r })
	}
}
