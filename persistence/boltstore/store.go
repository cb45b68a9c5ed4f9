package boltstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/activemq-go/broker/persistence"
)

func init() { persistence.Register("bbolt", open) }

// open is the registered opener: it parses the bbolt block and opens the store.
func open(ctx context.Context, po persistence.Options) (persistence.Store, error) {
	o, err := ParseOptions(po)
	if err != nil {
		return nil, err
	}
	s, err := Open(ctx, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Compile-time guards.
var (
	_ persistence.Store        = (*Store)(nil)
	_ persistence.Sizer        = (*Store)(nil)
	_ persistence.SyncObserver = (*Store)(nil)
)

// Top-level buckets and meta keys of format version 1 (see the package comment).
var (
	bucketMeta     = []byte("meta")
	bucketDests    = []byte("dests")
	bucketOwners   = []byte("owners")
	bucketDestMeta = []byte("destmeta")
	bucketSubs     = []byte("subs")
	bucketSubIDs   = []byte("subids")
	bucketPending  = []byte("pending")

	topBuckets = [][]byte{bucketMeta, bucketDests, bucketOwners, bucketDestMeta, bucketSubs, bucketSubIDs, bucketPending}

	keyFormat    = []byte("format")
	keyLastSubID = []byte("lastsubid")
)

// Store is the bbolt persistence adapter. It is safe for concurrent use.
type Store struct {
	opts Options
	log  *slog.Logger
	db   *bolt.DB

	w       *writer
	applier *applier // the writer's

	// testHookApply, when set, runs before each batch is applied; an error fails the
	// batch as an apply error would.
	testHookApply func([]op) error

	// mu guards stats for Stats; the writer is the only goroutine that changes stats
	// and lastSub (lastSub only the writer reads).
	mu      sync.RWMutex
	stats   map[string]destMeta // committed counters of every destination ever added to
	lastSub uint64

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	syncObs atomic.Pointer[func(time.Duration)] // see SetSyncObserver
}

// SetSyncObserver makes the writer report how long each synced commit took
// (persistence.SyncObserver): one report per group commit's Update, which writes the
// changed pages and fsyncs the file, under syncStrategy always only (under never
// nothing is synced).
func (s *Store) SetSyncObserver(fn func(time.Duration)) {
	if fn == nil {
		s.syncObs.Store(nil)
		return
	}
	s.syncObs.Store(&fn)
}

// observeSync reports a synced commit that began at start.
func (s *Store) observeSync(start time.Time) {
	if s.opts.SyncStrategy != SyncAlways {
		return
	}
	if obs := s.syncObs.Load(); obs != nil {
		(*obs)(time.Since(start))
	}
}

// Open opens (creating it if needed) the database file o.Path and starts the writer.
func Open(ctx context.Context, o Options) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	dir := filepath.Dir(o.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("boltstore: create directory: %w", err)
	}
	_, statErr := os.Stat(o.Path)
	created := errors.Is(statErr, fs.ErrNotExist)

	db, err := bolt.Open(o.Path, 0o600, o.boltOptions())
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s (waited %v)", ErrLocked, o.Path, o.LockTimeout)
	case err != nil:
		return nil, fmt.Errorf("boltstore: open %s: %w", o.Path, err)
	}
	s := &Store{opts: o, log: o.Logger, db: db, stats: make(map[string]destMeta)}
	if err := s.load(); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	if created {
		// The file's directory entry must be durable too, or a power cut right after
		// the first commits could lose the whole file.
		if err := syncDir(dir); err != nil {
			return nil, errors.Join(fmt.Errorf("boltstore: sync directory %s: %w", dir, err), db.Close())
		}
	}
	s.applier = newApplier(s)
	s.w = newWriter(s)

	var msgs int64
	for _, st := range s.stats {
		msgs += st.msgs
	}
	s.log.Info("boltstore: opened", slog.String("path", o.Path), slog.Bool("created", created),
		slog.Int("destinations", len(s.stats)), slog.Int64("messages", msgs),
		slog.String("syncStrategy", o.SyncStrategy.String()), slog.Duration("took", time.Since(start)))
	return s, nil
}

