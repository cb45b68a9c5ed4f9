// Package persistence defines the protocol-neutral storage contract of the broker: the
// Message type, the Store and Batch interfaces every adapter implements, and a registry
// through which the broker opens an adapter by the name given in the configuration.
//
// Adapters live in sub-packages and register themselves in init():
//
//	func init() { persistence.Register("memory", open) }
//
// Only cmd/ blank-imports adapters; everything else opens them by name with Open.
//
// # Contract
//
// Every write goes through a Batch. A Batch is applied atomically: after Commit returns
// nil every operation in it is visible (and, for Sync on a durable adapter, on stable
// storage); after Rollback or a failed Commit none is. Operations inside one batch apply
// in the order they were added. Batches from different goroutines may be committed
// concurrently; an adapter orders them as it likes, but a batch committed after another
// batch's Commit returned is applied after it.
//
// Queue messages are deleted by Ack. Topic messages are kept once and carry, in
// Message.Subs, the durable subscriptions that still owe an acknowledgement; AckSub
// removes one subscription from a message and the message is deleted when none is left.
// RemoveSub removes a subscription and releases everything it held.
package persistence

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"
)

// Durability says how far a Commit must go before it returns.
type Durability uint8

const (
	// Sync returns only once the batch is on stable storage (as far as the adapter's
	// sync policy allows).
	Sync Durability = iota
	// Async returns once the batch is ordered and visible; it reaches disk later.
	Async
)

// Store is one open persistence adapter.
type Store interface {
	// Recover reports what the store holds: its destinations with their last sequence
	// numbers and message counts, and its durable subscriptions. The broker calls it
	// once, before any other method.
	Recover(ctx context.Context) (*Recovered, error)

	// Begin starts a batch of writes.
	Begin() Batch

	// Scan calls fn, in sequence order, for up to max messages of dest whose sequence
	// is greater than afterSeq (max <= 0 means no limit). Returning a non-nil error from
	// fn stops the scan and Scan returns that error. fn must not keep the *Message past
	// its return unless it clones it.
	Scan(ctx context.Context, dest string, afterSeq uint64, max int, fn func(*Message) error) error

	// ScanSub is Scan over the messages of the subscription's topic that the durable
	// subscription sub still has to acknowledge.
	ScanSub(ctx context.Context, sub SubKey, afterSeq uint64, max int, fn func(*Message) error) error

	// Stats returns the number of stored messages of dest and their payload bytes.
	Stats(dest string) (msgs, bytes int64)

	// Close flushes what is pending and releases the store. Commits after Close fail
	// with ErrClosed.
	Close() error
}

// Batch collects writes that are applied atomically by Commit.
type Batch interface {
	// Add stores a message. m.Dest and m.Seq must be set.
	Add(m *Message)
	// Ack deletes a queue message.
	Ack(dest string, seq uint64)
	// AckSub records that durable subscription sub acknowledged the topic message seq.
	AckSub(sub SubKey, seq uint64)
	// AddSub creates or replaces a durable subscription.
	AddSub(info SubInfo)
	// RemoveSub deletes a durable subscription and releases every message it held.
	RemoveSub(sub SubKey)
	// Purge deletes every message of dest.
	Purge(dest string)
	// Len is the number of operations in the batch.
	Len() int
	// Commit applies the batch. See Durability.
	Commit(ctx context.Context, d Durability) error
	// Rollback discards the batch; nothing of it is applied.
	Rollback()
}

// AsyncBatch is an optional power of a Batch: commit without blocking the caller, which
// lets one connection pipeline many persistent sends. done is called exactly once, from
// any goroutine, with the commit's result; callbacks of batches committed from one
// goroutine run in commit order.
type AsyncBatch interface {
	CommitAsync(d Durability, done func(error))
}

// CancelableBatch is an optional power of a Batch: CommitAsync whose batch may still be
// withdrawn while it waits for the store to start writing it. It serves ActiveMQ's
// concurrent store and dispatch: the broker hands a persistent message to a consumer
// while its write is queued, and when the consumer acknowledges it before the write
// began, neither the message nor its acknowledgement needs to touch the disk.
//
// CommitCancelable returns nil when the store does not dispatch concurrently (an
// option of the adapter); the batch is then committed as by CommitAsync. Otherwise
// cancel reports whether it withdrew the batch: if so nothing of the batch is ever
// applied and done is called with ErrCanceled, from the store's completion goroutine or
// from within cancel (the caller answers its producer itself);
// once the write began, cancel returns false and done gets the commit's result.
type CancelableBatch interface {
	CommitCancelable(d Durability, done func(error)) (cancel func() bool)
}

