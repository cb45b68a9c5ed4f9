package broker

import (
	"errors"

	"github.com/activemq-go/broker/broker/access"
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
	ErrTooManyUserConnections = errors.New("broker: too many connections for this user")
)

// Subject is who the connection acts as.
func (c *Conn) Subject() *security.Subject { return c.subject }

// authorizeUse checks that the connection may use the destinations a request names
// (before temporary ones are resolved and virtual topics expanded) with right r, and,
// when the request creates what does not exist yet (every one but a browse), create
// them.
func (c *Conn) authorizeUse(dests []destinations.Name, r security.Rights, creates bool) error {
	sec := c.access.Service
	if sec == nil {
		return nil
	}
	for _, d := range dests {
		if d.Kind == destinations.TempQueue || d.Kind == destinations.TempTopic {
			if err := c.authorizeTemp(d, r); err != nil {
				return err
			}
			continue
		}
		if !sec.Authorizing() {
			continue
		}
		gen, removals := sec.Generation(), c.dests.Removals()
		if a := &c.lastAuth; a.gen == gen && a.r == r && a.d == d && (a.admin || a.removals == removals) && creates {
			// The connection's last decision, for a producer or consumer that keeps
			// using one destination; d still exists if nothing was removed since.
			continue
		}
		if d.IsWildcard() {
			continue // a wildcard subscription is filtered per destination: see regHost.MayRead
		}
		kind := access.Kind(d.Kind)
		if !sec.Authorize(c.subject, kind, d.Name, r) {
			return c.denied(r, d)
		}
		admin := false // known to be allowed to create d
		if creates && !c.dests.Exists(d) {
			if !sec.Authorize(c.subject, kind, d.Name, security.Admin) {
				return c.denied(security.Admin, d)
			}
			admin = true
		}
		if creates { // a browse's decision says nothing of whether d exists
			c.lastAuth = authDecision{d: d, r: r, gen: gen, removals: removals, admin: admin}
		}
	}
	return nil
}

// authDecision is a connection's last granted authorization: right r on d under the
// security service's generation gen, when the broker had made removals passes that
// removed destinations, and whether it may create d too.
type authDecision struct {
	d        destinations.Name
	r        security.Rights
	gen      uint64
	removals uint64
	admin    bool
}

// authorizeTemp checks a temporary destination against the tempDestination rule: a
// connection's own one needs admin the first time (it is created then); reading
// another connection's one is refused by resolve whatever the rule says.
func (c *Conn) authorizeTemp(d destinations.Name, r security.Rights) error {
	sec := c.access.Service
	if !sec.AuthorizeTemp(c.subject, r) {
		return c.denied(r, d)
	}
	if !d.Remote && !c.dests.OwnsTemp(c, d) && !sec.AuthorizeTemp(c.subject, security.Admin) {
		return c.denied(security.Admin, d)
	}
	return nil
}

// denied is the ERROR of a request the connection's subject has no right r for, in
// ActiveMQ's words ("User u is not authorized to write to: queue://X"); it is logged
// once a minute with the number held back.
func (c *Conn) denied(r security.Rights, d destinations.Name) error {
	return c.access.Denied(c.subject.User, c.ID, c.RemoteAddr, r, d)
}
