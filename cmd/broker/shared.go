package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/activemq-go/broker/broker/sharedmode"
	"github.com/activemq-go/broker/config"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/selector"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
	"github.com/activemq-go/broker/persistence/pgstore"
	"github.com/activemq-go/broker/persistence/pgstore/pgshared"
)

// Shared mode (persistenceAdapter.jdbc.mode: shared): the broker serves its queues,
// topics and durable subscriptions from pgshared, and keeps what is node-local
// (temporary destinations, duplicate detection's ids, advisories) in the memory store.
// Scheduled sends to shared destinations are refused: the scheduler's store would be
// the node's.

// sharedNode is the engine the broker gets: a pgshared.Node seen through
// sharedmode.Engine.
type sharedNode struct{ n *pgshared.Node }

var _ sharedmode.Engine = sharedNode{}

func (s sharedNode) SubscribeDurable(ctx context.Context, sub sharedmode.Subscription) (bool, bool, error) {
	created, replaced, err := s.n.Subscribe(ctx, pgshared.Subscription{Container: sub.Container,
		ClientID: sub.Key.ClientID, Name: sub.Key.Name, Topic: sub.Topic, Selector: sub.Selector})
	return created, replaced, sharedErr(err)
}

func (s sharedNode) DetachDurable(ctx context.Context, container string) error {
	return s.n.Detach(ctx, container)
}

func (s sharedNode) UnsubscribeDurable(ctx context.Context, container string) error {
	return sharedErr(s.n.Unsubscribe(ctx, container))
}

func (s sharedNode) DurableSubscriptions(ctx context.Context) ([]sharedmode.Subscription, error) {
	subs, err := s.n.Subscriptions(ctx)
	out := make([]sharedmode.Subscription, len(subs))
	for i, d := range subs {
		out[i] = sharedmode.Subscription{Container: d.Container, Key: persistence.SubKey{ClientID: d.ClientID, Name: d.Name},
			Topic: d.Topic, Selector: d.Selector, Created: d.Created, ActiveNode: d.ActiveNode, Pending: d.Pending}
	}
	return out, err
}

func (s sharedNode) OnTopic(h func(*persistence.Message)) { s.n.OnTopic(h) }

// sharedErr maps pgshared's subscription errors to shared mode's (package broker/sharedmode).
func sharedErr(err error) error {
	switch {
	case errors.Is(err, pgshared.ErrInUse):
		return sharedmode.ErrInUse
	case errors.Is(err, pgshared.ErrNotFound):
		return sharedmode.ErrNotFound
	}
	return err
}

// selectorCache compiles the durable subscriptions' selectors once each, for the
// matching pgshared does when a topic message is published.
type selectorCache struct {
	mu   sync.Mutex
	sels map[string]*selector.Selector // nil: did not parse (matches nothing)
}

// maxCachedSelectors bounds the cache; past it, it starts again.
const maxCachedSelectors = 10000

func (c *selectorCache) match(text string, m *persistence.Message) bool {
	c.mu.Lock()
	sel, ok := c.sels[text]
	if !ok {
		if len(c.sels) >= maxCachedSelectors {
			c.sels = nil
		}
		if c.sels == nil {
			c.sels = map[string]*selector.Selector{}
		}
		sel, _ = selector.Parse(text) // stored by a SUBSCRIBE that parsed it
		c.sels[text] = sel
	}
	c.mu.Unlock()
	return sel != nil && sel.MatchesMessage(m, 1)
}

func (s sharedNode) Send(ctx context.Context, msgs []*persistence.Message) error {
	return s.n.Send(ctx, msgs)
}

func (s sharedNode) Claim(ctx context.Context, dest string, max int) ([]destinations.SharedMessage, error) {
	got, err := s.n.Claim(ctx, dest, max)
	out := make([]destinations.SharedMessage, len(got))
	for i, c := range got {
		out[i] = destinations.SharedMessage{Lease: destinations.Lease(c.Lease), Message: c.Message, Group: c.Group}
	}
	return out, err
}

