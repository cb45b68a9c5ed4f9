package broker

import (
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/security"
)

// Temporary destinations (/temp-queue/NAME, /temp-topic/NAME) belong to the connection
// that names them first: each gets a broker-wide name "<connection id>:NAME", other
// connections reach it through /remote-temp-queue/<that name> (a reply-to carrying a
// temporary destination is rewritten to that form), only the owner may consume from it,
// its messages are never stored, and it is deleted with its messages when the owner
// disconnects.

type tempKey struct {
	topic bool
	name  string
}

// resolve turns a temporary destination into the real one it stands for, creating it for
// its owner on first use. Other names are returned as they are.
func (c *Conn) resolve(d destinations.Name, consume bool) (destinations.Name, error) {
	if d.Kind != destinations.TempQueue && d.Kind != destinations.TempTopic {
		return d, nil
	}
	topic := d.Kind == destinations.TempTopic
	kind := destinations.Queue
	if topic {
		kind = destinations.Topic
	}
	if d.Remote {
		c.b.mu.RLock()
		owner := c.b.temps[tempKey{topic, d.Name}]
		c.b.mu.RUnlock()
		if owner == nil {
			return d, errorf(ErrInvalidDestination, "temporary destination %s no longer exists", d)
		}
		if consume && owner != c {
			if c.b.sec != nil && c.b.sec.Authenticating() {
				return d, c.denied(security.Read, d)
			}
			return d, errorf(ErrInvalidDestination, "only the connection that created %s may consume from it", d)
		}
		return destinations.Name{Kind: kind, Name: d.Name}, nil
	}
	real := c.ID + ":" + d.Name
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	key := tempKey{topic, real}
	if c.b.temps[key] == nil {
		if err := c.b.roomForDestinationsLocked(1, []destinations.Name{d}); err != nil {
			return d, err
		}
		c.b.temps[key] = c
		c.temps = append(c.temps, key)
		if topic {
			t := destinations.NewTopic(&c.b.env, real, c.b.policyFor(destinations.TempTopic, real), c.b.seqFloor.Load(), true)
			t.SetClientName(d)
			c.b.topics[real] = t
			c.b.adviseAddedLocked(destinations.Name{Kind: kind, Name: real}, true, c, nil, t)
		} else {
			q := destinations.NewQueue(&c.b.env, real, c.b.policyFor(destinations.TempQueue, real), c.b.seqFloor.Load())
			q.SetClientName(d)
			c.b.queues[real] = q
			c.b.adviseAddedLocked(destinations.Name{Kind: kind, Name: real}, true, c, q, nil)
		}
	}
	return destinations.Name{Kind: kind, Name: real}, nil
}

// isTemp reports whether a resolved destination is temporary.
func (b *Broker) isTemp(d destinations.Name) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.temps[tempKey{d.Kind.IsTopic(), d.Name}] != nil
}

// rewriteReplyTo makes a reply-to naming one of the sender's temporary destinations
// usable by whoever receives the message.
func (c *Conn) rewriteReplyTo(hs []string) error {
	for i := 0; i+1 < len(hs); i += 2 {
		if hs[i] != destinations.ReplyToProperty {
			continue
		}
		n, ok := destinations.ParseTemp(hs[i+1])
		if !ok {
			return nil // kept as a plain string, as ActiveMQ does
		}
		if c.b.sec != nil {
			// Naming one's own temporary destination creates it: it will be read.
			if err := c.authorizeTemp(n, security.Read); err != nil {
				return err
			}
		}
		real, err := c.resolve(n, false)
		if err != nil {
			return err
		}
		hs[i+1] = destinations.Name{Kind: n.Kind, Name: real.Name, Remote: true}.String()
		return nil
	}
	return nil
}

// dropTemps deletes the connection's temporary destinations and their messages.
func (c *Conn) dropTemps() {
	if len(c.temps) == 0 {
		return
	}
	c.b.mu.Lock()
	var qs []*destinations.QueueDest
	for _, k := range c.temps {
		delete(c.b.temps, k)
		if k.topic {
			if t := c.b.topics[k.name]; t != nil {
				t.Close()
			}
			c.b.dropTopicLocked(k.name)
			c.b.adviseRemovedLocked(destinations.Name{Kind: destinations.Topic, Name: k.name})
			continue
		}
		if q := c.b.queues[k.name]; q != nil {
			qs = append(qs, q)
			delete(c.b.queues, k.name)
			c.b.adviseRemovedLocked(destinations.Name{Kind: destinations.Queue, Name: k.name})
		}
	}
	c.b.mu.Unlock()
	for _, q := range qs {
		q.Drop()
	}
	c.temps = nil
}
