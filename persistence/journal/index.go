package journal

import (
	"cmp"
	"math"
	"slices"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/batchrec"
	"github.com/activemq-go/broker/persistence/internal/indexstate"
)

// loc is where a stored message is in the journal: segment, offset and length of its
// encoding, and the length of its body (for Stats). 16 bytes; with its key a message
// kept in a destination's log of out-of-order messages costs 24 bytes of index.
type loc struct {
	seg  uint32
	off  uint32
	n    uint32
	body uint32
}

// pos is a position in the journal: a segment and an offset in it.
type pos struct {
	seg uint32
	off int64
}

func (p pos) compare(q pos) int {
	return cmp.Or(cmp.Compare(p.seg, q.seg), cmp.Compare(p.off, q.off))
}

// destination is the index of one qualified destination. Its messages are in extents
// (see extent) when they were appended in seq order, which is how queues and topics
// are written, and the compactor's copies in moved extents; the others (scheduled
// jobs, whose seqs are due times, a batch that reached the writer after a later one, a
// replaced message) are in log with their exact place. A seq is stored in at most one
// of them.
type destination struct {
	name    string
	topic   bool
	added   bool   // an Add was ever applied: only such destinations are recovered
	lastSeq uint64 // highest seq ever added
	msgs    int64
	bytes   int64     // sum of len(Body)
	ext     []*extent // sorted by lo, with disjoint seq ranges
	// moved are the extents of the compactor's copies, sorted by lo. Their ranges may
	// overlap those of ext and of each other (a message is copied before the extent
	// it leaves is empty); there are few, one per segment the copies went to.
	moved []*extent
	log   seqLog[loc]
	// runs hold what spilled from log: the places of its messages in sealed segments,
	// in sorted files, with a bit per message in memory (see run). Their seq ranges
	// overlap each other's and the log's.
	runs []*run
	// curSeg is the last segment a record of this destination was appended to, curMax
	// the highest seq among its records there, curAddMin the lowest among its Add
	// records and curMovMax the highest among its Move records. A seq above curMax has
	// no record in curSeg yet, nor has one between curMovMax and curAddMin: that is
	// what appending to an extent, or to a moved extent, requires.
	curSeg    uint32
	curMax    uint64
	curAddMin uint64
	curMovMax uint64
	// subs are the durable subscriptions registered on this topic, in registration
	// order. Small: a linear scan beats a map for the few a topic usually has.
	subs []*subscription
}

// State is the destination as Recover lists it: only once an Add was applied to it.
func (d *destination) State() (persistence.DestState, bool) {
	return persistence.DestState{Name: d.name, LastSeq: d.lastSeq, Msgs: d.msgs, Bytes: d.bytes}, d.added
}

// subscription is one durable subscription and the set of messages of its topic it still
// has to acknowledge. A topic message is stored once; it is deleted when no
// subscription's pending set holds it.
type subscription struct {
	info    persistence.SubInfo
	dest    *destination
	pending seqSet
}

// Info is what Recover reports of the subscription.
func (sub *subscription) Info() persistence.SubInfo { return sub.info }

// Pending is how many messages the subscription still has to acknowledge.
func (sub *subscription) Pending() int64 { return int64(sub.pending.Len()) }

// segStats counts what is live in a segment: stored messages and their encoded bytes.
type segStats struct {
	msgs  int64
	bytes int64
}

// index is the in-memory state of the store: everything but message contents, which
// stay in the segments. The Store's mutex guards it.
type index struct {
	dests   map[string]*destination
	subs    map[persistence.SubKey]*subscription
	live    map[uint32]*segStats
	applied pos // the journal position after the last applied record
	// rbuf is the buffer of run lookups while applying operations (under the write
	// lock); runErr, if set, is told of a run file that could not be read then (the
	// operation then acts as if the message were not stored).
	rbuf   []byte
	runErr func(error)
	// ckptRuns are the run files the checkpoint this index was loaded from refers to
	// (taken by loadCheckpoint).
	ckptRuns map[string]bool
}

