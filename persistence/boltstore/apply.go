package boltstore

import (
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/oprec"
)

// appendFillPercent is the FillPercent of the buckets keyed by sequence number, where
// keys almost always arrive at the tail: pages split there stay 90% full instead of
// bbolt's default half, so a backlog takes fewer pages and fewer page writes.
const appendFillPercent = 0.9

// applier applies batches inside one bbolt write transaction. It is owned by the writer
// goroutine and reused from transaction to transaction.
//
// The counters of every destination a transaction touches are copied into stats (the
// committed ones stay as they are) and written to destmeta in the same transaction;
// only once bbolt committed does publish make them what Stats reports. A transaction
// that fails is simply discarded.
type applier struct {
	s  *Store
	tx *bolt.Tx

	// Top-level buckets, opened on first use: use the methods metaB, destsB, ...
	meta, dests, owners, destmeta, subs, subids, pending *bolt.Bucket

	destB map[string]*bolt.Bucket // dests/<name>, opened in this transaction
	ownB  map[string]*bolt.Bucket // owners/<topic>
	pendB map[uint64]*bolt.Bucket // pending/<id>

	stats   map[string]*destMeta // destinations touched in this transaction
	subRefs map[persistence.SubKey]subRef
	lastSub uint64 // the last subscription id handed out

	ids []uint64 // scratch
}

// subRef is what an operation needs of a durable subscription: its id (0: no such
// subscription) and topic.
type subRef struct {
	id   uint64
	dest string
}

func newApplier(s *Store) *applier {
	return &applier{
		s:       s,
		destB:   make(map[string]*bolt.Bucket),
		ownB:    make(map[string]*bolt.Bucket),
		pendB:   make(map[uint64]*bolt.Bucket),
		stats:   make(map[string]*destMeta),
		subRefs: make(map[persistence.SubKey]subRef),
	}
}

// begin starts applying in tx.
func (a *applier) begin(tx *bolt.Tx) {
	a.reset()
	a.tx = tx
	a.lastSub = a.s.lastSub
}

// top returns the top-level bucket name, opening it on first use in the transaction
// (opening costs allocations, and most transactions need two or three of them).
func (a *applier) top(b **bolt.Bucket, name []byte) *bolt.Bucket {
	if *b == nil {
		*b = a.tx.Bucket(name) // exists: load checked it
	}
	return *b
}

func (a *applier) metaB() *bolt.Bucket     { return a.top(&a.meta, bucketMeta) }
func (a *applier) destsB() *bolt.Bucket    { return a.top(&a.dests, bucketDests) }
func (a *applier) ownersB() *bolt.Bucket   { return a.top(&a.owners, bucketOwners) }
func (a *applier) destmetaB() *bolt.Bucket { return a.top(&a.destmeta, bucketDestMeta) }
func (a *applier) subsB() *bolt.Bucket     { return a.top(&a.subs, bucketSubs) }
func (a *applier) subidsB() *bolt.Bucket   { return a.top(&a.subids, bucketSubIDs) }
func (a *applier) pendingB() *bolt.Bucket  { return a.top(&a.pending, bucketPending) }

// reset forgets the transaction: its bucket handles die with it.
func (a *applier) reset() {
	a.tx = nil
	a.meta, a.dests, a.owners, a.destmeta, a.subs, a.subids, a.pending = nil, nil, nil, nil, nil, nil, nil
	clear(a.destB)
	clear(a.ownB)
	clear(a.pendB)
	clear(a.stats)
	clear(a.subRefs)
}

// finish writes the touched counters and the subscription id counter.
func (a *applier) finish() error {
	for name, st := range a.stats {
		if err := a.destmetaB().Put([]byte(name), st.encode()); err != nil {
			return fmt.Errorf("boltstore: write counters of %s: %w", name, err)
		}
	}
	if a.lastSub != a.s.lastSub {
		if err := a.metaB().Put(keyLastSubID, subIDKey(a.lastSub)); err != nil {
			return fmt.Errorf("boltstore: write subscription counter: %w", err)
		}
	}
	return nil
}

// publish makes the committed transaction's counters visible to Stats.
func (a *applier) publish() {
	s := a.s
	s.mu.Lock()
	for name, st := range a.stats {
		s.stats[name] = *st
	}
	s.lastSub = a.lastSub
	s.mu.Unlock()
	a.reset()
}

