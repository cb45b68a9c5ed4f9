package logstore

import (
	"slices"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/batchrec"
	"github.com/activemq-go/broker/persistence/internal/indexstate"
)

// msgLoc is what the index keeps of a stored message: where its bytes are in the log
// (the record at off, the length-prefixed message at pos of its value) and its body
// length for Stats. Headers and body stay on disk; Scan reads them back. With the seq,
// 24 bytes a message.
type msgLoc struct {
	off       int64
	pos       uint32
	bodyBytes uint32
}

// destination is the state of one qualified destination.
type destination struct {
	name    string
	topic   bool
	added   bool   // an Add was ever applied; only such destinations are recovered
	lastSeq uint64 // highest seq ever added
	msgs    int64
	bytes   int64 // sum of body lengths
	log     seqIndex[msgLoc]
	// Topics only: the durable subscriptions registered on the topic, and per stored
	// message those that still owe an acknowledgement (never empty: a message nobody
	// owes is deleted).
	subs map[persistence.SubKey]*subscription
	owed map[uint64][]*subscription
}

// State is the destination as Recover lists it: only once an Add was applied to it.
func (d *destination) State() (persistence.DestState, bool) {
	return persistence.DestState{Name: d.name, LastSeq: d.lastSeq, Msgs: d.msgs, Bytes: d.bytes}, d.added
}

// subscription is one incarnation of a durable subscription: a RemoveSub, or an AddSub
// moving the key to another topic, ends it and a later AddSub starts a new one.
type subscription struct {
	info persistence.SubInfo
	dest *destination
	// regOff is the offset of the record whose AddSub started this incarnation; recovery
	// needs it to know whether that AddSub is replayed (see checkpoint.go).
	regOff  int64
	pending seqIndex[struct{}] // seqs of dest this subscription still has to acknowledge
}

// Info is what Recover reports of the subscription.
func (sub *subscription) Info() persistence.SubInfo { return sub.info }

// Pending is how many messages the subscription still has to acknowledge.
func (sub *subscription) Pending() int64 { return int64(sub.pending.Len()) }

// index is the store's in-memory state, rebuilt on open from the checkpoint and the log
// after the low-water mark. The Store's lock guards it.
type index struct {
	dests map[string]*destination
	subs  map[persistence.SubKey]*subscription
	pins  pins
	// next is the offset after the last record applied.
	next int64
}

// Recovered is what Recover reports of the index (logshell.Index).
func (x *index) Recovered() *persistence.Recovered { return indexstate.Recovered(x.dests, x.subs) }

// Stats is what Stats reports of dest (logshell.Index).
func (x *index) Stats(dest string) (msgs, bytes int64) { return indexstate.Stats(x.dests, dest) }

func newIndex() *index {
	return &index{dests: map[string]*destination{}, subs: map[persistence.SubKey]*subscription{}}
}

// destination returns the state of name, creating it.
func (x *index) destination(name string) *destination {
	d := x.dests[name]
	if d == nil {
		d = &destination{name: name, topic: persistence.KindOf(name) == persistence.KindTopic}
		if d.topic {
			d.subs = map[persistence.SubKey]*subscription{}
			d.owed = map[uint64][]*subscription{}
		}
		x.dests[name] = d
	}
	return d
}

// lowWater returns the lowest log offset recovery still needs: the record of the oldest
// stored message, or the end of the log when nothing is stored.
func (x *index) lowWater() int64 {
	if off, ok := x.pins.low(); ok {
		return off
	}
	return x.next
}

// applyRecord applies the operations of the record at off, in order.
func (x *index) applyRecord(off int64, ops []op) {
	for i := range ops {
		x.apply(off, &ops[i])
	}
	x.next = off + 1
}

// apply runs one operation of the record at off.
func (x *index) apply(off int64, o *op) {
	switch o.Kind {
	case batchrec.OpAdd:
		x.add(off, o)
	case batchrec.OpAck:
		if d := x.dests[o.Dest]; d != nil {
			if l := d.log.Get(o.Seq); l != nil {
				x.drop(d, o.Seq, *l)
			}
		}
	case batchrec.OpAckSub:
		x.ackSub(o.Key, o.Seq)
	case batchrec.OpAddSub:
		x.addSub(off, o.Info)
	case batchrec.OpRemoveSub:
		x.removeSub(o.Key)
	case batchrec.OpPurge:
		if d := x.dests[o.Dest]; d != nil {
			x.purge(d)
		}
	}
}

