package admin

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/internal/buildinfo"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/security"
)

// BrokerBackend is the Reader and Manager of a running broker: it translates the
// listener's requests into the broker's management surface (package
// broker/management) and its answers into the API's JSON shapes. Operations are done on behalf of the request's operator
// (IdentityOf its context): the broker logs them with that name, and a message sent
// through the API is sent as that user.
type BrokerBackend struct {
	b   *broker.Broker
	m   *management.Manager
	o   BrokerInfo
	now func() time.Time
}

// BrokerInfo is what the broker does not know of itself.
type BrokerInfo struct {
	// Adapter names the persistence adapter (persistenceAdapter's key).
	Adapter string
	// Version is the broker's version; default the binary's module version.
	Version string
	// Store is the broker's store, for the file details of GET /stats (optional).
	Store persistence.Store
	// Security is the broker's security service, for the login counters of GET /stats
	// (optional).
	Security *security.Service
}

var (
	_ Reader        = (*BrokerBackend)(nil)
	_ Manager       = (*BrokerBackend)(nil)
	_ StatsReporter = (*BrokerBackend)(nil)
)

// PreviewBytes is how much of a body a browsed message shows.
const PreviewBytes = 256

// NewBrokerBackend returns the BrokerBackend of b.
func NewBrokerBackend(b *broker.Broker, info BrokerInfo) *BrokerBackend {
	if info.Version == "" {
		info.Version = buildinfo.Get().Version
	}
	return &BrokerBackend{b: b, m: b.Management(), o: info, now: time.Now}
}

// who names the operator of ctx for the broker's log.
func who(ctx context.Context) string {
	id := IdentityOf(ctx)
	if id.Remote == "" && id.User == "" {
		return "admin listener"
	}
	return id.String()
}

// Overview implements Reader.
func (bb *BrokerBackend) Overview() Overview {
	m := bb.m
	now := bb.now()
	o := Overview{Name: bb.b.Name(), Version: bb.o.Version, Build: buildinfo.Get(), Started: m.Started(), Uptime: now.Sub(m.Started()).Seconds(),
		Adapter: bb.o.Adapter}
	o.MemoryUsed, o.MemoryLimit = m.MemoryUsage()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	o.StoreUsed, o.StoreLimit = m.StoreUsage(ctx)
	cancel()
	o.Connections = len(m.Connections())
	for _, d := range m.ManagedDestinations() {
		switch {
		case d.Stream:
			o.Streams++
		case d.Kind == destinations.Topic:
			o.Topics++
		default:
			o.Queues++
		}
	}
	o.MessagesIn, o.MessagesOut = m.MessageTotals()
	return o
}

// Destinations implements Reader.
func (bb *BrokerBackend) Destinations(kind string) []Destination {
	now := bb.now()
	var out []Destination
	for _, d := range bb.m.ManagedDestinations() {
		typ := "queue"
		switch {
		case d.Stream:
			typ = "stream"
		case d.Kind == destinations.Topic:
			typ = "topic"
		}
		if kind != "" && kind != typ {
			continue
		}
		x := Destination{Name: d.Name, Type: typ, Messages: int64(d.Pending) + int64(d.InFlight), Enqueued: d.Enqueued,
			Dequeued: d.Dequeued, Dispatched: int64(d.InFlight), Expired: d.Expired, Consumers: d.Consumers,
			Memory: d.MemoryBytes, DLQ: d.DLQ}
		if d.Stream || d.Kind == destinations.Topic {
			// A stream's log, a topic's messages stored for its durable subscriptions.
			x.Messages = d.Stored
		}
		if d.OldestTimestamp > 0 {
			x.OldestAge = max(now.Sub(time.UnixMilli(d.OldestTimestamp)).Seconds(), 0)
		}
		out = append(out, x)
	}
	return out
}

// queueName is the queue a client-form name ("/queue/X") names.
func queueName(dest string) (string, error) {
	n, err := destinations.ParseOne(dest)
	if err != nil || n.Kind != destinations.Queue || n.IsWildcard() || !strings.HasPrefix(dest, "/queue/") {
		return "", badRequest("%q is not a queue (/queue/NAME)", dest)
	}
	return n.Name, nil
}

// managedName parses a client-form queue or topic name.
func managedName(dest string) (destinations.Name, error) {
	n, err := destinations.ParseOne(dest)
	if err != nil {
		return n, badRequest("destination %q: %v", dest, err)
	}
	if (n.Kind != destinations.Queue && n.Kind != destinations.Topic) || n.IsWildcard() ||
		!(strings.HasPrefix(dest, "/queue/") || strings.HasPrefix(dest, "/topic/")) {
		return n, badRequest("destination %q: name a queue or a topic as /queue/NAME or /topic/NAME", dest)
	}
	return n, nil
}

