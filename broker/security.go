package broker

import (
	"github.com/activemq-go/broker/broker/access"
	"github.com/activemq-go/broker/broker/conns"
	"github.com/activemq-go/broker/broker/registry"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/security"
)

// Authentication and authorization, as ActiveMQ's security plugins do them, asked of
// Options.Security (nil: the broker is open, as without plugins):
//
//   - Connect authenticates the client once; its Subject stays with the connection.
//   - SEND needs write on every destination it names (a composite one is refused as a
//     whole when one member is forbidden), SUBSCRIBE and browsing need read; a
//     destination that does not exist yet needs admin as well, since using it creates
//     it. A wildcard subscription needs no right of its own: it receives from the
//     destinations it matches that its subject may read, and from no others.
//   - A temporary destination is read only by the connection that created it (ActiveMQ
//     lets anyone read it when no tempDestination rule exists); writing to one and
//     creating one follow the tempDestination rule.
//   - Removing a durable subscription needs read on its topic, the right that made it.
//
// Denials are ERRORs the connection survives, counted by the security service and
// logged once a minute with the number held back.

var (
	// ErrNotAuthenticated: a CONNECT whose credentials do not name a user.
	ErrNotAuthenticated = access.ErrNotAuthenticated
	// ErrLoginThrottled: a failed CONNECT from an address with too many failed logins
	// already waiting out their delay; the transport closes it without an answer.
	ErrLoginThrottled = access.ErrLoginThrottled
	// ErrNotAuthorized: a request its subject has no right for.
	ErrNotAuthorized = access.ErrNotAuthorized
	// ErrTooManyUserConnections: a CONNECT past its user's maxConnections.
	ErrTooManyUserConnections = conns.ErrTooManyUserConnections
)

// Subject is who the connection acts as.
func (c *Conn) Subject() *security.Subject { return c.subject }

// access is how the connection appears to broker/access's decisions.
func (c *Conn) who() access.Who {
	return access.Who{Subject: c.subject, Conn: c.ID, Remote: c.RemoteAddr, Owner: c, Last: &c.lastAuth}
}

// creator is who the destinations the connection's SENDs and SUBSCRIBEs create count
// against (package broker/registry's quota.go).
func (c *Conn) creator() registry.Creator {
	return registry.Creator{Conn: c.ID, User: c.subject.User, Max: c.subject.MaxDestinations}
}

// authorizeUse checks that the connection may use dests with right r (and create them
// when creates): see access.Control.Use.
func (c *Conn) authorizeUse(dests []destinations.Name, r security.Rights, creates bool) error {
	return c.access.Use(c.who(), c.dests, dests, r, creates)
}

// authorizeTemp checks a temporary destination against the tempDestination rule: see
// access.Control.Temp.
func (c *Conn) authorizeTemp(d destinations.Name, r security.Rights) error {
	return c.access.Temp(c.who(), c.dests, d, r)
}

// denied is the ERROR of a request the connection's subject has no right r for, in
// ActiveMQ's words ("User u is not authorized to write to: queue://X"); it is logged
// once a minute with the number held back.
func (c *Conn) denied(r security.Rights, d destinations.Name) error {
	return c.access.Denied(c.subject.User, c.ID, c.RemoteAddr, r, d)
}
