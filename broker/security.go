package broker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/internal/loglimit"
	"github.com/activemq-go/broker/persistence"
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

// access is the broker's side of security: the service that authenticates and
// authorizes (nil: everyone is let in and may do anything), the log line of denials, and
// how JMSXUserID is stamped.
type access struct {
	sec             *security.Service
	populateUserID  bool // stamp the sender's user on each message (populateJMSXUserID)
	principalUserID bool // only an authenticated user (useAuthenticatedPrincipalForJMSXUserID)
	log             *slog.Logger
	meter           *management.Meter
	deniedLog       loglimit.Limit // the log line of requests not authorized
}

// authenticate checks info's credentials with the security service; it returns the
// subject the connection acts as.
func (a *access) authenticate(ctx context.Context, info ConnectInfo) (*security.Subject, error) {
	if a.sec == nil {
		return &security.Subject{User: info.Login, Anonymous: true}, nil
	}
	sub, err := a.sec.Authenticate(ctx, security.Credentials{
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

// authenticating reports whether clients are authenticated.
func (a *access) authenticating() bool { return a.sec != nil && a.sec.Authenticating() }

// authorizing reports whether requests are checked against an authorization map.
func (a *access) authorizing() bool { return a.sec != nil && a.sec.Authorizing() }

// mayRead reports whether sub may read the queue or topic called name.
func (a *access) mayRead(sub *security.Subject, topic bool, name string) bool {
	kind := security.Queue
	if topic {
		kind = security.Topic
	}
	return !a.authorizing() || a.sec.Authorize(sub, kind, name, security.Read)
}

// Subject is who the connection acts as.
func (c *Conn) Subject() *security.Subject { return c.subject }

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
	sec := c.access.sec
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
		kind := secKind(d.Kind)
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
	sec := c.access.sec
	if !sec.AuthorizeTemp(c.subject, r) {
		return c.denied(r, d)
	}
	if !d.Remote && !c.dests.OwnsTemp(c, d) && !sec.AuthorizeTemp(c.subject, security.Admin) {
		return c.denied(security.Admin, d)
	}
	return nil
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
	return c.access.denied(c.subject.User, c.ID, c.RemoteAddr, r, d)
}

// denied is the ERROR of a request of user on connection conn (from remote) with no
// right r for d (see Conn.denied).
func (a *access) denied(user, conn, remote string, r security.Rights, d destinations.Name) error {
	what := d.Qualified()
	if d.Kind == destinations.TempQueue || d.Kind == destinations.TempTopic {
		what = d.String()
	}
	op := management.OpSubscribe
	switch r {
	case security.Write:
		op = management.OpSend
	case security.Admin:
		op = management.OpCreate
	}
	a.meter.Denied[op].Add(1)
	if ok, more := a.deniedLog.Allow(time.Now()); ok {
		attrs := []any{slog.String("user", user), slog.String("right", rightVerb(r)), slog.String("dest", what),
			slog.String("conn", conn), slog.String("remote", remote)}
		if more > 0 {
			attrs = append(attrs, slog.Int("deniedSinceLastLine", more))
		}
		a.log.Warn("request not authorized (logged once a minute)", attrs...)
	}
	return &Error{Message: "User " + user + " is not authorized to " + rightVerb(r) + ": " + what, Err: ErrNotAuthorized}
}

// stampUser sets or removes m's JMSXUserID header as populateJMSXUserID asks: the
// authenticated user sub (or, without authentication, the login the client gave unless
// useAuthenticatedPrincipalForJMSXUserID), whatever the client sent. Without
// populateJMSXUserID it leaves m as it is.
func (a *access) stampUser(sub *security.Subject, m *persistence.Message) {
	if !a.populateUserID {
		return
	}
	user := sub.User
	if sub.Anonymous && !a.authenticating() && a.principalUserID {
		user = ""
	}
	hs := m.Headers
	out := hs[:0]
	for i := 0; i+1 < len(hs); i += 2 {
		if hs[i] != destinations.UserIDProperty {
			out = append(out, hs[i], hs[i+1])
		}
	}
	if user != "" {
		out = append(out, destinations.UserIDProperty, user)
	}
	m.Headers = out
}
