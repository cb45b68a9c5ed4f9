package boltstore

import (
	"context"
	"fmt"
	"math"

	bolt "go.etcd.io/bbolt"

	"github.com/activemq-go/broker/persistence"
)

// A scan reads a page of messages in one read transaction, closes it, and only then
// calls fn for them: fn may take its time (or call the store) without pinning bbolt's
// freelist or blocking a remap. A page ends after scanPageMsgs messages or once its
// bodies reach scanPageBytes.
const (
	scanPageMsgs  = 256
	scanPageBytes = 4 << 20
)

// scanPage is one page of decoded messages. Its memory is reused for the next page.
type scanPage struct {
	msgs  []persistence.Message
	arena arena
	keys  []persistence.SubKey // the Subs of every message of the page
	ids   []uint64             // scratch
	names map[uint64]persistence.SubKey
	more  bool // the page ended at a limit: there may be more after it
}

func (p *scanPage) reset() {
	clear(p.msgs)
	p.msgs = p.msgs[:0]
	p.arena.reset()
	clear(p.keys)
	p.keys = p.keys[:0]
	p.more = false
}

// full reports whether the page has reached a limit.
func (p *scanPage) full(want int) bool {
	return len(p.msgs) >= want || len(p.arena.body) >= scanPageBytes
}

// add decodes the record v of dest #seq into the page. For a topic message, owners is
// the topic's owners bucket, whose record for the message gives its pending
// subscriptions; subids names them.
func (p *scanPage) add(dest string, seq uint64, v []byte, owners, subids *bolt.Bucket, key []byte) error {
	p.msgs = append(p.msgs, persistence.Message{Dest: dest, Seq: seq})
	m := &p.msgs[len(p.msgs)-1]
	if err := decodeMessage(v, m, &p.arena); err != nil {
		return fmt.Errorf("%s #%d: %w", dest, seq, err)
	}
	if owners == nil {
		return nil
	}
	ov := owners.Get(key)
	if ov == nil {
		return nil
	}
	ids, err := decodeOwners(ov, p.ids[:0])
	p.ids = ids
	if err != nil {
		return fmt.Errorf("%s #%d: %w", dest, seq, err)
	}
	first := len(p.keys)
	for _, id := range ids {
		k, ok := p.names[id]
		if !ok {
			kv := subids.Get(subIDKey(id))
			if kv == nil {
				return fmt.Errorf("%w: %s #%d is owed by unknown subscription %d", ErrCorrupt, dest, seq, id)
			}
			if k, err = decodeSubKey(kv); err != nil {
				return err
			}
			if p.names == nil {
				p.names = make(map[uint64]persistence.SubKey)
			}
			p.names[id] = k
		}
		p.keys = append(p.keys, k)
	}
	// If p.keys grows later, this slice keeps the old array, which holds the same keys.
	m.Subs = p.keys[first:len(p.keys):len(p.keys)]
	return nil
}

// Scan implements persistence.Store. It pages through dests/<dest> with a cursor from
// afterSeq+1; see scanPageMsgs. The scan is not one snapshot: each page is read in its
// own transaction, so commits between pages show up in later pages.
func (s *Store) Scan(ctx context.Context, dest string, afterSeq uint64, max int, fn func(*persistence.Message) error) error {
	name := []byte(dest)
	topic := persistence.KindOf(dest) == persistence.KindTopic
	return s.scan(ctx, afterSeq, max, fn, func(tx *bolt.Tx, p *scanPage, after uint64, want int) error {
		b := tx.Bucket(bucketDests).Bucket(name)
		if b == nil || after == math.MaxUint64 {
			return nil
		}
		var owners *bolt.Bucket
		if topic {
			owners = tx.Bucket(bucketOwners).Bucket(name)
		}
		subids := tx.Bucket(bucketSubIDs)
		c := b.Cursor()
		for k, v := c.Seek(seqKey(after + 1)); k != nil; k, v = c.Next() {
			if p.full(want) {
				p.more = true
				return nil
			}
			seq, err := keySeq(k)
			if err != nil {
				return err
			}
			if err := p.add(dest, seq, v, owners, subids, k); err != nil {
				return err
			}
		}
		return nil
	})
}

// ScanSub implements persistence.Store: it pages through the subscription's pending
// bucket and reads each message from its topic. An unknown subscription is an error
// wrapping persistence.ErrUnknownSub; one removed (or replaced) while the scan runs
// ends it.
func (s *Store) ScanSub(ctx context.Context, sub persistence.SubKey, afterSeq uint64, max int, fn func(*persistence.Message) error) error {
	keyEnc := encodeSubKey(sub)
	var id uint64 // the subscription's id, once the first page found it
	return s.scan(ctx, afterSeq, max, fn, func(tx *bolt.Tx, p *scanPage, after uint64, want int) error {
		v := tx.Bucket(bucketSubs).Get(keyEnc)
		if v == nil {
			if id == 0 {
				return fmt.Errorf("%w: %s", persistence.ErrUnknownSub, sub)
			}
			return nil
		}
		rec, err := decodeSubRecord(sub, v)
		if err != nil {
			return err
		}
		if id != 0 && rec.id != id {
			return nil // removed and registered again since the previous page
		}
		id = rec.id
		pb := tx.Bucket(bucketPending).Bucket(subIDKey(id))
		if pb == nil || after == math.MaxUint64 {
			return nil
		}
		topic := rec.info.Dest
		name := []byte(topic)
		var msgs, owners *bolt.Bucket
		if b := tx.Bucket(bucketDests).Bucket(name); b != nil {
			msgs, owners = b, tx.Bucket(bucketOwners).Bucket(name)
		}
		subids := tx.Bucket(bucketSubIDs)
		c := pb.Cursor()
		for k, _ := c.Seek(seqKey(after + 1)); k != nil; k, _ = c.Next() {
			if p.full(want) {
				p.more = true
				return nil
			}
			seq, err := keySeq(k)
			if err != nil {
				return err
			}
			var mv []byte
			if msgs != nil {
				mv = msgs.Get(k)
			}
			if mv == nil {
				return fmt.Errorf("%w: subscription %s: pending %s #%d is not stored", ErrCorrupt, sub, topic, seq)
			}
			if err := p.add(topic, seq, mv, owners, subids, k); err != nil {
				return err
			}
		}
		return nil
	})
}

// scan runs fill for one page at a time, each in its own read transaction, and calls
// fn for the page's messages after the transaction ended.
func (s *Store) scan(ctx context.Context, afterSeq uint64, max int, fn func(*persistence.Message) error,
	fill func(tx *bolt.Tx, p *scanPage, after uint64, want int) error) error {
	var p scanPage
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.closed.Load() {
			return persistence.ErrClosed
		}
		want := scanPageMsgs
		if max > 0 {
			want = min(want, max)
		}
		p.reset()
		if err := s.db.View(func(tx *bolt.Tx) error { return fill(tx, &p, afterSeq, want) }); err != nil {
			return viewErr(err)
		}
		for i := range p.msgs {
			if err := fn(&p.msgs[i]); err != nil {
				return err
			}
		}
		if !p.more || len(p.msgs) == 0 {
			return nil
		}
		afterSeq = p.msgs[len(p.msgs)-1].Seq
		if max > 0 {
			if max -= len(p.msgs); max <= 0 {
				return nil
			}
		}
	}
}
