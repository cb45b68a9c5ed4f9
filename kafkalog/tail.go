package kafkalog

// tail remembers the last batches appended to a segment: where each starts, so that a
// reader at the tail starts its scan at its own batch rather than at the index entry
// before it, and, within tailBytes, the frames themselves, so that it reads them from
// memory rather than from the file. Frames are copies that nothing writes to while they
// are held; a read copies them again, so that the records it returns own their memory as
// ever. The partition's lock guards it, like the rest of the segment: reads hold it for
// reading, so the buffer of a frame let go can be reused for the next one.
type tail struct {
	batches [tailBatches]tailBatch // a ring: batch n is batches[n%tailBatches]
	n       int                    // batches noted since the segment was opened
	bytes   int                    // of the frames held
	oldest  int                    // the oldest batch whose frame may be held
	spare   [][]byte               // buffers of frames let go, for the next keep
}

type tailBatch struct {
	rel   uint32 // offset of its first record, relative to the segment base
	pos   int64  // position in the log file
	frame []byte // nil when not held
}

// tailBatches is how many batches a tail remembers; tailBytes bounds the frames it holds.
const (
	tailBatches = 16
	tailBytes   = 256 << 10
)

// note records the batch that starts at pos, the last of the segment now (append and
// rebuild).
func (t *tail) note(rel uint32, pos int64) {
	b := &t.batches[t.n%tailBatches]
	t.release(b)
	*b = tailBatch{rel: rel, pos: pos}
	t.n++
	t.oldest = max(t.oldest, t.n-tailBatches)
}

// keep holds a copy of the frame of the batch noted last, dropping the oldest frames
// to stay within tailBytes.
func (t *tail) keep(frame []byte) {
	if len(frame) > tailBytes {
		return
	}
	for t.bytes+len(frame) > tailBytes {
		t.release(&t.batches[t.oldest%tailBatches])
		t.oldest++
	}
	var buf []byte
	if n := len(t.spare); n > 0 && cap(t.spare[n-1]) >= len(frame) {
		buf, t.spare = t.spare[n-1], t.spare[:n-1]
	}
	t.batches[(t.n-1)%tailBatches].frame = append(buf[:0], frame...)
	t.bytes += len(frame)
}

// release lets go of b's frame, keeping its buffer for reuse.
func (t *tail) release(b *tailBatch) {
	if b.frame == nil {
		return
	}
	t.bytes -= len(b.frame)
	if len(t.spare) < tailBatches {
		t.spare = append(t.spare, b.frame)
	}
	b.frame = nil
}

// drop lets go of the frames (the segment was sealed).
func (t *tail) drop() {
	for i := range t.batches {
		t.batches[i].frame = nil
	}
	t.bytes, t.oldest, t.spare = 0, t.n, nil
}

// lookup returns the position of the latest remembered batch that starts at or before
// rel, and its number; -1 if none does.
func (t *tail) lookup(rel uint32) (int64, int) {
	for i := t.n - 1; i >= max(t.n-tailBatches, 0); i-- {
		if b := &t.batches[i%tailBatches]; b.rel <= rel {
			return b.pos, i
		}
	}
	return 0, -1
}

// heldFrom reports whether the frames of batch i and of every later one are held.
func (t *tail) heldFrom(i int) bool {
	if i < t.oldest || i < t.n-tailBatches {
		return false
	}
	for ; i < t.n; i++ {
		if t.batches[i%tailBatches].frame == nil {
			return false
		}
	}
	return true
}

// frame returns the frame of batch i, which heldFrom said is held.
func (t *tail) frame(i int) []byte { return t.batches[i%tailBatches].frame }
