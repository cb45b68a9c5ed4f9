// Package registry is the broker's destination registry: the queues and topics by
// name, made on first use as ActiveMQ makes them, with what depends on which exist
// under the same lock: the temporary destinations and the connections that own them
// (temp.go), the consumer queues of virtual topics (virtual.go), the subscriptions on
// wildcard names (wildcard.go), and the number of destinations that counts against
// maxDestinations with the removal of inactive ones (gc.go).
//
// # Concurrency
//
// One RWMutex guards it all (it took the place of broker.mu). Lock order: durable's
// lifecycle lock, then this one, then the advisories' (Host.Added and Host.Removed are
// called holding it), then a destination's lock, then a consumer's. A topic's stream
// lock is taken before this one.
//
// The registry makes destinations with the broker's destinations.Env and asks its Host
// only what it cannot know: whether a subscription's subject may read a destination,
// and who hears of destinations made and removed. It imports nothing of the broker.
package registry

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/broker/advisory"
	"github.com/activemq-go/broker/destinations"
)

// Host is what the registry asks of the broker it runs in.
type Host interface {
	// MayRead reports whether wildcard subscription c may receive from the queue or
	// topic called name as the authorization map says (no wildcard reaches a temporary
	// destination).
	MayRead(c *destinations.Consumer, topic bool, name string) bool
	// Added announces the queue q or topic t, d (Kind Queue or Topic; temp: a temporary
	// one, d resolved: Kind TempQueue or TempTopic, its broker-wide name, Remote), just
	// made for the connection by ("": for the broker). It is called holding the
	// registry's lock.
	Added(d destinations.Name, temp bool, by string, q *destinations.QueueDest, t *destinations.TopicDest)
	// Removed announces that the queue or topic d (as Added had it) was removed,
	// holding the lock.
	Removed(d destinations.Name)
}

// Config is what a registry is made with.
type Config struct {
	// Env is what destinations are made with; its Policy picks theirs, its Store and
	// Log are the registry's.
	Env  *destinations.Env
	Host Host
	// Virtual configures virtual topics (see VirtualTopics).
	Virtual VirtualTopics
	// MaxDestinations bounds the destinations clients may create (see gc.go).
	MaxDestinations int
	// Share, when set, hands each new queue to shared mode before anything uses it.
	Share func(*destinations.QueueDest)
}

// Destinations is the registry of a broker's queues and topics.
type Destinations struct {
	env      *destinations.Env
	log      *slog.Logger
	host     Host
	share    func(*destinations.QueueDest)
	maxDests int

	mu     sync.RWMutex
	queues map[string]*destinations.QueueDest // by destination name (without kind prefix)
	topics map[string]*destinations.TopicDest
	// wildSubs are the subscriptions on wildcard topic names, wildQueues those on
	// wildcard queue names (wildcard.go).
	wildSubs    []*destinations.Consumer
	wildQueues  []*WildQueue
	temps       map[tempKey]*tempDest // the temporary destinations, apart (temp.go)
	virtual     VirtualTopics
	vtQueues    map[string][]destinations.Name // virtual topic -> its consumer queues
	advTopics   int                            // the topics under ActiveMQ.Advisory. (not counted against maxDests)
	destsLogged time.Time                      // the last "destination limit reached" line
	// creators are the users whose quota each queue and topic they created counts
	// against, userDests how many count against each (quota.go).
	creators    map[tempKey]string
	userDests   map[string]int
	quotaLogged time.Time // the last "destination quota reached" line

	// seqFloor is where the sequence numbers of a destination made again start: above
	// every removed destination's.
	seqFloor atomic.Uint64
	// removals counts the passes that removed queues or topics: a connection's cached
	// authorization knows its destination still exists while it has not changed.
	removals atomic.Uint64
	gcSweeps atomic.Int64 // passes of the collector, for tests
	// ntemps is len(temps), read without the lock: a name is checked against the
	// temporary destinations' only while there are some (Reserved).
	ntemps atomic.Int64
}

