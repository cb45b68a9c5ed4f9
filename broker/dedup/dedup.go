// Package dedup is duplicate detection (issue 14; operations.md §8). A producer names a
// message with a duplicate-detection id in the header IDHeader (Artemis' _AMQ_DUPL_ID,
// what its STOMP users send) or RabbitIDHeader (the convention of RabbitMQ's
// deduplication plugin). A destination remembers the ids it accepted (policy
// duplicateDetection: idCacheSize of them, the oldest forgotten first, none older than
// window); a message whose id it remembers is a producer's retry: it is answered
// (RECEIPT) but neither stored nor delivered, and counted (Stats.Duplicates,
// Counters.Duplicates) and logged at debug. Each destination of a composite send checks
// on its own; a transaction's sends are checked at COMMIT. A duplicate of a message
// still being written is answered with that write's result (Marks.Answer), so its
// RECEIPT always means stored.
//
// Durability: the id of a persistent message is written in the same store batch as the
// message, as a message of the destination's id log, LogPrefix + its qualified name (the
// way the dispatch markers live in the store), so a crash cannot keep one without the
// other, on every adapter, with no change to the store SPI. The log outlives the message
// (acknowledging the message leaves it): a producer that retries after a crash, when a
// consumer already took the message, still hears "duplicate". Ids the cache forgets are
// acknowledged out of the log in a later batch; at start the logs are read back into the
// caches (and pruned to the policy).
//
// Not deduplicated: messages the scheduler delivers (AMQ_SCHEDULED_*) and stream
// appends. The ids of non-persistent messages are remembered in memory only.
//
// The broker keeps one Detector (New) and asks it about each send to a destination
// (Check) before routing it; the Detector asks its Host for the destinations' policies
// and the durable subscriptions it keeps ids for, and imports nothing of the broker.
package dedup

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
)

const (
	// IDHeader and RabbitIDHeader name a message's duplicate-detection id (Artemis'
	// header, and RabbitMQ's deduplication plugin's); IDHeader wins when both are set.
	IDHeader       = "_AMQ_DUPL_ID"
	RabbitIDHeader = "x-deduplication-header"

	// LogPrefix + a destination's qualified name is the store destination of its id log.
	LogPrefix = "meta://dedup/"
)

// Host is what duplicate detection asks of the broker it runs in.
type Host interface {
	// Policy is the policy of a destination: its DuplicateDetection says what the
	// destination remembers.
	Policy(kind destinations.Kind, name string) policy.Policy
	// DurableTopic is the topic of durable subscription k, and false when there is no
	// such subscription (its ids are then dropped at start).
	DurableTopic(k persistence.SubKey) (topic string, ok bool)
	// Dropped counts one duplicate dropped, broker-wide.
	Dropped()
}

// Detector holds the duplicate-detection caches of every destination, and of the
// durable subscriptions messages were imported into.
type Detector struct {
	store persistence.Store
	host  Host
	log   *slog.Logger

	// caches are the caches by qualified name (a nil one: detection off).
	mu     sync.RWMutex
	caches map[string]*Cache
}

// New returns a Detector that remembers no id yet: Recover reads the stored ones.
func New(store persistence.Store, host Host, log *slog.Logger) *Detector {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Detector{store: store, host: host, log: log, caches: map[string]*Cache{}}
}

// ID is m's duplicate-detection id ("" if none).
func ID(m *persistence.Message) string {
	if id, ok := m.Headers.Get(IDHeader); ok && id != "" {
		return id
	}
	id, _ := m.Headers.Get(RabbitIDHeader)
	return id
}

// Entry is one id a Cache remembers; Check returns the one it records so that a send
// that fails for that destination alone can Settle it.
type Entry struct {
	c      *Cache
	id     string
	seq    uint64 // in the id log; 0: not stored
	at     time.Time
	undone bool // its send failed: not in the cache, not in the log

	// A persistent message's id is pending until its store write is done (Settle);
	// duplicates sent meanwhile wait for the result. Guarded by c.mu.
	pending, settled bool
	err              error
	waiters          []func(error)
}

