// Package flowcontrol is what a SEND meets when the memory or store limits leave no
// room for it: the broker's memory accounting (systemUsage memoryUsage), the store's
// (storeUsage), and producer flow control (systemUsage sendFailIfNoSpace and
// sendFailIfNoSpaceAfterTimeout).
//
// With Config.NoSpaceWait 0 a SEND that does not fit is refused at once with an ERROR.
// Otherwise Check reports an Error whose Retry channel closes once room may have been
// freed, and the transport holds the frame (and stops reading that connection, so TCP
// holds the producer back, as ActiveMQ does) and sends it again then, for at most
// NoSpaceWait when it is positive, after which the producer gets the ERROR. The
// connection keeps delivering to its own subscriptions meanwhile, so a client that
// produces and consumes on one connection frees the room it waits for.
//
// The Control asks its Host for the queues and topics a SEND names, and imports nothing
// of the broker.
package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/internal/loglimit"
	"github.com/activemq-go/broker/persistence"
)

// ErrStoreFull: a persistent message was refused because the store is over storeUsage.
var ErrStoreFull = errors.New("broker: persistent store is full")

// Host is what flow control asks of the broker it runs in.
type Host interface {
	// QueueOf and TopicOf return the queue or topic a resolved destination names
	// (temporary ones included), nil if there is none (a SEND creates it later).
	QueueOf(d destinations.Name) *destinations.QueueDest
	TopicOf(d destinations.Name) *destinations.TopicDest
}

// Config is what a Control is made with.
type Config struct {
	Host Host
	// Policy picks a destination's policy: a queue that does not exist yet gets its
	// memory limit from it.
	Policy destinations.PolicyFunc
	Log    *slog.Logger
	// MemoryUsage bounds the bytes of messages held in memory, broker-wide.
	MemoryUsage int64
	// StoreUsage bounds the disk the store may use (0: no bound), checked for stores
	// that report their size (persistence.Sizer).
	StoreUsage int64
	// NoSpaceWait is how long a SEND that found no room may be held: 0 not at all,
	// negative without a limit.
	NoSpaceWait time.Duration
}

// Control is the broker's flow control.
type Control struct {
	host        Host
	policy      destinations.PolicyFunc
	log         *slog.Logger
	mem         *destinations.Usage
	space       destinations.SpaceSignal // wakes SENDs held for room
	storeUsage  int64
	storeFull   atomic.Bool
	noSpaceWait time.Duration
	refusedLog  loglimit.Limit // MemoryFull's log line for messages of no connection
}

// New returns a Control with nothing used yet.
func New(c Config) *Control {
	return &Control{host: c.Host, policy: c.Policy, log: c.Log, mem: destinations.NewUsage(c.MemoryUsage),
		storeUsage: c.StoreUsage, noSpaceWait: c.NoSpaceWait}
}

// Memory is the broker-wide memory accounting.
func (f *Control) Memory() *destinations.Usage { return f.mem }

// Space is notified whenever room is freed.
func (f *Control) Space() *destinations.SpaceSignal { return &f.space }

// StoreUsage is the bound on the store's size (0: none); StoreFull is set while the
// store is over it.
func (f *Control) StoreUsage() int64 { return f.storeUsage }

// StoreFull is set while the store is over StoreUsage.
func (f *Control) StoreFull() *atomic.Bool { return &f.storeFull }

// NoSpaceWait is how long a SEND that found no room may be held: 0 not at all (an ERROR
// at once), negative without a limit (sendFailIfNoSpace false).
func (f *Control) NoSpaceWait() time.Duration { return f.noSpaceWait }

// roomFor reports the limit m would break if it were sent to dests now (already
// resolved, streams split off), or nil: a persistent message needs room in the store;
// a message sent to a topic needs room in the topic's memory when subscribers are
// behind (destinations/slowconsumer.go); a non-persistent one sent to a queue needs room in the
// queue's and the broker's memory.
func (f *Control) roomFor(dests []destinations.Name, m *persistence.Message) *destinations.Error {
	if len(dests) == 0 {
		return nil
	}
	if m.Persistent && f.storeFull.Load() {
		return f.storeFullError()
	}
	if err := f.topicRoom(dests, m); err != nil || m.Persistent {
		return err
	}
	size := int64(m.Size())
	for _, d := range dests {
		if d.Kind.IsTopic() {
			continue
		}
		q := f.host.QueueOf(d)
		var limit, used int64
		if q != nil {
			used, limit = q.MemoryUsed()
		} else { // matching the policy entries costs more than the rest of the check
			limit = destinations.MemoryLimitOf(f.policy(d.Kind, d.Name))
		}
		if used+size > limit || !f.mem.Fits(size) {
			all, max := f.mem.Used()
			return &destinations.Error{Message: fmt.Sprintf("Usage Manager memory limit reached: message to %s not accepted (destination %d of %d bytes, broker %d of %d)",
				d, used, limit, all, max), Err: destinations.ErrMemoryFull}
		}
	}
	return nil
}

