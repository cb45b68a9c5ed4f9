// Package broker is the core of the message broker: connections, subscriptions, dispatch
// with prefetch credit, acknowledgements, redelivery, dead-lettering and transactions. It
// is protocol-neutral: transport/stomp turns frames into calls on Conn, and Conn hands
// back Deliveries for the transport to write.
//
// # Concurrency
//
// Each Conn is driven by one goroutine of the transport (its owner): every method of Conn
// except Wake and Take is called from that goroutine only, so a connection's own state
// (subscriptions, dispatched-but-unacknowledged messages, transactions) needs no lock.
// Destinations are shared; each has a mutex. Dispatch runs in whatever goroutine made
// a message available (a producer's owner, a consumer's owner freeing credit, or a store
// completion) and pushes Deliveries onto the consumer connection's outbound list, bounded
// by the consumer's prefetch credit.
//
// Destinations (queues, topics, streams) are the destinations package's, made with an
// Env (the store, the memory accounting, the logger, the policies...) rather than a
// pointer back to the broker; durable subscriptions are the durable package's. A
// Subscription's destination side is a destinations.Consumer, and its Conn is the
// destinations.Sink deliveries are pushed to.
//
// Lock order: durable.Registry's lifecycle lock (it took the place of broker.durMu),
// then broker.mu, then the advisories' mu (package broker/advisory), then a destination's lock
// (for a topic, its publish lock before a durable subscription's mu and its view's mu:
// see the durable package), then a consumer's mu (destinations.Consumer, its topic
// overflow), then conn.mu. A topic's
// stream lock (destinations.TopicDest's streamMu) is taken before broker.mu.
// durable.Registry's mu guards only its map of subscriptions (once under broker.mu)
// and nothing is taken while it is held.
//
// Streams (destinations/stream.go) have goroutines of their own: an appender per
// partition, which writes what producers queued and calls their done callbacks, a
// reader per partition a subscription reads, which pushes Deliveries like a dispatch
// does, and one per partition a group member is handing over, which waits for its
// messages to be settled (destinations/streamgroup.go).
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/broker/advisory"
	"github.com/activemq-go/broker/broker/dedup"
	"github.com/activemq-go/broker/broker/limits"
	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/broker/scheduler"
	"github.com/activemq-go/broker/broker/sharedmode"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/destinations/streamlog"
	"github.com/activemq-go/broker/durable"
	"github.com/activemq-go/broker/internal/loglimit"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/security"
)

// DLQName is ActiveMQ's shared dead-letter queue.
const DLQName = policy.SharedDLQ

