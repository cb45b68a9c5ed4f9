package broker

import (
	"github.com/activemq-go/broker/broker/advisory"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/security"
)

// Producers: an OpenWire client registers each of its producers (ProducerInfo) and
// removes it (RemoveInfo); STOMP has no such thing. As ActiveMQ, the broker authorizes
// a producer of a destination when it is made (write, and create if the destination
// does not exist) and announces it on the producer advisory topics until it or its
// connection goes.

// ProducerID is the client's id of one of its producers: its session's number and
// its own.
type ProducerID struct{ Session, Value int64 }

// AddProducer registers the producer id of d with the producer window it asked for.
// d is nil for an anonymous producer, which names a destination per message: it is
// neither authorized here nor announced, as in ActiveMQ. Called by the connection's
// goroutine.
func (c *Conn) AddProducer(id ProducerID, d *Destination, window int32) error {
	if d == nil {
		return nil
	}
	if c.closed {
		return &Error{Message: "connection closed", Fatal: true, Err: ErrClosed}
	}
	if err := c.authorizeUse([]destinations.Name{*d}, security.Write, true); err != nil {
		return err
	}
	real, err := c.resolve(*d, false)
	if err != nil {
		return err
	}
	if c.producers == nil {
		c.producers = map[ProducerID]bool{}
	}
	if c.producers[id] {
		return nil
	}
	c.producers[id] = true
	if c.b.adv != nil {
		c.b.adv.ProducerAdded(advisory.Producer{Conn: c.ID, Session: id.Session, Value: id.Value, Dest: real, Window: window})
	}
	return nil
}

// RemoveProducer forgets the producer id; the connection's close forgets them all.
// Called by the connection's goroutine.
func (c *Conn) RemoveProducer(id ProducerID) {
	if !c.producers[id] {
		return
	}
	delete(c.producers, id)
	if c.b.adv != nil {
		c.b.adv.ProducerRemoved(c.ID, id.Session, id.Value)
	}
}