// Browse implements Reader.
func (bb *BrokerBackend) Browse(ctx context.Context, queue, after string, limit int) ([]Message, string, error) {
	name, err := queueName(queue)
	if err != nil {
		return nil, "", err
	}
	msgs, next, err := bb.m.BrowseQueue(ctx, name, after, limit)
	if err != nil {
		return nil, "", err
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = toMessage(queue, m, PreviewBytes)
	}
	return out, next, nil
}

// Message implements Reader.
func (bb *BrokerBackend) Message(ctx context.Context, queue, id string) (Message, error) {
	name, err := queueName(queue)
	if err != nil {
		return Message{}, err
	}
	m, err := bb.m.QueueMessage(ctx, name, id)
	if err != nil {
		return Message{}, err
	}
	return toMessage(queue, m, 0), nil
}

// toMessage is m as the API shows it, its body cut to preview bytes (0: whole).
func toMessage(dest string, m *persistence.Message, preview int) Message {
	out := Message{ID: m.ID, Destination: dest, Headers: map[string]string{}, Persistent: m.Persistent,
		Priority: int(m.Priority), Timestamp: time.UnixMilli(m.Timestamp), Redelivered: m.RedeliveryCount > 0,
		Size: len(m.Body)}
	for i := 0; i+1 < len(m.Headers); i += 2 {
		if _, seen := out.Headers[m.Headers[i]]; !seen {
			out.Headers[m.Headers[i]] = m.Headers[i+1]
		}
	}
	if m.Expires != 0 {
		t := time.UnixMilli(m.Expires)
		out.Expires = &t
	}
	body := m.Body
	if preview > 0 && len(body) > preview {
		body, out.Truncated = body[:preview], true
	}
	if utf8.Valid(m.Body) {
		if out.Truncated {
			for len(body) > 0 && !utf8.Valid(body) {
				body = body[:len(body)-1] // not in the middle of a character
			}
		}
		out.Body = string(body)
	} else {
		out.BodyBase64 = base64.StdEncoding.EncodeToString(body)
	}
	return out
}

// DeleteMessage implements Manager.
func (bb *BrokerBackend) DeleteMessage(ctx context.Context, queue, id string) error {
	name, err := queueName(queue)
	if err != nil {
		return err
	}
	return bb.m.DeleteMessage(ctx, who(ctx), name, id)
}

// Send implements Manager. The headers priority (0-9), expires and timestamp (ms since
// the epoch) set the message's fields as a STOMP SEND's do; the headers a client may
// not set on SEND are ignored.
func (bb *BrokerBackend) Send(ctx context.Context, dest string, r SendRequest) (string, error) {
	d, err := managedName(dest)
	if err != nil {
		return "", err
	}
	m, err := messageOf(r)
	if err != nil {
		return "", err
	}
	return bb.m.SendAs(ctx, IdentityOf(ctx).Subject, who(ctx), d, m)
}

// messageOf builds the message of a SendRequest, its headers in name order.
func messageOf(r SendRequest) (*persistence.Message, error) {
	m := &persistence.Message{Priority: 4, Body: []byte(r.Body), Persistent: r.Persistent}
	if r.BodyBase64 != "" {
		if r.Body != "" {
			return nil, badRequest("body and body_base64 both set")
		}
		b, err := base64.StdEncoding.DecodeString(r.BodyBase64)
		if err != nil {
			return nil, badRequest("body_base64: %s", err)
		}
		m.Body = b
	}
	names := make([]string, 0, len(r.Headers))
	for k := range r.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := r.Headers[k]
		switch k {
		case "priority":
			p, err := strconv.Atoi(v)
			if err != nil || p < 0 || p > 9 {
				return nil, badRequest("header priority %q: an integer 0-9", v)
			}
			m.Priority = uint8(p)
			continue
		case "expires":
			e, err := strconv.ParseInt(v, 10, 64)
			if err != nil || e < 0 {
				return nil, badRequest("header expires %q: milliseconds since the epoch, 0 for never", v)
			}
			m.Expires = e
			continue
		case "timestamp":
			if ts, err := strconv.ParseInt(v, 10, 64); err == nil && ts > 0 {
				m.Timestamp = ts
			}
			continue
		case "destination", "receipt", "transaction", "content-length", "message-id", "redelivered",
			"subscription", "ack", destinations.UserIDProperty, "persistent":
			continue
		}
		if k == "" {
			return nil, badRequest("a header with an empty name")
		}
		m.Headers = append(m.Headers, k, v)
	}
	return m, nil
}

// ImportDurable implements Manager.
func (bb *BrokerBackend) ImportDurable(ctx context.Context, clientID, name string, reqs []SendRequest) (ImportResult, error) {
	msgs := make([]*persistence.Message, len(reqs))
	for i, r := range reqs {
		m, err := messageOf(r)
		if err != nil {
			return ImportResult{}, fmt.Errorf("message %d: %w", i, err)
		}
		msgs[i] = m
	}
	res, err := bb.b.ImportDurable(ctx, who(ctx), persistence.SubKey{ClientID: clientID, Name: name}, msgs)
	return ImportResult{Imported: res.Imported, Duplicates: res.Duplicates}, err
}