// add stores a message, replacing one stored under the same seq. A topic message none of
// whose Subs names a subscription of its topic is not kept (it owes nothing to anyone);
// it still counts for LastSeq.
func (x *index) add(off int64, o *op) {
	d := x.destination(o.Dest)
	d.added = true
	d.lastSeq = max(d.lastSeq, o.Seq)
	if old := d.log.Get(o.Seq); old != nil {
		x.drop(d, o.Seq, *old)
	}
	if d.topic {
		var owed []*subscription
		for _, k := range o.Subs {
			if s := d.subs[k]; s != nil && !slices.Contains(owed, s) {
				owed = append(owed, s)
			}
		}
		if len(owed) == 0 {
			return
		}
		for _, s := range owed {
			s.pending.Put(o.Seq, struct{}{})
		}
		d.owed[o.Seq] = owed
	}
	d.log.Put(o.Seq, msgLoc{off: off, pos: o.pos, bodyBytes: o.body})
	x.pins.pin(off)
	d.msgs++
	d.bytes += int64(o.body)
}

// drop deletes the stored message seq of d, at l, and takes it out of every
// subscription.
func (x *index) drop(d *destination, seq uint64, l msgLoc) {
	if d.topic {
		for _, s := range d.owed[seq] {
			s.pending.Delete(seq)
		}
		delete(d.owed, seq)
	}
	d.log.Delete(seq)
	x.pins.unpin(l.off)
	d.msgs--
	d.bytes -= int64(l.bodyBytes)
}

// release takes s out of the owers of message seq of its topic, deleting the message
// once nobody owes it. The caller has taken seq out of s.pending.
func (x *index) release(s *subscription, seq uint64) {
	d := s.dest
	owed := slices.DeleteFunc(d.owed[seq], func(o *subscription) bool { return o == s })
	if len(owed) > 0 {
		d.owed[seq] = owed
		return
	}
	delete(d.owed, seq)
	if l := d.log.Get(seq); l != nil {
		x.drop(d, seq, *l)
	}
}

func (x *index) ackSub(key persistence.SubKey, seq uint64) {
	if s := x.subs[key]; s != nil && s.pending.Delete(seq) {
		x.release(s, seq)
	}
}

// addSub registers info. Replacing a subscription on the same topic keeps what it
// holds (and its incarnation); moving it to another topic releases that first, as
// RemoveSub does.
func (x *index) addSub(off int64, info persistence.SubInfo) {
	if old := x.subs[info.Key]; old != nil {
		if old.info.Dest == info.Dest {
			old.info = info
			return
		}
		x.removeSub(info.Key)
	}
	x.register(info, off)
}

// register adds a subscription incarnation that started at regOff.
func (x *index) register(info persistence.SubInfo, regOff int64) {
	d := x.destination(info.Dest)
	s := &subscription{info: info, dest: d, regOff: regOff}
	d.subs[info.Key] = s
	x.subs[info.Key] = s
}

func (x *index) removeSub(key persistence.SubKey) {
	s := x.subs[key]
	if s == nil {
		return
	}
	var seqs []uint64
	s.pending.After(0, func(seq uint64, _ *struct{}) bool {
		seqs = append(seqs, seq)
		return true
	})
	s.pending.Reset()
	for _, seq := range seqs {
		x.release(s, seq)
	}
	delete(s.dest.subs, key)
	delete(x.subs, key)
}

// purge deletes every message of d; its subscriptions stay, with nothing pending.
func (x *index) purge(d *destination) {
	d.log.After(0, func(_ uint64, l *msgLoc) bool {
		x.pins.unpin(l.off)
		return true
	})
	d.log.Reset()
	if d.topic {
		for _, s := range d.subs {
			s.pending.Reset()
		}
		clear(d.owed)
	}
	d.msgs, d.bytes = 0, 0
}

// owers appends to keys the subscriptions that still owe message seq of d.
func (d *destination) owers(seq uint64, keys []persistence.SubKey) []persistence.SubKey {
	if !d.topic {
		return keys
	}
	for _, s := range d.owed[seq] {
		keys = append(keys, s.info.Key)
	}
	return keys
}
