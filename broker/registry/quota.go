package registry

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/destinations"
)

// Per-user quotas of destinations created (plugins.maxDestinationsPerUser): the
// broker-wide MaxDestinations protects the process, but one user reaching it would
// lock every other out of new destinations, temporary ones included. So each queue and
// topic a user's SEND or SUBSCRIBE creates counts against that user's quota while it
// exists (removed by the collector or an administrator, it no longer counts); those the
// broker makes (recovered from the store, dead-letter queues, advisory topics, an
// administrator's) and temporary destinations (counted per connection by the broker)
// count against no user.

// Creator is who a SEND or SUBSCRIBE creates destinations for.
type Creator struct {
	Conn string // the connection's id; "": the broker
	// User is the connection's user, whose destinations created count against Max
	// (0: no quota; "": no user is counted).
	User string
	Max  int
}

// counts reports whether c's creations count against a quota.
func (c Creator) counts() bool { return c.User != "" && c.Max > 0 }

// userRoomLocked refuses n more destinations for by past its user's quota; missing is
// the first of them. The caller holds r.mu.
func (r *Destinations) userRoomLocked(by Creator, n int, missing destinations.Name) error {
	if !by.counts() || r.userDests[by.User]+n <= by.Max {
		return nil
	}
	if now := time.Now(); now.Sub(r.quotaLogged) > time.Minute {
		r.quotaLogged = now
		r.log.Warn("destination quota reached: a user's SENDs and SUBSCRIBEs that would create a destination are refused",
			slog.String("user", by.User), slog.Int("destinations", r.userDests[by.User]), slog.Int("maxDestinationsPerUser", by.Max))
	}
	return &destinations.Error{Message: fmt.Sprintf("user %s reached its quota of %d destinations created (plugins.maxDestinationsPerUser): %s not created",
		by.User, by.Max, missing), Err: ErrTooManyDestinations}
}

// createdLocked counts the queue or topic d, just created, against by's user. The
// caller holds r.mu.
func (r *Destinations) createdLocked(by Creator, d destinations.Name) {
	if !by.counts() {
		return
	}
	r.creators[tempKey{d.Kind.IsTopic(), d.Name}] = by.User
	r.userDests[by.User]++
}

// forgetLocked stops counting the queue or topic called name, removed, against the user
// that created it. The caller holds r.mu.
func (r *Destinations) forgetLocked(topic bool, name string) {
	key := tempKey{topic, name}
	user, ok := r.creators[key]
	if !ok {
		return
	}
	delete(r.creators, key)
	if r.userDests[user]--; r.userDests[user] <= 0 {
		delete(r.userDests, user)
	}
}

// UserDestinations is the number of destinations that count against user's quota.
func (r *Destinations) UserDestinations(user string) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.userDests[user]
}
