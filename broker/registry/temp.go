package registry

import "github.com/activemq-go/broker/destinations"

// Temporary destinations (/temp-queue/NAME, /temp-topic/NAME) belong to the connection
// that names them first: each gets a broker-wide name "<connection id>:NAME" and is a
// queue or topic of that name here, registered with its owner (a destinations.Sink,
// the connection) until the owner drops it. The broker resolves the names clients give
// them and checks who may use them.

// tempKey names a temporary destination: a topic or queue, by its broker-wide name.
type tempKey struct {
	topic bool
	name  string
}

// TempOwner returns the connection that owns the temporary queue (or topic) called
// name, its broker-wide name; nil if there is none.
func (r *Destinations) TempOwner(topic bool, name string) destinations.Sink {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.temps[tempKey{topic, name}]
}

// OwnsTemp reports whether owner has already created its temporary destination d (as
// the client names it: Kind TempQueue or TempTopic).
func (r *Destinations) OwnsTemp(owner destinations.Sink, d destinations.Name) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.temps[tempKey{d.Kind.IsTopic(), owner.ConnectionID() + ":" + d.Name}] == owner
}

// Temp returns the queue or topic that owner's temporary destination d (Kind TempQueue
// or TempTopic, as the client names it) stands for, creating it on first use, and
// whether it did: then the owner drops it with DropTemps. Creating one counts against
// MaxDestinations.
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
	real := destinations.Name{Kind: destinations.Queue, Name: name}
	if topic {
		real.Kind = destinations.Topic
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := tempKey{topic, real.Name}
	if r.temps[key] != nil {
		return real, false, nil
	}
	if err := r.roomLocked(1, []destinations.Name{d}); err != nil {
		return d, false, err
	}
	r.temps[key] = owner
	if topic {
		t := destinations.NewTopic(r.env, real.Name, r.env.Policy(destinations.TempTopic, real.Name), r.seqFloor.Load(), true)
		t.SetClientName(d)
		r.topics[real.Name] = t
		r.host.Added(real, true, owner.ConnectionID(), nil, t)
	} else {
		q := destinations.NewQueue(r.env, real.Name, r.env.Policy(destinations.TempQueue, real.Name), r.seqFloor.Load())
		q.SetClientName(d)
		r.queues[real.Name] = q
		r.host.Added(real, true, owner.ConnectionID(), q, nil)
	}
	return real, true, nil
}

// DropTemps deletes temporary destinations (as Temp returned them) with their messages.
func (r *Destinations) DropTemps(temps []destinations.Name) {
	r.mu.Lock()
	var qs []*destinations.QueueDest
	for _, d := range temps {
		if d.Kind.IsTopic() {
			delete(r.temps, tempKey{true, d.Name})
			if t := r.topics[d.Name]; t != nil {
				t.Close()
			}
			r.dropTopicLocked(d.Name)
			r.host.Removed(destinations.Name{Kind: destinations.Topic, Name: d.Name})
			continue
		}
		delete(r.temps, tempKey{false, d.Name})
		if q := r.queues[d.Name]; q != nil {
			qs = append(qs, q)
			delete(r.queues, d.Name)
			r.host.Removed(destinations.Name{Kind: destinations.Queue, Name: d.Name})
		}
	}
	r.mu.Unlock()
	for _, q := range qs {
		q.Drop()
	}
}
