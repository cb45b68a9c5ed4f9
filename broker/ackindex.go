package broker

// The index of unacknowledged deliveries by message id. STOMP 1.2 acknowledges by ack id,
// which is the delivery's tag (Conn.byTag); 1.0 and 1.1 name the message id, and 1.0 not
// even the subscription. Conn.byID makes those acks O(1) as well: it maps each message id
// to the unsettled delivery of that id written first, and the others of the same id (a
// composite send reaching one wildcard subscription twice, a topic with two
// subscriptions on one connection) follow it through Delivery.SameID in tag order. The
// chains are nearly always one delivery long.
//
// The index is built by the connection's first ack by message id, from the dispatched
// lists of its subscriptions, and kept from then on wherever byTag is: a connection that
// speaks 1.2 never pays for it.

// byMessageID returns the unsettled delivery of message id written first on the
// connection, to s if s is not nil; nil if there is none.
func (c *Conn) byMessageID(id string, s *Subscription) *Delivery {
	if c.byID == nil {
		c.byID = map[string]*Delivery{}
		for _, sub := range c.subs {
			for _, d := range sub.dispatched {
				c.ackLooked++
				if !d.Settled {
					c.indexID(d)
				}
			}
		}
	}
	for d := c.byID[id]; d != nil; d = d.SameID {
		c.ackLooked++
		if s == nil || d.Sub == &s.Consumer {
			return d
		}
	}
	return nil
}

// indexID adds the unsettled delivery d to the index, if the connection keeps one.
func (c *Conn) indexID(d *Delivery) {
	if c.byID == nil {
		return
	}
	id := d.Msg.ID
	head := c.byID[id]
	if head == nil || d.Tag < head.Tag {
		d.SameID = head
		c.byID[id] = d
		return
	}
	p := head
	for p.SameID != nil && p.SameID.Tag < d.Tag {
		p = p.SameID
	}
	d.SameID, p.SameID = p.SameID, d
}

// unindexID removes the delivery d, now settled, from the index.
func (c *Conn) unindexID(d *Delivery) {
	if c.byID == nil {
		return
	}
	id := d.Msg.ID
	head := c.byID[id]
	if head == d {
		if d.SameID == nil {
			delete(c.byID, id)
		} else {
			c.byID[id] = d.SameID
		}
		d.SameID = nil
		return
	}
	for p := head; p != nil; p = p.SameID {
		c.ackLooked++
		if p.SameID == d {
			p.SameID, d.SameID = d.SameID, nil
			return
		}
	}
}
