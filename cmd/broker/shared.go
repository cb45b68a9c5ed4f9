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

	"github.com/activemq-go/broker/config"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
	"github.com/activemq-go/broker/persistence/pgstore"
	"github.com/activemq-go/broker/persistence/pgstore/pgshared"
)

// Shared queues (persistenceAdapter.jdbc.mode: shared): the broker serves its queues
// from pgshared, and keeps everything else (topics' durable subscriptions, the
// scheduler, duplicate detection, temporary queues) in the memory store, node-local
// and lost at restart. A per-node database store would survive restarts but look like
// a shared one while it is not; the memory store says plainly what this mode does not
// share yet.

// sharedNode is the shared-queue engine the broker gets: a pgshared.Node seen through
// destinations.SharedQueues.
type sharedNode struct{ n *pgshared.Node }

var _ destinations.SharedQueues = sharedNode{}

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
		Logger: log,
	})
	if err != nil {
		if errors.Is(err, pgshared.ErrOption) {
			return nil, fmt.Errorf("persistenceAdapter.jdbc: %w", err)
		}
		return nil, err
	}
	log.Info("shared queues: this node serves the queues of the database with the other nodes",
		slog.String("nodeId", n.NodeID()), slog.Int64("epoch", n.Epoch()))
	return n, nil
}

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