// Recovered is what Recover reports of the index (logshell.Index).
func (x *index) Recovered() *persistence.Recovered { return indexstate.Recovered(x.dests, x.subs) }

// Stats is what Stats reports of dest (logshell.Index).
func (x *index) Stats(dest string) (msgs, bytes int64) { return indexstate.Stats(x.dests, dest) }

func newIndex() *index {
	return &index{
		dests: make(map[string]*destination),
		subs:  make(map[persistence.SubKey]*subscription),
		live:  make(map[uint32]*segStats),
	}
}

// destination returns the state of name, creating it.
func (x *index) destination(name string) *destination {
	d := x.dests[name]
	if d == nil {
		d = &destination{name: name, topic: persistence.KindOf(name) == persistence.KindTopic}
		x.dests[name] = d
	}
	return d
}

func (x *index) segStats(seg uint32) *segStats {
	st := x.live[seg]
	if st == nil {
		st = &segStats{}
		x.live[seg] = st
	}
	return st
}

// store records that a message at l (in the record starting at rec) became live in d.
// fresh and movable come from noteRecord.
func (x *index) store(d *destination, seq uint64, l loc, rec uint32, fresh, movable bool) {
	if !movable || !d.placeMoved(seq, l, rec) {
		d.place(seq, l, rec, fresh)
	}
	d.msgs++
	d.bytes += int64(l.body)
	st := x.segStats(l.seg)
	st.msgs++
	st.bytes += int64(l.n)
}

// noteRecord records that a record of d with seq (a Move if move, else an Add) was
// appended to seg. It reports whether no record of d with that seq was in seg before,
// as an extent needs it (fresh: above every seq there) and as a moved extent needs it
// (movable: a Move above every Move's seq and below every Add's seq there).
func (d *destination) noteRecord(seg uint32, seq uint64, move bool) (fresh, movable bool) {
	if seg != d.curSeg {
		d.curSeg, d.curMax, d.curAddMin, d.curMovMax = seg, 0, math.MaxUint64, 0
	}
	fresh = seq > d.curMax
	movable = move && seq > d.curMovMax && seq < d.curAddMin
	d.curMax = max(d.curMax, seq)
	if move {
		d.curMovMax = max(d.curMovMax, seq)
	} else {
		d.curAddMin = min(d.curAddMin, seq)
	}
	return fresh, movable
}

// place puts seq, not stored, at l: at the end of the last extent if it continues it,
// in a new extent if it starts a new run of seqs, else in the log. fresh comes from
// noteRecord.
func (d *destination) place(seq uint64, l loc, rec uint32, fresh bool) {
	if fresh && d.freshTail(seq) {
		var tail *extent
		if k := len(d.ext); k > 0 {
			tail = d.ext[k-1]
		}
		switch {
		case tail != nil && tail.canAppend(seq, l.seg):
			tail.append(seq, l, rec)
			return
		case tail == nil || tail.lo != tail.hi || seq-tail.hi <= extentGap:
			if tail != nil && tail.n == 0 {
				d.ext = d.ext[:len(d.ext)-1]
			}
			d.ext = append(d.ext, newExtent(seq, l, rec))
			return
		}
	}
	d.log.Put(seq, l)
}

// placeMoved puts the compactor's copy of seq at l in the moved extent of l's segment
// if it continues it, or in a new one, and reports whether it did. movable (from
// noteRecord) must hold.
func (d *destination) placeMoved(seq uint64, l loc, rec uint32) bool {
	var last *extent // the moved extent of l's segment with the highest seqs
	for i := len(d.moved) - 1; i >= 0; i-- {
		if d.moved[i].seg == l.seg {
			last = d.moved[i]
			break
		}
	}
	switch {
	case last != nil && last.canAppend(seq, l.seg):
		last.append(seq, l, rec)
	case last == nil || last.lo != last.hi || seq-last.hi <= extentGap:
		e := newExtent(seq, l, rec)
		i, _ := slices.BinarySearchFunc(d.moved, seq, func(e *extent, seq uint64) int { return cmp.Compare(e.lo, seq) })
		d.moved = slices.Insert(d.moved, i, e)
	default:
		return false
	}
	return true
}

