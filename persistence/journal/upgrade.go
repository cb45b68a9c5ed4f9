package journal

import (
	"cmp"
	"log/slog"
	"slices"
	"time"
)

// minUpgradeRun is the fewest messages of one destination and segment, in seq and
// offset order, that extentsFromLogs turns into an extent: a shorter run costs less in
// the log.
const minUpgradeRun = 8

// upgradeItem is a message of a destination's log that extentsFromLogs may move.
type upgradeItem struct {
	d   *destination
	seq uint64
	l   loc
	rec uint32
}

// upgradeRecord is a record of a destination (by number) with a seq, in one segment.
type upgradeRecord struct {
	dest int
	seq  uint64
}

func (a upgradeRecord) compare(b upgradeRecord) int {
	return cmp.Or(cmp.Compare(a.dest, b.dest), cmp.Compare(a.seq, b.seq))
}

// extentsFromLogs moves messages of the destinations' logs into extents where that is
// safe: runs of a destination's messages in one segment whose seqs and offsets both
// increase, each message the only record of its seq for its destination in that
// segment (so reading forward from any point of the run finds it). Open runs it once
// after loading a version 1 checkpoint, which lists every message in a log: it reads
// each segment that holds such a message once, record by record.
func (s *Store) extentsFromLogs() {
	start := time.Now()
	segs := map[uint32]bool{}
	for _, d := range s.idx.dests {
		d.log.After(0, func(_ uint64, l *loc) bool {
			segs[l.seg] = true
			return true
		})
	}
	ids := make([]uint32, 0, len(segs))
	for id := range segs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	num := make(map[*destination]int, len(s.idx.dests))
	for _, d := range s.idx.dests {
		num[d] = len(num)
	}
	var rr recordReader
	var recs []upgradeRecord
	var items []upgradeItem
	moved := 0
	for _, id := range ids {
		seg := s.segs.segs[id]
		if seg == nil {
			continue
		}
		recs, items = recs[:0], items[:0]
		for p := int64(segHeaderSize); p < seg.size.Load(); {
			payload, rn, ok := rr.record(seg, p)
			if !ok {
				p += recordAlign
				continue
			}
			eachMessage(payload, 0, 0, func(dest []byte, seq uint64, msgOff, n uint32) bool {
				d := s.idx.dests[string(dest)]
				if d == nil {
					return true
				}
				l, ok := d.log.Get(seq)
				if !ok || l.seg != id {
					return true
				}
				recs = append(recs, upgradeRecord{num[d], seq})
				if int64(l.off) == p+int64(msgOff) && l.n == n {
					items = append(items, upgradeItem{d: d, seq: seq, l: l, rec: uint32(p)})
				}
				return true
			})
			p += int64(rn)
		}
		// Keep the messages that are the only record of their seq in the segment.
		slices.SortFunc(recs, upgradeRecord.compare)
		items = slices.DeleteFunc(items, func(it upgradeItem) bool {
			r := upgradeRecord{num[it.d], it.seq}
			i, _ := slices.BinarySearchFunc(recs, r, upgradeRecord.compare)
			return i+1 < len(recs) && recs[i+1] == r
		})
		slices.SortStableFunc(items, func(a, b upgradeItem) int { return cmp.Compare(a.d.name, b.d.name) })
		for i := 0; i < len(items); {
			j := i + 1
			for j < len(items) && items[j].d == items[i].d && items[j].seq > items[j-1].seq &&
				items[j].seq-items[j-1].seq <= extentGap && items[j].seq-items[i].seq <= 1<<31 {
				j++
			}
			if j-i >= minUpgradeRun && items[i].d.insertExtent(items[i:j]) {
				moved += j - i
			}
			i = j
		}
	}
	s.log.Info("journal: version 1 checkpoint: messages moved from logs to extents",
		slog.String("dir", s.opts.Dir), slog.Int("messages", moved), slog.Int("segments", len(ids)),
		slog.Duration("took", time.Since(start)))
}

// insertExtent makes an extent of items (messages of d's log, in one segment, seqs and
// offsets increasing) if its range overlaps none of d's extents, and takes them out of
// the log. It reports whether it did.
func (d *destination) insertExtent(items []upgradeItem) bool {
	lo, hi := items[0].seq, items[len(items)-1].seq
	i, _ := slices.BinarySearchFunc(d.ext, lo, func(e *extent, seq uint64) int { return cmp.Compare(e.lo, seq) })
	if (i > 0 && d.ext[i-1].hi >= lo) || (i < len(d.ext) && d.ext[i].lo <= hi) {
		return false
	}
	e := newExtent(items[0].seq, items[0].l, items[0].rec)
	for _, it := range items[1:] {
		e.append(it.seq, it.l, it.rec)
	}
	for _, it := range items {
		d.log.Remove(it.seq)
	}
	d.ext = slices.Insert(d.ext, i, e)
	return true
}
