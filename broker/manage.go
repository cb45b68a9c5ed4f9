package broker

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/activemq-go/broker/broker/sharedmode"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/durable"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/security"
)

// The broker's management surface, what the admin listener (admin/) reads and asks for
// on an operator's behalf: the broker as a whole, its destinations with their counters,
// browsing, and the operations that change state. Each of those is atomic against the
// store: a purge acknowledges every message it removes in one store batch; a move or a
// copy writes the messages to their target and (for a move) deletes them from their
// source in one batch per chunk of at most moveChunk messages, so a crash halfway
// leaves each message in exactly one place. Each is logged (who, what, how many) and
// counted (ManagementStats). Lists never touch the store.
//
// Names are those of destinations (without /queue/ or /topic/) unless a
// destinations.Name is asked for; who names the operator for the log.

// Started is when the broker started.
func (b *Broker) Started() time.Time { return b.started }

// MessageTotals counts, since start, the messages clients sent that the broker
// accepted (in a transaction: when it recorded them), and the messages written to
// clients.
func (b *Broker) MessageTotals() (received, delivered int64) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	received, delivered = b.closedReceived, b.closedDelivered
	for c := range b.conns {
		received += c.received.Load()
		delivered += c.delivered.Load()
	}
	return received, delivered
}

// StoreUsage reports the room the store takes, if it can tell (persistence.Sizer), and
// systemUsage storeUsage (0: none).
func (b *Broker) StoreUsage(ctx context.Context) (used, limit int64) {
	if sz, ok := b.store.(persistence.Sizer); ok {
		used, _ = sz.Size(ctx)
	}
	return used, b.storeUsage
}

// ManagedDestination is one queue, topic or stream with its counters.
type ManagedDestination struct {
	DestinationStats
	Kind   destinations.Kind // Queue or Topic
	Stream bool
	// DLQ marks a dead-letter queue: one dead-lettered messages were sent to since
	// start, or named as the dead-letter strategies name them (ActiveMQ.DLQ, or with
	// the default prefixes ActiveMQ.DLQ.Queue. and ActiveMQ.DLQ.Topic.).
	DLQ bool
}

