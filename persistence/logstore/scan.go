package logstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/activemq-go/broker/kafkalog"
	"github.com/activemq-go/broker/persistence"
)

// Scan paging.
const (
	// scanPage is how many messages a scan picks from the index per round; the lock is
	// held only while picking, never while reading the log or calling fn.
	scanPage = 128
	// minReadBytes and maxReadBytes bound one read of the log (beyond the one log batch
	// a read always returns): enough to take a run of adjacent records at once, not so
	// much that a sparse page reads megabytes it skips.
	minReadBytes = 64 << 10
	maxReadBytes = 4 << 20
	// readOverhead estimates the bytes of a message besides its body, to size reads.
	readOverhead = 128
)

// pageEntry is a message picked from the index for a scan page.
type pageEntry struct {
	dest string
	seq  uint64
	loc  msgLoc
	subs []persistence.SubKey
}

// pickFunc appends to page up to limit entries with a seq above after, in seq order.
// The caller holds the Store's read lock.
type pickFunc func(after uint64, limit int, page []pageEntry) ([]pageEntry, error)

// Scan calls fn, in sequence order, for up to max stored messages of dest whose seq is
// greater than afterSeq (max <= 0: no limit), reading them back from the log a page at
// a time.
func (s *Store) Scan(ctx context.Context, dest string, afterSeq uint64, max int, fn func(*persistence.Message) error) error {
	return s.scan(ctx, afterSeq, max, fn, func(after uint64, limit int, page []pageEntry) ([]pageEntry, error) {
		d := s.idx.dests[dest]
		if d == nil {
			return page, nil
		}
		d.log.After(after, func(seq uint64, l *msgLoc) bool {
			page = append(page, pageEntry{dest: d.name, seq: seq, loc: *l, subs: d.owers(seq, nil)})
			return len(page) < limit
		})
		return page, nil
	})
}

// ScanSub is Scan over the messages the durable subscription key still has to
// acknowledge. It fails with an error wrapping persistence.ErrUnknownSub if the store
// does not hold the subscription.
func (s *Store) ScanSub(ctx context.Context, key persistence.SubKey, afterSeq uint64, max int, fn func(*persistence.Message) error) error {
	return s.scan(ctx, afterSeq, max, fn, func(after uint64, limit int, page []pageEntry) ([]pageEntry, error) {
		sub := s.idx.subs[key]
		if sub == nil {
			return page, fmt.Errorf("%w: %s", persistence.ErrUnknownSub, key)
		}
		d := sub.dest
		sub.pending.After(after, func(seq uint64, _ *struct{}) bool {
			if l := d.log.Get(seq); l != nil {
				page = append(page, pageEntry{dest: d.name, seq: seq, loc: *l, subs: d.owers(seq, nil)})
			}
			return len(page) < limit
		})
		return page, nil
	})
}

// scan runs the paging loop of Scan and ScanSub: pages of up to scanPage messages after
// after, at most total messages in all (total <= 0: no limit).
func (s *Store) scan(ctx context.Context, after uint64, total int, fn func(*persistence.Message) error, pick pickFunc) error {
	var (
		page  []pageEntry
		msgs  []persistence.Message
		ahead readAhead
	)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		limit := scanPage
		if total > 0 {
			limit = min(limit, total)
		}
		var err error
		if page, msgs, err = s.readPage(after, limit, page[:0], msgs[:0], pick, &ahead); err != nil {
			return err
		}
		for i := range msgs {
			if err := fn(&msgs[i]); err != nil {
				return err
			}
		}
		if len(page) < limit {
			return nil
		}
		after = page[len(page)-1].seq
		if total > 0 {
			if total -= len(page); total == 0 {
				return nil
			}
		}
	}
}

// readPage picks up to limit entries and reads their messages from the log. It holds
// delMu for reading throughout, so no segment it reads from is deleted under it.
func (s *Store) readPage(after uint64, limit int, page []pageEntry, msgs []persistence.Message, pick pickFunc,
	ahead *readAhead) ([]pageEntry, []persistence.Message, error) {
	s.delMu.RLock()
	defer s.delMu.RUnlock()
	s.shell.Mu.RLock()
	if s.shell.Closed {
		s.shell.Mu.RUnlock()
		return page, msgs, persistence.ErrClosed
	}
	page, err := pick(after, limit, page)
	s.shell.Mu.RUnlock()
	if err != nil || len(page) == 0 {
		return page, msgs, err
	}
	want := 0
	for _, e := range page {
		want += int(e.loc.bodyBytes) + readOverhead
	}
	budget := min(max(want, minReadBytes), maxReadBytes)
	for _, e := range page {
		v, err := ahead.value(s, e.loc.off, budget)
		if err != nil {
			return page, msgs, err
		}
		msg, err := messageAt(v, e.loc.pos)
		if err != nil {
			return page, msgs, fmt.Errorf("logstore: message %d at offset %d: %w", e.seq, e.loc.off, err)
		}
		msgs = append(msgs, persistence.Message{})
		m := &msgs[len(msgs)-1]
		if err := decodeMessage(msg, m, e.dest); err != nil {
			return page, msgs, fmt.Errorf("logstore: message %d at offset %d: %w", e.seq, e.loc.off, err)
		}
		if m.Seq != e.seq {
			return page, msgs, fmt.Errorf("%w: offset %d holds seq %d where the index has %d", ErrCorrupt, e.loc.off, m.Seq, e.seq)
		}
		m.Subs = e.subs
	}
	return page, msgs, nil
}

// readAhead keeps the records of a scan's last log read. A read returns whole log
// batches (one per writer round, up to maxGroupBytes) from the offset asked for on, so
// the messages of a queue filled in order sit in the records one read returned: the
// next pages of the scan find them here instead of decoding the same batch again.
type readAhead struct {
	recs []kafkalog.Record // ascending offsets
}

// value returns the value of the record at off, reading from the log (budget bytes from
// off on) when the last read did not return it.
func (a *readAhead) value(s *Store, off int64, budget int) ([]byte, error) {
	if i, ok := slices.BinarySearchFunc(a.recs, off, func(r kafkalog.Record, off int64) int {
		return cmp.Compare(r.Offset, off)
	}); ok {
		return a.recs[i].Value, nil
	}
	recs, err := s.log.Read(logTopic, 0, off, budget)
	if err != nil {
		return nil, fmt.Errorf("logstore: read offset %d: %w", off, err)
	}
	if len(recs) == 0 || recs[0].Offset != off {
		return nil, fmt.Errorf("%w: offset %d is not in the log", ErrCorrupt, off)
	}
	a.recs = recs
	return recs[0].Value, nil
}
