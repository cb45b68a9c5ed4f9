package memstore

import (
	"slices"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/oprec"
)

// entry is one stored message. msg is a private copy, made by Batch.Add, that is never
// modified once stored (a replacing Add stores a new entry), so scans may hand it out
// without copying. Until the Add is applied msg.Subs holds the Subs the caller named;
// from then on it is nil and the live set is pending.
type entry struct {
	msg persistence.Message
	// pending lists, in the order Add named them, the durable subscriptions that still
	// owe an acknowledgement. Always empty for queue messages. Small: a linear scan is
	// cheaper than a map for the handful of subscriptions a topic usually has.
	pending []*subscription
}

// destination is the state of one qualified destination.
type destination struct {
	name    string
	topic   bool
	added   bool   // an Add was ever applied; only such destinations are recovered
	lastSeq uint64 // highest seq ever added
	msgs    int64
	bytes   int64 // sum of len(Body)
	size    int64 // sum of Message.Size, what the messages take in memory
	log     seqLog
	// subs holds the durable subscriptions registered on this topic; a message's
	// Subs entries are resolved against it.
	subs map[persistence.SubKey]*subscription
}

// subscription is one durable subscription with the index of its pending messages, so
// ScanSub and RemoveSub cost O(log n + k) in the messages k the subscription holds,
// not in every message of the topic.
type subscription struct {
	info persistence.SubInfo
	dest *destination
	log  seqLog // entries of dest this subscription still has to acknowledge
}

// destination returns the state of name, creating it.
func (s *Store) destination(name string) *destination {
	d := s.dests[name]
	if d == nil {
		d = &destination{name: name, topic: persistence.KindOf(name) == persistence.KindTopic}
		s.dests[name] = d
	}
	return d
}

// apply runs one operation. The caller holds s.mu for writing.
func (s *Store) apply(o *op) {
	switch o.Kind {
	case oprec.Add:
		s.add(o.Msg)
	case oprec.Ack:
		if d := s.dests[o.Dest]; d != nil {
			if e := d.log.Get(o.Seq); e != nil {
				d.drop(e)
			}
		}
	case oprec.AckSub:
		s.ackSub(o.Sub, o.Seq)
	case oprec.AddSub:
		s.addSub(*o.Info)
	case oprec.RemoveSub:
		s.removeSub(o.Sub)
	case oprec.Purge:
		if d := s.dests[o.Dest]; d != nil {
			d.purge()
		}
	}
}

// add stores e, which the store owns from now on. A message already stored under the
// same seq is replaced. A topic message none of whose Subs names a subscription of its
// topic is not kept (it owes nothing to anyone); it still counts for LastSeq.
func (s *Store) add(e *entry) {
	m := &e.msg
	d := s.destination(m.Dest)
	d.added = true
	d.lastSeq = max(d.lastSeq, m.Seq)
	if old := d.log.Get(m.Seq); old != nil {
		d.drop(old)
	}
	if d.topic {
		for _, k := range m.Subs {
			sub := d.subs[k]
			if sub == nil || slices.Contains(e.pending, sub) {
				continue
			}
			e.pending = append(e.pending, sub)
		}
		if len(e.pending) == 0 {
			return
		}
		for _, sub := range e.pending {
			sub.log.Put(m.Seq, e)
		}
	}
	m.Subs = nil
	d.log.Put(m.Seq, e)
	d.msgs++
	d.bytes += int64(len(m.Body))
	d.size += int64(e.msg.Size())
}

// drop deletes the stored entry e of d and takes it out of every subscription.
func (d *destination) drop(e *entry) {
	seq := e.msg.Seq
	for _, sub := range e.pending {
		sub.log.Remove(seq)
	}
	e.pending = nil
	d.log.Remove(seq)
	d.msgs--
	d.bytes -= int64(len(e.msg.Body))
	d.size -= int64(e.msg.Size())
}

// release takes sub out of e's pending set and deletes e once nobody owes it.
func (d *destination) release(e *entry, sub *subscription) {
	e.pending = slices.DeleteFunc(e.pending, func(p *subscription) bool { return p == sub })
	if len(e.pending) == 0 {
		d.drop(e)
	}
}

// purge deletes every message of d; its subscriptions stay, with nothing pending.
func (d *destination) purge() {
	d.log.Reset()
	for _, sub := range d.subs {
		sub.log.Reset()
	}
	d.msgs, d.bytes, d.size = 0, 0, 0
}

func (s *Store) ackSub(key persistence.SubKey, seq uint64) {
	sub := s.subs[key]
	if sub == nil {
		return
	}
	if e := sub.log.Remove(seq); e != nil {
		sub.dest.release(e, sub)
	}
}

// addSub registers info. Replacing a subscription on the same topic keeps what it
// holds; moving it to another topic releases that first, as RemoveSub does.
func (s *Store) addSub(info persistence.SubInfo) {
	if old := s.subs[info.Key]; old != nil {
		if old.info.Dest == info.Dest {
			old.info = info
			return
		}
		s.removeSub(info.Key)
	}
	d := s.destination(info.Dest)
	sub := &subscription{info: info, dest: d}
	if d.subs == nil {
		d.subs = make(map[persistence.SubKey]*subscription)
	}
	d.subs[info.Key] = sub
	s.subs[info.Key] = sub
}

func (s *Store) removeSub(key persistence.SubKey) {
	sub := s.subs[key]
	if sub == nil {
		return
	}
	d := sub.dest
	// release never touches sub.log (sub leaves e.pending before drop looks at it), so
	// iterating it while releasing is safe.
	for _, e := range sub.log.After(0) {
		d.release(e, sub)
	}
	sub.log.Reset()
	delete(d.subs, key)
	delete(s.subs, key)
}