// freshTail reports whether seq lies above every extent of d.
func (d *destination) freshTail(seq uint64) bool {
	k := len(d.ext)
	return k == 0 || seq > d.ext[k-1].hi
}

// extentOf returns the extent (of ext or moved) that stores seq, or nil.
func (d *destination) extentOf(seq uint64) *extent {
	i, _ := slices.BinarySearchFunc(d.ext, seq, func(e *extent, seq uint64) int {
		if e.lo <= seq {
			return -1
		}
		return 1
	})
	if i > 0 && d.ext[i-1].has(seq) {
		return d.ext[i-1]
	}
	for _, e := range d.moved {
		if e.lo > seq {
			break
		}
		if e.has(seq) {
			return e
		}
	}
	return nil
}

// unplace removes seq from where d stores it and returns its place (with the offset
// unknown, 0, for a message of an extent). A message of a run is looked up in its
// file: at most a fence block read per run whose filter says it may hold seq.
func (x *index) unplace(d *destination, seq uint64) (loc, bool) {
	if e := d.extentOf(seq); e != nil {
		n, body := e.remove(seq)
		if e.n == 0 {
			d.dropEmpty(e)
		}
		return loc{seg: e.seg, n: n, body: body}, true
	}
	if l, ok := d.log.Remove(seq); ok || len(d.runs) == 0 {
		return l, ok
	}
	r, p, e, ok, err := d.runFind(seq, &x.rbuf)
	if err != nil {
		x.reportRunErr(err)
	}
	if !ok {
		return loc{}, false
	}
	d.runRemove(r, p, e)
	return e.l, true
}

// reportRunErr passes a run file's read error to runErr.
func (x *index) reportRunErr(err error) {
	if x.runErr != nil {
		x.runErr(err)
	}
}

// dropEmpty removes the empty extent e, unless it is the last of ext: that one keeps
// its range so the next message can continue it.
func (d *destination) dropEmpty(e *extent) {
	if i := slices.Index(d.moved, e); i >= 0 {
		d.moved = slices.Delete(d.moved, i, i+1)
		return
	}
	if d.ext[len(d.ext)-1] == e {
		return
	}
	if i := slices.Index(d.ext, e); i >= 0 {
		d.ext = slices.Delete(d.ext, i, i+1)
	}
}

// unstore records that the message at l is no longer live in d (already removed from
// where d stored it).
func (x *index) unstore(d *destination, l loc) {
	d.msgs--
	d.bytes -= int64(l.body)
	st := x.segStats(l.seg)
	st.msgs--
	st.bytes -= int64(l.n)
}

// apply runs one operation. Replaying the journal runs the same code as committing, so
// the index after a restart is the index before it.
func (x *index) apply(o *op) {
	switch o.Kind {
	case batchrec.OpAdd:
		x.add(o)
	case batchrec.OpAck:
		if d := x.dests[o.Dest]; d != nil {
			x.drop(d, o.Seq)
		}
	case batchrec.OpAckSub:
		x.ackSub(o.Key, o.Seq)
	case batchrec.OpAddSub:
		x.addSub(o.Info)
	case batchrec.OpRemoveSub:
		x.removeSub(o.Key)
	case batchrec.OpPurge:
		if d := x.dests[o.Dest]; d != nil {
			x.purge(d)
		}
	case opMove:
		x.move(o)
	}
}

