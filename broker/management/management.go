// Package management is the broker's management surface: what the admin listener
// (admin/) and the metrics (admin/metrics) read and ask for on an operator's behalf.
// It lists the broker's destinations with their counters, browses queues, and does
// the operations that change state: delete a message, purge, move, copy and retry
// (move.go), send, remove a destination or a durable subscription, close a
// connection. It also holds the broker's counters (Meter; counters.go), which the
// broker bumps as things happen and the exporters read at scrape time.
//
// Each operation is atomic against the store: a purge acknowledges every message it
// removes in one store batch; a move or a copy writes the messages to their target and
// (for a move) deletes them from their source in one batch per chunk of at most
// moveChunk messages, so a crash halfway leaves each message in exactly one place.
// Each is logged (who, what, how many) and counted (Stats). Lists never touch the
// store.
//
// Names are those of destinations (without /queue/ or /topic/) unless a
// destinations.Name is asked for; who names the operator for the log. Errors are
// *destinations.Error values whose Err is a sentinel (ErrNotFound, ErrInvalidSelector
// here; the destinations package's others).
//
// The broker keeps one Manager (New) and exposes it; the Manager reaches what only
// the broker holds through Host (its destinations by name, its connections, routing a
// message into a store batch, a client's send, removing a durable subscription) and
// imports nothing of the broker.
package management

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/durable"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/security"
)

var (
	// ErrNotFound: a request names a destination, message, connection, durable
	// subscription or stream that does not exist.
	ErrNotFound = errors.New("broker: not found")
	// ErrInvalidSelector: a request's selector does not parse.
	ErrInvalidSelector = errors.New("broker: invalid selector")
)

func errorf(sentinel error, format string, args ...any) *destinations.Error {
	return &destinations.Error{Message: fmt.Sprintf(format, args...), Err: sentinel}
}

// Host is what the management surface asks of the broker it runs in: what only the
// broker holds or does.
type Host interface {
	// Find is the queue or the topic d names (Kind Queue or Topic), nil for both when
	// there is none or it is temporary: temporary destinations are not managed.
	Find(d destinations.Name) (*destinations.QueueDest, *destinations.TopicDest)
	// Destinations lists every queue and topic, temporary ones included.
	Destinations() []Dest
	// Policy is the policy of a destination (a topic whose Stream is set is a stream).
	Policy(kind destinations.Kind, name string) policy.Policy
	// Duplicates counts what duplicate detection dropped on d.
	Duplicates(d destinations.Name) int64
	// Detach takes the queue or topic d out of the broker as ActiveMQ removes a
	// destination: one with consumers or subscriptions is refused
	// (destinations.ErrInUse). A queue's messages stay in the store: the caller
	// deletes them. A destination of the same name used later is a new one.
	Detach(d destinations.Name) (*destinations.QueueDest, *destinations.TopicDest, error)
	// NewMessageID is a new message id of the broker.
	NewMessageID() string
	// Accept adds m to d (a topic's virtual-topic queues too, each its own copy) as
	// part of batch, which the caller commits and then settles entries with (those
	// added before an error too); publish, when not nil, hands m to a topic's live
	// subscribers once the batch is durable.
	Accept(batch persistence.Batch, d destinations.Name, m *persistence.Message) (entries []destinations.Accepted, publish func(), err error)
	// Send sends m to dest as a client connected as sub would (nil sub: a client
	// without credentials), and returns once m is as durable as the store makes it.
	Send(ctx context.Context, sub *security.Subject, who string, dest destinations.Name, m *persistence.Message) error
	// Connections lists the clients' connections, in no particular order.
	Connections() []ConnectionInfo
	// Kick closes the client connection id: the client is told reason. It returns the
	// connection's remote address once it is gone, or after a few seconds.
	Kick(ctx context.Context, id, reason string) (remote string, err error)
	// Traffic is what the connections did since start.
	Traffic() Traffic
	// RemoveDurable deletes a durable subscription and what it held; one with a
	// consumer attached is refused with durable.ErrInUse, one that does not exist
	// with durable.ErrNotFound.
	RemoveDurable(ctx context.Context, key persistence.SubKey) error
	// DurableSubscriptions lists every durable subscription.
	DurableSubscriptions() []durable.Stats
}