// load initialises a new file or checks an existing one, then reads the counters.
func (s *Store) load() error {
	var fresh bool
	err := s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketMeta) != nil {
			return nil
		}
		empty := true
		if err := tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil }); err != nil {
			return err
		}
		if !empty {
			return fmt.Errorf("%w: %s holds buckets but no boltstore meta bucket", ErrFormat, s.opts.Path)
		}
		fresh = true
		return nil
	})
	if err != nil {
		return err
	}
	if fresh {
		if err := s.db.Update(func(tx *bolt.Tx) error {
			for _, name := range topBuckets {
				if _, err := tx.CreateBucketIfNotExists(name); err != nil {
					return err
				}
			}
			return tx.Bucket(bucketMeta).Put(keyFormat, []byte{0, 0, 0, formatVersion})
		}); err != nil {
			return fmt.Errorf("boltstore: initialise %s: %w", s.opts.Path, err)
		}
	}
	return s.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		v := meta.Get(keyFormat)
		if len(v) != 4 {
			return fmt.Errorf("%w: %s: bad format version record", ErrFormat, s.opts.Path)
		}
		if ver := uint32(v[0])<<24 | uint32(v[1])<<16 | uint32(v[2])<<8 | uint32(v[3]); ver != formatVersion {
			return fmt.Errorf("%w: %s has format version %d, this broker reads version %d", ErrFormat, s.opts.Path, ver, formatVersion)
		}
		for _, name := range topBuckets {
			if tx.Bucket(name) == nil {
				return fmt.Errorf("%w: %s: bucket %q missing", ErrCorrupt, s.opts.Path, name)
			}
		}
		if v := meta.Get(keyLastSubID); v != nil {
			id, err := keySeq(v)
			if err != nil {
				return err
			}
			s.lastSub = id
		}
		return tx.Bucket(bucketDestMeta).ForEach(func(k, v []byte) error {
			d, err := decodeDestMeta(v)
			if err != nil {
				return fmt.Errorf("destination %q: %w", k, err)
			}
			s.stats[string(k)] = d
			return nil
		})
	})
}

// syncDir fsyncs a directory, so an entry created in it survives a power cut.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // directories cannot be synced there; NTFS journals the entry
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// viewErr maps what bbolt says about a closed database to persistence.ErrClosed.
func viewErr(err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return persistence.ErrClosed
	}
	return err
}

// Recover reads, in one read transaction, every destination an Add was ever committed
// to (sorted by name) and every durable subscription (sorted by ClientID, then Name).
// It may be called at any time; it costs O(destinations + subscriptions), plus a walk
// of each subscription's pending bucket to count its backlog.
func (s *Store) Recover(ctx context.Context) (*persistence.Recovered, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, persistence.ErrClosed
	}
	r := &persistence.Recovered{Destinations: []persistence.DestState{}, Subs: []persistence.SubInfo{},
		Pending: map[persistence.SubKey]int64{}}
	err := s.db.View(func(tx *bolt.Tx) error {
		// Keys sort bytewise, as Go compares strings: the list comes out sorted.
		err := tx.Bucket(bucketDestMeta).ForEach(func(k, v []byte) error {
			d, err := decodeDestMeta(v)
			if err != nil {
				return fmt.Errorf("destination %q: %w", k, err)
			}
			r.Destinations = append(r.Destinations, persistence.DestState{
				Name: string(k), LastSeq: d.lastSeq, Msgs: d.msgs, Bytes: d.bytes,
			})
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bucketSubs).ForEach(func(k, v []byte) error {
			key, err := decodeSubKey(k)
			if err != nil {
				return err
			}
			rec, err := decodeSubRecord(key, v)
			if err != nil {
				return err
			}
			r.Subs = append(r.Subs, rec.info)
			// The backlog is the number of keys of its pending bucket, which bbolt
			// counts walking the bucket's pages (no value is read).
			if pb := tx.Bucket(bucketPending).Bucket(subIDKey(rec.id)); pb != nil {
				if n := pb.Stats().KeyN; n > 0 {
					r.Pending[key] = int64(n)
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, viewErr(err)
	}
	r.Sort()
	return r, nil
}

// Begin starts a batch. A batch begun after Close fails its Commit with ErrClosed.
func (s *Store) Begin() persistence.Batch { return s.newBatch() }

// Stats returns the committed counters of dest from memory, O(1); (0, 0) for a
// destination nothing was ever added to.
func (s *Store) Stats(dest string) (msgs, bytes int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.stats[dest]
	return st.msgs, st.bytes
}

// Size is the part of the database file in use, for systemUsage storeUsage: the file's
// pages up to its high-water mark less those on the freelist. (The file itself never
// shrinks: bbolt reuses freed pages but does not give them back, so its length would
// keep a store that was full once full for good.)
func (s *Store) Size(context.Context) (int64, error) {
	if s.closed.Load() {
		return 0, persistence.ErrClosed
	}
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Size()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("boltstore: size: %w", err)
	}
	return max(n-int64(s.db.Stats().FreeAlloc), 0), nil
}

// Close stops accepting commits, lets the writer commit what is queued and complete
// every waiter, syncs the file if syncStrategy is never, and closes it. Later commits,
// scans and Recover fail with persistence.ErrClosed. A second Close returns nil.
func (s *Store) Close() error {
	first := false
	s.closeOnce.Do(func() {
		first = true
		s.closed.Store(true)
		s.w.close()
		var errs []error
		if err := s.w.failure(); err != nil {
			errs = append(errs, err) // the sticky failure: the shutdown was not clean
		}
		if s.opts.SyncStrategy == SyncNever {
			if err := s.db.Sync(); err != nil {
				errs = append(errs, fmt.Errorf("boltstore: sync %s: %w", s.opts.Path, err))
			}
		}
		if err := s.db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("boltstore: close %s: %w", s.opts.Path, err))
		}
		s.closeErr = errors.Join(errs...)
		s.log.Info("boltstore: closed", slog.String("path", s.opts.Path),
			slog.Uint64("updates", s.w.updates.Load()), slog.Uint64("batches", s.w.batches.Load()))
	})
	if !first {
		return nil
	}
	return s.closeErr
}
