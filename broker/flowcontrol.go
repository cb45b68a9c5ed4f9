package broker

import (
	"fmt"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// Producer flow control: what a SEND meets when the memory or store limits leave no room
// for it (systemUsage sendFailIfNoSpace and sendFailIfNoSpaceAfterTimeout). With
// Options.NoSpaceWait 0 it is refused at once with an ERROR. Otherwise Send reports an
// Error whose Retry channel closes once room may have been freed, and the transport holds
// the frame (and stops reading that connection, so TCP holds the producer back, as
// ActiveMQ does) and sends it again then, for at most NoSpaceWait when it is positive,
// after which the producer gets the ERROR. The connection keeps delivering to its own
// subscriptions meanwhile, so a client that produces and consumes on one connection
// frees the room it waits for.

// NoSpaceWait is how long a SEND that found no room may be held: 0 not at all (an ERROR
// at once), negative without a limit (sendFailIfNoSpace false).
func (c *Conn) NoSpaceWait() time.Duration { return c.b.noSpaceWait }

// roomFor reports the limit m would break if it were sent to dests now (already
// resolved, streams split off), or nil: a persistent message needs room in the store;
// a message sent to a topic needs room in the topic's memory when subscribers are
// behind (destinations/slowconsumer.go); a non-persistent one sent to a queue needs room in the
// queue's and the broker's memory.
func (b *Broker) roomFor(dests []destinations.Name, m *persistence.Message) *Error {
	if len(dests) == 0 {
		return nil
	}
	if m.Persistent && b.storeFull.Load() {
		return b.storeFullError()
	}
	if err := b.topicRoom(dests, m); err != nil || m.Persistent {
		return err
	}
	size := int64(m.Size())
	for _, d := range dests {
		if d.Kind.IsTopic() {
			continue
		}
		b.mu.RLock()
		q := b.queues[d.Name]
		b.mu.RUnlock()
		var limit, used int64
		if q != nil {
			used, limit = q.MemoryUsed()
		} else { // matching the policy entries costs more than the rest of the check
			limit = destinations.MemoryLimitOf(b.policyFor(destinations.Queue, d.Name))
		}
		if used+size > limit || !b.mem.Fits(size) {
			all, max := b.mem.Used()
			return &Error{Message: fmt.Sprintf("Usage Manager memory limit reached: message to %s not accepted (destination %d of %d bytes, broker %d of %d)",
				d, used, limit, all, max), Err: destinations.ErrMemoryFull}
		}
	}
	return nil
}

// topicRoom reports the memory limit m would break on a topic of dests whose
// subscribers are behind. A topic nobody waits on always has room.
func (b *Broker) topicRoom(dests []destinations.Name, m *persistence.Message) *Error {
	size := int64(-1)
	for _, d := range dests {
		if !d.Kind.IsTopic() {
			continue
		}
		b.mu.RLock()
		t := b.topics[d.Name]
		b.mu.RUnlock()
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
		if t.Full(size) || !b.mem.Fits(size) {
			all, max := b.mem.Used()
			return &Error{Message: fmt.Sprintf("Usage Manager memory limit reached on %s: its subscribers are behind (topic %d of %d bytes, broker %d of %d)",
				t.ClientName(), used, limit, all, max), Err: destinations.ErrMemoryFull}
		}
	}
	return nil
}

// checkRoom is Send's flow-control check, before anything is accepted. Inside a
// transaction only a full store refuses a persistent message (a transaction's messages
// are only recorded until COMMIT). When producers are never held, a message over
// storeUsage or a topic's memory is refused at once, and a non-persistent one that does
// not fit a queue is left to the routing, which refuses it per queue. When producers
// are held, a message that does not fit gets its limit's Error with Retry set.
func (b *Broker) checkRoom(dests []destinations.Name, m *persistence.Message, inTx bool) error {
	if inTx {
		if m.Persistent && len(dests) > 0 && b.storeFull.Load() {
			return b.storeFullError()
		}
		return nil
	}
	if b.noSpaceWait == 0 {
		if m.Persistent && len(dests) > 0 && b.storeFull.Load() {
			return b.storeFullError()
		}
		if err := b.topicRoom(dests, m); err != nil {
			return err
		}
		return nil
	}
	if b.roomFor(dests, m) == nil {
		return nil
	}
	// Check again once registered: room freed in between would otherwise wake nobody.
	retry := b.space.Wait()
	err := b.roomFor(dests, m)
	if err == nil {
		return nil
	}
	err.Retry = retry
	return err
}

func (b *Broker) storeFullError() *Error {
	return &Error{Message: fmt.Sprintf("Persistent store is full (systemUsage storeUsage %d bytes): message not accepted", b.storeUsage), Err: ErrStoreFull}
}
