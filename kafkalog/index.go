package kafkalog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/activemq-go/broker/internal/vfs"
)

// indexEntrySize is the size of one offset index entry: uint32 offset relative to the
// segment's base offset, uint32 byte position of the batch holding it in the .log file.
const indexEntrySize = 8

// indexEntry maps the first offset of a batch to the batch's position.
type indexEntry struct {
	rel uint32
	pos uint32
}

// offsetIndex is a segment's sparse offset index: entries in memory, mirrored by appends
// to the .index file. It has no checksum; recovery sanity-checks or rebuilds it.
//
// Entries reach the file in runs of indexWriteBytes, and all of them at flush (seal,
// rebuild): the file is only trusted after a clean shutdown, which seals the segment, so
// it may lag memory meanwhile, and an append does not cost two more writes.
type offsetIndex struct {
	f       vfs.File
	entries []indexEntry
	pending []byte // entries not yet written to f
}

// indexWriteBytes is how many bytes of new entries an index gathers before writing them.
const indexWriteBytes = 4 << 10

// add appends an entry to memory and the file.
func (x *offsetIndex) add(rel, pos uint32) error {
	x.pending = binary.BigEndian.AppendUint32(x.pending, rel)
	x.pending = binary.BigEndian.AppendUint32(x.pending, pos)
	x.entries = append(x.entries, indexEntry{rel, pos})
	if len(x.pending) >= indexWriteBytes {
		return x.flush()
	}
	return nil
}

// flush writes the entries not yet in the file.
func (x *offsetIndex) flush() error {
	return flushIndex(x.f, &x.pending)
}

// flushIndex writes *pending to f and empties it.
func flushIndex(f vfs.File, pending *[]byte) error {
	if len(*pending) == 0 {
		return nil
	}
	if _, err := f.Write(*pending); err != nil {
		return err
	}
	*pending = (*pending)[:0]
	return nil
}

// lookup returns the position of the batch to start a scan for rel at: the entry with
// the largest offset ≤ rel, or 0.
func (x *offsetIndex) lookup(rel uint32) int64 {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].rel > rel })
	if i == 0 {
		return 0
	}
	return int64(x.entries[i-1].pos)
}

// reset empties the index (before a rebuild).
func (x *offsetIndex) reset() error {
	x.entries, x.pending = x.entries[:0], x.pending[:0]
	return x.f.Truncate(0)
}

// errBadIndex marks an index that failed its sanity check.
var errBadIndex = errors.New("kafkalog: index fails sanity check")

// parseOffsetIndex decodes and checks index file contents: whole entries, offsets and
// positions strictly increasing, positions inside a log of logSize bytes, offsets below
// maxRel (the next segment's relative base, or no bound if negative).
func parseOffsetIndex(b []byte, logSize int64, maxRel int64) ([]indexEntry, error) {
	if len(b)%indexEntrySize != 0 {
		return nil, fmt.Errorf("%w: size %d", errBadIndex, len(b))
	}
	es := make([]indexEntry, len(b)/indexEntrySize)
	for i := range es {
		e := indexEntry{binary.BigEndian.Uint32(b[i*8:]), binary.BigEndian.Uint32(b[i*8+4:])}
		if i > 0 && (e.rel <= es[i-1].rel || e.pos <= es[i-1].pos) ||
			int64(e.pos) >= logSize || (maxRel >= 0 && int64(e.rel) >= maxRel) {
			return nil, fmt.Errorf("%w: entry %d", errBadIndex, i)
		}
		es[i] = e
	}
	return es, nil
}
