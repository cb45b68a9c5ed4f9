package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/broker/management"
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
	ErrNotAuthenticated = security.ErrInvalidCredentials
	// ErrLoginThrottled: a failed CONNECT from an address with too many failed logins
	// already waiting out their delay; the transport closes it without an answer.
	ErrLoginThrottled = security.ErrThrottled
	// ErrNotAuthorized: a request its subject has no right for.
	ErrNotAuthorized = errors.New("broker: not authorized")
	// ErrTooManyUserConnections: a CONNECT past its user's maxConnections.
	ErrTooManyUserConnections = errors.New("broker: too many connections for this user")
)

// authenticate checks info's credentials with the security service; it returns the
// subject the connection acts as.
func (b *Broker) authenticate(ctx context.Context, info ConnectInfo) (*security.Subject, error) {
	if b.sec == nil {
		return &security.Subject{User: info.Login, Anonymous: true}, nil
	}
	sub, err := b.sec.Authenticate(ctx, security.Credentials{
		Login: info.Login, Passcode: info.Passcode, HasLogin: info.HasLogin,
		RemoteAddr: info.RemoteAddr, PeerCertificates: info.PeerCertificates,
	})
	if err == nil {
		return sub, nil
	}
	sentinel := ErrNotAuthenticated
	if errors.Is(err, security.ErrThrottled) {
		sentinel = ErrLoginThrottled
	}
	login := info.Login
	if !info.HasLogin {
		login = ""
	}
	return nil, &Error{Message: security.FailureMessage(login), Fatal: true, Err: sentinel}
}

// admitUser counts a new connection of sub's user against its maxConnections. The
// caller holds b.mu.
func (b *Broker) admitUserLocked(sub *security.Subject) error {
	if sub.MaxConnections <= 0 || sub.User == "" {
		return nil
	}
	if n := b.userConns[sub.User]; n >= sub.MaxConnections {
		return &Error{Message: fmt.Sprintf("User %s has reached its connection limit (maxConnections %d): close one of its connections first",
			sub.User, sub.MaxConnections), Fatal: true, Err: ErrTooManyUserConnections}
	}
	b.userConns[sub.User]++
	return nil
}

// releaseUserLocked undoes admitUserLocked when the connection closes.
func (b *Broker) releaseUserLocked(sub *security.Subject) {
	if sub == nil || sub.MaxConnections <= 0 || sub.User == "" {
		return
	}
	if b.userConns[sub.User]--; b.userConns[sub.User] <= 0 {
		delete(b.userConns, sub.User)
	}
}

// Subject is who the connection acts as.
func (c *Conn) Subject() *security.Subject { return c.subject }

// authorizing reports whether requests are checked against an authorization map.
func (b *Broker) authorizing() bool { return b.sec != nil && b.sec.Authorizing() }

// rightVerb is ActiveMQ's wording of each right in its "not authorized" messages.
func rightVerb(r security.Rights) string {
	switch r {
	case security.Read:
		return "read from"
	case security.Write:
		return "write to"
	}
	return "create"
}

