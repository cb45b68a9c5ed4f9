package broker

import (
	"context"
	"time"

	"github.com/activemq-go/broker/broker/conns"
	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/security"
)

// describe is what the registry of live connections (package broker/conns) knows of c.
func describe(c *Conn) conns.Client {
	return conns.Client{ClientID: c.ClientID, User: c.subject.User, MaxConnections: c.subject.MaxConnections,
		Remote: c.RemoteAddr, Resumes: c.resume, Kick: c.kick, Gone: c.gone}
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
	if err := b.checkClientID(subject, info.ClientID); err != nil {
		return nil, err
	}
	c := b.newConn(subject, info.RemoteAddr, info.Connector)
	c.proto, c.ClientID, c.version, c.ownIDs = info.Protocol, info.ClientID, info.Version, info.MessageIDs
	c.resume = info.Resumes
	if err := b.conns.Add(ctx, c, b.access.Authenticating(), b.log); err != nil {
		return nil, err
	}
	c.share = b.shares.join(c)
	b.adviseConnected(c)
	return c, nil
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
	if err := b.conns.AddInternal(c); err != nil {
		return nil, err
	}
	return c, nil
}

// connections returns what operators see of the client connections.
func (b *Broker) connections() []management.ConnectionInfo {
	var out []management.ConnectionInfo
	b.conns.Each(nil, func(c *Conn) {
		if !c.internal {
			out = append(out, management.ConnectionInfo{
				ID: c.ID, ClientID: c.ClientID, User: c.subject.User, RemoteAddr: c.RemoteAddr,
				Protocol: c.proto, Connector: c.connector, Version: c.version, ConnectedAt: c.connectedAt,
				Subscriptions: int(c.nsubs.Load()), Received: c.received.Load(), Delivered: c.delivered.Load(),
			})
		}
	})
	return out
}

// findConn returns the client connection of id, nil if there is none.
func (b *Broker) findConn(id string) (found *Conn) {
	b.conns.Each(nil, func(c *Conn) {
		if c.ID == id && !c.internal {
			found = c
		}
	})
	return found
}

// traffic counts the connections and what they sent and were sent, the closed ones'
// included.
func (b *Broker) traffic() management.Traffic {
	var out management.Traffic
	b.conns.Each(func() {
		out.Received, out.Delivered = b.counters.ClosedReceived.Load(), b.counters.ClosedDelivered.Load()
	}, func(c *Conn) {
		out.Open[c.proto]++
		if c.blocked.Load() {
			out.Blocked++
		}
		out.Received += c.received.Load()
		out.Delivered += c.delivered.Load()
	})
	return out
}
