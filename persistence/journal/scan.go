package journal

import (
	"context"
	"fmt"

	"github.com/activemq-go/broker/persistence"
)

// Scan limits: a scan gathers up to scanChunk messages (or scanChunkBytes of them) per
// round, reads them from the segments, and calls fn for them without any lock held.
const (
	scanChunk      = 128
	scanChunkBytes = 1 << 20
)

// Scan implements persistence.Store: it reads the messages back from the segment files
// (the index holds only their places). A message whose stored bytes fail their checksum
// is logged and skipped. fn may call the store.
func (s *Store) Scan(ctx context.Context, dest string, afterSeq uint64, max int, fn func(*persistence.Message) error) error {
	return s.scan(ctx, afterSeq, max, fn, func() (*destination, *subscription, error) {
		return s.idx.dests[dest], nil, nil
	})
}

// ScanSub implements persistence.Store. An unknown subscription is an error wrapping
// persistence.ErrUnknownSub; a subscription removed while the scan runs ends it.
func (s *Store) ScanSub(ctx context.Context, key persistence.SubKey, afterSeq uint64, max int, fn func(*persistence.Message) error) error {
	first := true
	return s.scan(ctx, afterSeq, max, fn, func() (*destination, *subscription, error) {
		sub := s.idx.subs[key]
		switch {
		case sub != nil:
			first = false
			return sub.dest, sub, nil
		case first:
			return nil, nil, fmt.Errorf("%w: %s", persistence.ErrUnknownSub, key)
		}
		return nil, nil, nil
	})
}

// scanItem is a gathered message: its seq and place; its pending subscriptions are
// keys[from:to]. A message of an extent has its offset found by reading forward from
// start, up to limit (the extent's end when it was gathered).
type scanItem struct {
	seq          uint64
	from, to     int
	ext          *extent
	start, limit uint32
}

// scanState is the reusable memory of one scan.
type scanState struct {
	items []scanItem
	locs  []loc
	keys  []persistence.SubKey
	want  []uint64
	rr    recordReader
	ebuf  []byte // the messages of extents, copied as they are found
	buf   []byte // the messages of logs, read by place
	raws  [][]byte
	lidx  []int // the items of logs
	llocs []loc
	lraws [][]byte
	hdrs  []string
	rbuf  []byte // run lookups
	msg   persistence.Message
}

// scan runs rounds: under the segment set's read lock (so no segment is closed while it
// is read) and briefly the index read lock, it gathers the next chunk of messages after
// afterSeq of what find returns (a destination, or a subscription's pending set), reads
// their bytes, and then calls fn for each without locks. Writers are never blocked by a
// slow fn; the scan is not a snapshot.
func (s *Store) scan(ctx context.Context, afterSeq uint64, max int, fn func(*persistence.Message) error,
	find func() (*destination, *subscription, error)) error {
	var st scanState
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		want := scanChunk
		if max > 0 {
			want = min(want, max)
		}
		s.segs.mu.RLock()
		name, more, err := s.gather(&st, afterSeq, want, find)
		if err != nil || len(st.items) == 0 {
			s.segs.mu.RUnlock()
			return err
		}
		errs := s.resolve(&st, name)
		st.lidx, st.llocs = st.lidx[:0], st.llocs[:0]
		for i, it := range st.items {
			if it.ext == nil {
				st.lidx = append(st.lidx, i)
				st.llocs = append(st.llocs, st.locs[i])
			}
		}
		if len(st.lidx) > 0 {
			var rerrs []error
			st.buf, st.lraws, rerrs = s.segs.readLocs(st.llocs, st.buf, st.lraws)
			for k, i := range st.lidx {
				st.raws[i] = st.lraws[k]
				if rerrs != nil && rerrs[k] != nil {
					if errs == nil {
						errs = make([]error, len(st.items))
					}
					errs[i] = rerrs[k]
				}
			}
		}
		s.segs.mu.RUnlock()

		st.msg.Dest = name
		for i, it := range st.items {
			var err error
			if errs != nil && errs[i] != nil {
				err = errs[i]
			} else {
				err = decodeMessage(st.raws[i], &st.msg, st.hdrs)
			}
			if err != nil {
				s.logCorruptOnce(name, it.seq, st.locs[i], err)
				continue
			}
			st.hdrs = st.msg.Headers[:0]
			st.msg.Subs = nil
			if it.to > it.from {
				st.msg.Subs = st.keys[it.from:it.to:it.to]
			}
			if err := fn(&st.msg); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
		afterSeq = st.items[len(st.items)-1].seq
		if max > 0 {
			if max -= len(st.items); max <= 0 {
				return nil
			}
		}
	}
}