// Options configures a Broker.
type Options struct {
	Name   string // brokerName, part of every message id
	Store  persistence.Store
	Logger *slog.Logger
	// MemoryUsage bounds the bytes of messages the broker holds in memory (systemUsage
	// memoryUsage; default limits.DefaultMemoryUsage); DestinationMemoryLimit bounds
	// one queue when no Policies are given (default policy.DefaultMemoryLimit).
	MemoryUsage            int64
	DestinationMemoryLimit int64
	// Policies picks each destination's policy; nil gives policy.Default to every one.
	Policies destinations.PolicyFunc
	// Scheduler honours AMQ_SCHEDULED_* headers (ActiveMQ's schedulerSupport).
	Scheduler bool
	// SchedulerMemoryLimit bounds the bytes of persistent scheduled messages held in
	// memory (the soonest; the others wait in the store); default
	// limits.DefaultSchedulerMemoryLimit.
	SchedulerMemoryLimit int64
	// VirtualTopics configures virtual topics; the zero value turns them off (use
	// DefaultVirtualTopics for ActiveMQ's behaviour).
	VirtualTopics VirtualTopics
	// StoreUsage bounds the disk the store may use (systemUsage storeUsage), checked
	// for stores that report their size; over it persistent messages are refused.
	StoreUsage int64
	// MaxTransactionSize bounds the bytes one open transaction holds until COMMIT;
	// default limits.DefaultMaxTransactionSize.
	MaxTransactionSize int64
	// MaxTransactionsPerConnection bounds the transactions one connection may have open
	// at once; default limits.DefaultMaxTransactionsPerConnection.
	MaxTransactionsPerConnection int
	// MaxSubscriptionsPerConnection bounds the subscriptions one connection may have at
	// once; default limits.DefaultMaxSubscriptionsPerConnection.
	MaxSubscriptionsPerConnection int
	// MaxDurableSubscriptions bounds the durable subscriptions clients may create,
	// broker-wide; default limits.DefaultMaxDurableSubscriptions.
	MaxDurableSubscriptions int
	// MaxDestinations bounds the queues and topics clients' SENDs and SUBSCRIBEs may
	// create; default DefaultMaxDestinations. See gc.go.
	MaxDestinations int
	// DestinationGCPeriod is how often destinations are checked against their policy's
	// GCInactiveDestinations and InactiveTimeoutBeforeGC: 0 for
	// DefaultDestinationGCPeriod, negative never.
	DestinationGCPeriod time.Duration
	// NoSpaceWait is how long a SEND that finds no room under MemoryUsage, a queue's
	// memory limit or StoreUsage is held before it is refused: 0 (default) not at all,
	// negative until there is room (producer flow control; see flowcontrol.go).
	NoSpaceWait time.Duration
	// LinkStealing lets a CONNECT with the client-id of a live connection replace it
	// (ActiveMQ's allowLinkStealing); otherwise it is refused.
	LinkStealing bool
	// DurableSweep is how often offline durable subscriptions are checked against their
	// offline timeout (offlineDurableSubscriberTaskSchedule); default 5m.
	DurableSweep time.Duration
	// ExpirySweep is how often the expiry sweeper wakes; each destination is swept on
	// its own policy's ExpireMessagesPeriod, so this should be the shortest of them.
	// Default 30s (policy.DefaultExpireMessagesPeriod), negative to disable.
	ExpirySweep time.Duration
	// Streams is the log behind stream topics (policies of type stream; see
	// streams.go): the embedded kafkalog.Log or kafkalog/kafkaengine's Kafka, which the
	// broker knows only as a streamlog.Log. The caller opens it and closes it after
	// the broker; nil refuses stream topics.
	Streams streamlog.Log
	// Security authenticates clients and authorizes their requests (see security.go);
	// nil lets everyone in, as ActiveMQ without security plugins.
	Security *security.Service
	// PopulateJMSXUserID stamps the sender's user on every message it sends
	// (ActiveMQ's populateJMSXUserID), replacing whatever the client put there.
	PopulateJMSXUserID bool
	// UseAuthenticatedPrincipalForJMSXUserID stamps only an authenticated user, never
	// the login of a client the broker did not authenticate.
	UseAuthenticatedPrincipalForJMSXUserID bool
	// AdvisorySupport publishes ActiveMQ's advisory messages on the ActiveMQ.Advisory.
	// topics (see package broker/advisory); off, those are topics like others that nothing is
	// published on.
	AdvisorySupport bool
	// Shared, when set, serves queues from a database several broker nodes share
	// (persistenceAdapter.jdbc.mode: shared; see package broker/sharedmode): Store
	// then keeps only what is not shared.
	Shared sharedmode.Engine
}

// Broker routes messages between connections and keeps them in its store.
type Broker struct {
	name string
	// shared is this node's side of shared mode (package broker/sharedmode; nil:
	// every queue is local).
	shared *sharedmode.Node
	store  persistence.Store
	log    *slog.Logger
	idBase string // "ID:<name>-<boot ms>-"

	destMemoryLimit int64
	policies        destinations.PolicyFunc
	linkStealing    bool
	storeUsage      int64
	storeFull       atomic.Bool
	noSpaceWait     time.Duration
	space           destinations.SpaceSignal // wakes SENDs held for room
	refusedLog      loglimit.Limit           // memoryFull's log line for scheduled messages
	maxTxBytes      int64
	maxTxs          int
	maxDests        int
	advTopics       int // the topics under ActiveMQ.Advisory. (not counted against maxDests); under mu
	maxSubs         int
	maxDurables     int
	destsLogged     time.Time // the last "destination limit reached" line; under mu
	seqFloor        atomic.Uint64
	sched           *scheduler.Scheduler
	acks            ackRetrier // failed auto-ack store writes, written again
	stopSweeper     context.CancelFunc
	done            chan struct{} // closed by Close
	mem             *destinations.Usage
	wg              sync.WaitGroup        // background page-ins
	streams         *destinations.Streams // nil without streams
	env             destinations.Env      // what destinations are made with
	durables        *durable.Registry
	sec             *security.Service    // nil: no authentication or authorization
	adv             *advisory.Advisories // nil without advisorySupport
	populateUserID  bool
	principalUserID bool
	deniedLog       loglimit.Limit // the log line of requests not authorized

	mu       sync.RWMutex
	queues   map[string]*destinations.QueueDest // by destination name (without kind prefix)
	topics   map[string]*destinations.TopicDest
	wildSubs []*Subscription // subscriptions on wildcard topic names
	// wildQueueSubs are the subscriptions on wildcard queue names (wildqueue.go).
	wildQueueSubs []*Subscription
	temps         map[tempKey]*Conn
	virtual       VirtualTopics
	vtQueues      map[string][]destinations.Name // virtual topic -> its consumer queues
	clientIDs     map[string]*Conn
	conns         map[*Conn]struct{}
	userConns     map[string]int // live connections per user with a connection limit
	closed        bool
	stopping      atomic.Bool // set when Close starts: background retries end

	// mgmt is the management surface (management.go), counters what it reads of the
	// broker's doings.
	mgmt     *management.Manager
	counters management.Meter

	msgSeq       atomic.Uint64
	connSeq      atomic.Uint64
	expirySweeps atomic.Int64 // passes of the expiry sweeper, for tests
	gcSweeps     atomic.Int64 // passes of the destination collector, for tests
	// removals counts the passes that removed queues or topics: a connection's cached
	// authorization (see authDecision) knows its destination still exists while it
	// has not changed.
	removals atomic.Uint64

	dedup *dedup.Detector // duplicate detection (package broker/dedup)
}

