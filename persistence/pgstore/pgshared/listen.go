package pgshared

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/activemq-go/broker/persistence/pgstore"
)

// maxListenRetry caps the pause between the listener's reconnection attempts.
const maxListenRetry = 5 * time.Second

// Notifications returns the channel of destinations that may have messages to claim:
// a destination's name after a Send to it, a Release, or leases the reaper returned
// there (by any node); and "" (try every queue with idle consumers) every
// PollInterval, LISTEN or not, and at once when the node may have missed
// notifications (LISTEN established or reestablished, this channel full). A claim
// that came back short does not prove the queue empty: rows another transaction held
// (SKIP LOCKED) come back without a notification when it does not take them. So a
// queue that claims on each value, as the package comment says, claims within
// PollInterval of a message being available to it whatever became of the
// notifications. Values are dropped rather than block (a drop owes a ""); the channel
// is closed by Close.
func (n *Node) Notifications() <-chan string { return n.notes }

// WaitListening waits until LISTEN is first in place, and reports whether it was
// before ctx ended. A node that starts serving before then may miss the topic messages
// and wake-ups the other nodes send meanwhile (DisableListen: it returns false at once).
func (n *Node) WaitListening(ctx context.Context) bool {
	if n.o.DisableListen {
		return false
	}
	select {
	case <-n.listened:
		return true
	case <-ctx.Done():
		return false
	}
}

// deliver hands dest to Notifications without blocking; a full channel drops it and
// owes a "".
func (n *Node) deliver(dest string) {
	n.payOwed()
	select {
	case n.notes <- dest:
	default:
		n.overflow.Store(true)
	}
}

// sendAll hands "" (look at every queue) to Notifications; a full channel owes it.
func (n *Node) sendAll() {
	select {
	case n.notes <- "":
	default:
		n.overflow.Store(true)
	}
}

// payOwed sends the "" owed since a notification was dropped, if one is. The debt is
// cleared before the send, so a drop racing with it is owed again.
func (n *Node) payOwed() {
	if n.overflow.Swap(false) {
		n.sendAll()
	}
}

// pollTick runs every PollInterval: "", LISTEN or not (see Notifications). A "" owed
// since a drop is paid by it too.
func (n *Node) pollTick() {
	n.overflow.Store(false)
	n.sendAll()
}

// listenLoop holds a connection of its own (outside the pool) with LISTEN on the
// channel, and reconnects when it fails, pausing from PollInterval doubling up to 5s.
func (n *Node) listenLoop() {
	defer n.wg.Done()
	pause := n.o.PollInterval
	failing := false
	for n.ctx.Err() == nil {
		established, err := n.listen()
		if n.ctx.Err() != nil {
			return
		}
		if established {
			pause, failing = n.o.PollInterval, false
		}
		if !failing {
			n.log.Warn("shared queues: LISTEN unavailable, polling every "+n.o.PollInterval.String(),
				slog.Any("err", pgstore.RedactError(err, n.o.Password)))
			failing = true
		}
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, maxListenRetry)
	}
}

// listen connects, LISTENs and forwards notifications until the connection fails;
// established tells whether LISTEN was in place.
func (n *Node) listen() (established bool, err error) {
	conn, err := pgx.ConnectConfig(n.ctx, n.pool.Config().ConnConfig)
	if err != nil {
		return false, err
	}
	defer func() {
		n.listening.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(ctx) // the connection is discarded either way
	}()
	for _, ch := range []string{n.t.channel, n.t.topicChannel} {
		if _, err := conn.Exec(n.ctx, "LISTEN "+ch); err != nil {
			return false, err
		}
	}
	n.listening.Store(true)
	n.listenOnce.Do(func() { close(n.listened) })
	n.log.Debug("shared queues: listening", slog.String("channel", n.t.channel))
	n.sendAll() // whatever was sent while no one listened
	for {
		note, err := conn.WaitForNotification(n.ctx)
		if err != nil {
			return true, err
		}
		if note.Channel == n.t.topicChannel {
			n.topicNote(n.ctx, conn, note.Payload)
			continue
		}
		n.deliver(note.Payload)
	}
}
