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
// then the destination registry's lock (package broker/registry; it took the place of
// broker.mu), then the advisories' mu (package broker/advisory), then a destination's
// lock (for a topic, its publish lock before a durable subscription's mu and its view's
// mu: see the durable package), then a consumer's mu (destinations.Consumer, its topic
// overflow), then conn.mu. A topic's stream lock (destinations.TopicDest's streamMu) is
// taken before the registry's. durable.Registry's mu guards only its map of
// subscriptions and nothing is taken while it is held; nor while the connections' mu
// (conns.go) is.
//
// Streams (destinations/stream.go) have goroutines of their own: an appender per
// partition, which writes what producers queued and calls their done callbacks, a
// reader per partition a subscription reads, which pushes Deliveries like a dispatch
// does, and one per partition a group member is handing over, which waits for its
// messages to be settled (destinations/streamgroup.go).
package broker

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/broker/access"
	"github.com/activemq-go/broker/broker/ackretry"
	"github.com/activemq-go/broker/broker/advisory"
	"github.com/activemq-go/broker/broker/conns"
	"github.com/activemq-go/broker/broker/dedup"
	"github.com/activemq-go/broker/broker/flowcontrol"
	"github.com/activemq-go/broker/broker/limits"
	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/broker/registry"
	"github.com/activemq-go/broker/broker/scheduler"
	"github.com/activemq-go/broker/broker/sharedmode"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/destinations/streamlog"
	"github.com/activemq-go/broker/durable"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/security"
)

// DLQName is ActiveMQ's shared dead-letter queue.
const DLQName = policy.SharedDLQ

// DefaultMaxDestinations is Options.MaxDestinations' default.
const DefaultMaxDestinations = limits.DefaultMaxDestinations

// DefaultDestinationGCPeriod is Options.DestinationGCPeriod's default.
const DefaultDestinationGCPeriod = registry.DefaultDestinationGCPeriod

// VirtualTopics configures virtual topics (see package broker/registry).
type VirtualTopics = registry.VirtualTopics

// DefaultVirtualTopics is ActiveMQ's default virtual topic naming.
func DefaultVirtualTopics() VirtualTopics { return registry.DefaultVirtualTopics() }

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
	// MaxTemporaryDestinationsPerConnection bounds the temporary destinations one
	// connection may have at once; default
	// limits.DefaultMaxTemporaryDestinationsPerConnection.
	MaxTemporaryDestinationsPerConnection int
	// MaxDestinations bounds the queues and topics clients' SENDs and SUBSCRIBEs may
	// create; default DefaultMaxDestinations. See package broker/registry.
	MaxDestinations int
	// DestinationGCPeriod is how often destinations are checked against their policy's
	// GCInactiveDestinations and InactiveTimeoutBeforeGC: 0 for
	// DefaultDestinationGCPeriod, negative never.
	DestinationGCPeriod time.Duration
	// NoSpaceWait is how long a SEND that finds no room under MemoryUsage, a queue's
	// memory limit or StoreUsage is held before it is refused: 0 (default) not at all,
	// negative until there is room (producer flow control; see package
	// broker/flowcontrol).
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
	// ClientIDOwnership gives the client-id of durable subscriptions to the user that
	// made them, when Security authenticates (see clientid.go).
	ClientIDOwnership bool
	// AdvisorySupport publishes ActiveMQ's advisory messages on the ActiveMQ.Advisory.
	// topics (see package broker/advisory); off, those are topics like others that nothing is
	// published on.
	AdvisorySupport bool
	// Shared, when set, serves queues from a database several broker nodes share
	// (persistenceAdapter.jdbc.mode: shared; see package broker/sharedmode): Store
	// then keeps only what is not shared.
	Shared sharedmode.Engine
}

// Broker routes messages between connections and keeps them in its store. Each idea it
// holds is a type of its own, in the file (or package) of that idea.
type Broker struct {
	ids      ids // its name and the ids it hands out
	store    persistence.Store
	log      *slog.Logger
	env      destinations.Env       // what destinations are made with
	dests    *registry.Destinations // the queues and topics (package broker/registry)
	conns    *conns.Registry[*Conn] // the live connections (package broker/conns)
	quotas   quotas                 // what connections may hold (limits.go)
	shares   shares                 // what each user's connections hold (quota.go)
	policies policies               // each destination's policy (policy.go)
	flow     *flowcontrol.Control   // memory, store usage, producer flow control
	access   access.Control         // authentication and authorization (broker/access, security.go)
	durables *durable.Registry
	streams  *destinations.Streams // nil without streams
	// shared is this node's side of shared mode (package broker/sharedmode; nil:
	// every queue is local).
	shared *sharedmode.Node
	sched  *scheduler.Scheduler
	acks   *ackretry.Retrier    // failed auto-ack store writes, written again
	adv    *advisory.Advisories // nil without advisorySupport
	dedup  *dedup.Detector      // duplicate detection (package broker/dedup)
	// mgmt is the management surface (management.go), counters what it reads of the
	// broker's doings.
	mgmt     *management.Manager
	counters management.Meter
	bg       background // its goroutines, and its closing
	// expirySweeps counts the passes of the expiry sweeper, for tests.
	expirySweeps atomic.Int64

	// ownership is Options.ClientIDOwnership (clientid.go).
	ownership bool
}

