package broker

import (
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/durable"
	"github.com/activemq-go/broker/security"
)

// Client-id ownership (Options.ClientIDOwnership, on a broker that authenticates):
// the durable subscriptions of a client-id belong to the authenticated user that made
// them, and while the client-id holds any, no other user may connect with it, also
// while its owner is offline (durable/owner.go keeps and stores the owners).
//
//   - An anonymous client never owns a client-id, and may not use an owned one.
//   - An administrator (adminGroups) neither claims a client-id nor is refused one, as
//     it may free one anyway: `broker migrate` run as an administrator creates the
//     subscriptions it imports without an owner, and their application's user claims
//     them when it first attaches.
//   - A client-id is freed by an administrator (management.Manager.FreeClientID), or goes with its last
//     durable subscription.
//   - In shared mode the subscriptions live in the shared database and owners are not
//     kept; replacing one still needs read on its topic.
//
// Replacing a durable subscription (a SUBSCRIBE with its name on another topic or with
// another selector deletes it and its backlog) needs what deleting it needs: read on
// its topic.

// owning reports whether client-ids are owned: the option is on and clients are
// authenticated (on an open broker there is no user to own one).
func (b *Broker) owning() bool { return b.ownership && b.access.Authenticating() }

// claimant is sub as the owner of a client-id: the user that claims one no one owns
// (none for an anonymous client or an administrator), and whether it may use one
// another user owns (an administrator, or anyone while client-ids are not owned).
func (b *Broker) claimant(sub *security.Subject) (user string, anyOwner bool) {
	switch {
	case !b.owning():
		return "", true
	case sub.Anonymous:
		return "", false
	case b.access.Service.IsAdmin(sub):
		return "", true
	}
	return sub.User, false
}

// checkClientID refuses a CONNECT of sub with the client-id id when another user owns
// it.
func (b *Broker) checkClientID(sub *security.Subject, id string) error {
	if id == "" {
		return nil
	}
	user, anyOwner := b.claimant(sub)
	if owner := b.durables.Owner(id); owner != "" && owner != user && !anyOwner {
		err := ownedError(id)
		err.Fatal = true
		return err
	}
	return nil
}

// ownedError is the error of a request with the client-id id that another user owns.
func ownedError(id string) *Error {
	return errorf(ErrClientIDInUse, "Client: %s is owned by another user, whose durable subscriptions it holds; an administrator may free it", id)
}

// subscriber is c as the durable registry sees it attaching to a subscription.
func (c *Conn) subscriber() durable.Subscriber {
	user, anyOwner := c.b.claimant(c.subject)
	by := durable.Subscriber{User: user, AnyOwner: anyOwner, MayReplace: c.mayRemoveDurable}
	if sub := c.subject; sub != nil {
		by.Quota = durable.Quota{User: sub.User, Max: sub.MaxDurableSubscriptions}
	}
	return by
}

// mayRemoveDurable checks that c may remove (or replace) a durable subscription of
// topic (its name): it needs the right that made it, read on its topic.
func (c *Conn) mayRemoveDurable(topic string) error {
	if !c.access.MayRead(c.subject, true, topic) {
		return c.denied(security.Read, destinations.Name{Kind: destinations.Topic, Name: topic})
	}
	return nil
}