// Dest is one queue (Q) or topic (T) of the broker. A temporary one's Name is its
// broker-wide name ("<connection id>:NAME").
type Dest struct {
	Name string
	Temp bool
	Q    *destinations.QueueDest
	T    *destinations.TopicDest
}

// Traffic is what the connections did: those open now by protocol (the broker's own
// included), those with a SEND held by producer flow control, and the messages
// clients sent that the broker accepted (in a transaction: when it recorded them) and
// the messages written to clients since start.
type Traffic struct {
	Open                [NumProtocols]int64
	Blocked             int64
	Received, Delivered int64
}

// Scheduler is the memory use of scheduled messages, when scheduling is on.
type Scheduler interface {
	Memory() (used, limit int64)
	MemoryLimit() int64
}

// Config configures a Manager.
type Config struct {
	Host  Host
	Store persistence.Store
	Log   *slog.Logger
	// Meter holds the broker's counters (Init'ed by the broker).
	Meter *Meter
	// Memory is the broker's memory accounting, StoreUsage its systemUsage
	// storeUsage (0: none) and StoreFull whether the store is over it.
	Memory     *destinations.Usage
	StoreUsage int64
	StoreFull  *atomic.Bool
	// Durables are the durable subscriptions (Subscriptions counts them).
	Durables *durable.Registry
	// Scheduler is nil when scheduling is off.
	Scheduler Scheduler
	// ProducerMayWrite tells whether user may write d now: a retry sends a message
	// back to its original destination only if its producer (JMSXUserID) may. nil
	// without an authorization map.
	ProducerMayWrite func(user string, d destinations.Name) bool
}

// Manager is the broker's management surface.
type Manager struct {
	c Config

	mu                   sync.Mutex
	ops, messages, fails map[string]int64
}

// New returns the management surface of the broker that Config's Host is.
func New(c Config) *Manager {
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return &Manager{c: c, ops: map[string]int64{}, messages: map[string]int64{}, fails: map[string]int64{}}
}

// Started is when the broker started.
func (m *Manager) Started() time.Time { return m.c.Meter.started }

// MessageTotals counts, since start, the messages clients sent that the broker
// accepted (in a transaction: when it recorded them), and the messages written to
// clients.
func (m *Manager) MessageTotals() (received, delivered int64) {
	t := m.c.Host.Traffic()
	return t.Received, t.Delivered
}

// StoreUsage reports the room the store takes, if it can tell (persistence.Sizer), and
// systemUsage storeUsage (0: none).
func (m *Manager) StoreUsage(ctx context.Context) (used, limit int64) {
	if sz, ok := m.c.Store.(persistence.Sizer); ok {
		used, _ = sz.Size(ctx)
	}
	return used, m.c.StoreUsage
}

// MemoryUsage reports the bytes of messages held in memory and the broker-wide limit.
func (m *Manager) MemoryUsage() (used, limit int64) { return m.c.Memory.Used() }

// ConnectionInfo describes one client connection.
type ConnectionInfo struct {
	ID, ClientID, User, RemoteAddr string
	Protocol                       Protocol
	Connector, Version             string // Version: the protocol's version agreed
	ConnectedAt                    time.Time
	Subscriptions                  int
	Received, Delivered            int64
}

