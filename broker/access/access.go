// Package access is the broker's side of security: it asks the security service
// (package security) who a client is and what it may do, words and counts the denials
// as ActiveMQ does, and stamps JMSXUserID. The broker holds one Control and asks it from
// its connections; what a connection remembers of its last decision stays with the
// connection.
package access

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

var (
	// ErrNotAuthenticated: credentials that do not name a user.
	ErrNotAuthenticated = security.ErrInvalidCredentials
	// ErrLoginThrottled: a failed login from an address with too many failed logins
	// already waiting out their delay; the transport closes it without an answer.
	ErrLoginThrottled = security.ErrThrottled
	// ErrNotAuthorized: a request its subject has no right for.
	ErrNotAuthorized = errors.New("broker: not authorized")
)

// Control authenticates and authorizes through Service (nil: everyone is let in and
// may do anything), logs and counts the denials, and stamps JMSXUserID.
type Control struct {
	Service *security.Service
	// PopulateUserID stamps the sender's user on each message (populateJMSXUserID);
	// PrincipalUserID only an authenticated user's
	// (useAuthenticatedPrincipalForJMSXUserID).
	PopulateUserID, PrincipalUserID bool
	Log                             *slog.Logger
	Meter                           *management.Meter

	deniedLog loglimit.Limit // the log line of requests not authorized
}

// Authenticate checks cr with the security service and returns the subject the
// connection acts as; a failure is a fatal *destinations.Error in ActiveMQ's words.
func (a *Control) Authenticate(ctx context.Context, cr security.Credentials) (*security.Subject, error) {
	if a.Service == nil {
		return &security.Subject{User: cr.Login, Anonymous: true}, nil
	}
	sub, err := a.Service.Authenticate(ctx, cr)
	if err == nil {
		return sub, nil
	}
	sentinel := ErrNotAuthenticated
	if errors.Is(err, security.ErrThrottled) {
		sentinel = ErrLoginThrottled
	}
	login := cr.Login
	if !cr.HasLogin {
		login = ""
	}
	return nil, &destinations.Error{Message: security.FailureMessage(login), Fatal: true, Err: sentinel}
}

// Authenticating reports whether clients are authenticated.
func (a *Control) Authenticating() bool { return a.Service != nil && a.Service.Authenticating() }

// Authorizing reports whether requests are checked against an authorization map.
func (a *Control) Authorizing() bool { return a.Service != nil && a.Service.Authorizing() }

// MayRead reports whether sub may read the queue or topic called name.
func (a *Control) MayRead(sub *security.Subject, topic bool, name string) bool {
	kind := security.Queue
	if topic {
		kind = security.Topic
	}
	return !a.Authorizing() || a.Service.Authorize(sub, kind, name, security.Read)
}

// Kind is the security kind of a destination kind.
func Kind(k destinations.Kind) security.Kind {
	if k.IsTopic() {
		return security.Topic
	}
	return security.Queue
}

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

// Denied is the error of a request of user on connection conn (from remote) with no
// right r for d, in ActiveMQ's words ("User u is not authorized to write to:
// queue://X"); it is counted, and logged once a minute with the number held back.
func (a *Control) Denied(user, conn, remote string, r security.Rights, d destinations.Name) error {
	what := d.Qualified()
	switch d.Kind { // ActiveMQ's names of temporary destinations, as an OpenWire client knows them
	case destinations.TempQueue:
		what = "temp-queue://" + d.Name
	case destinations.TempTopic:
		what = "temp-topic://" + d.Name
	}
	op := management.OpSubscribe
	switch r {
	case security.Write:
		op = management.OpSend
	case security.Admin:
		op = management.OpCreate
	}
	a.Meter.Denied[op].Add(1)
	if ok, more := a.deniedLog.Allow(time.Now()); ok {
		attrs := []any{slog.String("user", user), slog.String("right", rightVerb(r)), slog.String("dest", what),
			slog.String("conn", conn), slog.String("remote", remote)}
		if more > 0 {
			attrs = append(attrs, slog.Int("deniedSinceLastLine", more))
		}
		a.Log.Warn("request not authorized (logged once a minute)", attrs...)
	}
	return &destinations.Error{Message: "User " + user + " is not authorized to " + rightVerb(r) + ": " + what, Err: ErrNotAuthorized}
}

// TakeDeadLetterHeaders removes from m, a message a client sends as sub, the headers
// only the broker sets (destinations.DeadLetterProperties: where a dead-letter copy was
// sent and why it died): a client's own original-destination would make a retry of a
// dead-letter queue send its message where the client may not write. ActiveMQ keeps
// the original destination in a message field no STOMP header sets. An administrator's
// (Config.AdminGroups: broker migrate moving ActiveMQ's dead-letter queues) are kept,
// and everyone's without an authorization map, where every client may write
// everywhere.
func (a *Control) TakeDeadLetterHeaders(sub *security.Subject, m *persistence.Message) {
	if !a.Authorizing() || a.Service.IsAdmin(sub) {
		return
	}
	m.Headers = m.Headers.Without(destinations.DeadLetterProperties...)
}

// StampUser sets or removes m's JMSXUserID header as populateJMSXUserID asks: the
// authenticated user sub (or, without authentication, the login the client gave unless
// useAuthenticatedPrincipalForJMSXUserID), whatever the client sent. Without
// populateJMSXUserID it leaves m as it is.
func (a *Control) StampUser(sub *security.Subject, m *persistence.Message) {
	if !a.PopulateUserID {
		return
	}
	user := sub.User
	if sub.Anonymous && !a.Authenticating() && a.PrincipalUserID {
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
