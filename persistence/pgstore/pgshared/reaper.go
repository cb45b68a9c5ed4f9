package pgshared

import (
	"context"
	"errors"
	"log/slog"

	"github.com/jackc/pgx/v5"

	"github.com/activemq-go/broker/persistence/pgstore"
)

// reaperRound runs every ReaperPeriod (and once at start): it tries to take or keep
// the reaper lease (the <p>SQ_LOCK row, LeaseTimeout long by the database's clock)
// and, while it holds it, reaps.
func (n *Node) reaperRound() {
	held, err := n.reapOnce()
	switch {
	case n.ctx.Err() != nil:
		return
	case err != nil:
		if !n.reapFailing {
			n.log.Warn("shared queues: reaper round failed", slog.Any("err", pgstore.RedactError(err, n.o.Password)))
			n.reapFailing = true
		}
	default:
		n.reapFailing = false
	}
	if was := n.reaper.Swap(held); was != held {
		if held {
			n.log.Info("shared queues: this node is the reaper")
		} else {
			n.log.Info("shared queues: this node is no longer the reaper")
		}
	}
}

// reapOnce takes or renews the reaper lease and, if held, in one transaction: deletes
// the rows of nodes whose heartbeat is older than LeaseTimeout, returns every lease
// whose (OWNER, EPOCH) has no node row (counting it redelivered, notifying its
// destination), deletes the groups of such owners, and deletes the expired messages
// nobody holds. It reports whether the lease is held.
func (n *Node) reapOnce() (bool, error) {
	if n.usable() != nil {
		return false, nil // a lost node leaves the reaping to the others
	}
	ctx, cancel := context.WithTimeout(n.ctx, n.o.LeaseTimeout)
	defer cancel()
	ms := n.o.LeaseTimeout.Milliseconds()
	var one int
	err := n.pool.QueryRow(ctx, n.t.lockTake, n.o.NodeID, n.epoch, ms).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var returned, expired int64
	err = pgx.BeginFunc(ctx, n.pool, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, n.t.reapNodes, ms)
		var (
			node  string
			epoch int64
		)
		_, err := pgx.ForEachRow(rows, []any{&node, &epoch}, func() error {
			n.log.Warn("shared queues: node declared dead (no heartbeat for the lease timeout)",
				slog.String("dead_node", node), slog.Int64("dead_epoch", epoch))
			return nil
		})
		if err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, n.t.reapLeases, n.t.channel).Scan(&returned); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, n.t.reapGroups); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, n.t.reapTransit, transitRetention.Milliseconds()); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, n.t.reapExp)
		expired = tag.RowsAffected()
		return err
	})
	if err != nil {
		return true, err
	}
	n.reapRounds.Add(1)
	if returned > 0 || expired > 0 {
		n.log.Info("shared queues: reaped", slog.Int64("returned_leases", returned), slog.Int64("expired", expired))
	}
	return true, nil
}