// ManagedDestinations lists the queues and topics (streams among them), by name;
// temporary destinations are left out.
func (b *Broker) ManagedDestinations() []ManagedDestination {
	b.mu.RLock()
	qs := make([]*destinations.QueueDest, 0, len(b.queues))
	for name, q := range b.queues {
		if b.temps[tempKey{false, name}] == nil {
			qs = append(qs, q)
		}
	}
	ts := make([]*destinations.TopicDest, 0, len(b.topics))
	for name, t := range b.topics {
		if b.temps[tempKey{true, name}] == nil {
			ts = append(ts, t)
		}
	}
	b.mu.RUnlock()
	out := make([]ManagedDestination, 0, len(qs)+len(ts))
	for _, q := range qs {
		out = append(out, ManagedDestination{DestinationStats: q.Stats(), Kind: destinations.Queue,
			DLQ: q.IsDLQ() || isDLQName(q.Name())})
	}
	for _, t := range ts {
		out = append(out, ManagedDestination{DestinationStats: t.Stats(), Kind: destinations.Topic, Stream: t.IsStream()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func isDLQName(name string) bool {
	return name == DLQName || strings.HasPrefix(name, DLQName+".")
}

// existingQueue returns the queue called name, or ErrNotFound; it never creates one.
func (b *Broker) existingQueue(name string) (*destinations.QueueDest, error) {
	b.mu.RLock()
	q := b.queues[name]
	temp := b.temps[tempKey{false, name}] != nil
	b.mu.RUnlock()
	if q == nil || temp {
		return nil, errorf(ErrNotFound, "no queue named %s", name)
	}
	return q, nil
}

// BrowseQueue returns up to limit messages waiting on a queue, in dispatch order,
// after the one with id after ("" from the head), and the id to pass for the next page
// ("" at the end).
func (b *Broker) BrowseQueue(ctx context.Context, name, after string, limit int) ([]*persistence.Message, string, error) {
	q, err := b.existingQueue(name)
	if err != nil {
		return nil, "", err
	}
	if limit <= 0 {
		limit = DefaultBrowsePageSize
	}
	msgs, next, err := q.BrowsePage(ctx, after, limit)
	if errors.Is(err, destinations.ErrNoCursor) {
		return nil, "", errorf(ErrNoCursor, "message %s is no longer waiting on %s: browse again from the head", after, q.ClientName())
	}
	return msgs, next, err
}

// QueueMessage returns a waiting message of a queue by id.
func (b *Broker) QueueMessage(ctx context.Context, name, id string) (*persistence.Message, error) {
	q, err := b.existingQueue(name)
	if err != nil {
		return nil, err
	}
	m, err := q.Find(ctx, id)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errorf(ErrNotFound, "no message %s waiting on %s", id, q.ClientName())
	}
	return m, nil
}

// DeleteMessage removes a waiting message of a queue by id.
func (b *Broker) DeleteMessage(ctx context.Context, who, name, id string) error {
	q, err := b.existingQueue(name)
	if err != nil {
		return err
	}
	n, err := b.removeWaiting(ctx, q, destinations.ClaimOptions{Max: 1, Match: func(m *persistence.Message) bool { return m.ID == id }})
	if err != nil {
		return err
	}
	if n == 0 {
		return errorf(ErrNotFound, "no message %s waiting on %s", id, q.ClientName())
	}
	b.managed(who, "delete-message", q.ClientName(), 1, slog.String("id", id))
	return nil
}

// PurgeQueue removes every message waiting on a queue, in one store batch: after a
// crash the queue holds all of them or none. Messages dispatched and not yet
// acknowledged stay with their consumers, as in ActiveMQ.
func (b *Broker) PurgeQueue(ctx context.Context, who, name string) (int, error) {
	q, err := b.existingQueue(name)
	if err != nil {
		return 0, err
	}
	b.log.Info("purge started", slog.String("dest", q.ClientName()), slog.String("by", who))
	n, err := b.removeWaiting(ctx, q, destinations.ClaimOptions{Below: q.NextSeq()})
	if err != nil {
		return 0, err
	}
	b.managed(who, "purge", q.ClientName(), n)
	return n, nil
}

// removeWaiting claims the waiting messages of q that o selects and deletes them in
// one store batch; it returns how many.
func (b *Broker) removeWaiting(ctx context.Context, q *destinations.QueueDest, o destinations.ClaimOptions) (int, error) {
	c, err := q.Claim(ctx, o)
	if err != nil {
		return 0, storeOrCtx(err)
	}
	batch := b.store.Begin()
	c.Ack(batch)
	if batch.Len() == 0 {
		batch.Rollback()
		c.Finish(nil)
		return c.Len(), nil
	}
	// Once started the commit goes through, whatever the caller's context.
	err = batch.Commit(context.WithoutCancel(ctx), persistence.Sync)
	c.Finish(err)
	if err != nil {
		return 0, storeError(err)
	}
	return c.Len(), nil
}

func storeOrCtx(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, destinations.ErrRemoved) {
		return errorf(ErrNotFound, "the queue was removed")
	}
	var be *Error
	if errors.As(err, &be) {
		return err
	}
	return storeError(err)
}

// SendAs sends a message to dest as a client connected as sub would (authorization and
// populateJMSXUserID apply); a nil sub is the anonymous user the broker gives a client
// that sends no credentials. It returns the message id once the message is as durable
// as the store makes it. A SEND held by producer flow control waits as a client's does,
// at most until ctx ends.
func (b *Broker) SendAs(ctx context.Context, sub *security.Subject, who string, dest destinations.Name, m *persistence.Message) (string, error) {
	c, err := b.connectInternal(ctx, sub, who)
	if err != nil {
		return "", err
	}
	defer c.Close()
	done := make(chan error, 1)
	var deadline <-chan time.Time
	if w := b.noSpaceWait; w > 0 {
		t := time.NewTimer(w)
		defer t.Stop()
		deadline = t.C
	}
	for {
		err = c.Send(ctx, []destinations.Name{dest}, m, "", func(err error) { done <- err })
		var be *Error
		if err == nil || !errors.As(err, &be) || be.Retry == nil || b.noSpaceWait == 0 {
			break
		}
		select {
		case <-be.Retry:
		case <-deadline:
			return "", err
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if err != nil {
		return "", err
	}
	select {
	case err = <-done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if err != nil {
		return "", err
	}
	b.managed(who, "send", dest.String(), 1, slog.String("id", m.ID))
	return m.ID, nil
}

// connectInternal connects the broker's own client acting as sub (or, for nil, as a
// client without credentials): never listed among the connections.
func (b *Broker) connectInternal(ctx context.Context, sub *security.Subject, who string) (*Conn, error) {
	if sub == nil {
		var err error
		if sub, err = b.authenticate(ctx, ConnectInfo{RemoteAddr: who}); err != nil {
			return nil, err
		}
	}
	c := &Conn{
		subject: sub, b: b,
		ID:          b.idBase + "c" + strconv.FormatUint(b.connSeq.Add(1), 10),
		RemoteAddr:  who,
		wake:        make(chan struct{}, 1),
		subs:        map[string]*Subscription{},
		byTag:       map[uint64]*Delivery{},
		txs:         map[string]*txState{},
		kicked:      make(chan struct{}),
		gone:        make(chan struct{}),
		connector:   "admin",
		internal:    true,
		connectedAt: time.Now(),
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, &Error{Message: "broker is shutting down", Fatal: true, Err: ErrClosed}
	}
	if err := b.admitUserLocked(sub); err != nil {
		return nil, err
	}
	b.conns[c] = struct{}{}
	return c, nil
}

// RemoveDestination deletes a queue or a topic. A queue's messages are deleted from the
// store in one batch; one with consumers, and a topic with subscribers or durable
// subscriptions, is refused (ErrDestinationInUse), as ActiveMQ refuses to remove a
// destination with an active subscription. A destination of the same name used again
// later is a new one.
func (b *Broker) RemoveDestination(ctx context.Context, who string, d destinations.Name) error {
	switch d.Kind {
	case destinations.Queue:
		return b.removeQueue(ctx, who, d.Name)
	case destinations.Topic:
		b.mu.Lock()
		t := b.topics[d.Name]
		if t == nil || b.temps[tempKey{true, d.Name}] != nil {
			b.mu.Unlock()
			return errorf(ErrNotFound, "no topic named %s", d.Name)
		}
		if err := t.Retire(); err != nil {
			b.mu.Unlock()
			return err
		}
		b.dropTopicLocked(d.Name)
		b.removals.Add(1)
		b.adviseRemovedLocked(destinations.Name{Kind: destinations.Topic, Name: d.Name})
		b.seqFloor.Store(max(b.seqFloor.Load(), t.Seq()+1))
		b.mu.Unlock()
		b.managed(who, "remove-destination", t.ClientName(), 0)
		return nil
	}
	return errorf(ErrInvalidDestination, "only a queue or a topic can be removed: %s", d)
}

func (b *Broker) removeQueue(ctx context.Context, who, name string) error {
	b.mu.Lock()
	q := b.queues[name]
	if q == nil || b.temps[tempKey{false, name}] != nil {
		b.mu.Unlock()
		return errorf(ErrNotFound, "no queue named %s", name)
	}
	if err := q.Retire(); err != nil {
		b.mu.Unlock()
		return err
	}
	delete(b.queues, name)
	b.unregisterVirtual(q)
	b.removals.Add(1)
	b.adviseRemovedLocked(destinations.Name{Kind: destinations.Queue, Name: name})
	floor := q.NextSeq()
	b.seqFloor.Store(max(b.seqFloor.Load(), floor))
	b.mu.Unlock()
	// A queue of the same name made from now on stores its messages under the same
	// name with sequences from floor up: the old messages are acknowledged one by one
	// below floor, in one batch, rather than purged by name.
	if err := q.Drain(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	batch := b.store.Begin()
	n := 0
	err := b.store.Scan(ctx, q.Qualified(), 0, 0, func(m *persistence.Message) error {
		if m.Seq >= floor {
			return errStopScan
		}
		batch.Ack(m.Dest, m.Seq)
		n++
		return nil
	})
	if err != nil && !errors.Is(err, errStopScan) {
		batch.Rollback()
		return storeError(err)
	}
	b.mu.RLock()
	again := b.queues[name] != nil
	b.mu.RUnlock()
	if !again && q.MarkerWritten() {
		batch.Purge(q.MarkerDest())
	}
	if batch.Len() > 0 {
		if err := batch.Commit(context.WithoutCancel(ctx), persistence.Sync); err != nil {
			return storeError(err)
		}
	} else {
		batch.Rollback()
	}
	b.managed(who, "remove-destination", q.ClientName(), n)
	return nil
}

// ConnectionInfo describes one client connection.
type ConnectionInfo struct {
	ID, ClientID, User, RemoteAddr string
	Connector, Version             string
	ConnectedAt                    time.Time
	Subscriptions                  int
	Received, Delivered            int64
}

// Connections lists the client connections, oldest first.
func (b *Broker) Connections() []ConnectionInfo {
	b.mu.RLock()
	out := make([]ConnectionInfo, 0, len(b.conns))
	for c := range b.conns {
		if c.internal {
			continue
		}
		out = append(out, ConnectionInfo{
			ID: c.ID, ClientID: c.ClientID, User: c.subject.User, RemoteAddr: c.RemoteAddr,
			Connector: c.connector, Version: c.version, ConnectedAt: c.connectedAt,
			Subscriptions: int(c.nsubs.Load()), Received: c.received.Load(), Delivered: c.delivered.Load(),
		})
	}
	b.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].ConnectedAt.Equal(out[j].ConnectedAt) {
			return out[i].ConnectedAt.Before(out[j].ConnectedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// CloseConnection closes a client connection: the client gets an ERROR saying reason,
// as a connection taken over by link stealing does. It returns once the connection is
// gone, or after a few seconds (it goes once its transport notices).
func (b *Broker) CloseConnection(ctx context.Context, who, id, reason string) error {
	b.mu.RLock()
	var c *Conn
	for x := range b.conns {
		if x.ID == id && !x.internal {
			c = x
			break
		}
	}
	b.mu.RUnlock()
	if c == nil {
		return errorf(ErrNotFound, "no connection %s", id)
	}
	if reason == "" {
		reason = "closed by an administrator"
	}
	c.kick(reason)
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-c.gone:
	case <-t.C:
	case <-ctx.Done():
	}
	b.managed(who, "close-connection", id, 1, slog.String("remote", c.RemoteAddr), slog.String("reason", reason))
	return nil
}

// RemoveDurableSubscription deletes a durable subscription and what it held; one with a
// consumer attached is refused (ErrDurableInUse), as ActiveMQ refuses it.
func (b *Broker) RemoveDurableSubscription(ctx context.Context, who, clientID, name string) error {
	key := persistence.SubKey{ClientID: clientID, Name: name}
	var err error
	if b.shared != nil {
		err = b.shared.Delete(ctx, key, func(*destinations.Consumer) error { return sharedmode.ErrInUse })
	} else {
		err = b.durables.Delete(ctx, key, func() {}, func(*destinations.Consumer) error { return durable.ErrInUse })
	}
	switch {
	case errors.Is(err, durable.ErrNotFound), errors.Is(err, sharedmode.ErrNotFound):
		return errorf(ErrNotFound, "no durable subscription %s of client %s", name, clientID)
	case errors.Is(err, durable.ErrInUse), errors.Is(err, sharedmode.ErrInUse):
		return errorf(ErrDurableInUse, "durable subscription %s of client %s has a consumer attached: it must disconnect first", name, clientID)
	case err != nil:
		return storeError(err)
	}
	b.managed(who, "remove-durable", clientID+":"+name, 1)
	return nil
}

// StreamInfo describes a stream: its partitions and its consumer groups.
type StreamInfo struct {
	Name       string // as clients name it
	Partitions []StreamPartitionStats
	Groups     []StreamGroupStats
}

// StreamGroupStats is a consumer group's position in a stream.
type StreamGroupStats = destinations.StreamGroupStats

// StreamInfo describes the stream topic called name.
func (b *Broker) StreamInfo(name string) (StreamInfo, error) {
	b.mu.RLock()
	t := b.topics[name]
	b.mu.RUnlock()
	if t == nil || !t.IsStream() {
		return StreamInfo{}, errorf(ErrNotFound, "no stream named %s", name)
	}
	st, err := t.Stream()
	if err != nil {
		return StreamInfo{}, err
	}
	return StreamInfo{Name: t.ClientName(), Partitions: st.Partitions(), Groups: st.Groups()}, nil
}

// ManagementStats counts the operators' requests that changed state since start, per
// operation ("purge", "move", "copy", "delete-message", "send", "remove-destination",
// "close-connection", "remove-durable"): Operations how many were done, Messages the
// messages they removed, moved, copied or sent, Failed how many failed.
type ManagementStats struct {
	Operations map[string]int64
	Messages   map[string]int64
	Failed     map[string]int64
}

type mgmtStats struct {
	mu                   sync.Mutex
	ops, messages, fails map[string]int64
}

// ManagementStats returns the counts of operators' requests.
func (b *Broker) ManagementStats() ManagementStats {
	b.mgmt.mu.Lock()
	defer b.mgmt.mu.Unlock()
	return ManagementStats{Operations: cloneCounts(b.mgmt.ops), Messages: cloneCounts(b.mgmt.messages), Failed: cloneCounts(b.mgmt.fails)}
}

func cloneCounts(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// managed logs and counts a management operation that succeeded.
func (b *Broker) managed(who, op, dest string, n int, attrs ...any) {
	b.mgmt.mu.Lock()
	if b.mgmt.ops == nil {
		b.mgmt.ops, b.mgmt.messages, b.mgmt.fails = map[string]int64{}, map[string]int64{}, map[string]int64{}
	}
	b.mgmt.ops[op]++
	b.mgmt.messages[op] += int64(n)
	b.mgmt.mu.Unlock()
	b.log.Info("management operation", append([]any{slog.String("op", op), slog.String("by", who),
		slog.String("dest", dest), slog.Int("messages", n)}, attrs...)...)
}

// managedFailed logs and counts a bulk operation that failed after n messages.
func (b *Broker) managedFailed(who, op, dest string, n int, err error) {
	b.mgmt.mu.Lock()
	if b.mgmt.fails == nil {
		b.mgmt.ops, b.mgmt.messages, b.mgmt.fails = map[string]int64{}, map[string]int64{}, map[string]int64{}
	}
	b.mgmt.fails[op]++
	b.mgmt.messages[op] += int64(n)
	b.mgmt.mu.Unlock()
	b.log.Warn("management operation failed", slog.String("op", op), slog.String("by", who),
		slog.String("dest", dest), slog.Int("messages", n), slog.Any("err", err))
}

// errStopScan ends a store scan early.
var errStopScan = errors.New("stop scan")
