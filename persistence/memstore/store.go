// Package memstore is the "memory" persistence adapter: the whole Store contract of
// package persistence, held in memory, nothing surviving a restart. It is the reference
// implementation the conformance suite (persistence/storetest) is checked against, and
// the store of a broker configured with persistent=false.
//
// # Layout
//
// One RWMutex guards everything. Each destination keeps its messages in a seqLog (a
// slice sorted by seq with tombstones that are compacted before they outnumber the live
// entries); each durable subscription keeps a second seqLog over the same entries, the
// messages it still has to acknowledge. A stored message is a private clone, never
// modified afterwards.
//
// Costs, n = messages of the destination, k = messages visited: Add at the tail O(1)
// amortised (in the middle O(n)); Ack and AckSub O(log n + subscriptions of the
// message); Scan and ScanSub O(log n + k); RemoveSub O(messages the subscription holds);
// Purge O(subscriptions of the topic); Stats O(1).
//
// # Choices where the SPI leaves room (see storetest for the full list)
//
//   - Commit ignores Durability; CommitAsync calls done before it returns.
//   - Scan and ScanSub hand fn the stored message without copying: fn must not modify
//     it, its Headers or its Body. They do not hold the lock while fn runs (messages are
//     gathered in chunks), so fn may call the store.
//   - Close is idempotent: a second Close returns nil.
//   - Raw options are ignored: the adapter has none.
package memstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/activemq-go/broker/persistence"
)

func init() { persistence.Register("memory", open) }

func open(ctx context.Context, _ persistence.Options) (persistence.Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return New(), nil
}

// Compile-time guards.
var (
	_ persistence.Store = (*Store)(nil)
	_ persistence.Sizer = (*Store)(nil)
)

// Store is an in-memory persistence.Store. It is safe for concurrent use.
type Store struct {
	mu     sync.RWMutex
	closed bool
	dests  map[string]*destination
	subs   map[persistence.SubKey]*subscription
}

// New returns an empty, open store.
func New() *Store {
	return &Store{
		dests: make(map[string]*destination),
		subs:  make(map[persistence.SubKey]*subscription),
	}
}

// Recover reports the current state. Unlike a durable adapter it may be called at any
// time; it is cheap (O(destinations + subscriptions)). Destinations are those an Add
// was ever applied to, sorted by name; subscriptions are sorted by ClientID, then Name.
func (s *Store) Recover(ctx context.Context) (*persistence.Recovered, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, persistence.ErrClosed
	}
	r := &persistence.Recovered{
		Destinations: make([]persistence.DestState, 0, len(s.dests)),
		Subs:         make([]persistence.SubInfo, 0, len(s.subs)),
		Pending:      make(map[persistence.SubKey]int64, len(s.subs)),
	}
	for _, d := range s.dests {
		if d.added {
			r.Destinations = append(r.Destinations, persistence.DestState{
				Name: d.name, LastSeq: d.lastSeq, Msgs: d.msgs, Bytes: d.bytes,
			})
		}
	}
	for k, sub := range s.subs {
		r.Subs = append(r.Subs, sub.info)
		if n := sub.log.Len(); n > 0 {
			r.Pending[k] = int64(n)
		}
	}
	r.Sort()
	return r, nil
}

// Begin starts a batch. A batch begun after Close fails its Commit with ErrClosed.
func (s *Store) Begin() persistence.Batch { return s.newBatch() }

// applyBatch applies ops in order under the write lock.
func (s *Store) applyBatch(ops []op) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return persistence.ErrClosed
	}
	for i := range ops {
		s.apply(&ops[i])
	}
	return nil
}

// Scan implements persistence.Store. An unknown destination yields nothing.
func (s *Store) Scan(ctx context.Context, dest string, afterSeq uint64, max int, fn func(*persistence.Message) error) error {
	return s.scan(ctx, afterSeq, max, fn, func() (*seqLog, error) {
		if d := s.dests[dest]; d != nil {
			return &d.log, nil
		}
		return nil, nil
	})
}

// ScanSub implements persistence.Store. An unknown subscription is an error wrapping
// persistence.ErrUnknownSub; a subscription removed while the scan runs ends it.
func (s *Store) ScanSub(ctx context.Context, key persistence.SubKey, afterSeq uint64, max int, fn func(*persistence.Message) error) error {
	first := true
	return s.scan(ctx, afterSeq, max, fn, func() (*seqLog, error) {
		sub := s.subs[key]
		switch {
		case sub != nil:
			first = false
			return &sub.log, nil
		case first:
			return nil, fmt.Errorf("%w: %s", persistence.ErrUnknownSub, key)
		}
		return nil, nil
	})
}

// scanChunk is how many messages a scan gathers per read-lock hold.
const scanChunk = 128

// scanItem is a gathered message; its pending subscriptions are keys[from:to].
type scanItem struct {
	msg      *persistence.Message
	from, to int
}

// scan gathers up to scanChunk messages of the log that find returns (nil: nothing to
// scan) under the read lock, then calls fn for them without the lock, and repeats from
// the last seq seen. Writers are thus never blocked by a slow fn, and fn may call the
// store; the scan is not a snapshot.
func (s *Store) scan(ctx context.Context, afterSeq uint64, max int, fn func(*persistence.Message) error,
	find func() (*seqLog, error)) error {
	var (
		items []scanItem
		keys  []persistence.SubKey
		out   = new(persistence.Message) // reused: fn must not keep it
	)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		want := scanChunk
		if max > 0 {
			want = min(want, max)
		}
		items, keys = items[:0], keys[:0]
		s.mu.RLock()
		if s.closed {
			s.mu.RUnlock()
			return persistence.ErrClosed
		}
		log, err := find()
		if log == nil {
			s.mu.RUnlock()
			return err
		}
		for _, e := range log.After(afterSeq) {
			from := len(keys)
			for _, sub := range e.pending {
				keys = append(keys, sub.info.Key)
			}
			items = append(items, scanItem{msg: &e.msg, from: from, to: len(keys)})
			if len(items) == want {
				break
			}
		}
		s.mu.RUnlock()

		for _, it := range items {
			*out = *it.msg
			if it.to > it.from {
				out.Subs = keys[it.from:it.to:it.to]
			}
			if err := fn(out); err != nil {
				return err
			}
		}
		if len(items) < want {
			return nil
		}
		afterSeq = items[len(items)-1].msg.Seq
		if max > 0 {
			if max -= len(items); max == 0 {
				return nil
			}
		}
	}
}

// Stats implements persistence.Store; an unknown destination or a closed store has
// (0, 0).
func (s *Store) Stats(dest string) (msgs, bytes int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if d := s.dests[dest]; d != nil {
		return d.msgs, d.bytes
	}
	return 0, 0
}

// Size is what the stored messages take in memory (the sum of their Message.Size), for
// systemUsage storeUsage. O(destinations).
func (s *Store) Size(context.Context) (int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, persistence.ErrClosed
	}
	var n int64
	for _, d := range s.dests {
		n += d.size
	}
	return n, nil
}

// Close releases everything the store holds. Later commits, scans and Recover fail with
// persistence.ErrClosed. Close is idempotent and always returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	clear(s.dests)
	clear(s.subs)
	return nil
}