// Locker is an optional power of a Store that several brokers may share (ActiveMQ's
// shared-store master/slave): only the broker holding the lock may serve. The broker
// calls Lock before Recover, keeps its transport connectors closed until Lock returns,
// and stops serving at once when Lost is closed.
type Locker interface {
	// Lock blocks until this broker holds the lock (and keeps it alive from then on), or
	// ctx ends.
	Lock(ctx context.Context) error
	// Lost is closed when a held lock is lost (the lease could not be renewed in time).
	Lost() <-chan struct{}
}

// SpaceReporter is an optional power of a Store with files on disk: what it occupies
// and which destination pins its oldest data (KahaDB's "why are my logs not deleted").
type SpaceReporter interface {
	DiskUsage() int64
	OldestSegment() (file, dest string, ok bool)
}

// Container is an optional power of a Store: whether dest stores seq, answered from its
// index without reading the message. The scheduler asks it of every new job's key once
// its jobs are paged out; without it the broker asks Scan(seq-1, 1), which a store whose
// destination is spread over many sorted runs pays for with a read in each.
type Container interface {
	Contains(ctx context.Context, dest string, seq uint64) (bool, error)
}

// Sizer is an optional power of a Store: the room it takes, which the broker holds
// under systemUsage storeUsage (over it, persistent messages are refused). A file store
// reports its files on disk, a database store its tables, the memory store the bytes of
// the messages it holds. ctx bounds a store that must ask a server; the broker calls Size
// a few times a second, so a store for which that is costly answers from a cache.
type Sizer interface {
	Size(ctx context.Context) (int64, error)
}

// SyncObserver is an optional power of a Store that syncs files on its write path: it
// reports how long each sync took (one per group commit, not per message), for the
// broker's store sync histogram. Set it once, before the store is busy; fn is called
// from the store's writer goroutine and must not block. A nil fn stops the reports.
type SyncObserver interface {
	SetSyncObserver(fn func(time.Duration))
}

// Recovered is what Store.Recover reports.
type Recovered struct {
	Destinations []DestState
	Subs         []SubInfo
	// Pending is, by durable subscription of Subs, how many stored messages it still
	// has to acknowledge (its backlog); a subscription owing none may be absent. Every
	// adapter answers it from what it keeps to serve ScanSub (an index in memory, or
	// one aggregate query), without reading the messages.
	Pending map[SubKey]int64
}

// Sort puts r in the order Recover reports: destinations by Name, subscriptions by
// ClientID, then Name.
func (r *Recovered) Sort() {
	slices.SortFunc(r.Destinations, func(a, b DestState) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(r.Subs, func(a, b SubInfo) int {
		return cmp.Or(cmp.Compare(a.Key.ClientID, b.Key.ClientID), cmp.Compare(a.Key.Name, b.Key.Name))
	})
}

// DestState describes one stored destination.
type DestState struct {
	Name    string // qualified
	LastSeq uint64 // highest sequence ever stored (0 if none)
	Msgs    int64
	Bytes   int64
}

// Options is what an adapter's opener receives.
type Options struct {
	// DataDirectory is the broker's dataDirectory; adapters put their files below it
	// unless their own options say otherwise.
	DataDirectory string
	// Raw holds the adapter's own block of the configuration, keys as written by the
	// user (viper lower-cases them).
	Raw map[string]any
	// Logger receives the adapter's events (recovery, compaction, lock changes): the
	// broker passes its own, so they come out at its level and in its format. nil
	// discards them.
	Logger *slog.Logger
}

// Opener opens an adapter.
type Opener func(ctx context.Context, opts Options) (Store, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Opener{}
)

// Register makes an adapter available under name. It panics if name is registered twice
// or open is nil, as database/sql.Register does.
func Register(name string, open Opener) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if open == nil {
		panic("persistence: Register opener is nil")
	}
	if _, dup := registry[name]; dup {
		panic("persistence: Register called twice for adapter " + name)
	}
	registry[name] = open
}

// Adapters lists the registered adapter names, sorted.
func Adapters() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Open opens the adapter registered under name.
func Open(ctx context.Context, name string, opts Options) (Store, error) {
	registryMu.RLock()
	open, ok := registry[name]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q (forgotten import?)", ErrUnknownAdapter, name)
	}
	return open(ctx, opts)
}
