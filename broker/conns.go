package broker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/security"
)

// connections are the broker's live connections: by client-id (one connection per
// client-id, unless a newer one steals it), the connections per user with a connection
// limit, and whether the broker has closed. Its mu is taken with nothing else held.
type connections struct {
	linkStealing bool // Options.LinkStealing

	mu        sync.RWMutex
	clientIDs map[string]*Conn
	all       map[*Conn]struct{}
	userConns map[string]int // live connections per user with a connection limit
	closed    bool
}

func newConnections(linkStealing bool) connections {
	return connections{linkStealing: linkStealing, clientIDs: map[string]*Conn{}, all: map[*Conn]struct{}{}, userConns: map[string]int{}}
}

// Connect authenticates a new connection and registers it.
func (b *Broker) Connect(ctx context.Context, info ConnectInfo) (*Conn, error) {
	c, err := b.connect(ctx, info)
	if r, ok := rejectReason(err); ok {
		b.counters.Rejected[r].Add(1)
	}
	if err == nil {
		b.counters.Opened[c.proto].Add(1)
	}
	return c, err
}

// newConn is a new connection of subject from remote through connector, not yet
// among the broker's.
func (b *Broker) newConn(subject *security.Subject, remote, connector string) *Conn {
	return &Conn{
		subject:     subject,
		b:           b,
		dests:       b.dests,
		quotas:      &b.quotas,
		meter:       &b.counters,
		access:      &b.access,
		flow:        b.flow,
		ID:          b.ids.newConnID(),
		RemoteAddr:  remote,
		wake:        make(chan struct{}, 1),
		subs:        map[string]*Subscription{},
		byTag:       map[uint64]*Delivery{},
		txs:         map[string]*txState{},
		kicked:      make(chan struct{}),
		gone:        make(chan struct{}),
		connector:   connector,
		connectedAt: time.Now(),
	}
}

func (b *Broker) connect(ctx context.Context, info ConnectInfo) (*Conn, error) {
	subject, err := b.access.Authenticate(ctx, info.credentials())
	if err != nil {
		return nil, err
	}
	if info.Protocol >= management.NumProtocols {
		info.Protocol = ProtocolSTOMP
	}
	c := b.newConn(subject, info.RemoteAddr, info.Connector)
	c.proto, c.ClientID, c.version, c.ownIDs = info.Protocol, info.ClientID, info.Version, info.MessageIDs
	c.resume = info.Resumes
	if err := b.conns.add(ctx, c, b.access.Authenticating(), b.log); err != nil {
		return nil, err
	}
	b.adviseConnected(c)
	return c, nil
}

// add registers c, a new connection, under its client-id: a live connection holding
// that client-id is refused (or, with link stealing, told to go, and waited for), as is
// one of another user when users are authenticated.
func (cs *connections) add(ctx context.Context, c *Conn, authenticating bool, log *slog.Logger) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return &Error{Message: "broker is shutting down", Fatal: true, Err: ErrClosed}
	}
	if id := c.ClientID; id != "" {
		if old, taken := cs.clientIDs[id]; taken {
			if authenticating && old.subject.User != c.subject.User {
				return &Error{Message: "Client: " + id + " is already connected as another user", Fatal: true, Err: ErrClientIDInUse}
			}
			resumes := c.resume != "" && c.resume == old.resume
			if !cs.linkStealing && !resumes {
				return &Error{Message: "Client: " + id + " already connected from " + old.RemoteAddr +
					" (a dead connection is dropped once its heart-beats stop; allowLinkStealing: true lets a new connection take over)",
					Fatal: true, Err: ErrClientIDInUse}
			}
			// Link stealing: the old connection is told to go, and its durable
			// subscriptions are free once it has.
			cs.mu.Unlock()
			old.kick("client-id " + id + " was taken over by a newer connection")
			log.Info("client-id taken over by a new connection", slog.String("clientID", id),
				slog.String("old", old.RemoteAddr), slog.String("new", c.RemoteAddr))
			select {
			case <-old.gone:
			case <-time.After(10 * time.Second):
			case <-ctx.Done():
			}
			cs.mu.Lock()
		}
	}
	if err := cs.admitUserLocked(c.subject); err != nil {
		return err
	}
	if c.ClientID != "" {
		cs.clientIDs[c.ClientID] = c
	}
	cs.all[c] = struct{}{}
	return nil
}