// ids are the broker's name and the ids it hands out: message ids unique across
// restarts (the boot time is part of them) and connection ids.
type ids struct {
	name        string
	base        string // "ID:<name>-<boot ms>-"
	msgs, conns atomic.Uint64
}

// newMessageID returns a new message id.
func (i *ids) newMessageID() string {
	n := i.msgs.Add(1)
	var arr [128]byte // the string is then the only allocation
	buf := append(arr[:0], i.base...)
	buf = strconv.AppendUint(buf, n, 10)
	return string(buf)
}

// newConnID returns a new connection id.
func (i *ids) newConnID() string { return i.base + "c" + strconv.FormatUint(i.conns.Add(1), 10) }

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
	if o.MemoryUsage <= 0 {
		o.MemoryUsage = limits.DefaultMemoryUsage
	}
	b := &Broker{
		ids:      ids{name: o.Name, base: "ID:" + o.Name + "-" + strconv.FormatInt(time.Now().UnixMilli(), 10) + "-"},
		store:    o.Store,
		log:      o.Logger,
		conns:    conns.New(o.LinkStealing, describe),
		quotas:   newQuotas(o),
		policies: newPolicies(o),
		access: access.Control{Service: o.Security, PopulateUserID: o.PopulateJMSXUserID,
			PrincipalUserID: o.UseAuthenticatedPrincipalForJMSXUserID},
		bg: background{done: make(chan struct{})},
	}
	b.ownership = o.ClientIDOwnership
	b.counters.Init(o.Store)
	b.access.Log, b.access.Meter = b.log, &b.counters
	b.acks = ackretry.New(b.store, b.log, &b.bg.wg)
	if o.Streams != nil {
		b.streams = destinations.NewStreams(o.Streams, b.log)
	}
	b.env = destinations.Env{
		Store: b.store, Log: b.log, Policy: b.policies.For,
		Background: &b.bg.wg, Commit: b.commit, Stopping: b.bg.stopping.Load, Done: b.bg.done,
		Streams: b.streams, Counters: &b.counters.Dests,
	}
	var share func(*destinations.QueueDest)
	if o.Shared != nil {
		b.shared = sharedmode.New(sharedmode.Config{Engine: o.Shared, Host: shHost{b}, Env: &b.env, Log: b.log})
		share = b.shared.Share
	}
	b.dests = registry.New(registry.Config{Env: &b.env, Host: regHost{b}, Virtual: o.VirtualTopics,
		MaxDestinations: o.MaxDestinations, Share: share})
	b.env.DeadLetter = b.dests.DeadLetter
	b.flow = flowcontrol.New(flowcontrol.Config{Host: b.dests, Policy: b.policies.For, Log: b.log,
		MemoryUsage: o.MemoryUsage, StoreUsage: o.StoreUsage, NoSpaceWait: o.NoSpaceWait})
	b.env.Memory, b.env.Space = b.flow.Memory(), b.flow.Space()
	if o.AdvisorySupport {
		b.adv = newAdvisories(b)
		b.env.Advise = b.adv
	}
	b.durables = durable.NewRegistry(&b.env, b.quotas.durables)
	b.dedup = dedup.New(b.store, dedupHost{b}, b.log)
	b.durables.OnRemove = b.dedup.DropSub
	if o.Scheduler {
		b.sched = scheduler.New(scheduler.Config{Store: b.store, Host: schedHost{b}, Log: b.log,
			Memory: b.flow.Memory(), Space: b.flow.Space(), MemoryLimit: o.SchedulerMemoryLimit})
	}
	b.mgmt = newManagement(b)
	if err := b.recover(ctx); err != nil {
		b.closeStreams()
		return nil, err
	}
	b.dests.WarnOverLimit()
	if b.sched != nil {
		if err := b.sched.Recover(ctx); err != nil {
			return nil, fmt.Errorf("broker: recover scheduled messages: %w", err)
		}
	}
	if b.streams != nil {
		if err := b.dests.OpenKnownStreams(); err != nil {
			b.closeStreams()
			return nil, err
		}
	}
	b.start(o)
	return b, nil
}

