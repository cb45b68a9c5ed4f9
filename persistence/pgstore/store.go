package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/completion"
)

func init() { persistence.Register("jdbc", open) }

// open is the registered opener: it parses the jdbc block and opens the store.
func open(ctx context.Context, po persistence.Options) (persistence.Store, error) {
	o, err := ParseOptions(po)
	if err != nil {
		return nil, err
	}
	if o.Shared {
		return nil, fmt.Errorf("%w: mode shared: the broker opens the shared queues' engine (pgshared) itself; this store is the masterSlave mode's", ErrOption)
	}
	s, err := Open(ctx, o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Compile-time guards: a Store is a persistence.Store with the Locker power.
var (
	_ persistence.Store  = (*Store)(nil)
	_ persistence.Locker = (*Store)(nil)
	_ persistence.Sizer  = (*Store)(nil)
)

// Store is the PostgreSQL persistence adapter. It is safe for concurrent use.
type Store struct {
	opts   Options
	log    *slog.Logger
	pool   *pgxpool.Pool
	t      *tables
	addr   string // host:port for log lines
	secret string // the password, removed from every error text

	mu    sync.RWMutex // guards st (written by the writer only)
	st    *state
	stale atomic.Bool // st may differ from the tables: reload before use

	closeMu   sync.RWMutex // held for reading while a request is queued
	closed    bool
	closing   chan struct{}
	closeOnce sync.Once

	w         *writer
	completer *completion.Runner
	lease     *lease

	groups, batches atomic.Int64 // transactions committed, batches in them
}

// Open connects to the database (retrying while it is unreachable, until ctx ends),
// checks or creates the tables, loads the state and starts the writer.
func Open(ctx context.Context, o Options) (*Store, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg, addr, err := o.poolConfig()
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, redact(fmt.Errorf("pgstore: %w", err), cfg.ConnConfig.Password)
	}
	leaseCfg := cfg.Copy()
	leaseCfg.MaxConns = 1
	leasePool, err := pgxpool.NewWithConfig(ctx, leaseCfg) // connects only once Lock runs
	if err != nil {
		pool.Close()
		return nil, redact(fmt.Errorf("pgstore: %w", err), cfg.ConnConfig.Password)
	}
	s := &Store{
		opts:    o,
		log:     o.Logger.With(slog.String("adapter", "jdbc")),
		pool:    pool,
		t:       newTables(o.TablePrefix),
		addr:    addr,
		secret:  cfg.ConnConfig.Password,
		closing: make(chan struct{}),
	}
	s.lease = newLease(s, leasePool)
	if err := s.start(ctx); err != nil {
		pool.Close()
		leasePool.Close()
		return nil, s.publicErr(err)
	}
	s.completer = completion.NewRunner()
	s.w = newWriter(s)
	go s.w.run()
	return s, nil
}

func (s *Store) start(ctx context.Context) error {
	if err := s.connect(ctx); err != nil {
		return err
	}
	if err := ensureSchema(ctx, s.pool, s.t, !s.opts.SkipCreateTables); err != nil {
		return err
	}
	st, err := loadState(ctx, s.pool, s.t)
	if err != nil {
		return fmt.Errorf("pgstore: load state: %w", err)
	}
	s.st = st
	return nil
}

// connect waits until the database answers, logging each failed attempt.
func (s *Store) connect(ctx context.Context) error {
	delay := s.opts.ConnectRetryInterval
	for attempt := 1; ; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := s.pool.Ping(pctx)
		cancel()
		if err == nil {
			if attempt > 1 {
				s.log.Info("database reachable", slog.String("addr", s.addr), slog.Int("attempts", attempt))
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %s: %w (last error: %w)", ErrUnavailable, s.addr, ctx.Err(), err)
		}
		if !retryable(err) {
			return fmt.Errorf("pgstore: connect to %s: %w", s.addr, err)
		}
		s.log.Warn(fmt.Sprintf("database unreachable, retrying in %s", delay),
			slog.String("addr", s.addr), slog.String("err", redactText(err.Error(), s.secret)))
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s: %w (last error: %w)", ErrUnavailable, s.addr, ctx.Err(), err)
		case <-time.After(delay):
		}
		delay = min(2*delay, maxConnectRetryInterval)
	}
}

