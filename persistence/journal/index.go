package journal

import (
	"cmp"

	"github.com/activemq-go/broker/persistence"
)

// loc is where a stored message is in the journal: segment, offset and length of its
// encoding, and the length of its body (for Stats). 16 bytes; with its key a stored
// message costs 24 bytes of index.
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

// destination is the index of one qualified destination.
type destination struct {
	name    string
	topic   bool
	added   bool   // an Add was ever applied: only such destinations are recovered
	lastSeq uint64 // highest seq ever added
	msgs    int64
	bytes   int64 // sum of len(Body)
	log     seqLog[loc]
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
	pending seqLog[struct{}]
}

// Info is what Recover reports of the subscription.
func (sub *subscription) Info() persistence.SubInfo { return sub.info }

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
}

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

// store records that a message at l became live in d.
func (x *index) store(d *destination, seq uint64, l loc) {
	d.log.Put(seq, l)
	d.msgs++
	d.bytes += int64(l.body)
	st := x.segStats(l.seg)
	st.msgs++
	st.bytes += int64(l.n)
}

// unstore records that the message at l is no longer live in d (already removed from
// d.log).
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
	switch o.kind {
	case opAdd:
		x.add(o)
	case opAck:
		if d := x.dests[o.dest]; d != nil {
			x.drop(d, o.seq)
		}
	case opAckSub:
		x.ackSub(o.key, o.seq)
	case opAddSub:
		x.addSub(o.info)
	case opRemoveSub:
		x.removeSub(o.key)
	case opPurge:
		if d := x.dests[o.dest]; d != nil {
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
	d := x.destination(o.dest)
	d.added = true
	d.lastSeq = max(d.lastSeq, o.seq)
	x.drop(d, o.seq)
	if d.topic {
		owed := false
		for _, k := range o.subs {
			for _, sub := range d.subs {
				if sub.info.Key == k && !sub.pending.Contains(o.seq) {
					sub.pending.Put(o.seq, struct{}{})
					owed = true
				}
			}
		}
		if !owed {
			return
		}
	}
	x.store(d, o.seq, o.loc)
}

// drop deletes the message seq of d, for every subscription.
func (x *index) drop(d *destination, seq uint64) {
	l, ok := d.log.Remove(seq)
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
	if _, ok := sub.pending.Remove(seq); ok && !sub.dest.owed(seq) {
		x.drop(sub.dest, seq)
	}
}

func (x *index) purge(d *destination) {
	d.log.After(0, func(_ uint64, l *loc) bool {
		st := x.segStats(l.seg)
		st.msgs--
		st.bytes -= int64(l.n)
		return true
	})
	d.log.Reset()
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
	sub.pending.After(0, func(seq uint64, _ *struct{}) bool {
		if !d.owed(seq) {
			x.drop(d, seq)
		}
		return true
	})
	sub.pending.Reset()
}

// move applies a compactor's copy: if the message is still stored where it was copied
// from, it now lives at its new place. If it was acknowledged or replaced in between,
// the copy is dead from the start.
func (x *index) move(o *op) {
	d := x.dests[o.dest]
	if d == nil {
		return
	}
	l := d.log.Ptr(o.seq)
	if l == nil || l.seg != o.oldSeg || l.off != o.oldOff {
		return
	}
	st := x.segStats(l.seg)
	st.msgs--
	st.bytes -= int64(l.n)
	l.seg, l.off = o.loc.seg, o.loc.off
	st = x.segStats(l.seg)
	st.msgs++
	st.bytes += int64(l.n)
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