// topicRoom reports the memory limit m would break on a topic of dests whose
// subscribers are behind. A topic nobody waits on always has room.
func (f *Control) topicRoom(dests []destinations.Name, m *persistence.Message) *destinations.Error {
	size := int64(-1)
	for _, d := range dests {
		if !d.Kind.IsTopic() {
			continue
		}
		t := f.host.TopicOf(d)
		if t == nil {
			continue
		}
		used, limit := t.MemoryUsed()
		if used == 0 {
			continue
		}
		if size < 0 {
			size = int64(m.Size())
		}
		if t.Full(size) || !f.mem.Fits(size) {
			all, max := f.mem.Used()
			return &destinations.Error{Message: fmt.Sprintf("Usage Manager memory limit reached on %s: its subscribers are behind (topic %d of %d bytes, broker %d of %d)",
				t.ClientName(), used, limit, all, max), Err: destinations.ErrMemoryFull}
		}
	}
	return nil
}

// Check is a SEND's flow-control check, before anything is accepted. Inside a
// transaction only a full store refuses a persistent message (a transaction's messages
// are only recorded until COMMIT). When producers are never held, a message over
// storeUsage or a topic's memory is refused at once, and a non-persistent one that does
// not fit a queue is left to the routing, which refuses it per queue. When producers
// are held, a message that does not fit gets its limit's Error with Retry set.
func (f *Control) Check(dests []destinations.Name, m *persistence.Message, inTx bool) error {
	if inTx {
		if m.Persistent && len(dests) > 0 && f.storeFull.Load() {
			return f.storeFullError()
		}
		return nil
	}
	if f.noSpaceWait == 0 {
		if m.Persistent && len(dests) > 0 && f.storeFull.Load() {
			return f.storeFullError()
		}
		if err := f.topicRoom(dests, m); err != nil {
			return err
		}
		return nil
	}
	if f.roomFor(dests, m) == nil {
		return nil
	}
	// Check again once registered: room freed in between would otherwise wake nobody.
	retry := f.space.Wait()
	err := f.roomFor(dests, m)
	if err == nil {
		return nil
	}
	err.Retry = retry
	return err
}

func (f *Control) storeFullError() *destinations.Error {
	return &destinations.Error{Message: fmt.Sprintf("Persistent store is full (systemUsage storeUsage %d bytes): message not accepted", f.storeUsage), Err: ErrStoreFull}
}

// MemoryFull is the producer's error when a non-persistent message from connection
// conn at remote ("" for the broker's own, the scheduler's) does not fit queue q. It
// is logged once a minute per connection (lim is the connection's limit of the line),
// with the number refused since the last line: a producer that keeps sending into a
// full queue gets an ERROR per message, and must not flood the log with as many lines.
func (f *Control) MemoryFull(lim *loglimit.Limit, conn, remote string, q *destinations.QueueDest, err error) error {
	if lim == nil {
		lim = &f.refusedLog
	}
	if ok, more := lim.Allow(time.Now()); ok {
		used, limit := f.mem.Used()
		attrs := []any{slog.String("dest", q.ClientName()), slog.Int64("used", used), slog.Int64("limit", limit)}
		if conn != "" {
			attrs = append(attrs, slog.String("conn", conn), slog.String("remote", remote))
		}
		if more > 0 {
			attrs = append(attrs, slog.Int("refusedSinceLastLine", more))
		}
		f.log.Warn("memory limit reached: non-persistent message refused (logged once a minute per connection)", attrs...)
	}
	return &destinations.Error{Message: "Usage Manager memory limit reached: message to " + q.ClientName() + " refused (send it persistent:true, or consume faster)", Err: err}
}

// WatchStore keeps StoreFull current, in a goroutine counted in wg, until ctx ends,
// when store reports its size and StoreUsage bounds it: the store's size is read a few
// times a second rather than on every message. A size that cannot be read leaves
// StoreFull as it was, with a log line when that starts.
func (f *Control) WatchStore(ctx context.Context, store persistence.Store, wg *sync.WaitGroup) {
	sz, ok := store.(persistence.Sizer)
	if !ok || f.storeUsage <= 0 {
		if f.storeUsage > 0 {
			f.log.Warn("storeUsage is not enforced: the store cannot report its size", slog.Int64("storeUsage", f.storeUsage))
		}
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.watch(ctx, sz)
	}()
}

func (f *Control) watch(ctx context.Context, sz persistence.Sizer) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	var failing bool
	for {
		used, err := sz.Size(ctx)
		if err != nil && ctx.Err() == nil && !failing {
			f.log.Error("cannot read the store's size for storeUsage", slog.Any("err", err))
		}
		failing = err != nil
		full := f.storeFull.Load()
		if err == nil {
			full = used >= f.storeUsage
		}
		if full != f.storeFull.Load() {
			f.storeFull.Store(full)
			if full {
				f.log.Warn("persistent store is full: persistent messages are refused until space is freed",
					slog.Int64("used", used), slog.Int64("storeUsage", f.storeUsage))
			} else {
				f.log.Info("persistent store has room again", slog.Int64("used", used), slog.Int64("storeUsage", f.storeUsage))
				f.space.Notify()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