// retryable tells a database that is not (yet) reachable from one that refuses us.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return true // network: refused, timeout, reset
	}
	switch pgErr.Code {
	case "57P03", "57P01", "57P02", "53300": // starting up, shutting down, too many connections
		return true
	}
	return false // authentication, unknown database, permissions: retrying will not help
}

// publicErr is what leaves the store: a lost connection wrapped in ErrUnavailable, the
// lease check in ErrLockLost, every text without the password.
func (s *Store) publicErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errFenced):
		return ErrLockLost
	case errors.Is(err, ErrLockLost), errors.Is(err, persistence.ErrClosed),
		errors.Is(err, ErrInvalid), errors.Is(err, ErrUnavailable),
		errors.Is(err, ErrNoSchema), errors.Is(err, ErrSchemaVersion):
	case isStatementError(err):
		if !strings.HasPrefix(err.Error(), "pgstore: ") {
			err = fmt.Errorf("pgstore: %w", err)
		}
	default:
		err = fmt.Errorf("%w: %s: %w", ErrUnavailable, s.addr, err)
	}
	return redact(err, s.secret)
}

func (s *Store) countGroup(batches int) {
	s.groups.Add(1)
	s.batches.Add(int64(batches))
}

// submit queues r for the writer.
func (s *Store) submit(r *request) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return persistence.ErrClosed
	}
	if r.ctrl == nil {
		if err := s.lease.lostErr(); err != nil {
			return err
		}
	}
	s.w.queue <- r
	return nil
}

// completeNow reports err to a CommitAsync callback, in order after those pending.
func (s *Store) completeNow(done func(error), err error) { s.completer.Push(done, err) }

func (s *Store) isClosed() bool {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	return s.closed
}

// Recover reports the destinations (LastSeq, counts) and subscriptions, from the
// state loaded at open and kept up to date by the writer; after Lock acquired the
// lease (another broker may have written meanwhile) it is loaded again first.
func (s *Store) Recover(ctx context.Context) (*persistence.Recovered, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.isClosed() {
		return nil, persistence.ErrClosed
	}
	if s.stale.Load() {
		r := &request{result: make(chan error, 1), ctrl: func(ctx context.Context) error {
			if !s.stale.Load() {
				return nil
			}
			return s.w.reload(ctx)
		}}
		if err := s.submit(r); err != nil {
			return nil, err
		}
		if err := <-r.result; err != nil {
			return nil, err
		}
	}
	// The backlogs are counted on the writer, between transactions, so that they agree
	// with the state Recover reports.
	var r *persistence.Recovered
	req := &request{result: make(chan error, 1), ctrl: func(ctx context.Context) error {
		pending, err := s.w.countPending(ctx)
		if err != nil {
			return fmt.Errorf("pgstore: count the subscriptions' backlogs: %w", err)
		}
		s.mu.RLock()
		defer s.mu.RUnlock()
		r = s.st.recovered(pending)
		return nil
	}}
	if err := s.submit(req); err != nil {
		return nil, err
	}
	if err := <-req.result; err != nil {
		return nil, err
	}
	return r, nil
}

// Begin starts a batch. A batch begun after Close fails its Commit with ErrClosed.
func (s *Store) Begin() persistence.Batch { return s.newBatch() }

// scanPage is how many rows one query of a scan fetches.
const scanPage = 256

// Scan implements persistence.Store, a page of scanPage messages per query
// (WHERE CONTAINER = $1 AND ID > $2 ORDER BY ID LIMIT n). fn runs while the page's
// rows are read, on a pooled connection; the *Message and its slices are reused.
func (s *Store) Scan(ctx context.Context, dest string, afterSeq uint64, max int, fn func(*persistence.Message) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.isClosed() {
		return persistence.ErrClosed
	}
	sql := s.t.scanQueue
	if persistence.KindOf(dest) == persistence.KindTopic {
		sql = s.t.scanTopic
	}
	return s.scan(ctx, sql, dest, dest, afterSeq, max, fn)
}

