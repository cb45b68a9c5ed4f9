package broker

import (
	"time"

	"github.com/activemq-go/broker/persistence"
)

// expireAfter gives m, if it was sent without an expiry, one ttl from now: a policy's
// defaultTimeToLive (0: none).
func expireAfter(m *persistence.Message, ttl time.Duration) {
	if m.Expires == 0 && ttl > 0 {
		m.Expires = time.Now().Add(ttl).UnixMilli()
	}
}

// dropExpired removes from ds, in place, the plain topic messages that expired before
// they could be written to their subscriber (they wait in its overflow while it has no
// credit), as ActiveMQ does not deliver an expired message; the credit each took goes
// back to its subscription. Queue messages are checked when they are dispatched, and
// stream messages do not expire.
func dropExpired(ds []*Delivery) []*Delivery {
	var now int64
	kept := ds[:0]
	var credited []*Subscription
	for _, d := range ds {
		if d.Msg.Expires != 0 && d.q == nil && !d.Stream {
			if now == 0 {
				now = time.Now().UnixMilli()
			}
			if d.Msg.Expires <= now {
				d.Sub.credit.Add(1)
				if len(credited) == 0 || credited[len(credited)-1] != d.Sub {
					credited = append(credited, d.Sub)
				}
				continue
			}
		}
		kept = append(kept, d)
	}
	clear(ds[len(kept):])
	for _, s := range credited {
		s.kick()
	}
	return kept
}
