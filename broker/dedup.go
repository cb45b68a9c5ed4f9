package broker

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// Duplicate detection (issue 14; operations.md §8). A producer names a message with a
// duplicate-detection id in the header DupIDHeader (Artemis' _AMQ_DUPL_ID, what its
// STOMP users send) or RabbitDupIDHeader (the convention of RabbitMQ's deduplication
// plugin). A destination remembers the ids it accepted (policy duplicateDetection:
// idCacheSize of them, the oldest forgotten first, none older than window); a message
// whose id it remembers is a producer's retry: it is answered (RECEIPT) but neither
// stored nor delivered, and counted (Stats.Duplicates, Counters.Duplicates) and logged
// at debug. Each destination of a composite send checks on its own; a transaction's
// sends are checked at COMMIT. A duplicate of a message still being written is answered
// with that write's result (dedupMarks.answer), so its RECEIPT always means stored.
//
// Durability: the id of a persistent message is written in the same store batch as the
// message, as a message of the destination's id log, dedupLogPrefix + its qualified
// name (the way the dispatch markers live in the store), so a crash cannot keep one
// without the other, on every adapter, with no change to the store SPI. The log outlives
// the message (acknowledging the message leaves it): a producer that retries after a
// crash, when a consumer already took the message, still hears "duplicate". Ids the
// cache forgets are acknowledged out of the log in a later batch; at start the logs are
// read back into the caches (and pruned to the policy).
//
// Not deduplicated: messages the scheduler delivers (AMQ_SCHEDULED_*) and stream
// appends. The ids of non-persistent messages are remembered in memory only.
const (
	DupIDHeader       = "_AMQ_DUPL_ID"
	RabbitDupIDHeader = "x-deduplication-header"

	dedupLogPrefix = "meta://dedup/"
)

// dupID is m's duplicate-detection id ("" if none).
func dupID(m *persistence.Message) string {
	if id, ok := m.Headers.Get(DupIDHeader); ok && id != "" {
		return id
	}
	id, _ := m.Headers.Get(RabbitDupIDHeader)
	return id
}

type dedupEntry struct {
	c      *dedupCache
	id     string
	seq    uint64 // in the id log; 0: not stored
	at     time.Time
	undone bool // its send failed: not in the cache, not in the log

	// A persistent message's id is pending until its store write is done (settle);
	// duplicates sent meanwhile wait for the result. Guarded by c.mu.
	pending, settled bool
	err              error
	waiters          []func(error)
}

// dedupCache is the ids one destination remembers.
type dedupCache struct {
	log    string // the store destination of its id log
	size   int
	window time.Duration
	dups   atomic.Int64

	mu      sync.Mutex
	ids     map[string]*dedupEntry
	fifo    []*dedupEntry // oldest first, from head
	head    int
	lastSeq uint64
	prune   []uint64 // log entries forgotten, to acknowledge in the next batch
}

// dedupFor returns the cache of d, creating it; nil when d's policy turns detection off.
func (b *Broker) dedupFor(d destinations.Name) *dedupCache { return b.dedupCacheFor(qualified(d), d) }

// dedupForSub returns the cache of the messages imported into one durable subscription
// of topic (ImportDurable): a message a migration moves lives in each subscription's
// backlog at the source under one id, so each subscription remembers its own.
func (b *Broker) dedupForSub(k persistence.SubKey, topic string) *dedupCache {
	return b.dedupCacheFor(subDedupKey(k), destinations.Name{Kind: destinations.Topic, Name: topic})
}

// subDedupKey is the cache key (and log suffix) of durable subscription k's cache.
func subDedupKey(k persistence.SubKey) string { return subDedupPrefix + k.String() }

const subDedupPrefix = "durable://"

// dedupCacheFor returns the cache kept under key, creating it with the policy of d;
// nil when that policy turns detection off.
func (b *Broker) dedupCacheFor(key string, d destinations.Name) *dedupCache {
	b.dedupMu.RLock()
	c, ok := b.dedups[key]
	b.dedupMu.RUnlock()
	if ok {
		return c
	}
	b.dedupMu.Lock()
	defer b.dedupMu.Unlock()
	if c, ok := b.dedups[key]; ok {
		return c
	}
	p := b.policyFor(d.Kind, d.Name)
	if p.DedupEnabled {
		c = &dedupCache{log: dedupLogPrefix + key, size: max(p.DedupCacheSize, 1), window: p.DedupWindow, ids: map[string]*dedupEntry{}}
	}
	if b.dedups == nil {
		b.dedups = map[string]*dedupCache{}
	}
	b.dedups[key] = c
	return c
}