// New returns an empty registry.
func New(c Config) *Destinations {
	if c.MaxDestinations <= 0 {
		c.MaxDestinations = DefaultMaxDestinations
	}
	return &Destinations{
		env: c.Env, log: c.Env.Log, host: c.Host, share: c.Share, maxDests: c.MaxDestinations,
		queues:   map[string]*destinations.QueueDest{},
		topics:   map[string]*destinations.TopicDest{},
		temps:    map[tempKey]*tempDest{},
		virtual:  c.Virtual,
		vtQueues: map[string][]destinations.Name{},
		creators: map[tempKey]string{}, userDests: map[string]int{},
	}
}

// Queue returns the queue called name, creating it on first use as ActiveMQ does.
func (r *Destinations) Queue(name string) *destinations.QueueDest {
	r.mu.RLock()
	q := r.queues[name]
	r.mu.RUnlock()
	if q != nil {
		q.Touch()
		return q
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.queueLocked(name, "")
}

// Topic returns the topic called name, creating it on first use.
func (r *Destinations) Topic(name string) *destinations.TopicDest {
	r.mu.RLock()
	t := r.topics[name]
	r.mu.RUnlock()
	if t != nil {
		t.Touch()
		return t
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.topicLocked(name, "")
}

// queueLocked returns the queue called name, creating it on first use (for connection
// by; "": for the broker). The caller holds r.mu for writing.
func (r *Destinations) queueLocked(name, by string) *destinations.QueueDest {
	q := r.queues[name]
	if q == nil {
		q = destinations.NewQueue(r.env, name, r.env.Policy(destinations.Queue, name), r.seqFloor.Load())
		if r.share != nil {
			r.share(q)
		}
		r.queues[name] = q
		r.registerVirtual(q)
		r.attachWildcardQueues(q, name)
		r.host.Added(destinations.Name{Kind: destinations.Queue, Name: name}, false, by, q, nil)
	}
	return q
}

// topicLocked returns the topic called name, creating it on first use (for connection
// by; "": for the broker). The caller holds r.mu for writing.
func (r *Destinations) topicLocked(name, by string) *destinations.TopicDest {
	t := r.topics[name]
	if t == nil {
		t = destinations.NewTopic(r.env, name, r.env.Policy(destinations.Topic, name), r.seqFloor.Load(), false)
		for _, s := range r.wildSubs {
			if destinations.Match(s.Dest.Name, name) && r.mayReadLocked(s, true, name) {
				t.Add(s)
			}
		}
		r.topics[name] = t
		d := destinations.Name{Kind: destinations.Topic, Name: name}
		if advisory.IsAdvisory(d) {
			r.advTopics++
		}
		r.host.Added(d, false, by, nil, t)
	}
	return t
}

// FindQueue returns the queue called name, nil if there is none.
func (r *Destinations) FindQueue(name string) *destinations.QueueDest {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.queues[name]
}

// FindTopic returns the topic called name, nil if there is none.
func (r *Destinations) FindTopic(name string) *destinations.TopicDest {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.topics[name]
}

// Find returns the queue or topic d (Kind Queue or Topic) if it exists: what
// management may see (never a temporary destination, whatever its name).
func (r *Destinations) Find(d destinations.Name) (*destinations.QueueDest, *destinations.TopicDest) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if d.Kind == destinations.Topic {
		return nil, r.topics[d.Name]
	}
	return r.queues[d.Name], nil
}

// QueueOf returns the queue or temporary queue a resolved destination names (Kind
// Queue or TempQueue), nil if there is none.
func (r *Destinations) QueueOf(d destinations.Name) *destinations.QueueDest {
	if d.Kind == destinations.TempQueue {
		return r.TempQueue(d)
	}
	return r.FindQueue(d.Name)
}

// TopicOf returns the topic or temporary topic a resolved destination names (Kind
// Topic or TempTopic), nil if there is none.
func (r *Destinations) TopicOf(d destinations.Name) *destinations.TopicDest {
	if d.Kind == destinations.TempTopic {
		return r.TempTopic(d)
	}
	return r.FindTopic(d.Name)
}

// Exists reports whether the queue or topic d exists.
func (r *Destinations) Exists(d destinations.Name) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if d.Kind.IsTopic() {
		return r.topics[d.Name] != nil
	}
	return r.queues[d.Name] != nil
}