// admitUserLocked counts a new connection of sub's user against its maxConnections.
// The caller holds cs.mu.
func (cs *connections) admitUserLocked(sub *security.Subject) error {
	if sub.MaxConnections <= 0 || sub.User == "" {
		return nil
	}
	if n := cs.userConns[sub.User]; n >= sub.MaxConnections {
		return &Error{Message: fmt.Sprintf("User %s has reached its connection limit (maxConnections %d): close one of its connections first",
			sub.User, sub.MaxConnections), Fatal: true, Err: ErrTooManyUserConnections}
	}
	cs.userConns[sub.User]++
	return nil
}

// remove forgets c, which closed, and moves its counts to the closed connections'.
func (cs *connections) remove(c *Conn, meter *management.Meter) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c.ClientID != "" && cs.clientIDs[c.ClientID] == c {
		delete(cs.clientIDs, c.ClientID)
	}
	if sub := c.subject; sub != nil && sub.MaxConnections > 0 && sub.User != "" {
		if cs.userConns[sub.User]--; cs.userConns[sub.User] <= 0 {
			delete(cs.userConns, sub.User)
		}
	}
	delete(cs.all, c)
	meter.ClosedReceived.Add(c.received.Load())
	meter.ClosedDelivered.Add(c.delivered.Load())
}

// close refuses new connections from now on; it returns how many are open, and true if
// it was closed already.
func (cs *connections) close() (open int, already bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return 0, true
	}
	cs.closed = true
	return len(cs.all), false
}

// connectInternal connects the broker's own client acting as sub (or, for nil, as a
// client without credentials): never listed among the connections.
func (b *Broker) connectInternal(ctx context.Context, sub *security.Subject, who string) (*Conn, error) {
	if sub == nil {
		var err error
		if sub, err = b.access.Authenticate(ctx, security.Credentials{RemoteAddr: who}); err != nil {
			return nil, err
		}
	}
	c := b.newConn(sub, who, "admin")
	c.internal = true
	cs := &b.conns
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return nil, &Error{Message: "broker is shutting down", Fatal: true, Err: ErrClosed}
	}
	if err := cs.admitUserLocked(sub); err != nil {
		return nil, err
	}
	cs.all[c] = struct{}{}
	return c, nil
}

// list returns what operators see of the client connections.
func (cs *connections) list() []management.ConnectionInfo {
	cs.mu.RLock()
	defer cs.mu.RUnlock()
	out := make([]management.ConnectionInfo, 0, len(cs.all))
	for c := range cs.all {
		if !c.internal {
			out = append(out, management.ConnectionInfo{
				ID: c.ID, ClientID: c.ClientID, User: c.subject.User, RemoteAddr: c.RemoteAddr,
				Protocol: c.proto, Connector: c.connector, Version: c.version, ConnectedAt: c.connectedAt,
				Subscriptions: int(c.nsubs.Load()), Received: c.received.Load(), Delivered: c.delivered.Load(),
			})
		}
	}
	return out
}

// find returns the client connection of id, nil if there is none.
func (cs *connections) find(id string) *Conn {
	cs.mu.RLock()
	defer cs.mu.RUnlock()
	for c := range cs.all {
		if c.ID == id && !c.internal {
			return c
		}
	}
	return nil
}

// traffic counts the connections and what they sent and were sent, the closed ones'
// included.
func (cs *connections) traffic(meter *management.Meter) management.Traffic {
	cs.mu.RLock()
	defer cs.mu.RUnlock()
	// A connection's counts move to the closed ones' under cs.mu: none is counted twice.
	out := management.Traffic{Received: meter.ClosedReceived.Load(), Delivered: meter.ClosedDelivered.Load()}
	for c := range cs.all {
		out.Open[c.proto]++
		if c.blocked.Load() {
			out.Blocked++
		}
		out.Received += c.received.Load()
		out.Delivered += c.delivered.Load()
	}
	return out
}