// authorizeUse checks that the connection may use the destinations a request names
// (before temporary ones are resolved and virtual topics expanded) with right r, and,
// when the request creates what does not exist yet (every one but a browse), create
// them.
func (c *Conn) authorizeUse(dests []destinations.Name, r security.Rights, creates bool) error {
	b := c.b
	if b.sec == nil {
		return nil
	}
	for _, d := range dests {
		if d.Kind == destinations.TempQueue || d.Kind == destinations.TempTopic {
			if err := c.authorizeTemp(d, r); err != nil {
				return err
			}
			continue
		}
		if !b.sec.Authorizing() {
			continue
		}
		gen, removals := b.sec.Generation(), b.removals.Load()
		if a := &c.lastAuth; a.gen == gen && a.r == r && a.d == d && (a.admin || a.removals == removals) && creates {
			// The connection's last decision, for a producer or consumer that keeps
			// using one destination; d still exists if nothing was removed since.
			continue
		}
		if d.IsWildcard() {
			continue // a wildcard subscription is filtered per destination: see mayReadLocked
		}
		kind := secKind(d.Kind)
		if !b.sec.Authorize(c.subject, kind, d.Name, r) {
			return c.denied(r, d)
		}
		admin := false // known to be allowed to create d
		if creates && !b.exists(d) {
			if !b.sec.Authorize(c.subject, kind, d.Name, security.Admin) {
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
	b := c.b
	if !b.sec.AuthorizeTemp(c.subject, r) {
		return c.denied(r, d)
	}
	if !d.Remote && !b.ownsTemp(c, d) && !b.sec.AuthorizeTemp(c.subject, security.Admin) {
		return c.denied(security.Admin, d)
	}
	return nil
}

// ownsTemp reports whether c has already created its temporary destination d.
func (b *Broker) ownsTemp(c *Conn, d destinations.Name) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.temps[tempKey{d.Kind.IsTopic(), c.ID + ":" + d.Name}] == c
}

// exists reports whether the queue or topic d exists.
func (b *Broker) exists(d destinations.Name) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if d.Kind.IsTopic() {
		return b.topics[d.Name] != nil
	}
	return b.queues[d.Name] != nil
}

// mayReadLocked reports whether wildcard subscription s may receive from the queue or
// topic called name: never from another connection's temporary destination, and
// otherwise as the authorization map says. The caller holds b.mu.
func (b *Broker) mayReadLocked(s *Subscription, topic bool, name string) bool {
	if owner := b.temps[tempKey{topic, name}]; owner != nil {
		return owner == s.conn
	}
	if !b.authorizing() {
		return true
	}
	kind := security.Queue
	if topic {
		kind = security.Topic
	}
	return b.sec.Authorize(s.conn.subject, kind, name, security.Read)
}

func secKind(k destinations.Kind) security.Kind {
	if k.IsTopic() {
		return security.Topic
	}
	return security.Queue
}

// denied is the ERROR of a request the connection's subject has no right r for, in
// ActiveMQ's words ("User u is not authorized to write to: queue://X"); it is logged
// once a minute with the number held back.
func (c *Conn) denied(r security.Rights, d destinations.Name) error {
	what := d.Qualified()
	if d.Kind == destinations.TempQueue || d.Kind == destinations.TempTopic {
		what = d.String()
	}
	user := c.subject.User
	op := management.OpSubscribe
	switch r {
	case security.Write:
		op = management.OpSend
	case security.Admin:
		op = management.OpCreate
	}
	c.b.counters.Denied[op].Add(1)
	if ok, more := c.b.deniedLog.Allow(time.Now()); ok {
		attrs := []any{slog.String("user", user), slog.String("right", rightVerb(r)), slog.String("dest", what),
			slog.String("conn", c.ID), slog.String("remote", c.RemoteAddr)}
		if more > 0 {
			attrs = append(attrs, slog.Int("deniedSinceLastLine", more))
		}
		c.b.log.Warn("request not authorized (logged once a minute)", attrs...)
	}
	return &Error{Message: "User " + user + " is not authorized to " + rightVerb(r) + ": " + what, Err: ErrNotAuthorized}
}

// stampUser sets or removes the JMSXUserID header as populateJMSXUserID asks: the
// authenticated user (or, without authentication, the login the client gave unless
// useAuthenticatedPrincipalForJMSXUserID), whatever the client sent.
func (c *Conn) stampUser(hs []string) []string {
	user := c.subject.User
	if c.subject.Anonymous && (c.b.sec == nil || !c.b.sec.Authenticating()) && c.b.principalUserID {
		user = ""
	}
	out := hs[:0]
	for i := 0; i+1 < len(hs); i += 2 {
		if hs[i] != destinations.UserIDProperty {
			out = append(out, hs[i], hs[i+1])
		}
	}
	if user != "" {
		out = append(out, destinations.UserIDProperty, user)
	}
	return out
}