// add stores the message of o, replacing one stored under the same seq. A topic message
// none of whose Subs names a subscription of its topic is not kept; it still counts for
// LastSeq.
func (x *index) add(o *op) {
	d := x.destination(o.Dest)
	d.added = true
	d.lastSeq = max(d.lastSeq, o.Seq)
	x.drop(d, o.Seq)
	fresh, _ := d.noteRecord(o.loc.seg, o.Seq, false)
	if d.topic {
		owed := false
		for _, k := range o.Subs {
			for _, sub := range d.subs {
				if sub.info.Key == k && !sub.pending.Contains(o.Seq) {
					sub.pending.Put(o.Seq)
					owed = true
				}
			}
		}
		if !owed {
			return
		}
	}
	x.store(d, o.Seq, o.loc, o.loc.off-o.msgOff, fresh, false)
}

// drop deletes the message seq of d, for every subscription.
func (x *index) drop(d *destination, seq uint64) {
	l, ok := x.unplace(d, seq)
	if !ok {
		return
	}
	for _, sub := range d.subs {
		sub.pending.Remove(seq)
	}
	x.unstore(d, l)
}

// owed reports whether any subscription of d still has to acknowledge seq.
func (d *destination) owed(seq uint64) bool {
	for _, sub := range d.subs {
		if sub.pending.Contains(seq) {
			return true
		}
	}
	return false
}

func (x *index) ackSub(key persistence.SubKey, seq uint64) {
	sub := x.subs[key]
	if sub == nil {
		return
	}
	if sub.pending.Remove(seq) && !sub.dest.owed(seq) {
		x.drop(sub.dest, seq)
	}
}

func (x *index) purge(d *destination) {
	for _, e := range d.moved {
		st := x.segStats(e.seg)
		st.msgs -= e.n
		st.bytes -= e.bytes
	}
	d.moved = nil
	for _, e := range d.ext {
		st := x.segStats(e.seg)
		st.msgs -= e.n
		st.bytes -= e.bytes
	}
	if k := len(d.ext); k > 0 {
		tail := d.ext[k-1]
		tail.n = 0
		tail.release()
		d.ext = append(d.ext[:0:0], tail) // keeps its range: see dropEmpty
	}
	d.log.After(0, func(_ uint64, l *loc) bool {
		st := x.segStats(l.seg)
		st.msgs--
		st.bytes -= int64(l.n)
		return true
	})
	d.log.Reset()
	for _, r := range d.runs {
		st := x.segStats(r.seg)
		st.msgs -= r.n
		st.bytes -= r.bytes
		clear(r.live)
		r.n, r.bytes, r.body = 0, 0, 0
	}
	d.runs = nil
	for _, sub := range d.subs {
		sub.pending.Reset()
	}
	d.msgs, d.bytes = 0, 0
}

// addSub registers info. Replacing a subscription on the same topic keeps what it holds;
// moving it to another topic releases that first, as RemoveSub does.
func (x *index) addSub(info persistence.SubInfo) {
	if old := x.subs[info.Key]; old != nil {
		if old.info.Dest == info.Dest {
			old.info = info
			return
		}
		x.removeSub(info.Key)
	}
	d := x.destination(info.Dest)
	sub := &subscription{info: info, dest: d}
	d.subs = append(d.subs, sub)
	x.subs[info.Key] = sub
}

func (x *index) removeSub(key persistence.SubKey) {
	sub := x.subs[key]
	if sub == nil {
		return
	}
	d := sub.dest
	for i, s := range d.subs {
		if s == sub {
			d.subs = append(d.subs[:i:i], d.subs[i+1:]...)
			break
		}
	}
	delete(x.subs, key)
	// sub is no longer among d.subs, so drop leaves its pending set alone while it is
	// iterated.
	sub.pending.After(0, func(seq uint64) bool {
		if !d.owed(seq) {
			x.drop(d, seq)
		}
		return true
	})
	sub.pending.Reset()
}

