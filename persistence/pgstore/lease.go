package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/activemq-go/broker/persistence"
)

// lease is the master lock: the single row of <prefix>LOCK, ActiveMQ's
// lease-database-locker with the database's clock. See the package comment for the
// algorithm and its timings.
type lease struct {
	s        *Store
	holder   string
	period   time.Duration // renewal interval (lockKeepAlivePeriod)
	length   time.Duration // LeaseFactor periods
	poll     time.Duration // acquisition retry interval (lockAcquireSleepInterval)
	disabled bool          // useLock: false
	// pool is the lease's own connection (a pool of one, which reconnects by itself),
	// so that renewals never wait behind scans and commits for a pooled connection.
	pool *pgxpool.Pool

	mu        sync.Mutex
	held      bool
	stopped   bool // Close ran: never take the lease again
	stopRenew chan struct{}
	renewDone chan struct{}

	lost     chan struct{}
	lostOnce sync.Once
	isLost   atomic.Bool
	paused   atomic.Bool // test hook: stop renewing, as a hung broker would
}

func newLease(s *Store, pool *pgxpool.Pool) *lease {
	o := s.opts
	return &lease{
		pool:     pool,
		s:        s,
		holder:   holderID(o.LeaseHolderID),
		period:   o.LockKeepAlivePeriod,
		length:   LeaseFactor * o.LockKeepAlivePeriod,
		poll:     o.LockAcquireSleepInterval,
		disabled: o.DisableLock,
		lost:     make(chan struct{}),
	}
}

// holderID is name@host:pid:random, unique per process (and per store).
func holderID(name string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	id := fmt.Sprintf("%s@%s:%d:%s", name, host, os.Getpid(), hex.EncodeToString(r[:]))
	if len(id) > maxContainer {
		id = id[len(id)-maxContainer:]
	}
	return id
}