// dropSubDedup forgets the cache of durable subscription k, deleted, and purges its id
// log with batch.
func (b *Broker) dropSubDedup(k persistence.SubKey, batch persistence.Batch) {
	key := subDedupKey(k)
	b.dedupMu.Lock()
	c := b.dedups[key]
	delete(b.dedups, key)
	b.dedupMu.Unlock()
	if c != nil {
		batch.Purge(c.log)
	}
}

func qualified(d destinations.Name) string {
	if d.Kind.IsTopic() {
		return persistence.TopicName(d.Name)
	}
	return persistence.QueueName(d.Name)
}

// dedupMarks is what duplicate detection did for one send (or COMMIT): the ids it
// recorded, to settle with the store write's result, and the ids it found still being
// written for an earlier send, whose results its answer waits for.
type dedupMarks struct {
	recorded []*dedupEntry
	waits    []*dedupEntry
}

// settle reports the store write of the send: its ids are kept, or forgotten on error
// (the retry of a send that failed is taken). It is called once the write is done,
// before the send is answered.
func (dm *dedupMarks) settle(err error) {
	if dm == nil {
		return
	}
	for _, e := range dm.recorded {
		e.settle(err)
	}
}

// answer returns done to be called once the send's own result is known (the returned
// func) and every earlier send it duplicated while still being written is written: a
// retry is not answered "stored" before the first copy is, and gets an error if the
// first copy's write fails (its id is then forgotten, and the next retry is taken).
func (dm *dedupMarks) answer(done func(error)) func(error) {
	if dm == nil || len(dm.waits) == 0 {
		return done
	}
	var mu sync.Mutex
	left := len(dm.waits) + 1
	var first error
	one := func(err error) {
		mu.Lock()
		if err != nil && first == nil {
			first = err
		}
		left--
		fire := left == 0
		mu.Unlock()
		if fire {
			done(first)
		}
	}
	for _, e := range dm.waits {
		e.wait(func(err error) {
			if err != nil {
				err = &Error{Message: "message not stored: the first copy of this duplicate (same duplicate-detection id) failed to store: " + err.Error() + "; send it again", Err: ErrStore}
			}
			one(err)
		})
	}
	return one
}

// duplicate reports whether m, sent to d, repeats an id d accepted. If not, and m has
// an id, d remembers it in marks: a persistent m's id goes into *batch (begun if nil),
// and marks.settle keeps or forgets it with the write's result. from is for the log.
func (b *Broker) duplicate(d destinations.Name, m *persistence.Message, batch *persistence.Batch, from *Conn, marks *dedupMarks) (dup bool, rec *dedupEntry) {
	id := dupID(m)
	if id == "" {
		return false, nil
	}
	c := b.dedupFor(d)
	if c == nil {
		return false, nil
	}
	return b.duplicateIn(c, id, d.String(), m, batch, from, marks)
}

// duplicateIn is duplicate with cache c; what names the destination in the log.
func (b *Broker) duplicateIn(c *dedupCache, id, what string, m *persistence.Message, batch *persistence.Batch, from *Conn, marks *dedupMarks) (dup bool, rec *dedupEntry) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked(now)
	if old, ok := c.ids[id]; ok {
		c.dups.Add(1)
		b.counters.duplicates.Add(1)
		if old.pending {
			marks.waits = append(marks.waits, old)
		}
		if b.log.Enabled(context.Background(), slog.LevelDebug) {
			attrs := []any{slog.String("dest", what), slog.String("id", id)}
			if from != nil {
				attrs = append(attrs, slog.String("conn", from.ID))
			}
			b.log.Debug("duplicate message dropped", attrs...)
		}
		return true, nil
	}
	e := &dedupEntry{c: c, id: id, at: now}
	if m.Persistent {
		if *batch == nil {
			*batch = b.store.Begin()
		}
		c.lastSeq++
		e.seq = c.lastSeq
		e.pending = true
		(*batch).Add(&persistence.Message{Dest: c.log, Seq: e.seq, ID: id, Timestamp: now.UnixMilli(), Persistent: true, Priority: 4})
	}
	c.ids[id] = e
	c.fifo = append(c.fifo, e)
	for len(c.fifo)-c.head > c.size {
		c.forgetLocked()
	}
	if *batch != nil {
		for _, s := range c.prune {
			(*batch).Ack(c.log, s)
		}
		c.prune = c.prune[:0]
	}
	marks.recorded = append(marks.recorded, e)
	return false, e
}

// settle ends e's write (see dedupMarks.settle); later calls do nothing.
func (e *dedupEntry) settle(err error) {
	c := e.c
	c.mu.Lock()
	if e.settled {
		c.mu.Unlock()
		return
	}
	e.settled, e.pending = true, false
	if err != nil {
		if c.ids[e.id] == e {
			delete(c.ids, e.id)
		}
		e.undone, e.err = true, err
	}
	ws := e.waiters
	e.waiters = nil
	c.mu.Unlock()
	for _, w := range ws {
		w(err)
	}
}