// gather fills st with up to want messages after afterSeq under the index read lock. It
// returns the destination's name and whether there may be more.
func (s *Store) gather(st *scanState, afterSeq uint64, want int,
	find func() (*destination, *subscription, error)) (string, bool, error) {
	st.items, st.locs, st.keys = st.items[:0], st.locs[:0], st.keys[:0]
	s.shell.Mu.RLock()
	defer s.shell.Mu.RUnlock()
	if s.shell.Closed {
		return "", false, persistence.ErrClosed
	}
	d, sub, err := find()
	if d == nil {
		return "", false, err
	}
	bytes := 0
	more := false
	visit := func(seq uint64, e *extent, l loc) bool {
		if len(st.items) == want || (len(st.items) > 0 && bytes+int(l.n) > scanChunkBytes) {
			more = true
			return false
		}
		from := len(st.keys)
		if d.topic {
			st.keys = d.pendingKeys(seq, st.keys)
		}
		it := scanItem{seq: seq, from: from, to: len(st.keys), ext: e}
		if e != nil {
			it.start, it.limit = e.strideOff(seq), e.end
		}
		st.items = append(st.items, it)
		st.locs = append(st.locs, l)
		bytes += int(l.n)
		return true
	}
	if sub != nil {
		var lr lenReader
		sub.pending.After(afterSeq, func(seq uint64) bool {
			if e := d.extentOf(seq); e != nil {
				n, body := lr.get(&e.lens, seq)
				return visit(seq, e, loc{seg: e.seg, n: n, body: body})
			}
			if l, ok := d.log.Get(seq); ok {
				return visit(seq, nil, l)
			}
			_, _, e, ok, rerr := d.runFind(seq, &st.rbuf)
			if rerr != nil {
				err = rerr
				return false
			}
			return !ok || visit(seq, nil, e.l)
		})
	} else {
		err = d.each(afterSeq, visit)
	}
	if err != nil {
		return "", false, err
	}
	return d.name, more, nil
}

// resolve finds the gathered messages of extents by reading their segments forward
// from their sparse entries, and copies them out as it finds them: st.raws[i] holds
// the bytes of item i if it is of an extent (nil if it is of a log). The caller holds
// segs.mu for reading, not the index lock. It returns an error for each message that
// could not be found (nil when all were).
func (s *Store) resolve(st *scanState, dest string) []error {
	total := 0
	for i, it := range st.items {
		if it.ext != nil {
			total += int(st.locs[i].n)
		}
	}
	if cap(st.ebuf) < total {
		st.ebuf = make([]byte, total)
	}
	st.raws = st.raws[:0]
	at := 0
	for i, it := range st.items {
		if it.ext == nil {
			st.raws = append(st.raws, nil)
			continue
		}
		n := int(st.locs[i].n)
		st.raws = append(st.raws, st.ebuf[at:at+n:at+n])
		at += n
	}
	var errs []error
	fail := func(i int, err error) {
		if errs == nil {
			errs = make([]error, len(st.items))
		}
		errs[i] = err
		st.locs[i].off, st.locs[i].n = 0, 0
	}
	for i := 0; i < len(st.items); {
		e := st.items[i].ext
		if e == nil {
			i++
			continue
		}
		j := i + 1
		for j < len(st.items) && st.items[j].ext == e {
			j++
		}
		st.want = st.want[:0]
		for k := i; k < j; k++ {
			st.want = append(st.want, st.items[k].seq)
			st.locs[k].off = 0
		}
		var err error
		if seg := s.segs.get(e.seg); seg == nil {
			err = fmt.Errorf("%w: segment %s is missing", ErrCorrupt, segmentName(e.seg))
		} else {
			_, err = st.rr.locate(e, seg, dest, st.items[i].start, st.items[i].limit, st.want, st.locs[i:j], st.raws[i:j])
		}
		for k := i; k < j; k++ {
			switch {
			case st.locs[k].off != 0: // found, if before a read error
			case err != nil:
				fail(k, err)
			default:
				fail(k, fmt.Errorf("%w: message not found in %s", ErrCorrupt, segmentName(e.seg)))
			}
		}
		i = j
	}
	return errs
}