// move applies a compactor's copy: if the message is still stored where it was copied
// from, it now lives at its new place. If it was acknowledged or replaced in between,
// the copy is dead from the start. A message of an extent is the only stored record of
// its seq in the extent's segment, and no record is ever appended to a segment the
// compactor copies from, so for it the segment is enough to tell.
func (x *index) move(o *op) {
	d := x.destination(o.Dest)
	fresh, movable := d.noteRecord(o.loc.seg, o.Seq, true)
	var old loc
	if e := d.extentOf(o.Seq); e != nil {
		if e.seg != o.oldSeg {
			return
		}
		old, _ = x.unplace(d, o.Seq)
	} else if l, ok := d.log.Get(o.Seq); ok {
		if l.seg != o.oldSeg || l.off != o.oldOff {
			return
		}
		old, _ = d.log.Remove(o.Seq)
	} else {
		r, p, e, ok, err := d.runFind(o.Seq, &x.rbuf)
		if err != nil {
			x.reportRunErr(err)
		}
		if !ok || e.l.seg != o.oldSeg || e.l.off != o.oldOff {
			return
		}
		d.runRemove(r, p, e)
		old = e.l
	}
	x.unstore(d, old)
	l := o.loc
	l.n, l.body = old.n, old.body
	x.store(d, o.Seq, l, o.loc.off-o.msgOff, fresh, movable)
}

// pendingKeys appends the subscriptions of d that still owe seq.
func (d *destination) pendingKeys(seq uint64, keys []persistence.SubKey) []persistence.SubKey {
	for _, sub := range d.subs {
		if sub.pending.Contains(seq) {
			keys = append(keys, sub.info.Key)
		}
	}
	return keys
}

// each calls fn for the stored messages of d after afterSeq, in seq order, until fn
// returns false: with e the extent holding it (l then has no offset) or nil (l is its
// exact place, from the log or a run). The messages of runs are read from their files
// (a fence block at a time); a read error ends the walk and is returned.
func (d *destination) each(afterSeq uint64, fn func(seq uint64, e *extent, l loc) bool) error {
	var curs []runCursor
	for _, r := range d.runs {
		c := runCursor{r: r}
		c.seek(afterSeq)
		curs = append(curs, c)
	}
	li := d.log.iter(afterSeq)
	ei, _ := slices.BinarySearchFunc(d.ext, afterSeq, func(e *extent, s uint64) int {
		if e.hi <= s {
			return -1
		}
		return 1
	})
	cur := afterSeq
	var lr lenReader
	for {
		best, from := uint64(math.MaxUint64), (*extent)(nil)
		for ; ei < len(d.ext); ei++ {
			if s, ok := d.ext[ei].next(cur); ok {
				best, from = s, d.ext[ei]
				break
			}
		}
		for _, m := range d.moved {
			if m.lo > best {
				break
			}
			if s, ok := m.next(cur); ok && s < best {
				best, from = s, m
			}
		}
		for li.ok() && li.seq() <= cur {
			li.next()
		}
		rbest, ri, rl := uint64(math.MaxUint64), -1, loc{}
		for i := range curs {
			if s, l, ok := curs[i].head(); ok && s < rbest {
				rbest, ri, rl = s, i, l
			} else if curs[i].err != nil {
				return curs[i].err
			}
		}
		if li.ok() && li.seq() < best && li.seq() < rbest {
			if !fn(li.seq(), nil, *li.val()) {
				return nil
			}
			cur = li.seq()
			continue
		}
		if ri >= 0 && rbest < best {
			curs[ri].p++
			if !fn(rbest, nil, rl) {
				return nil
			}
			cur = rbest
			continue
		}
		if from == nil {
			return nil
		}
		n, body := lr.get(&from.lens, best)
		if !fn(best, from, loc{seg: from.seg, n: n, body: body}) {
			return nil
		}
		cur = best
	}
}

// holdsIn reports whether d stores a message in segment seg.
func (d *destination) holdsIn(seg uint32) bool {
	for _, e := range d.ext {
		if e.seg == seg && e.n > 0 {
			return true
		}
	}
	for _, e := range d.moved {
		if e.seg == seg && e.n > 0 {
			return true
		}
	}
	for _, r := range d.runs {
		if r.seg == seg && r.n > 0 {
			return true
		}
	}
	found := false
	d.log.After(0, func(_ uint64, l *loc) bool {
		found = l.seg == seg
		return !found
	})
	return found
}
