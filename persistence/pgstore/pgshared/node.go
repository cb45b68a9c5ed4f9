package pgshared

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/activemq-go/broker/persistence/pgstore"
)

// closeTimeout bounds the statements of Close.
const closeTimeout = 30 * time.Second

// notifyBuffer is the capacity of the Notifications channel.
const notifyBuffer = 1024

// Node is one broker node's handle on the shared queues. Its methods are safe for
// concurrent use.
type Node struct {
	o       Options
	t       *tables
	pool    *pgxpool.Pool
	ownPool bool
	log     *slog.Logger
	epoch   int64

	ctx    context.Context // cancelled by Close: ends the background goroutines
	cancel context.CancelFunc
	wg     sync.WaitGroup

	notes      chan string
	overflow   atomic.Bool   // a notification was dropped: "" is owed
	listening  atomic.Bool   // LISTEN is active
	listened   chan struct{} // closed when LISTEN is first in place
	listenOnce sync.Once
	lost       chan struct{}
	lostOnce   sync.Once
	reaper     atomic.Bool // held the reaper lease at the last try
	closed     atomic.Bool
	closeOnce  sync.Once
	closeErr   error
	reapRounds atomic.Int64

	topicState

	hbLastOK    time.Time // when the last successful heartbeat was sent
	hbFailing   bool      // the heartbeat fails: logged once
	reapFailing bool      // the reaper round fails: logged once
}

// Open registers the node (a new epoch, from a database sequence), returns the leases
// and groups of its previous lives (same NodeID, older epoch) at once, counting them
// redelivered, and starts the heartbeat, the reaper election and the listener.
func Open(ctx context.Context, o Options) (*Node, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	n := &Node{o: o, t: newTables(o.TablePrefix), pool: o.Pool, log: o.Logger.With(slog.String("node", o.NodeID)),
		notes: make(chan string, notifyBuffer), lost: make(chan struct{}), listened: make(chan struct{})}
	if n.pool == nil {
		cfg, _, err := pgstore.Options{URL: o.URL, User: o.User, Password: o.Password,
			MaxConnections: o.MaxConnections}.PoolConfig()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrOption, err)
		}
		if n.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
			return nil, pgstore.RedactError(fmt.Errorf("pgshared: open pool: %w", err), o.Password)
		}
		n.ownPool = true
	}
	if err := n.start(ctx); err != nil {
		if n.ownPool {
			n.pool.Close()
		}
		return nil, pgstore.RedactError(err, o.Password)
	}
	return n, nil
}

// start creates the tables if needed, registers the node and starts its goroutines.
func (n *Node) start(ctx context.Context) error {
	if err := ensureSchema(ctx, n.pool, n.t, !n.o.SkipCreateTables); err != nil {
		return err
	}
	var returned int64
	n.hbLastOK = time.Now()
	err := pgx.BeginFunc(ctx, n.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, n.t.register, n.o.NodeID).Scan(&n.epoch); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, n.t.returnOld, n.o.NodeID, n.epoch, n.t.channel).Scan(&returned); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, n.t.dropOldGroup, n.o.NodeID, n.epoch)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgshared: register node: %w", err)
	}
	n.log = n.log.With(slog.Int64("epoch", n.epoch))
	n.log.Info("shared queues: node registered", slog.Int64("returned_leases", returned))
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.wg.Add(3)
	go n.every(n.o.HeartbeatPeriod, n.heartbeat)
	go func() {
		n.reaperRound()
		n.every(n.o.ReaperPeriod, n.reaperRound)
	}()
	go n.every(n.o.PollInterval, n.pollTick)
	if !n.o.DisableListen {
		n.wg.Add(1)
		go n.listenLoop()
	}
	return nil
}

// NodeID returns the node's id, as in the OWNER columns.
func (n *Node) NodeID() string { return n.o.NodeID }

// Epoch returns the epoch of this life of the node.
func (n *Node) Epoch() int64 { return n.epoch }

// Lost is closed when the node loses its registration (see ErrNodeLost).
func (n *Node) Lost() <-chan struct{} { return n.lost }

// IsReaper reports whether the node held the reaper lease at its last try.
func (n *Node) IsReaper() bool { return n.reaper.Load() }

func (n *Node) markLost(reason string) {
	n.lostOnce.Do(func() {
		n.log.Error("shared queues: node lost its registration; its leases go to other nodes",
			slog.String("reason", reason))
		close(n.lost)
	})
}

// usable returns ErrClosed or ErrNodeLost when the node may not take leases.
func (n *Node) usable() error {
	if n.closed.Load() {
		return ErrClosed
	}
	select {
	case <-n.lost:
		return ErrNodeLost
	default:
		return nil
	}
}

// every runs fn every period until Close; the caller did n.wg.Add(1).
func (n *Node) every(period time.Duration, fn func()) {
	defer n.wg.Done()
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-tick.C:
			fn()
		}
	}
}

// heartbeat refreshes the node's HEARTBEAT; it runs every HeartbeatPeriod. The node
// counts itself lost when its row is gone or taken by a newer epoch, or when no
// heartbeat succeeded for LeaseTimeout, counted from before the last successful one
// was sent (so never later than the reaper, which counts from when the database
// stamped it).
func (n *Node) heartbeat() {
	sent := time.Now()
	ctx, cancel := context.WithTimeout(n.ctx, n.o.LeaseTimeout)
	tag, err := n.pool.Exec(ctx, n.t.heartbeat, n.o.NodeID, n.epoch)
	cancel()
	switch {
	case n.ctx.Err() != nil:
	case err != nil:
		if !n.hbFailing {
			n.log.Warn("shared queues: heartbeat failed", slog.Any("err", pgstore.RedactError(err, n.o.Password)))
			n.hbFailing = true
		}
		if time.Since(n.hbLastOK) > n.o.LeaseTimeout {
			n.markLost("no heartbeat succeeded for the lease timeout")
		}
	case tag.RowsAffected() == 0:
		n.markLost("the node's row is gone or belongs to a newer epoch")
	default:
		if n.hbFailing {
			n.log.Info("shared queues: heartbeat succeeds again")
			n.hbFailing = false
		}
		n.hbLastOK = sent
	}
}

// Close stops the background goroutines, gives this node's leases back (counted
// redelivered: the broker Releases what it never delivered before), drops its groups,
// its node row and the reaper lease if it holds it, and closes the Notifications
// channel and the pool it opened. It returns the first error of those statements.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.stopBackground()
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		var returned int64
		err := pgx.BeginFunc(ctx, n.pool, func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, n.t.leaveLeases, n.o.NodeID, n.epoch, n.t.channel).Scan(&returned); err != nil {
				return err
			}
			for _, stmt := range []string{n.t.leaveGroups, n.t.subLeave, n.t.leaveNode, n.t.lockRelease} {
				if _, err := tx.Exec(ctx, stmt, n.o.NodeID, n.epoch); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			n.closeErr = pgstore.RedactError(fmt.Errorf("pgshared: close: %w", err), n.o.Password)
		}
		n.log.Info("shared queues: node closed", slog.Int64("returned_leases", returned))
		if n.ownPool {
			n.pool.Close()
		}
	})
	return n.closeErr
}

// stopBackground ends the goroutines and closes Notifications; Close and the tests'
// crash both start with it.
func (n *Node) stopBackground() {
	n.closed.Store(true)
	n.cancel()
	n.wg.Wait()
	close(n.notes)
}