// New recovers the store's destinations and returns a running broker.
func New(ctx context.Context, o Options) (*Broker, error) {
	if o.Store == nil {
		return nil, fmt.Errorf("broker: no store")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Name == "" {
		o.Name = "localhost"
	}
	b := &Broker{
		name:      o.Name,
		store:     o.Store,
		log:       o.Logger,
		idBase:    "ID:" + o.Name + "-" + strconv.FormatInt(time.Now().UnixMilli(), 10) + "-",
		queues:    map[string]*destinations.QueueDest{},
		topics:    map[string]*destinations.TopicDest{},
		clientIDs: map[string]*Conn{},
		temps:     map[tempKey]*Conn{},
		vtQueues:  map[string][]destinations.Name{},
		virtual:   o.VirtualTopics,
		conns:     map[*Conn]struct{}{},
		userConns: map[string]int{},
		done:      make(chan struct{}),
		sec:       o.Security,
	}
	b.counters.Init(o.Store)
	b.populateUserID = o.PopulateJMSXUserID
	b.principalUserID = o.UseAuthenticatedPrincipalForJMSXUserID
	b.acks.b = b
	if o.MemoryUsage <= 0 {
		o.MemoryUsage = limits.DefaultMemoryUsage
	}
	b.mem = destinations.NewUsage(o.MemoryUsage)
	b.destMemoryLimit = o.DestinationMemoryLimit
	if b.destMemoryLimit <= 0 {
		b.destMemoryLimit = int64(policy.DefaultMemoryLimit)
	}
	b.policies = o.Policies
	b.linkStealing = o.LinkStealing
	b.storeUsage = o.StoreUsage
	b.noSpaceWait = o.NoSpaceWait
	b.maxTxBytes = o.MaxTransactionSize
	if b.maxTxBytes <= 0 {
		b.maxTxBytes = limits.DefaultMaxTransactionSize
	}
	b.maxTxs = o.MaxTransactionsPerConnection
	if b.maxTxs <= 0 {
		b.maxTxs = limits.DefaultMaxTransactionsPerConnection
	}
	b.maxDurables = o.MaxDurableSubscriptions
	if b.maxDurables <= 0 {
		b.maxDurables = limits.DefaultMaxDurableSubscriptions
	}
	b.maxSubs = o.MaxSubscriptionsPerConnection
	if b.maxSubs <= 0 {
		b.maxSubs = limits.DefaultMaxSubscriptionsPerConnection
	}
	b.maxDests = o.MaxDestinations
	if b.maxDests <= 0 {
		b.maxDests = DefaultMaxDestinations
	}
	if o.Streams != nil {
		b.streams = destinations.NewStreams(o.Streams, b.log)
	}
	b.env = destinations.Env{
		Store: b.store, Log: b.log, Memory: b.mem, Space: &b.space, Policy: b.policyFor,
		Background: &b.wg, Commit: b.commit, Stopping: b.stopping.Load, Done: b.done,
		DeadLetter: b.sendToDeadLetter, Streams: b.streams, Counters: &b.counters.Dests,
	}
	if o.AdvisorySupport {
		b.adv = newAdvisories(b)
		b.env.Advise = b.adv
	}
	if o.Shared != nil {
		b.shared = sharedmode.New(sharedmode.Config{Engine: o.Shared, Host: shHost{b}, Env: &b.env, Log: b.log})
	}
	b.durables = durable.NewRegistry(&b.env, b.maxDurables)
	b.dedup = dedup.New(b.store, dedupHost{b}, b.log)
	b.durables.OnRemove = b.dedup.DropSub
	if o.Scheduler {
		b.sched = scheduler.New(scheduler.Config{Store: b.store, Host: schedHost{b}, Log: b.log,
			Memory: b.mem, Space: &b.space, MemoryLimit: o.SchedulerMemoryLimit})
	}
	b.mgmt = newManagement(b)
	if err := b.recover(ctx); err != nil {
		b.closeStreams()
		return nil, err
	}
	if n := b.countedDestinationsLocked(); n > b.maxDests {
		b.log.Warn("more destinations recovered than maxDestinations allows: clients cannot create more until some are removed",
			slog.Int("destinations", n), slog.Int("maxDestinations", b.maxDests))
	}
	if b.sched != nil {
		if err := b.sched.Recover(ctx); err != nil {
			return nil, fmt.Errorf("broker: recover scheduled messages: %w", err)
		}
	}
	if b.streams != nil {
		if err := b.openKnownStreams(); err != nil {
			b.closeStreams()
			return nil, err
		}
	}
	if o.ExpirySweep == 0 {
		o.ExpirySweep = 30 * time.Second
	}
	sctx, cancel := context.WithCancel(context.Background())
	b.stopSweeper = cancel
	if o.ExpirySweep > 0 {
		b.every(sctx, o.ExpirySweep, b.sweepExpired)
	}
	if o.DurableSweep <= 0 {
		o.DurableSweep = 5 * time.Minute
	}
	b.every(sctx, o.DurableSweep, func() { b.durables.ExpireOffline(sctx) })
	if o.DestinationGCPeriod == 0 {
		o.DestinationGCPeriod = DefaultDestinationGCPeriod
	}
	if o.DestinationGCPeriod > 0 {
		b.every(sctx, o.DestinationGCPeriod, func() { b.collectInactive(sctx, time.Now()) })
	}

	if sz, ok := b.store.(persistence.Sizer); ok && b.storeUsage > 0 {
		b.wg.Add(1)
		go b.watchStoreUsage(sctx, sz)
	} else if b.storeUsage > 0 {
		b.log.Warn("storeUsage is not enforced: the store cannot report its size", slog.Int64("storeUsage", b.storeUsage))
	}
	if b.shared != nil {
		b.shared.Start()
	}
	return b, nil
}

func (b *Broker) recover(ctx context.Context) error {
	rec, err := b.store.Recover(ctx)
	if err != nil {
		return fmt.Errorf("broker: recover store: %w", err)
	}
	var msgs int64
	for _, d := range rec.Destinations {
		if strings.HasPrefix(d.Name, persistence.TopicPrefix) {
			b.topic(d.Name[len(persistence.TopicPrefix):]).RecoverSeq(d.LastSeq)
			continue
		}
		if !strings.HasPrefix(d.Name, persistence.QueuePrefix) {
			continue // topics, and the scheduler's jobs (recovered by the scheduler)
		}
		// Stored messages stay in the store until a consumer needs them: they are read
		// in pages, so start-up does not depend on how deep the queues are.
		b.queueLocked(d.Name[len(persistence.QueuePrefix):], nil).RecoverStored(d.LastSeq, d.Msgs)
		msgs += d.Msgs
	}
	if err := b.durables.Recover(ctx, rec, b.topic); err != nil {
		return err
	}
	if err := b.recoverMarkers(ctx, rec.Destinations); err != nil {
		return err
	}
	if err := b.dedup.Recover(ctx, rec.Destinations); err != nil {
		return err
	}
	if msgs > 0 {
		b.log.Info("recovered stored messages", slog.Int64("messages", msgs), slog.Int("destinations", len(rec.Destinations)))
	}
	return nil
}

// Name is the broker's name.
func (b *Broker) Name() string { return b.name }

// newMessageID returns an id unique across restarts: the boot time is part of it.
func (b *Broker) newMessageID() string {
	n := b.msgSeq.Add(1)
	var arr [128]byte // the string is then the only allocation
	buf := append(arr[:0], b.idBase...)
	buf = strconv.AppendUint(buf, n, 10)
	return string(buf)
}

// queueLocked returns the queue called name, creating it on first use as ActiveMQ does
// (for connection by; nil: for the broker). The caller holds b.mu for writing.
func (b *Broker) queueLocked(name string, by *Conn) *destinations.QueueDest {
	q := b.queues[name]
	if q == nil {
		q = destinations.NewQueue(&b.env, name, b.policyFor(destinations.Queue, name), b.seqFloor.Load())
		if b.shared != nil {
			b.shared.Share(q)
		}
		b.queues[name] = q
		b.registerVirtual(q)
		b.attachWildcardQueues(q, name)
		b.adviseAddedLocked(destinations.Name{Kind: destinations.Queue, Name: name}, false, by, q, nil)
	}
	return q
}

func (b *Broker) queue(name string) *destinations.QueueDest {
	b.mu.RLock()
	q := b.queues[name]
	b.mu.RUnlock()
	if q != nil {
		q.Touch()
		return q
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.queueLocked(name, nil)
}

func (b *Broker) topic(name string) *destinations.TopicDest {
	b.mu.RLock()
	t := b.topics[name]
	b.mu.RUnlock()
	if t != nil {
		t.Touch()
		return t
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.topicLocked(name, nil)
}

// topicLocked returns the topic called name, creating it on first use (for connection
// by; nil: for the broker). The caller holds b.mu for writing.
func (b *Broker) topicLocked(name string, by *Conn) *destinations.TopicDest {
	t := b.topics[name]
	if t == nil {
		t = destinations.NewTopic(&b.env, name, b.policyFor(destinations.Topic, name), b.seqFloor.Load(), false)
		for _, s := range b.wildSubs {
			if destinations.Match(s.Dest.Name, name) && b.mayReadLocked(s, true, name) {
				t.Add(&s.Consumer)
			}
		}
		b.topics[name] = t
		d := destinations.Name{Kind: destinations.Topic, Name: name}
		if advisory.IsAdvisory(d) {
			b.advTopics++
		}
		b.adviseAddedLocked(d, false, by, nil, t)
	}
	return t
}

// DestinationStats is a snapshot of one destination's counters.
type DestinationStats = destinations.Stats

// QueueStats returns the stats of one queue, and whether it exists.
func (b *Broker) QueueStats(name string) (DestinationStats, bool) {
	b.mu.RLock()
	q := b.queues[name]
	b.mu.RUnlock()
	if q == nil {
		return DestinationStats{}, false
	}
	st := q.Stats()
	b.dedupStats(&st, destinations.Name{Kind: destinations.Queue, Name: name})
	return st, true
}

// Close refuses new connections and closes the store, which flushes what it holds. The
// transport closes its connections first (each owner calls Conn.Close, which gives
// unacknowledged messages back to their queues), so nothing is in flight by then.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.stopping.Store(true)
	open := len(b.conns)
	b.mu.Unlock()
	close(b.done)
	if open > 0 {
		b.log.Warn("broker closing with connections still open", slog.Int("connections", open))
	}
	if b.stopSweeper != nil {
		b.stopSweeper()
	}
	if b.sched != nil {
		b.sched.Close()
	}
	b.closeStreams()
	if b.shared != nil {
		b.shared.Shutdown()
	}
	b.acks.stop()
	b.wg.Wait()
	b.acks.flush()
	return b.store.Close()
}

// every runs fn every period, in a goroutine of its own that Close waits for, until
// ctx ends: the expiry sweeper, the offline durable subscriptions' sweeper, the
// destination collector.
func (b *Broker) every(ctx context.Context, period time.Duration, fn func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fn()
			}
		}
	}()
}

// watchStoreUsage keeps storeFull current: the store's size is read a few times a
// second rather than on every message. A size that cannot be read leaves storeFull as
// it was, with a log line when that starts.
func (b *Broker) watchStoreUsage(ctx context.Context, sz persistence.Sizer) {
	defer b.wg.Done()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	var failing bool
	for {
		used, err := sz.Size(ctx)
		if err != nil && ctx.Err() == nil && !failing {
			b.log.Error("cannot read the store's size for storeUsage", slog.Any("err", err))
		}
		failing = err != nil
		full := b.storeFull.Load()
		if err == nil {
			full = used >= b.storeUsage
		}
		if full != b.storeFull.Load() {
			b.storeFull.Store(full)
			if full {
				b.log.Warn("persistent store is full: persistent messages are refused until space is freed",
					slog.Int64("used", used), slog.Int64("storeUsage", b.storeUsage))
			} else {
				b.log.Info("persistent store has room again", slog.Int64("used", used), slog.Int64("storeUsage", b.storeUsage))
				b.space.Notify()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ErrStoreFull: a persistent message was refused because the store is over storeUsage.
var ErrStoreFull = errors.New("broker: persistent store is full")