// fencing returns the holder id if commits must prove the lease.
func (l *lease) fencing() (string, bool) {
	if l.disabled {
		return "", false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holder, l.held
}

func (l *lease) lostErr() error {
	if l.isLost.Load() {
		return ErrLockLost
	}
	return nil
}

// lock blocks until this store holds the lease, then keeps renewing it.
func (l *lease) lock(ctx context.Context) error {
	if l.disabled {
		return ctx.Err()
	}
	l.mu.Lock()
	held := l.held
	l.mu.Unlock()
	switch {
	case l.isLost.Load():
		return ErrLockLost // a store that lost the lock never serves again; reopen it
	case held:
		return nil
	}
	log := l.s.log.With(slog.String("holder", l.holder))
	waitingFor, failing := "", false
	for {
		if l.s.isClosed() {
			return persistence.ErrClosed
		}
		ok, owner, remaining, sent, err := l.tryAcquire(ctx)
		switch {
		case err == nil && ok:
			// Another broker may have written until now: reload before serving.
			l.s.stale.Store(true)
			l.mu.Lock()
			if l.stopped { // Close ran meanwhile: give the lease back
				l.mu.Unlock()
				l.release()
				return persistence.ErrClosed
			}
			if l.held { // a concurrent Lock got there first
				l.mu.Unlock()
				return nil
			}
			l.held = true
			l.stopRenew, l.renewDone = make(chan struct{}), make(chan struct{})
			go l.renewLoop(sent.Add(l.length), l.stopRenew, l.renewDone)
			l.mu.Unlock()
			log.Info("acquired the database lock", slog.Duration("lease", l.length),
				slog.Duration("keepAlive", l.period))
			return nil
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !failing {
				log.Warn("database lock: cannot reach the database, retrying",
					slog.String("addr", l.s.addr), slog.String("err", redactText(err.Error(), l.s.secret)))
				failing = true
			}
		default:
			failing = false
			if owner != waitingFor {
				log.Info("waiting for the lock held by "+owner, slog.Duration("expiresIn", remaining),
					slog.Duration("retryEvery", l.poll))
				waitingFor = owner
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.s.closing:
			return persistence.ErrClosed
		case <-time.After(l.poll):
		}
	}
}

// tryAcquire takes the lease if it is free, expired or already ours; otherwise it
// reports who holds it and for how long still. sent is when the UPDATE was sent (after
// the connection was acquired): the lease it took ends no sooner than sent + length.
func (l *lease) tryAcquire(ctx context.Context) (ok bool, owner string, remaining time.Duration, sent time.Time, err error) {
	ctx, cancel := context.WithTimeout(ctx, max(l.period, time.Second))
	defer cancel()
	var ms int64
	sent, err = l.queryRow(ctx, l.s.t.leaseAcquire, &ms)
	if err == nil {
		return true, l.holder, time.Duration(ms) * time.Millisecond, sent, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return false, "", 0, sent, err
	}
	err = l.pool.QueryRow(ctx, l.s.t.leaseOwner).Scan(&owner, &ms)
	return false, owner, time.Duration(ms) * time.Millisecond, sent, err
}

// queryRow runs the acquire or renew statement (holder, lease length) and scans the
// remaining milliseconds into ms. It reports when the statement was sent, which does
// not count the time spent (re)connecting.
func (l *lease) queryRow(ctx context.Context, sql string, ms *int64) (time.Time, error) {
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return time.Now(), err
	}
	defer conn.Release()
	sent := time.Now()
	return sent, conn.QueryRow(ctx, sql, l.holder, l.length.Milliseconds()).Scan(ms)
}

// renewLoop extends the lease every period until stop is closed. expiry is when the
// lease ends by the local clock, at the latest (it is counted from before the
// statement that set it was sent). A renewal that finds the lease gone, or no
// successful renewal before expiry, loses the lock.
func (l *lease) renewLoop(expiry time.Time, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	log := l.s.log.With(slog.String("holder", l.holder))
	timer := time.NewTimer(l.period)
	defer timer.Stop()
	failing := false
	for {
		select {
		case <-stop:
			return
		case <-timer.C:
		}
		next := l.period
		if !l.paused.Load() {
			deadline := time.Now().Add(l.period)
			if expiry.Before(deadline) {
				deadline = expiry
			}
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			var ms int64
			sent, err := l.queryRow(ctx, l.s.t.leaseRenew, &ms)
			cancel()
			switch {
			case err == nil:
				expiry = sent.Add(l.length)
				if failing {
					log.Info("database lock renewed again")
					failing = false
				}
			case errors.Is(err, pgx.ErrNoRows):
				l.markLost("the lease expired or was taken over before it could be renewed")
				return
			default:
				if !failing {
					log.Warn("cannot renew the database lock, retrying", slog.Time("expires", expiry),
						slog.String("err", redactText(err.Error(), l.s.secret)))
					failing = true
				}
				next = l.period / 2
			}
		}
		left := time.Until(expiry)
		if left <= 0 {
			l.markLost("the lease could not be renewed before it expired")
			return
		}
		timer.Reset(min(next, left))
	}
}

// markLost closes Lost once; from then on every commit fails with ErrLockLost.
func (l *lease) markLost(reason string) {
	l.lostOnce.Do(func() {
		l.isLost.Store(true)
		l.s.log.Error("lost the database lock: "+reason+"; this broker must stop serving",
			slog.String("holder", l.holder))
		close(l.lost)
	})
}

// stop ends the renewal and gives the lease up, so a waiting broker takes over at its
// next poll instead of waiting for the lease to expire. Then it closes the lease's
// connection.
func (l *lease) stop() {
	defer l.pool.Close()
	l.mu.Lock()
	held := l.held
	l.held, l.stopped = false, true
	stop, done := l.stopRenew, l.renewDone
	l.mu.Unlock()
	if !held {
		return
	}
	close(stop)
	<-done
	if !l.isLost.Load() {
		l.release()
	}
}

// release clears the lock row if it is still ours.
func (l *lease) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := l.pool.Exec(ctx, l.s.t.leaseRelease, l.holder); err != nil {
		l.s.log.Warn("could not release the database lock; it expires by itself",
			slog.Duration("lease", l.length), slog.String("err", redactText(err.Error(), l.s.secret)))
		return
	}
	l.s.log.Info("released the database lock", slog.String("holder", l.holder))
}