// wait calls fn with the result of e's write, at once if it is done.
func (e *dedupEntry) wait(fn func(error)) {
	c := e.c
	c.mu.Lock()
	if e.pending {
		e.waiters = append(e.waiters, fn)
		c.mu.Unlock()
		return
	}
	err := e.err
	c.mu.Unlock()
	fn(err)
}

// forgetLocked drops the oldest entry.
func (c *dedupCache) forgetLocked() {
	e := c.fifo[c.head]
	c.fifo[c.head] = nil
	c.head++
	if c.head > len(c.fifo)/2 && c.head > 64 {
		c.fifo = append(c.fifo[:0], c.fifo[c.head:]...)
		c.head = 0
	}
	if c.ids[e.id] == e {
		delete(c.ids, e.id)
	}
	if e.seq != 0 && !e.undone {
		c.prune = append(c.prune, e.seq)
	}
}

// expireLocked forgets the ids older than the window.
func (c *dedupCache) expireLocked(now time.Time) {
	if c.window <= 0 {
		return
	}
	for c.head < len(c.fifo) && now.Sub(c.fifo[c.head].at) > c.window {
		c.forgetLocked()
	}
}

// dedupStats sets s.Duplicates from the cache of d.
func (b *Broker) dedupStats(s *destinations.Stats, d destinations.Name) {
	b.dedupMu.RLock()
	c := b.dedups[qualified(d)]
	b.dedupMu.RUnlock()
	if c != nil {
		s.Duplicates = c.dups.Load()
	}
}

// recoverDedup reads the id logs among the recovered destinations back into the caches,
// and removes from the logs what the policy no longer keeps.
func (b *Broker) recoverDedup(ctx context.Context, dests []persistence.DestState) error {
	var batch persistence.Batch
	ids := 0
	for _, ds := range dests {
		if !strings.HasPrefix(ds.Name, dedupLogPrefix) {
			continue
		}
		q := ds.Name[len(dedupLogPrefix):]
		var c *dedupCache
		switch {
		case strings.HasPrefix(q, persistence.QueuePrefix):
			c = b.dedupFor(destinations.Name{Kind: destinations.Queue, Name: q[len(persistence.QueuePrefix):]})
		case strings.HasPrefix(q, persistence.TopicPrefix):
			c = b.dedupFor(destinations.Name{Kind: destinations.Topic, Name: q[len(persistence.TopicPrefix):]})
		case strings.HasPrefix(q, subDedupPrefix):
			// A durable subscription's imports: kept while the subscription is.
			if k, err := persistence.ParseSubKey(q[len(subDedupPrefix):]); err == nil {
				if d := b.durables.Get(k); d != nil {
					c = b.dedupForSub(k, d.Topic())
				}
			}
		default:
			continue
		}
		if batch == nil {
			batch = b.store.Begin()
		}
		if c == nil {
			batch.Purge(ds.Name) // detection turned off, or the subscription gone: no use
			continue
		}
		c.mu.Lock()
		c.lastSeq = max(c.lastSeq, ds.LastSeq)
		err := b.store.Scan(ctx, ds.Name, 0, 0, func(m *persistence.Message) error {
			e := &dedupEntry{c: c, id: m.ID, seq: m.Seq, at: time.UnixMilli(m.Timestamp), settled: true}
			if old := c.ids[m.ID]; old != nil {
				old.undone = true // superseded: not pruned twice
				c.prune = append(c.prune, old.seq)
			}
			c.ids[m.ID] = e
			c.fifo = append(c.fifo, e)
			return nil
		})
		if err == nil {
			for len(c.fifo)-c.head > c.size {
				c.forgetLocked()
			}
			c.expireLocked(time.Now())
			for _, s := range c.prune {
				batch.Ack(c.log, s)
			}
			c.prune = nil
			ids += len(c.ids)
		}
		c.mu.Unlock()
		if err != nil {
			batch.Rollback()
			return fmt.Errorf("broker: recover the duplicate-detection ids of %s: %w", q, err)
		}
	}
	if batch == nil {
		return nil
	}
	if batch.Len() == 0 {
		batch.Rollback()
	} else if err := batch.Commit(ctx, persistence.Sync); err != nil {
		return fmt.Errorf("broker: prune the duplicate-detection ids: %w", err)
	}
	if ids > 0 {
		b.log.Info("recovered duplicate-detection ids", slog.Int("ids", ids))
	}
	return nil
}