// Each calls fn, holding the registry's read lock, for every queue (t nil) and topic
// (q nil), temporary ones (temp, by their broker-wide names) included.
func (r *Destinations) Each(fn func(name string, temp bool, q *destinations.QueueDest, t *destinations.TopicDest)) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for name, q := range r.queues {
		fn(name, false, q, nil)
	}
	for name, t := range r.topics {
		fn(name, false, nil, t)
	}
	for k, e := range r.temps {
		fn(k.name, true, e.q, e.t)
	}
}

// Queues returns every queue (not the temporary ones: TempQueues).
func (r *Destinations) Queues() []*destinations.QueueDest {
	r.mu.RLock()
	defer r.mu.RUnlock()
	qs := make([]*destinations.QueueDest, 0, len(r.queues))
	for _, q := range r.queues {
		qs = append(qs, q)
	}
	return qs
}

// Streams returns every topic that is a stream.
func (r *Destinations) Streams() []*destinations.TopicDest {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ts := make([]*destinations.TopicDest, 0, len(r.topics))
	for _, t := range r.topics {
		if t.IsStream() {
			ts = append(ts, t)
		}
	}
	return ts
}

// Removals is the number of passes that removed destinations so far.
func (r *Destinations) Removals() uint64 { return r.removals.Load() }

// Detach takes the queue or topic d (Kind Queue or Topic, never a temporary one) out of the
// registry once it retired (destinations.QueueDest.Retire): it returns it, or nil and
// nil when there is no such destination, or Retire's error.
func (r *Destinations) Detach(d destinations.Name) (*destinations.QueueDest, *destinations.TopicDest, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q, t := r.queues[d.Name], r.topics[d.Name]
	if d.Kind == destinations.Topic {
		q = nil
	} else {
		t = nil
	}
	if q == nil && t == nil {
		return nil, nil, nil
	}
	var err error
	if q != nil {
		err = q.Retire()
	} else {
		err = t.Retire()
	}
	if err != nil {
		return nil, nil, err
	}
	r.forgetLocked(d.Kind == destinations.Topic, d.Name)
	if q != nil {
		delete(r.queues, d.Name)
		r.unregisterVirtual(q)
		r.raiseSeqFloor(q.NextSeq())
	} else {
		r.dropTopicLocked(d.Name)
		r.raiseSeqFloor(t.Seq() + 1)
	}
	r.removals.Add(1)
	r.host.Removed(d)
	return q, t, nil
}

func (r *Destinations) raiseSeqFloor(seq uint64) {
	r.seqFloor.Store(max(r.seqFloor.Load(), seq))
}

// dropTopicLocked takes the topic called name out of r.topics. The caller holds r.mu.
func (r *Destinations) dropTopicLocked(name string) {
	if _, ok := r.topics[name]; !ok {
		return
	}
	delete(r.topics, name)
	if advisory.IsAdvisory(destinations.Name{Kind: destinations.Topic, Name: name}) {
		r.advTopics--
	}
}

// mayReadLocked reports whether wildcard subscription s may receive from the queue or
// topic called name, as the Host says (no wildcard reaches a temporary destination:
// they are not among the queues and topics). The caller holds r.mu.
func (r *Destinations) mayReadLocked(s *destinations.Consumer, topic bool, name string) bool {
	return r.host.MayRead(s, topic, name)
}