// Connections lists the client connections, oldest first.
func (m *Manager) Connections() []ConnectionInfo {
	out := m.c.Host.Connections()
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
func (m *Manager) CloseConnection(ctx context.Context, who, id, reason string) error {
	if reason == "" {
		reason = "closed by an administrator"
	}
	remote, err := m.c.Host.Kick(ctx, id, reason)
	if err != nil {
		return err
	}
	m.Done(who, "close-connection", id, 1, slog.String("remote", remote), slog.String("reason", reason))
	return nil
}

// SendAs sends a message to dest as a client connected as sub would (authorization and
// populateJMSXUserID apply); a nil sub is the anonymous user the broker gives a client
// that sends no credentials. It returns the message id once the message is as durable
// as the store makes it. A SEND held by producer flow control waits as a client's does,
// at most until ctx ends.
func (m *Manager) SendAs(ctx context.Context, sub *security.Subject, who string, dest destinations.Name, msg *persistence.Message) (string, error) {
	if err := m.c.Host.Send(ctx, sub, who, dest, msg); err != nil {
		return "", err
	}
	m.Done(who, "send", dest.String(), 1, slog.String("id", msg.ID))
	return msg.ID, nil
}

// DurableSubscriptions lists every durable subscription with its backlog and age.
func (m *Manager) DurableSubscriptions() []durable.Stats { return m.c.Host.DurableSubscriptions() }

// RemoveDurableSubscription deletes a durable subscription and what it held; one with a
// consumer attached is refused (durable.ErrInUse), as ActiveMQ refuses it.
func (m *Manager) RemoveDurableSubscription(ctx context.Context, who, clientID, name string) error {
	err := m.c.Host.RemoveDurable(ctx, persistence.SubKey{ClientID: clientID, Name: name})
	switch {
	case errors.Is(err, durable.ErrNotFound):
		return errorf(ErrNotFound, "no durable subscription %s of client %s", name, clientID)
	case errors.Is(err, durable.ErrInUse):
		return errorf(durable.ErrInUse, "durable subscription %s of client %s has a consumer attached: it must disconnect first", name, clientID)
	case err != nil:
		return destinations.StoreError(err)
	}
	m.Done(who, "remove-durable", clientID+":"+name, 1)
	return nil
}

// ClientIDOwners lists the owned client-ids and their users (durable/owner.go).
func (m *Manager) ClientIDOwners() []durable.Owned { return m.c.Durables.Owners() }

// FreeClientID frees the client-id id: no user owns it until one claims it again (its
// durable subscriptions stay). It fails with ErrNotFound when no one owns it.
func (m *Manager) FreeClientID(ctx context.Context, who, id string) error {
	user, err := m.c.Durables.Free(ctx, id)
	switch {
	case errors.Is(err, durable.ErrNotFound):
		return errorf(ErrNotFound, "client-id %s has no owner", id)
	case err != nil:
		return destinations.StoreError(err)
	}
	m.Done(who, "free-client-id", id, 0, slog.String("owner", user))
	return nil
}

// StreamInfo describes a stream: its partitions and its consumer groups.
type StreamInfo struct {
	Name       string // as clients name it
	Partitions []destinations.StreamPartitionStats
	Groups     []destinations.StreamGroupStats
}

// StreamInfo describes the stream topic called name.
func (m *Manager) StreamInfo(name string) (StreamInfo, error) {
	_, t := m.c.Host.Find(destinations.Name{Kind: destinations.Topic, Name: name})
	if t == nil || !t.IsStream() {
		return StreamInfo{}, errorf(ErrNotFound, "no stream named %s", name)
	}
	st, err := t.Stream()
	if err != nil {
		return StreamInfo{}, err
	}
	return StreamInfo{Name: t.ClientName(), Partitions: st.Partitions(), Groups: st.Groups()}, nil
}

// Stats counts the operators' requests that changed state since start, per operation
// ("purge", "move", "copy", "delete-message", "send", "remove-destination",
// "close-connection", "remove-durable", "import-durable"): Operations how many were
// done, Messages the messages they removed, moved, copied or sent, Failed how many
// failed.
type Stats struct {
	Operations map[string]int64
	Messages   map[string]int64
	Failed     map[string]int64
}

// Stats returns the counts of operators' requests.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Stats{Operations: cloneCounts(m.ops), Messages: cloneCounts(m.messages), Failed: cloneCounts(m.fails)}
}

func cloneCounts(c map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(c))
	for k, v := range c {
		out[k] = v
	}
	return out
}

// Done logs and counts an operation op of who on dest that succeeded with n messages.
func (m *Manager) Done(who, op, dest string, n int, attrs ...any) {
	m.mu.Lock()
	m.ops[op]++
	m.messages[op] += int64(n)
	m.mu.Unlock()
	m.c.Log.Info("management operation", append([]any{slog.String("op", op), slog.String("by", who),
		slog.String("dest", dest), slog.Int("messages", n)}, attrs...)...)
}

// Failed logs and counts a bulk operation that failed after n messages.
func (m *Manager) Failed(who, op, dest string, n int, err error) {
	m.mu.Lock()
	m.fails[op]++
	m.messages[op] += int64(n)
	m.mu.Unlock()
	m.c.Log.Warn("management operation failed", slog.String("op", op), slog.String("by", who),
		slog.String("dest", dest), slog.Int("messages", n), slog.Any("err", err))
}
