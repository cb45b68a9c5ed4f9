package kafkalog

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/activemq-go/broker/internal/vfs"
)

// timeEntrySize is the size of one time index entry: int64 timestamp (ms), uint32 offset
// relative to the segment's base. An entry (t, r) says: the largest timestamp of the
// records up to and including offset base+r is t.
const timeEntrySize = 12

type timeEntry struct {
	ts  int64
	rel uint32
}

// timeIndex is a segment's sparse time index, in memory and in the .timeindex file,
// which is written in runs as the offset index is.
// Entries have strictly increasing timestamps and non-decreasing offsets.
type timeIndex struct {
	f       vfs.File
	entries []timeEntry
	pending []byte // entries not yet written to f
}

// maybeAdd appends (ts, rel) if ts is larger than the last entry's timestamp.
func (x *timeIndex) maybeAdd(ts int64, rel uint32) error {
	if x.note(ts, rel) && len(x.pending) >= indexWriteBytes {
		return x.flush()
	}
	return nil
}

// note is maybeAdd without writing to the file: the entry waits in pending. It reports
// whether it added the entry.
func (x *timeIndex) note(ts int64, rel uint32) bool {
	if n := len(x.entries); n > 0 && ts <= x.entries[n-1].ts {
		return false
	}
	x.pending = binary.BigEndian.AppendUint64(x.pending, uint64(ts))
	x.pending = binary.BigEndian.AppendUint32(x.pending, rel)
	x.entries = append(x.entries, timeEntry{ts, rel})
	return true
}

// flush writes the entries not yet in the file.
func (x *timeIndex) flush() error {
	return flushIndex(x.f, &x.pending)
}

// lookup returns the relative offset to start a scan for the first record with a
// timestamp ≥ ts: the offset of the last entry whose timestamp is < ts (every record
// before it is older than ts), or 0.
func (x *timeIndex) lookup(ts int64) uint32 {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].ts >= ts })
	if i == 0 {
		return 0
	}
	return x.entries[i-1].rel
}

// last returns the newest entry, if any.
func (x *timeIndex) last() (timeEntry, bool) {
	if len(x.entries) == 0 {
		return timeEntry{}, false
	}
	return x.entries[len(x.entries)-1], true
}

func (x *timeIndex) reset() error {
	x.entries, x.pending = x.entries[:0], x.pending[:0]
	return x.f.Truncate(0)
}

// parseTimeIndex decodes and checks time index file contents.
func parseTimeIndex(b []byte, maxRel int64) ([]timeEntry, error) {
	if len(b)%timeEntrySize != 0 {
		return nil, fmt.Errorf("%w: time index size %d", errBadIndex, len(b))
	}
	es := make([]timeEntry, len(b)/timeEntrySize)
	for i := range es {
		e := timeEntry{int64(binary.BigEndian.Uint64(b[i*12:])), binary.BigEndian.Uint32(b[i*12+8:])}
		if i > 0 && (e.ts <= es[i-1].ts || e.rel < es[i-1].rel) || (maxRel >= 0 && int64(e.rel) >= maxRel) {
			return nil, fmt.Errorf("%w: time entry %d", errBadIndex, i)
		}
		es[i] = e
	}
	return es, nil
}
