package journal

import (
	"cmp"
	"context"
	"log/slog"
	"slices"

	"github.com/activemq-go/broker/persistence"
)

// Compaction limits per cleanup run.
const (
	compactMaxBytes = 64 << 20 // live bytes copied per run, at most
	compactBatch    = 1 << 20  // bytes per move batch
)

// cleanup is the periodic space reclamation: checkpoint (which deletes dead segments),
// compact mostly-dead segments, and checkpoint again so the segments just emptied are
// deleted.
func (s *Store) cleanup() error {
	if err := s.checkpoint(true); err != nil {
		return err
	}
	moved, err := s.compact()
	if err == nil && moved > 0 {
		err = s.checkpoint(true)
	}
	s.logPinned()
	return err
}

// logPinned says, when it changes, which destination holds the oldest live segment:
// what keeps the journal from shrinking (KahaDB users' most common question).
func (s *Store) logPinned() {
	file, dest, ok := s.OldestSegment()
	if !ok || file == s.pinnedLogged {
		return
	}
	s.pinnedLogged = file
	s.log.Info("journal: oldest live segment", slog.String("file", file), slog.String("heldBy", dest),
		slog.Int64("diskUsage", s.DiskUsage()))
}

// compactItem is a live message to copy forward.
type compactItem struct {
	dest string
	seq  uint64
	l    loc
}

// compact copies the live messages of sealed, mostly-dead segments (live bytes below
// CompactLiveRatio of the segment) to the end of the journal with Move records, so a few
// messages nobody consumes cannot pin whole segments. Only segments below the newest
// checkpoint's position are candidates (they are deleted by the next checkpoint once
// empty), oldest first, up to compactMaxBytes per run. It returns the number of messages
// copied.
//
// A Move is applied only if the message is still where it was copied from, so a message
// acknowledged (or replaced) while the compactor ran is not brought back: its copy is
// dead on arrival. Replay applies Moves the same way, so crash recovery ends in the same
// state.
func (s *Store) compact() (int, error) {
	if s.opts.CompactLiveRatio < 0 {
		return 0, nil
	}
	s.ckptMu.Lock()
	limit := uint32(0)
	if n := len(s.ckpts); n > 0 {
		limit = s.ckpts[n-1].pos.seg
	}
	s.ckptMu.Unlock()

	items := s.compactCandidates(limit)
	if len(items) == 0 {
		return 0, nil
	}
	moved, err := s.moveForward(items)
	if moved > 0 {
		s.log.Info("journal: compacted segments", slog.String("dir", s.opts.Dir), slog.Int("messages", moved))
	}
	return moved, err
}

// moveForward copies the messages of items to the end of the journal with Move records,
// in batches of about compactBatch bytes.
func (s *Store) moveForward(items []compactItem) (int, error) {
	slices.SortFunc(items, func(a, b compactItem) int {
		return cmp.Or(cmp.Compare(a.l.seg, b.l.seg), cmp.Compare(a.l.off, b.l.off))
	})
	moved := 0
	var (
		buf  []byte
		raws [][]byte
		locs []loc
	)
	for len(items) > 0 {
		n, bytes := 0, 0
		for n < len(items) && (n == 0 || bytes+int(items[n].l.n) <= compactBatch) {
			bytes += int(items[n].l.n)
			n++
		}
		chunk := items[:n]
		items = items[n:]
		locs = locs[:0]
		for _, it := range chunk {
			locs = append(locs, it.l)
		}
		b := s.shell.NewBatch()
		s.segs.mu.RLock()
		var errs []error
		buf, raws, errs = s.segs.readLocs(locs, buf, raws)
		for i, it := range chunk {
			err := error(nil)
			if errs != nil {
				err = errs[i]
			}
			if err == nil {
				_, err = peekMessage(raws[i])
			}
			if err != nil { // leave a damaged message where it is
				s.logCorruptOnce(it.dest, it.seq, it.l, err)
				continue
			}
			recordMove(b, it.dest, it.seq, it.l, raws[i])
		}
		s.segs.mu.RUnlock()
		if b.Len() == 0 {
			b.Rollback()
			continue
		}
		moved += b.Len()
		if err := b.Commit(context.Background(), persistence.Async); err != nil {
			return moved, err
		}
	}
	return moved, nil
}