func (s sharedNode) Ack(ctx context.Context, leases []destinations.Lease) ([]destinations.Lease, error) {
	lost, err := s.n.Ack(ctx, toPG(leases))
	return fromPG(lost), err
}

func (s sharedNode) Release(ctx context.Context, leases []destinations.Lease, redelivered bool) ([]destinations.Lease, error) {
	lost, err := s.n.Release(ctx, toPG(leases), redelivered)
	return fromPG(lost), err
}

func (s sharedNode) ReleaseGroups(ctx context.Context, dest string, groups []string) error {
	return s.n.ReleaseGroups(ctx, dest, groups)
}

func (s sharedNode) Notifications() <-chan string { return s.n.Notifications() }

func toPG(ls []destinations.Lease) []pgshared.Lease {
	out := make([]pgshared.Lease, len(ls))
	for i, l := range ls {
		out[i] = pgshared.Lease(l)
	}
	return out
}

func fromPG(ls []pgshared.Lease) []destinations.Lease {
	out := make([]destinations.Lease, len(ls))
	for i, l := range ls {
		out[i] = destinations.Lease(l)
	}
	return out
}

// openShared opens the shared-queue node when the jdbc block says mode: shared; nil
// for every other configuration.
func openShared(ctx context.Context, cfg *config.Config, log *slog.Logger) (*pgshared.Node, error) {
	if cfg.Persistence.Adapter != "jdbc" {
		return nil, nil
	}
	o, err := pgstore.ParseOptions(persistence.Options{Raw: cfg.Persistence.Options, Logger: log})
	if err != nil || !o.Shared {
		return nil, err
	}
	nodeID := o.NodeID
	if nodeID == "" {
		nodeID = defaultNodeID(cfg)
	}
	n, err := pgshared.Open(ctx, pgshared.Options{
		URL: o.URL, User: o.User, Password: o.Password, MaxConnections: o.MaxConnections,
		SkipCreateTables: o.SkipCreateTables, TablePrefix: o.TablePrefix, NodeID: nodeID,
		LeaseTimeout: o.LeaseTimeout, HeartbeatPeriod: o.HeartbeatPeriod, ReaperPeriod: o.ReaperPeriod,
		MatchSelector: (&selectorCache{}).match, Logger: log,
	})
	if err != nil {
		if errors.Is(err, pgshared.ErrOption) {
			return nil, fmt.Errorf("persistenceAdapter.jdbc: %w", err)
		}
		return nil, err
	}
	// Serving starts once the node hears the others (their topic messages and wake-ups).
	wctx, cancel := context.WithTimeout(ctx, listenWait)
	if !n.WaitListening(wctx) {
		log.Warn("shared mode: LISTEN is not in place yet; serving meanwhile (topic messages other nodes publish until then are not seen here)",
			slog.Duration("waited", listenWait))
	}
	cancel()
	log.Info("shared queues: this node serves the queues of the database with the other nodes",
		slog.String("nodeId", n.NodeID()), slog.Int64("epoch", n.Epoch()))
	return n, nil
}

// listenWait bounds how long a starting node waits for its LISTEN connection.
const listenWait = 10 * time.Second

// defaultNodeID names this process among the nodes: the host name and the port of its
// first transport connector, or its process id when that port is chosen at start.
func defaultNodeID(cfg *config.Config) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "broker"
	}
	if len(cfg.TransportConnectors) > 0 {
		if u, err := url.Parse(cfg.TransportConnectors[0].URI); err == nil {
			if _, port, err := net.SplitHostPort(u.Host); err == nil && port != "" && port != "0" {
				return host + ":" + port
			}
		}
	}
	return host + "-pid" + strconv.Itoa(os.Getpid())
}

// sharedStore is the store of what shared mode keeps on the node.
func sharedStore() persistence.Store { return memstore.New() }
