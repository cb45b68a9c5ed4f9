package access

import (
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/security"
)

// Who is a connection as the decisions see it: its subject, its ids for the log, the
// owner of its temporary destinations, and its last grant.
type Who struct {
	Subject      *security.Subject
	Conn, Remote string
	Owner        destinations.Sink
	Last         *Decision // owned by the connection's goroutine
}

// Registry is what the decisions ask of the destination registry.
type Registry interface {
	// Removals counts the passes that removed destinations, so a remembered grant
	// knows its destination may be gone.
	Removals() uint64
	Exists(d destinations.Name) bool
	OwnsTemp(owner destinations.Sink, d destinations.Name) bool
}

func (a *Control) denied(w Who, r security.Rights, d destinations.Name) error {
	return a.Denied(w.Subject.User, w.Conn, w.Remote, r, d)
}

// Use checks that the connection w may use the destinations a request names (before
// temporary ones are resolved and virtual topics expanded) with right r, and, when the
// request creates what does not exist yet (every one but a browse), create them. It
// remembers its last grant in w.Last, so a producer or consumer that keeps using one
// destination is not asked again.
func (a *Control) Use(w Who, reg Registry, dests []destinations.Name, r security.Rights, creates bool) error {
	sec := a.Service
	if sec == nil {
		return nil
	}
	for _, d := range dests {
		if d.Kind == destinations.TempQueue || d.Kind == destinations.TempTopic {
			if err := a.Temp(w, reg, d, r); err != nil {
				return err
			}
			continue
		}
		if !sec.Authorizing() {
			continue
		}
		gen, removals := sec.Generation(), reg.Removals()
		if l := w.Last; l.gen == gen && l.r == r && l.d == d && (l.admin || l.removals == removals) && creates {
			// The connection's last decision, for a producer or consumer that keeps
			// using one destination; d still exists if nothing was removed since.
			continue
		}
		if d.IsWildcard() {
			continue // a wildcard subscription is filtered per destination: see regHost.MayRead
		}
		kind := Kind(d.Kind)
		if !sec.Authorize(w.Subject, kind, d.Name, r) {
			return a.denied(w, r, d)
		}
		admin := false // known to be allowed to create d
		if creates && !reg.Exists(d) {
			if !sec.Authorize(w.Subject, kind, d.Name, security.Admin) {
				return a.denied(w, security.Admin, d)
			}
			admin = true
		}
		if creates { // a browse's decision says nothing of whether d exists
			*w.Last = Decision{d: d, r: r, gen: gen, removals: removals, admin: admin}
		}
	}
	return nil
}

// Decision is a connection's last granted authorization: right r on d under the
// security service's generation gen, when the broker had made removals passes that
// removed destinations, and whether it may create d too.
type Decision struct {
	d        destinations.Name
	r        security.Rights
	gen      uint64
	removals uint64
	admin    bool
}

// Temp checks a temporary destination against the tempDestination rule: a
// connection's own one needs admin the first time (it is created then); reading
// another connection's one is refused by the broker's resolution whatever the rule says.
func (a *Control) Temp(w Who, reg Registry, d destinations.Name, r security.Rights) error {
	sec := a.Service
	if !sec.AuthorizeTemp(w.Subject, r) {
		return a.denied(w, r, d)
	}
	if !d.Remote && !reg.OwnsTemp(w.Owner, d) && !sec.AuthorizeTemp(w.Subject, security.Admin) {
		return a.denied(w, security.Admin, d)
	}
	return nil
}

// MayCreate reports whether the decision also let its connection create its destination.
func (d Decision) MayCreate() bool { return d.admin }
