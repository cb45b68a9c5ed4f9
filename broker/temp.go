package broker

import (
	"slices"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/security"
)

// Temporary destinations (/temp-queue/NAME, /temp-topic/NAME) belong to the connection
// that names them first: each gets a broker-wide name "<connection id>:NAME" (see
// package broker/registry), other connections reach it through
// /remote-temp-queue/<that name> (a reply-to carrying a temporary destination is
// rewritten to that form), only the owner may consume from it, its messages are never
// stored, and it is deleted with its messages when the owner disconnects. They are a
// kind of their own, kept apart from the queues and topics: no queue or topic name
// reaches one, and one of a temporary destination's name is refused while it exists.

// resolve turns a temporary destination into the one it stands for (its kind, its
// broker-wide name, Remote), creating it for its owner on first use. Other names are
// returned as they are.
func (c *Conn) resolve(d destinations.Name, consume bool) (destinations.Name, error) {
	if d.Kind != destinations.TempQueue && d.Kind != destinations.TempTopic {
		return d, nil
	}
	topic := d.Kind == destinations.TempTopic
	if d.Remote {
		owner := c.dests.TempOwner(topic, d.Name)
		if owner == nil {
			return d, errorf(ErrInvalidDestination, "temporary destination %s no longer exists", d)
		}
		if consume && owner != c {
			if c.access.Authenticating() {
				return d, c.denied(security.Read, d)
			}
			return d, errorf(ErrInvalidDestination, "only the connection that created %s may consume from it", d)
		}
		return d, nil
	}
	if len(c.temps) >= c.quotas.temps && !c.dests.OwnsTemp(c, d) {
		return d, c.quotas.temp(d, len(c.temps))
	}
	real, created, err := c.dests.Temp(c, d)
	if created {
		c.temps = append(c.temps, real)
	}
	return real, err
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
		if c.access.Service != nil {
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

// CreateTemp creates the temporary destination d (Kind TempQueue or TempTopic) under
// the name its client gave it, unique across the broker: OpenWire's DestinationInfo,
// whose clients name temporary destinations after their connection id. Other
// connections reach it as d with Remote set; only this one consumes from it, and it
// goes with this connection or DeleteTemp.
func (c *Conn) CreateTemp(d Destination) error {
	if d.Kind != destinations.TempQueue && d.Kind != destinations.TempTopic {
		return errorf(ErrInvalidDestination, "not a temporary destination: %s", d)
	}
	if c.access.Service != nil {
		if err := c.authorizeTemp(d, security.Admin); err != nil {
			return err
		}
	}
	if len(c.temps) >= c.quotas.temps && c.dests.TempOwner(d.Kind.IsTopic(), d.Name) == nil {
		return c.quotas.temp(d, len(c.temps))
	}
	real, created, err := c.dests.TempNamed(c, d)
	if err != nil {
		return err
	}
	if created {
		c.temps = append(c.temps, real)
	} else if c.dests.TempOwner(d.Kind.IsTopic(), d.Name) != c {
		return errorf(ErrInvalidDestination, "temporary destination %s belongs to another connection", d)
	}
	return nil
}

// DeleteTemp deletes the connection's temporary destination d (as CreateTemp took it)
// with its messages; one with consumers is refused, as ActiveMQ refuses it.
func (c *Conn) DeleteTemp(d Destination) error {
	i := slices.IndexFunc(c.temps, func(n destinations.Name) bool { return n.Name == d.Name && n.Kind.IsTopic() == d.Kind.IsTopic() })
	if i < 0 {
		return errorf(ErrInvalidDestination, "no temporary destination %s of this connection", d)
	}
	for _, s := range c.subs {
		if s.Dest.Name == d.Name && s.Dest.Kind.IsTopic() == d.Kind.IsTopic() {
			return errorf(ErrDestinationInUse, "Cannot delete a temporary destination that is in use: %s", d)
		}
	}
	c.dests.DropTemps([]destinations.Name{c.temps[i]})
	c.temps = slices.Delete(c.temps, i, i+1)
	return nil
}

// dropTemps deletes the connection's temporary destinations and their messages.
func (c *Conn) dropTemps() {
	if len(c.temps) == 0 {
		return
	}
	c.dests.DropTemps(c.temps)
	c.temps = nil
}