// start starts the broker's background work: the sweepers, the collector of inactive
// destinations, the watch of the store's size, shared mode.
func (b *Broker) start(o Options) {
	if o.ExpirySweep == 0 {
		o.ExpirySweep = 30 * time.Second
	}
	sctx := b.bg.context()
	if o.ExpirySweep > 0 {
		b.bg.every(o.ExpirySweep, b.sweepExpired)
	}
	if o.DurableSweep <= 0 {
		o.DurableSweep = 5 * time.Minute
	}
	b.bg.every(o.DurableSweep, func() { b.durables.ExpireOffline(sctx) })
	if o.DestinationGCPeriod == 0 {
		o.DestinationGCPeriod = DefaultDestinationGCPeriod
	}
	if o.DestinationGCPeriod > 0 {
		b.bg.every(o.DestinationGCPeriod, func() { b.dests.Collect(sctx, time.Now()) })
	}
	b.flow.WatchStore(sctx, b.store, &b.bg.wg)
	if b.shared != nil {
		b.shared.Start()
	}
}

func (b *Broker) recover(ctx context.Context) error {
	rec, err := b.store.Recover(ctx)
	if err != nil {
		return fmt.Errorf("broker: recover store: %w", err)
	}
	var msgs int64
	for _, d := range rec.Destinations {
		if strings.HasPrefix(d.Name, persistence.TopicPrefix) {
			b.dests.Topic(d.Name[len(persistence.TopicPrefix):]).RecoverSeq(d.LastSeq)
			continue
		}
		if !strings.HasPrefix(d.Name, persistence.QueuePrefix) {
			continue // topics, and the scheduler's jobs (recovered by the scheduler)
		}
		// Stored messages stay in the store until a consumer needs them: they are read
		// in pages, so start-up does not depend on how deep the queues are.
		b.dests.Queue(d.Name[len(persistence.QueuePrefix):]).RecoverStored(d.LastSeq, d.Msgs)
		msgs += d.Msgs
	}
	if err := b.durables.Recover(ctx, rec, b.dests.Topic); err != nil {
		return err
	}
	if err := b.durables.RecoverMarkers(ctx, rec.Destinations, b.dests.FindQueue); err != nil {
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
func (b *Broker) Name() string { return b.ids.name }

// newMessageID returns an id unique across restarts: the boot time is part of it.
func (b *Broker) newMessageID() string { return b.ids.newMessageID() }

// DestinationStats is a snapshot of one destination's counters.
type DestinationStats = destinations.Stats

// QueueStats returns the stats of one queue, and whether it exists.
func (b *Broker) QueueStats(name string) (DestinationStats, bool) {
	q := b.dests.FindQueue(name)
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
	open, closed := b.conns.Close()
	if closed {
		return nil
	}
	b.bg.stopping.Store(true)
	close(b.bg.done)
	if open > 0 {
		b.log.Warn("broker closing with connections still open", slog.Int("connections", open))
	}
	b.bg.stop()
	if b.sched != nil {
		b.sched.Close()
	}
	b.closeStreams()
	if b.shared != nil {
		b.shared.Shutdown()
	}
	b.acks.Stop()
	b.bg.wg.Wait()
	b.acks.Flush()
	return b.store.Close()
}

// background is the broker's goroutines, which Close waits for, and its closing.
type background struct {
	wg       sync.WaitGroup // sweepers, page-ins, retries...
	done     chan struct{}  // closed by Close
	stopping atomic.Bool    // set when Close starts: background retries end
	ctx      context.Context
	cancel   context.CancelFunc // ends the sweepers
}

// context returns the context of the sweepers, which stop ends.
func (g *background) context() context.Context {
	if g.ctx == nil {
		g.ctx, g.cancel = context.WithCancel(context.Background())
	}
	return g.ctx
}

// stop ends the sweepers.
func (g *background) stop() {
	if g.cancel != nil {
		g.cancel()
	}
}

// every runs fn every period, in a goroutine of its own that Close waits for, until
// stop: the expiry sweeper, the offline durable subscriptions' sweeper, the
// destination collector.
func (g *background) every(period time.Duration, fn func()) {
	ctx := g.context()
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
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

// ErrStoreFull: a persistent message was refused because the store is over storeUsage.
var ErrStoreFull = flowcontrol.ErrStoreFull
