package broker

import (
	"log/slog"
	"sync"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/internal/loglimit"
)

// A user's quota of unacknowledged bytes (plugins.maxUnackedBytesPerUser): the queue
// messages dispatched to its consumers, on all its connections, and not yet
// acknowledged — auto-acknowledged ones until they are written, the others until their
// ACK (or NACK, or the end of their subscription) — may hold at most that many bytes
// of memory, whatever their prefetch. Its consumers share one destinations.Quota, which
// the queues fill as they dispatch: once full, they dispatch nothing more to the user,
// as to a consumer whose prefetch window is full, and the client gets no ERROR, since
// nothing it asked for was refused (a log line says it). Once acknowledgements bring it
// back under the quota, each of the user's connections is woken to dispatch again.
//
// The cost: one atomic add per message dispatched and one per batch settled, and one
// atomic load per consumer a queue considers.

// userShare is the quota of one user, shared by its connections.
type userShare struct {
	quota destinations.Quota
	log   loglimit.Limit

	mu    sync.Mutex
	conns map[*Conn]struct{} // woken when the hold ends
}

// shares are the users' shares, made at their first connection; kept while the broker
// runs (one per authenticated user with a quota).
type shares struct {
	mu sync.Mutex
	m  map[string]*userShare
}

// join returns the share of c's user, with c among its connections; nil when the user
// has no quota.
func (sh *shares) join(c *Conn) *userShare {
	user, max := c.subject.User, c.subject.MaxUnackedBytes
	if max <= 0 || user == "" {
		return nil
	}
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = map[string]*userShare{}
	}
	u := sh.m[user]
	if u == nil || u.quota.Max != max {
		// A user whose quota changed starts a share of its own; the connections of
		// the old one keep that.
		u = &userShare{conns: map[*Conn]struct{}{}}
		u.quota.Max = max
		log := c.b.log
		u.quota.Full = func(held int64) {
			if ok, skipped := u.log.Allow(time.Now()); ok {
				log.Warn("unacknowledged-bytes quota reached: the user's consumers get no more messages until it acknowledges some",
					slog.String("user", user), slog.Int64("held", held), slog.Int64("maxUnackedBytesPerUser", max),
					slog.Int("heldBack", skipped))
			}
		}
		sh.m[user] = u
	}
	sh.mu.Unlock()
	u.mu.Lock()
	u.conns[c] = struct{}{}
	u.mu.Unlock()
	return u
}

// leave takes c, closed, out of the share's connections.
func (u *userShare) leave(c *Conn) {
	u.mu.Lock()
	delete(u.conns, c)
	u.mu.Unlock()
}

// holdAgain counts deliveries of c whose acknowledgement was undone.
func (c *Conn) holdAgain(ds []*Delivery) {
	if c.share != nil {
		c.share.quota.Take(sizeOf(ds))
	}
}

// releaseBytes counts n bytes of deliveries of c acknowledged or given back; back
// under the quota, it wakes the user's connections, which dispatch to their consumers
// again (Conn.Take).
func (c *Conn) releaseBytes(n int64) {
	if c.share == nil || n == 0 || !c.share.quota.Release(n) {
		return
	}
	u := c.share
	u.mu.Lock()
	for o := range u.conns {
		o.unheld.Store(true)
		o.Poke()
	}
	u.mu.Unlock()
}

// sizeOf is the memory the deliveries hold (Delivery.Size).
func sizeOf(ds []*Delivery) int64 {
	var n int64
	for _, d := range ds {
		n += d.Size()
	}
	return n
}

// redispatch, on the connection's goroutine, dispatches again to its subscriptions once
// its user's hold ended.
func (c *Conn) redispatch() {
	if !c.unheld.Load() || !c.unheld.CompareAndSwap(true, false) {
		return
	}
	for _, s := range c.subs {
		s.kick()
	}
}