// Cache is the ids one destination (or one durable subscription's imports) remembers.
type Cache struct {
	log    string // the store destination of its id log
	size   int
	window time.Duration
	dups   atomic.Int64

	mu      sync.Mutex
	ids     map[string]*Entry
	fifo    []*Entry // oldest first, from head
	head    int
	lastSeq uint64
	prune   []uint64 // log entries forgotten, to acknowledge in the next batch
}

// cacheFor returns the cache of d, creating it; nil when d's policy turns detection off.
func (dt *Detector) cacheFor(d destinations.Name) *Cache { return dt.cacheAt(qualified(d), d) }

// ForSub returns the cache of the messages imported into one durable subscription
// of topic (ImportDurable): a message a migration moves lives in each subscription's
// backlog at the source under one id, so each subscription remembers its own.
func (dt *Detector) ForSub(k persistence.SubKey, topic string) *Cache {
	return dt.cacheAt(subDedupKey(k), destinations.Name{Kind: destinations.Topic, Name: topic})
}

// subDedupKey is the cache key (and log suffix) of durable subscription k's cache.
func subDedupKey(k persistence.SubKey) string { return subDedupPrefix + k.String() }

const subDedupPrefix = "durable://"

// cacheAt returns the cache kept under key, creating it with the policy of d; nil when
// that policy turns detection off.
func (dt *Detector) cacheAt(key string, d destinations.Name) *Cache {
	dt.mu.RLock()
	c, ok := dt.caches[key]
	dt.mu.RUnlock()
	if ok {
		return c
	}
	dt.mu.Lock()
	defer dt.mu.Unlock()
	if c, ok := dt.caches[key]; ok {
		return c
	}
	p := dt.host.Policy(d.Kind, d.Name)
	if dd := p.DuplicateDetection; dd.Enabled {
		c = &Cache{log: LogPrefix + key, size: max(dd.IDCacheSize, 1), window: dd.Window, ids: map[string]*Entry{}}
	}
	dt.caches[key] = c
	return c
}

// DropSub forgets the cache of durable subscription k, deleted, and purges its id log
// with batch.
func (dt *Detector) DropSub(k persistence.SubKey, batch persistence.Batch) {
	key := subDedupKey(k)
	dt.mu.Lock()
	c := dt.caches[key]
	delete(dt.caches, key)
	dt.mu.Unlock()
	if c != nil {
		batch.Purge(c.log)
	}
}

func qualified(d destinations.Name) string {
	if d.Kind == destinations.TempQueue || d.Kind == destinations.TempTopic {
		return d.Kind.String() + "://" + d.Name // apart from a queue or topic of that name
	}
	if d.Kind.IsTopic() {
		return persistence.TopicName(d.Name)
	}
	return persistence.QueueName(d.Name)
}

// Marks is what duplicate detection did for one send (or COMMIT): the ids it
// recorded, to settle with the store write's result, and the ids it found still being
// written for an earlier send, whose results its answer waits for.
type Marks struct {
	recorded []*Entry
	waits    []*Entry
}

// Settle reports the store write of the send: its ids are kept, or forgotten on error
// (the retry of a send that failed is taken). It is called once the write is done,
// before the send is answered.
func (dm *Marks) Settle(err error) {
	if dm == nil {
		return
	}
	for _, e := range dm.recorded {
		e.Settle(err)
	}
}

// Recorded reports whether the send recorded an id (it did not, for nil marks): its
// batch then holds that id's entry too.
func (dm *Marks) Recorded() bool { return dm != nil && len(dm.recorded) > 0 }

// Answer returns done to be called once the send's own result is known (the returned
// func) and every earlier send it duplicated while still being written is written: a
// retry is not answered "stored" before the first copy is, and gets an error if the
// first copy's write fails (its id is then forgotten, and the next retry is taken).
func (dm *Marks) Answer(done func(error)) func(error) {
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
				err = &destinations.Error{Message: "message not stored: the first copy of this duplicate (same duplicate-detection id) failed to store: " + err.Error() + "; send it again", Err: destinations.ErrStore}
			}
			one(err)
		})
	}
	return one
}