// Purge implements Manager.
func (bb *BrokerBackend) Purge(ctx context.Context, queue string) (int, error) {
	name, err := queueName(queue)
	if err != nil {
		return 0, err
	}
	return bb.m.PurgeQueue(ctx, who(ctx), name)
}

// RemoveDestination implements Manager.
func (bb *BrokerBackend) RemoveDestination(ctx context.Context, dest string) error {
	d, err := managedName(dest)
	if err != nil {
		return err
	}
	return bb.m.RemoveDestination(ctx, who(ctx), d)
}

// Move implements Manager.
func (bb *BrokerBackend) Move(ctx context.Context, queue string, r MoveRequest) (MoveResult, error) {
	name, err := queueName(queue)
	if err != nil {
		return MoveResult{}, err
	}
	mr := management.MoveRequest{Selector: r.Selector, Limit: r.Limit, Copy: r.Copy}
	if r.To == "original" {
		mr.Original = true
	} else if mr.To, err = managedName(r.To); err != nil {
		return MoveResult{}, err
	}
	res, err := bb.m.MoveMessages(ctx, who(ctx), name, mr)
	out := MoveResult{Moved: res.Moved, MoreRefused: res.MoreRefused}
	for _, f := range res.Refused {
		out.Refused = append(out.Refused, MoveRefusal{ID: f.ID, Reason: f.Reason})
	}
	return out, err
}

// Connections implements Reader.
func (bb *BrokerBackend) Connections() []Connection {
	cs := bb.m.Connections()
	out := make([]Connection, len(cs))
	for i, c := range cs {
		out[i] = Connection{ID: c.ID, ClientID: c.ClientID, User: c.User, Remote: c.RemoteAddr, Protocol: c.Protocol.String(), Connector: c.Connector,
			Version: c.Version, ConnectedAt: c.ConnectedAt, Subscriptions: c.Subscriptions}
	}
	return out
}

// CloseConnection implements Manager.
func (bb *BrokerBackend) CloseConnection(ctx context.Context, id, reason string) error {
	return bb.m.CloseConnection(ctx, who(ctx), id, reason)
}

// DurableSubscriptions implements Reader.
func (bb *BrokerBackend) DurableSubscriptions() []DurableSubscription {
	ds := bb.m.DurableSubscriptions()
	out := make([]DurableSubscription, len(ds))
	for i, d := range ds {
		out[i] = DurableSubscription{ClientID: d.ClientID, Name: d.Name, Topic: d.Topic, Selector: d.Selector,
			Active: d.Active, Pending: int64(d.Backlog), OfflineSeconds: d.OfflineFor.Seconds()}
	}
	return out
}

// RemoveDurableSubscription implements Manager.
func (bb *BrokerBackend) RemoveDurableSubscription(ctx context.Context, clientID, name string) error {
	return bb.m.RemoveDurableSubscription(ctx, who(ctx), clientID, name)
}

// ClientIDOwners implements Reader.
func (bb *BrokerBackend) ClientIDOwners() []ClientIDOwner {
	owned := bb.m.ClientIDOwners()
	out := make([]ClientIDOwner, len(owned))
	for i, o := range owned {
		out[i] = ClientIDOwner{ClientID: o.ClientID, User: o.User}
	}
	return out
}

// FreeClientID implements Manager.
func (bb *BrokerBackend) FreeClientID(ctx context.Context, clientID string) error {
	return bb.m.FreeClientID(ctx, who(ctx), clientID)
}

// Stream implements Reader; name is the topic's name, with or without /topic/. A
// group's committed_offset is -1 in a partition where it has no position.
func (bb *BrokerBackend) Stream(name string) (Stream, error) {
	info, err := bb.m.StreamInfo(strings.TrimPrefix(name, "/topic/"))
	if err != nil {
		return Stream{}, err
	}
	out := Stream{Name: info.Name, Partitions: []StreamPartition{}, Groups: []StreamGroup{}}
	for _, p := range info.Partitions {
		out.Partitions = append(out.Partitions, StreamPartition{Partition: p.Partition, StartOffset: p.Oldest, EndOffset: p.Next, Bytes: p.Bytes})
	}
	for _, g := range info.Groups {
		sg := StreamGroup{Group: g.Group, Members: g.Members, Partitions: []StreamGroupPartition{}}
		for _, p := range g.Partitions {
			committed := p.Position
			if !p.HasPosition {
				committed = -1
			}
			sg.Partitions = append(sg.Partitions, StreamGroupPartition{Partition: p.Partition, Committed: committed, End: p.Next, Lag: p.Lag})
			sg.Lag += p.Lag
		}
		out.Groups = append(out.Groups, sg)
	}
	return out, nil
}