// discard forgets a transaction that did not commit.
func (a *applier) discard() { a.reset() }

// applyBatch applies one batch's operations in order.
func (a *applier) applyBatch(ops []op) error {
	for i := range ops {
		o := &ops[i]
		var err error
		switch o.Kind {
		case oprec.Add:
			err = a.add(o)
		case oprec.Ack:
			if st := a.stat(o.Dest); st != nil {
				err = a.remove(o.Dest, st, seqKey(o.Seq))
			}
		case oprec.AckSub:
			err = a.ackSub(o.Sub, o.Seq)
		case oprec.AddSub:
			err = a.addSub(*o.Info)
		case oprec.RemoveSub:
			err = a.removeSub(o.Sub)
		case oprec.Purge:
			err = a.purge(o.Dest)
		default:
			err = fmt.Errorf("boltstore: unknown operation %d", o.Kind)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// stat returns the transaction's counters of an existing destination, nil if no Add
// was ever committed to it (then it holds no message either).
func (a *applier) stat(name string) *destMeta {
	if st := a.stats[name]; st != nil {
		return st
	}
	c, ok := a.s.stats[name] // only this goroutine writes s.stats
	if !ok {
		return nil
	}
	st := &c
	a.stats[name] = st
	return st
}

// destBucket returns dests/<name>, creating it if create is set; nil if it is missing.
func (a *applier) destBucket(name string, create bool) (*bolt.Bucket, error) {
	return cachedBucket(a.destB, name, a.destsB(), []byte(name), create)
}

func (a *applier) ownersBucket(topic string, create bool) (*bolt.Bucket, error) {
	return cachedBucket(a.ownB, topic, a.ownersB(), []byte(topic), create)
}

func (a *applier) pendingBucket(id uint64, create bool) (*bolt.Bucket, error) {
	return cachedBucket(a.pendB, id, a.pendingB(), subIDKey(id), create)
}

func cachedBucket[K comparable](cache map[K]*bolt.Bucket, k K, parent *bolt.Bucket, name []byte, create bool) (*bolt.Bucket, error) {
	if b := cache[k]; b != nil {
		return b, nil
	}
	b := parent.Bucket(name)
	if b == nil {
		if !create {
			return nil, nil
		}
		var err error
		if b, err = parent.CreateBucket(name); err != nil {
			return nil, fmt.Errorf("boltstore: create bucket %q: %w", name, err)
		}
	}
	b.FillPercent = appendFillPercent
	cache[k] = b
	return b, nil
}

// dropBucket deletes the child bucket name of parent if it exists.
func dropBucket[K comparable](cache map[K]*bolt.Bucket, k K, parent *bolt.Bucket, name []byte) error {
	delete(cache, k)
	if parent.Bucket(name) == nil {
		return nil
	}
	if err := parent.DeleteBucket(name); err != nil {
		return fmt.Errorf("boltstore: delete bucket %q: %w", name, err)
	}
	return nil
}

// add stores a message, replacing one stored under the same seq. A topic message is
// stored only if one of its Subs names a subscription of the topic; it counts for
// LastSeq either way.
func (a *applier) add(o *op) error {
	st := a.stat(o.Dest)
	if st == nil {
		st = &destMeta{}
		a.stats[o.Dest] = st
	}
	key := seqKey(o.Seq)
	if o.Seq <= st.lastSeq { // only then can something be stored under it
		if err := a.remove(o.Dest, st, key); err != nil {
			return err
		}
	}
	st.lastSeq = max(st.lastSeq, o.Seq)
	topic := persistence.KindOf(o.Dest) == persistence.KindTopic
	var ids []uint64
	if topic {
		var err error
		if ids, err = a.resolve(o.Dest, o.Msg.subs); err != nil || len(ids) == 0 {
			return err
		}
	}
	b, err := a.destBucket(o.Dest, true)
	if err != nil {
		return err
	}
	if err := b.Put(key, o.Msg.rec); err != nil {
		return fmt.Errorf("boltstore: put %s #%d: %w", o.Dest, o.Seq, err)
	}
	n, err := recordBodyLen(o.Msg.rec)
	if err != nil {
		return err
	}
	st.msgs++
	st.bytes += n
	if !topic {
		return nil
	}
	ob, err := a.ownersBucket(o.Dest, true)
	if err != nil {
		return err
	}
	if err := ob.Put(key, encodeOwners(ids)); err != nil {
		return fmt.Errorf("boltstore: put owners of %s #%d: %w", o.Dest, o.Seq, err)
	}
	for _, id := range ids {
		pb, err := a.pendingBucket(id, true)
		if err != nil {
			return err
		}
		if err := pb.Put(key, nil); err != nil {
			return fmt.Errorf("boltstore: put pending #%d of subscription %d: %w", o.Seq, id, err)
		}
	}
	return nil
}

// resolve returns the ids of the subscriptions of topic that keys name, without
// duplicates, in the order named.
func (a *applier) resolve(topic string, keys []persistence.SubKey) ([]uint64, error) {
	ids := a.ids[:0]
	for _, k := range keys {
		ref, err := a.sub(k)
		if err != nil {
			return nil, err
		}
		if ref.id == 0 || ref.dest != topic || slices.Contains(ids, ref.id) {
			continue
		}
		ids = append(ids, ref.id)
	}
	a.ids = ids
	return ids, nil
}

// remove deletes the message stored under key in dest, if any, with its owners record
// and pending entries.
func (a *applier) remove(dest string, st *destMeta, key []byte) error {
	b, err := a.destBucket(dest, false)
	if err != nil || b == nil {
		return err
	}
	v := b.Get(key)
	if v == nil {
		return nil
	}
	n, err := recordBodyLen(v)
	if err != nil {
		return fmt.Errorf("%s #%x: %w", dest, key, err)
	}
	if err := b.Delete(key); err != nil {
		return fmt.Errorf("boltstore: delete %s #%x: %w", dest, key, err)
	}
	st.msgs--
	st.bytes -= n
	if persistence.KindOf(dest) != persistence.KindTopic {
		return nil
	}
	ob, err := a.ownersBucket(dest, false)
	if err != nil || ob == nil {
		return err
	}
	ov := ob.Get(key)
	if ov == nil {
		return nil
	}
	ids, err := decodeOwners(ov, a.ids[:0])
	a.ids = ids
	if err != nil {
		return fmt.Errorf("%s #%x: %w", dest, key, err)
	}
	for _, id := range ids {
		pb, err := a.pendingBucket(id, false)
		if err != nil {
			return err
		}
		if pb != nil {
			if err := pb.Delete(key); err != nil {
				return fmt.Errorf("boltstore: delete pending of subscription %d: %w", id, err)
			}
		}
	}
	if err := ob.Delete(key); err != nil {
		return fmt.Errorf("boltstore: delete owners of %s #%x: %w", dest, key, err)
	}
	return nil
}

// sub looks a durable subscription up, in this transaction's view.
func (a *applier) sub(k persistence.SubKey) (subRef, error) {
	if ref, ok := a.subRefs[k]; ok {
		return ref, nil
	}
	var ref subRef
	if v := a.subsB().Get(encodeSubKey(k)); v != nil {
		r, err := decodeSubRecord(k, v)
		if err != nil {
			return subRef{}, err
		}
		ref = subRef{id: r.id, dest: r.info.Dest}
	}
	a.subRefs[k] = ref
	return ref, nil
}

// release takes subscription id out of the owners of the topic message under key and
// deletes the message once nobody owes it. With dropPending it also deletes the
// subscription's pending entry (RemoveSub deletes the whole pending bucket instead).
func (a *applier) release(topic string, key []byte, id uint64, dropPending bool) error {
	ob, err := a.ownersBucket(topic, false)
	if err != nil || ob == nil {
		return err
	}
	v := ob.Get(key)
	if v == nil {
		return nil
	}
	ids, err := decodeOwners(v, a.ids[:0])
	a.ids = ids
	if err != nil {
		return fmt.Errorf("%s #%x: %w", topic, key, err)
	}
	i := slices.Index(ids, id)
	if i < 0 {
		return nil // it never held the message
	}
	if dropPending {
		if pb, err := a.pendingBucket(id, false); err != nil {
			return err
		} else if pb != nil {
			if err := pb.Delete(key); err != nil {
				return fmt.Errorf("boltstore: delete pending of subscription %d: %w", id, err)
			}
		}
	}
	ids = slices.Delete(ids, i, i+1)
	if len(ids) > 0 {
		// Put keeps the key for the rest of the transaction; key may point into a page
		// of a cursor's bucket.
		if err := ob.Put(slices.Clone(key), encodeOwners(ids)); err != nil {
			return fmt.Errorf("boltstore: put owners of %s #%x: %w", topic, key, err)
		}
		return nil
	}
	// Nobody owes it any more: delete the message. The owners record goes first, so
	// remove touches no pending bucket (RemoveSub is iterating one).
	if err := ob.Delete(key); err != nil {
		return fmt.Errorf("boltstore: delete owners of %s #%x: %w", topic, key, err)
	}
	st := a.stat(topic)
	if st == nil {
		return fmt.Errorf("%w: topic %s holds messages but has no counters", ErrCorrupt, topic)
	}
	return a.remove(topic, st, key)
}

func (a *applier) ackSub(k persistence.SubKey, seq uint64) error {
	ref, err := a.sub(k)
	if err != nil || ref.id == 0 {
		return err
	}
	return a.release(ref.dest, seqKey(seq), ref.id, true)
}

// addSub registers info; see the package comment for replacing and moving.
func (a *applier) addSub(info persistence.SubInfo) error {
	ref, err := a.sub(info.Key)
	if err != nil {
		return err
	}
	if ref.id != 0 && ref.dest != info.Dest {
		if err := a.removeSub(info.Key); err != nil {
			return err
		}
		ref = subRef{}
	}
	key := encodeSubKey(info.Key)
	if ref.id == 0 {
		a.lastSub++
		ref = subRef{id: a.lastSub, dest: info.Dest}
		if err := a.subidsB().Put(subIDKey(ref.id), key); err != nil {
			return fmt.Errorf("boltstore: put subscription id %d: %w", ref.id, err)
		}
	}
	if err := a.subsB().Put(key, subRecord{id: ref.id, info: info}.encode()); err != nil {
		return fmt.Errorf("boltstore: put subscription %s: %w", info.Key, err)
	}
	a.subRefs[info.Key] = ref
	return nil
}

// removeSub deletes a subscription and releases every message it still holds.
func (a *applier) removeSub(k persistence.SubKey) error {
	ref, err := a.sub(k)
	if err != nil || ref.id == 0 {
		return err
	}
	pb, err := a.pendingBucket(ref.id, false)
	if err != nil {
		return err
	}
	if pb != nil {
		// Releasing modifies owners and dests, never this bucket, so the cursor stays
		// valid.
		c := pb.Cursor()
		for key, _ := c.First(); key != nil; key, _ = c.Next() {
			if err := a.release(ref.dest, key, ref.id, false); err != nil {
				return err
			}
		}
		if err := dropBucket(a.pendB, ref.id, a.pendingB(), subIDKey(ref.id)); err != nil {
			return err
		}
	}
	if err := a.subsB().Delete(encodeSubKey(k)); err != nil {
		return fmt.Errorf("boltstore: delete subscription %s: %w", k, err)
	}
	if err := a.subidsB().Delete(subIDKey(ref.id)); err != nil {
		return fmt.Errorf("boltstore: delete subscription id %d: %w", ref.id, err)
	}
	a.subRefs[k] = subRef{}
	return nil
}

// purge deletes every message of dest; a topic keeps its subscriptions, with nothing
// pending. Finding the topic's subscriptions walks the subs bucket: Purge is an
// administrative operation, and subscriptions are few next to messages.
func (a *applier) purge(dest string) error {
	st := a.stat(dest)
	if st == nil {
		return nil // never added to: nothing stored
	}
	if err := dropBucket(a.destB, dest, a.destsB(), []byte(dest)); err != nil {
		return err
	}
	st.msgs, st.bytes = 0, 0
	if persistence.KindOf(dest) != persistence.KindTopic {
		return nil
	}
	if err := dropBucket(a.ownB, dest, a.ownersB(), []byte(dest)); err != nil {
		return err
	}
	c := a.subsB().Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		key, err := decodeSubKey(k)
		if err != nil {
			return err
		}
		r, err := decodeSubRecord(key, v)
		if err != nil {
			return err
		}
		if r.info.Dest != dest {
			continue
		}
		if err := dropBucket(a.pendB, r.id, a.pendingB(), subIDKey(r.id)); err != nil {
			return err
		}
	}
	return nil
}