// ScanSub implements persistence.Store; an unknown subscription is an error wrapping
// persistence.ErrUnknownSub.
func (s *Store) ScanSub(ctx context.Context, key persistence.SubKey, afterSeq uint64, max int, fn func(*persistence.Message) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.isClosed() {
		return persistence.ErrClosed
	}
	s.mu.RLock()
	sub := s.st.subs[key]
	s.mu.RUnlock()
	if sub == nil {
		return fmt.Errorf("%w: %s", persistence.ErrUnknownSub, key)
	}
	return s.scan(ctx, s.t.scanSub, sub.id, sub.info.Dest, afterSeq, max, fn)
}

func (s *Store) scan(ctx context.Context, sql string, key any, dest string, afterSeq uint64, max int,
	fn func(*persistence.Message) error) error {
	if afterSeq >= math.MaxInt64 {
		return nil
	}
	var (
		m       persistence.Message
		raw     pgtype.DriverBytes
		id      int64
		clients []string
		names   []string
	)
	after := int64(afterSeq)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.isClosed() {
			return persistence.ErrClosed
		}
		n := scanPage
		if max > 0 {
			n = min(n, max)
		}
		rows, err := s.pool.Query(ctx, sql, key, after, n)
		if err != nil {
			return s.scanErr(ctx, err)
		}
		count := 0
		for rows.Next() {
			if err := rows.Scan(&id, &raw, &clients, &names); err != nil {
				rows.Close()
				return s.scanErr(ctx, err)
			}
			if err := decodeMessage(raw, &m); err != nil {
				rows.Close()
				return fmt.Errorf("%w (%s #%d)", err, dest, id)
			}
			m.Dest, m.Seq = dest, uint64(id)
			m.Subs = m.Subs[:0]
			for i := range min(len(clients), len(names)) {
				m.Subs = append(m.Subs, persistence.SubKey{ClientID: clients[i], Name: names[i]})
			}
			if err := fn(&m); err != nil {
				rows.Close()
				return err
			}
			count++
			after = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return s.scanErr(ctx, err)
		}
		if count < n {
			return nil
		}
		if max > 0 {
			if max -= count; max == 0 {
				return nil
			}
		}
	}
}

func (s *Store) scanErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("pgstore: scan: %w", ctx.Err())
	}
	return s.publicErr(err)
}

// Stats implements persistence.Store in O(1), from the in-memory counters.
func (s *Store) Stats(dest string) (msgs, bytes int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if d := s.st.dests[dest]; d != nil {
		return d.msgs, d.bytes
	}
	return 0, 0
}

// rowOverhead is what a stored message takes in the tables besides its body, as Size
// estimates it: the row's header and fixed columns, the encoded headers of a typical
// message, and the primary-key index entry.
const rowOverhead = 256

// Size estimates the room the stored messages take in the database, for systemUsage
// storeUsage: their bodies plus rowOverhead each, from the in-memory counters (O(number of
// destinations), no query). The tables' own size (pg_total_relation_size) would not do:
// PostgreSQL keeps the space of deleted rows for reuse instead of giving it back, so a
// store that was full once would count as full for good.
func (s *Store) Size(context.Context) (int64, error) {
	if s.isClosed() {
		return 0, persistence.ErrClosed
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var n int64
	for _, d := range s.st.dests {
		n += d.bytes + d.msgs*rowOverhead
	}
	return n, nil
}

// Close commits what is queued, stops the writer, gives up the lease (so a waiting
// broker takes over at its next poll) and closes the pool. Later commits, scans and
// Recover fail with persistence.ErrClosed. Close is idempotent and returns nil.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeMu.Lock()
		s.closed = true
		close(s.closing)
		s.closeMu.Unlock()
		close(s.w.queue)
		<-s.w.exited
		s.completer.Close()
		s.lease.stop()
		s.pool.Close()
	})
	return nil
}

// GroupStats reports how many group-commit transactions the store committed and how
// many batches they held; batches/groups is the average group size.
func (s *Store) GroupStats() (groups, batches int64) { return s.groups.Load(), s.batches.Load() }

// Lock implements persistence.Locker; see lease.go and the package comment.
func (s *Store) Lock(ctx context.Context) error { return s.lease.lock(ctx) }

// Lost implements persistence.Locker.
func (s *Store) Lost() <-chan struct{} { return s.lease.lost }