// compactCandidates lists the live messages of the segments to compact. Those of
// extents are found by reading their segments, without the index lock.
func (s *Store) compactCandidates(limit uint32) []compactItem {
	s.segs.mu.RLock()
	defer s.segs.mu.RUnlock()
	items, exts, runs := s.compactChoose(limit)
	var buf []byte
	for _, cr := range runs {
		// The run's file is immutable; its bitmap was copied under the lock.
		for p := 0; p < cr.r.count; p += runFence {
			to := min(p+runFence, cr.r.count)
			var err error
			if buf, err = cr.r.readEntries(p, to, buf); err != nil {
				s.log.Warn("journal: compaction cannot read a run file", slog.String("file", cr.r.path), slog.Any("err", err))
				break
			}
			for q := p; q < to; q++ {
				if cr.live[q>>6]&(1<<(q&63)) != 0 {
					e := decodeRunEntry(buf[(q-p)*runEntryLen:], cr.r.seg)
					items = append(items, compactItem{dest: cr.dest, seq: e.seq, l: e.l})
				}
			}
		}
	}
	var rr recordReader
	for _, ce := range exts {
		seg := s.segs.get(ce.seg)
		if seg == nil || len(ce.want) == 0 {
			continue
		}
		out := make([]loc, len(ce.want))
		for i := range out {
			out[i].body = ce.bodies[i]
		}
		if _, err := rr.locate(ce.ext, seg, ce.dest, ce.start, ce.end, ce.want, out, nil); err != nil {
			s.log.Warn("journal: compaction cannot read a segment", slog.String("file", seg.path), slog.Any("err", err))
		}
		for i, l := range out {
			if l.off != 0 { // a message not found stays where it is
				items = append(items, compactItem{dest: ce.dest, seq: ce.want[i], l: l})
			}
		}
	}
	return items
}

// compactExtent is what compactCandidates reads of an extent: its stored seqs when it
// was listed and where to look for them.
type compactExtent struct {
	ext        *extent // identifies it (for the reader), not read without the lock
	dest       string
	seg        uint32
	start, end uint32
	want       []uint64
	bodies     []uint32
}

// compactRun is a run of a segment to compact, with its liveness bitmap when it was
// listed.
type compactRun struct {
	r    *run
	dest string
	live []uint64
}

// compactChoose picks the segments to compact under the index read lock and lists
// their messages: those of logs with their places, those of extents to be located,
// the runs to be read.
func (s *Store) compactChoose(limit uint32) ([]compactItem, []compactExtent, []compactRun) {
	s.shell.Mu.RLock()
	defer s.shell.Mu.RUnlock()
	if s.shell.Closed {
		return nil, nil, nil
	}
	chosen := make(map[uint32]bool)
	budget := int64(compactMaxBytes)
	for _, id := range s.segs.ids() {
		if id >= limit {
			break
		}
		st := s.idx.live[id]
		if st == nil || st.msgs == 0 {
			continue // deleted by the next checkpoint
		}
		capacity := s.segs.get(id).size.Load() - segHeaderSize
		if float64(st.bytes) >= s.opts.CompactLiveRatio*float64(capacity) || st.bytes > budget {
			continue
		}
		chosen[id] = true
		budget -= st.bytes
	}
	if len(chosen) == 0 {
		return nil, nil, nil
	}
	var items []compactItem
	var exts []compactExtent
	var runs []compactRun
	for _, d := range s.idx.dests {
		for _, e := range slices.Concat(d.ext, d.moved) {
			if !chosen[e.seg] || e.n == 0 {
				continue
			}
			ce := compactExtent{ext: e, dest: d.name, seg: e.seg, end: e.end}
			var lr lenReader
			e.after(0, func(seq uint64) bool {
				_, body := lr.get(&e.lens, seq)
				ce.want = append(ce.want, seq)
				ce.bodies = append(ce.bodies, body)
				return true
			})
			ce.start = e.strideOff(ce.want[0])
			exts = append(exts, ce)
		}
		d.log.After(0, func(seq uint64, l *loc) bool {
			if chosen[l.seg] {
				items = append(items, compactItem{dest: d.name, seq: seq, l: *l})
			}
			return true
		})
		for _, r := range d.runs {
			if chosen[r.seg] && r.n > 0 {
				runs = append(runs, compactRun{r: r, dest: d.name, live: slices.Clone(r.live)})
			}
		}
	}
	return items, exts, runs
}