// Check reports whether m, sent to d, repeats an id d accepted. If not, and m has an
// id, d remembers it in marks: a persistent m's id goes into *batch (begun if nil), and
// marks.Settle keeps or forgets it with the write's result. conn, the id of the
// sending connection ("" for none), is for the log.
func (dt *Detector) Check(d destinations.Name, m *persistence.Message, batch *persistence.Batch, conn string, marks *Marks) (dup bool, rec *Entry) {
	id := ID(m)
	if id == "" {
		return false, nil
	}
	c := dt.cacheFor(d)
	if c == nil {
		return false, nil
	}
	return dt.CheckIn(c, id, d.String(), m, batch, conn, marks)
}

// CheckIn is Check of m's id, id, with cache c; what names the destination in the log.
func (dt *Detector) CheckIn(c *Cache, id, what string, m *persistence.Message, batch *persistence.Batch, conn string, marks *Marks) (dup bool, rec *Entry) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked(now)
	if old, ok := c.ids[id]; ok {
		c.dups.Add(1)
		dt.host.Dropped()
		if old.pending {
			marks.waits = append(marks.waits, old)
		}
		if dt.log.Enabled(context.Background(), slog.LevelDebug) {
			attrs := []any{slog.String("dest", what), slog.String("id", id)}
			if conn != "" {
				attrs = append(attrs, slog.String("conn", conn))
			}
			dt.log.Debug("duplicate message dropped", attrs...)
		}
		return true, nil
	}
	e := &Entry{c: c, id: id, at: now}
	if m.Persistent {
		if *batch == nil {
			*batch = dt.store.Begin()
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

// Settle ends e's write (see Marks.Settle); later calls do nothing.
func (e *Entry) Settle(err error) {
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
func (e *Entry) wait(fn func(error)) {
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
func (c *Cache) forgetLocked() {
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
func (c *Cache) expireLocked(now time.Time) {
	if c.window <= 0 {
		return
	}
	for c.head < len(c.fifo) && now.Sub(c.fifo[c.head].at) > c.window {
		c.forgetLocked()
	}
}

// Duplicates is how many messages to d were dropped as duplicates since d's cache was
// made (since the start).
func (dt *Detector) Duplicates(d destinations.Name) int64 {
	dt.mu.RLock()
	c := dt.caches[qualified(d)]
	dt.mu.RUnlock()
	if c == nil {
		return 0
	}
	return c.dups.Load()
}

// Recover reads the id logs among the recovered destinations back into the caches, and
// removes from the logs what the policy no longer keeps.
func (dt *Detector) Recover(ctx context.Context, dests []persistence.DestState) error {
	var batch persistence.Batch
	ids := 0
	for _, ds := range dests {
		if !strings.HasPrefix(ds.Name, LogPrefix) {
			continue
		}
		q := ds.Name[len(LogPrefix):]
		var c *Cache
		switch {
		case strings.HasPrefix(q, persistence.QueuePrefix):
			c = dt.cacheFor(destinations.Name{Kind: destinations.Queue, Name: q[len(persistence.QueuePrefix):]})
		case strings.HasPrefix(q, persistence.TopicPrefix):
			c = dt.cacheFor(destinations.Name{Kind: destinations.Topic, Name: q[len(persistence.TopicPrefix):]})
		case strings.HasPrefix(q, subDedupPrefix):
			// A durable subscription's imports: kept while the subscription is.
			if k, err := persistence.ParseSubKey(q[len(subDedupPrefix):]); err == nil {
				if topic, ok := dt.host.DurableTopic(k); ok {
					c = dt.ForSub(k, topic)
				}
			}
		default:
			continue
		}
		if batch == nil {
			batch = dt.store.Begin()
		}
		if c == nil {
			batch.Purge(ds.Name) // detection turned off, or the subscription gone: no use
			continue
		}
		c.mu.Lock()
		c.lastSeq = max(c.lastSeq, ds.LastSeq)
		err := dt.store.Scan(ctx, ds.Name, 0, 0, func(m *persistence.Message) error {
			e := &Entry{c: c, id: m.ID, seq: m.Seq, at: time.UnixMilli(m.Timestamp), settled: true}
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
		dt.log.Info("recovered duplicate-detection ids", slog.Int("ids", ids))
	}
	return nil
}
