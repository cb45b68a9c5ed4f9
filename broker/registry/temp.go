package registry

import (
	"fmt"

	"github.com/activemq-go/broker/destinations"
)

// Temporary destinations (/temp-queue/NAME, /temp-topic/NAME) belong to the connection
// that names them first: each gets a broker-wide name "<connection id>:NAME" (an
// OpenWire client gives its own, ID:...) and is kept here, with its owner (a
// destinations.Sink, the connection), apart from the queues and topics until the owner
// drops it. They are another kind (destinations.TempQueue, TempTopic): a resolved
// temporary destination is that kind with its broker-wide name and Remote set, and no
// queue or topic name, plain, wildcard or composite, reaches one; nor may a client
// make a queue or topic of a temporary destination's name while it exists (Reserved).
// The broker resolves the names clients give them and checks who may use them.

// tempKey names a temporary destination: a topic or queue, by its broker-wide name.
type tempKey struct {
	topic bool
	name  string
}

// tempDest is one temporary destination: its owner and its queue or topic.
type tempDest struct {
	owner destinations.Sink
	q     *destinations.QueueDest
	t     *destinations.TopicDest
}

// TempOwner returns the connection that owns the temporary queue (or topic) called
// name, its broker-wide name; nil if there is none.
func (r *Destinations) TempOwner(topic bool, name string) destinations.Sink {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if e := r.temps[tempKey{topic, name}]; e != nil {
		return e.owner
	}
	return nil
}

// OwnsTemp reports whether owner has already created its temporary destination d (as
// the client names it: Kind TempQueue or TempTopic).
func (r *Destinations) OwnsTemp(owner destinations.Sink, d destinations.Name) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e := r.temps[tempKey{d.Kind.IsTopic(), owner.ConnectionID() + ":" + d.Name}]
	return e != nil && e.owner == owner
}

// Temp returns owner's temporary destination d (Kind TempQueue or TempTopic, as the
// client names it) resolved (its kind, its broker-wide name, Remote), creating it on
// first use, and whether it did: then the owner drops it with DropTemps. Creating one
// counts against MaxDestinations.
func (r *Destinations) Temp(owner destinations.Sink, d destinations.Name) (destinations.Name, bool, error) {
	return r.temp(owner, d, owner.ConnectionID()+":"+d.Name)
}

// TempNamed is Temp for a temporary destination whose client already gave it a name
// unique across the broker (d.Name; OpenWire's clients name theirs after their
// connection id): it is kept under that name.
func (r *Destinations) TempNamed(owner destinations.Sink, d destinations.Name) (destinations.Name, bool, error) {
	d.Remote = false // its name, as its owner's clients show it
	return r.temp(owner, d, d.Name)
}

func (r *Destinations) temp(owner destinations.Sink, d destinations.Name, name string) (destinations.Name, bool, error) {
	topic := d.Kind == destinations.TempTopic
	real := destinations.Name{Kind: d.Kind, Name: name, Remote: true}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := tempKey{topic, name}
	if r.temps[key] != nil {
		return real, false, nil
	}
	if err := r.roomLocked(1, []destinations.Name{d}); err != nil {
		return d, false, err
	}
	e := &tempDest{owner: owner}
	r.temps[key] = e
	r.ntemps.Add(1)
	if topic {
		e.t = destinations.NewTopic(r.env, name, r.env.Policy(destinations.TempTopic, name), r.seqFloor.Load(), true)
		e.t.SetClientName(d)
	} else {
		e.q = destinations.NewQueue(r.env, name, r.env.Policy(destinations.TempQueue, name), r.seqFloor.Load())
		e.q.SetTemp(d, real)
	}
	r.host.Added(real, true, owner.ConnectionID(), e.q, e.t)
	return real, true, nil
}

// TempQueue returns the temporary queue d names (resolved: Kind TempQueue, its
// broker-wide name), nil if there is none.
func (r *Destinations) TempQueue(d destinations.Name) *destinations.QueueDest {
	if e := r.tempOf(d); e != nil {
		return e.q
	}
	return nil
}

// TempTopic returns the temporary topic d names (resolved: Kind TempTopic, its
// broker-wide name), nil if there is none.
func (r *Destinations) TempTopic(d destinations.Name) *destinations.TopicDest {
	if e := r.tempOf(d); e != nil {
		return e.t
	}
	return nil
}

// tempOf returns the temporary destination d (Kind TempQueue or TempTopic) names.
func (r *Destinations) tempOf(d destinations.Name) *tempDest {
	if d.Kind != destinations.TempQueue && d.Kind != destinations.TempTopic {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.temps[tempKey{d.Kind == destinations.TempTopic, d.Name}]
}

// TopicFor returns the topic a resolved destination names (Kind Topic: made on first
// use; TempTopic: nil once it is gone).
func (r *Destinations) TopicFor(d destinations.Name) *destinations.TopicDest {
	if d.Kind == destinations.TempTopic {
		return r.TempTopic(d)
	}
	return r.Topic(d.Name)
}

// tempGone is the error of a temporary destination deleted since it was resolved.
func tempGone(d destinations.Name) error {
	return &destinations.Error{Message: fmt.Sprintf("temporary destination %s no longer exists", d), Err: destinations.ErrInvalidDestination}
}

// TempQueues returns every temporary queue.
func (r *Destinations) TempQueues() []*destinations.QueueDest {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var qs []*destinations.QueueDest
	for _, e := range r.temps {
		if e.q != nil {
			qs = append(qs, e.q)
		}
	}
	return qs
}

// Reserved refuses d, a queue or topic a client names, if a temporary destination of
// the same kind goes by that name: its reply-to, advisories and the API show that
// name, and a queue or topic of it would be mistaken for the temporary one.
func (r *Destinations) Reserved(d destinations.Name) error {
	if r.ntemps.Load() == 0 || (d.Kind != destinations.Queue && d.Kind != destinations.Topic) {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.reservedLocked(d)
}

// reservedLocked is Reserved; the caller holds r.mu.
func (r *Destinations) reservedLocked(d destinations.Name) error {
	if d.Kind != destinations.Queue && d.Kind != destinations.Topic || r.temps[tempKey{d.Kind == destinations.Topic, d.Name}] == nil {
		return nil
	}
	temp := destinations.Name{Kind: destinations.TempQueue, Name: d.Name, Remote: true}
	what := "queue"
	if d.Kind == destinations.Topic {
		temp.Kind, what = destinations.TempTopic, "topic"
	}
	return &destinations.Error{Message: fmt.Sprintf("%s names a temporary %s, which no %s name reaches: send to it as %s; only the connection that created it reads it",
		d, what, what, temp), Err: destinations.ErrInvalidDestination}
}

// DropTemps deletes temporary destinations (as Temp returned them) with their messages.
func (r *Destinations) DropTemps(temps []destinations.Name) {
	r.mu.Lock()
	var qs []*destinations.QueueDest
	for _, d := range temps {
		key := tempKey{d.Kind.IsTopic(), d.Name}
		e := r.temps[key]
		if e == nil {
			continue
		}
		delete(r.temps, key)
		r.ntemps.Add(-1)
		if e.t != nil {
			e.t.Close()
		} else {
			qs = append(qs, e.q)
		}
		r.host.Removed(d)
	}
	r.mu.Unlock()
	for _, q := range qs {
		q.Drop()
	}
}
