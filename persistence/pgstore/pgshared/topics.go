package pgshared

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/pgstore"
)

// Topics over the shared database. A durable subscription is a row of SQ_SUBS and a
// container of its own in SQ_MSGS ("durable://<client-id>:<name>", claimed and
// acknowledged as a queue's): a message published to a topic is stored once per
// durable subscription whose selector it matches, in the publishing transaction, so
// a subscription made (committed) before a publish gets it, whichever nodes did
// either. Non-durable subscribers are the nodes' own business: the publishing
// transaction sends the message on the topic channel, and every other node that
// LISTENs hands it to its subscribers (at most once: a node that was not listening
// when it was sent does not get it, as a non-durable subscriber that was not
// connected would not). A message whose notification would pass PostgreSQL's 8000
// bytes goes through SQ_TRANSIT, a row the reaper deletes after transitRetention.

// transitRetention is how long a large topic message waits in SQ_TRANSIT for the
// nodes to read it.
const transitRetention = time.Minute

// maxNotify is the largest notification payload sent (PostgreSQL refuses 8000 bytes
// and more).
const maxNotify = 7900

// Subscription is a durable subscription as the database keeps it.
type Subscription struct {
	// Container is where its messages are kept: DurableContainer of its key.
	Container string
	// ClientID and Name are its key; Topic is the qualified topic
	// ("topic://PRICES"); Selector its selector ("" for none).
	ClientID, Name, Topic, Selector string
	// Created is when it was made (or last replaced), by the database's clock.
	Created time.Time
	// ActiveNode is the node whose consumer is attached, "" for none (Subscriptions).
	ActiveNode string
	// Pending counts its stored messages, leased ones included (Subscriptions).
	Pending int64
}

// DurableContainer is the container of the durable subscription whose key renders
// as key (persistence.SubKey's String).
func DurableContainer(key string) string { return "durable://" + key }

var (
	// ErrInUse is returned by Subscribe and Unsubscribe while a consumer on another
	// live node is attached to the subscription.
	ErrInUse = errors.New("pgshared: durable subscription in use on another node")
	// ErrNotFound is returned by Unsubscribe for a subscription that does not exist.
	ErrNotFound = errors.New("pgshared: no such durable subscription")
)

// TopicHandler receives the topic messages published through other nodes, one at a
// time, in the order they were committed. Its Dest is the qualified topic.
type TopicHandler func(m *persistence.Message)

// OnTopic sets the handler of other nodes' topic messages (nil: they are dropped).
func (n *Node) OnTopic(h TopicHandler) {
	if h == nil {
		n.onTopic.Store(nil)
		return
	}
	n.onTopic.Store(&h)
}

// Subscribe attaches this node to the durable subscription sub (Container, ClientID,
// Name, Topic, Selector), creating it, or replacing it when its topic or selector
// changed (its stored messages are deleted, as ActiveMQ does). It fails with ErrInUse
// while another live node is attached. replaced reports a replacement, created a new
// subscription.
func (n *Node) Subscribe(ctx context.Context, sub Subscription) (created, replaced bool, err error) {
	if err := n.usable(); err != nil {
		return false, false, err
	}
	for _, s := range []string{sub.Container, sub.Topic} {
		if s == "" || len(s) > maxContainer || !validText(s) {
			return false, false, fmt.Errorf("%w: destination %q", ErrInvalid, s)
		}
	}
	for _, s := range []string{sub.ClientID, sub.Name, sub.Selector} {
		if !validText(s) {
			return false, false, fmt.Errorf("%w: subscription text %q", ErrInvalid, s)
		}
	}
	err = pgx.BeginFunc(ctx, n.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, n.t.subInsert, sub.Container, sub.ClientID, sub.Name, sub.Topic, sub.Selector)
		if err != nil {
			return err
		}
		created = tag.RowsAffected() == 1
		var (
			topic, sel, node string
			epoch            int64
			alive            bool
		)
		if err := tx.QueryRow(ctx, n.t.subLock, sub.Container).Scan(&topic, &sel, &node, &epoch, &alive); err != nil {
			return err
		}
		if alive && (node != n.o.NodeID || epoch != n.epoch) {
			return ErrInUse
		}
		if topic != sub.Topic || sel != sub.Selector {
			replaced = true
			if _, err := tx.Exec(ctx, n.t.subMsgs, sub.Container); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, n.t.subReplace, sub.Container, sub.Topic, sub.Selector); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, n.t.subActivate, sub.Container, n.o.NodeID, n.epoch)
		return err
	})
	if errors.Is(err, ErrInUse) {
		return false, false, err
	}
	if err != nil {
		return false, false, n.dbErr("subscribe", err)
	}
	return created, replaced, nil
}

// Detach marks the durable subscription of container as having no consumer on this
// node (its messages wait in the database for the next Subscribe, on any node).
func (n *Node) Detach(ctx context.Context, container string) error {
	if n.closed.Load() {
		return ErrClosed
	}
	if _, err := n.pool.Exec(ctx, n.t.subDetach, container, n.o.NodeID, n.epoch); err != nil {
		return n.dbErr("detach", err)
	}
	return nil
}

// Unsubscribe deletes the durable subscription of container and its messages. It
// fails with ErrNotFound if there is none, with ErrInUse while a consumer on another
// live node is attached (one of this node's is the caller's business).
func (n *Node) Unsubscribe(ctx context.Context, container string) error {
	if err := n.usable(); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, n.pool, func(tx pgx.Tx) error {
		var (
			topic, sel, node string
			epoch            int64
			alive            bool
		)
		err := tx.QueryRow(ctx, n.t.subLock, container).Scan(&topic, &sel, &node, &epoch, &alive)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if alive && (node != n.o.NodeID || epoch != n.epoch) {
			return ErrInUse
		}
		if _, err := tx.Exec(ctx, n.t.subMsgs, container); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, n.t.subDelete, container)
		return err
	})
	if errors.Is(err, ErrInUse) || errors.Is(err, ErrNotFound) {
		return err
	}
	if err != nil {
		return n.dbErr("unsubscribe", err)
	}
	return nil
}

// Subscriptions lists every durable subscription with its stored messages and the
// node attached to it.
func (n *Node) Subscriptions(ctx context.Context) ([]Subscription, error) {
	if n.closed.Load() {
		return nil, ErrClosed
	}
	res, _ := n.pool.Query(ctx, n.t.subList)
	var (
		out     []Subscription
		s       Subscription
		created int64
	)
	_, err := pgx.ForEachRow(res, []any{&s.Container, &s.ClientID, &s.Name, &s.Topic, &s.Selector, &created, &s.ActiveNode, &s.Pending}, func() error {
		s.Created = time.UnixMilli(created)
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, n.dbErr("subscriptions", err)
	}
	return out, nil
}

// sendWithTopics is Send of msgs of which some are topic messages, in one
// transaction: their durable subscriptions' copies are stored with the queue
// messages (in the order of msgs), and the topic messages are sent on the topic
// channel, both at commit.
func (n *Node) sendWithTopics(ctx context.Context, msgs []*persistence.Message) error {
	var topics []string
	seen := map[string]bool{}
	for _, m := range msgs {
		if persistence.KindOf(m.Dest) == persistence.KindTopic && !seen[m.Dest] {
			seen[m.Dest] = true
			topics = append(topics, m.Dest)
		}
	}
	err := pgx.BeginFunc(ctx, n.pool, func(tx pgx.Tx) error {
		type sub struct{ container, selector string }
		subs := map[string][]sub{}
		res, _ := tx.Query(ctx, n.t.subsFor, topics)
		var container, topic, sel string
		if _, err := pgx.ForEachRow(res, []any{&container, &topic, &sel}, func() error {
			subs[topic] = append(subs[topic], sub{container, sel})
			return nil
		}); err != nil {
			return err
		}
		var (
			r        rows
			queued   []*persistence.Message // the queue messages, in the order of their rows
			payloads []string
		)
		for _, m := range msgs {
			blob := pgstore.EncodeMessage(nil, m)
			if persistence.KindOf(m.Dest) != persistence.KindTopic {
				r.addBlob(m.Dest, m, blob)
				queued = append(queued, m)
				continue
			}
			for _, s := range subs[m.Dest] {
				if s.selector == "" || n.o.MatchSelector == nil || n.o.MatchSelector(s.selector, m) {
					r.addBlob(s.container, m, blob)
					queued = append(queued, nil)
				}
			}
			p, err := n.topicPayload(ctx, tx, m.Dest, blob)
			if err != nil {
				return err
			}
			payloads = append(payloads, p)
		}
		ids, err := r.insert(ctx, tx, n.t)
		if err != nil {
			return err
		}
		for i, m := range queued {
			if m != nil {
				m.Seq = uint64(ids[i])
			}
		}
		_, err = tx.Exec(ctx, n.t.topicNotify, n.t.topicChannel, payloads)
		return err
	})
	if err != nil {
		return n.dbErr("send", err)
	}
	return nil
}

// topicPayload is the notification of a topic message: "<epoch>:<n>:<kind>:<topic
// length>:<topic><data>", kind 'i' with the encoded message in base64 as data, or
// 't' with the ID of its SQ_TRANSIT row when that would be too long. <n> numbers the
// node's notifications (PostgreSQL sends identical payloads of a transaction once).
func (n *Node) topicPayload(ctx context.Context, tx pgx.Tx, topic string, blob []byte) (string, error) {
	head := strconv.FormatInt(n.epoch, 10) + ":" + strconv.FormatUint(n.topicSeq.Add(1), 10) + ":"
	name := strconv.Itoa(len(topic)) + ":" + topic
	if len(head)+len(name)+2+base64.StdEncoding.EncodedLen(len(blob)) <= maxNotify {
		return head + "i:" + name + base64.StdEncoding.EncodeToString(blob), nil
	}
	var id int64
	if err := tx.QueryRow(ctx, n.t.transitPut, blob).Scan(&id); err != nil {
		return "", err
	}
	return head + "t:" + name + strconv.FormatInt(id, 10), nil
}

// topicNote handles one notification of the topic channel: a message published by
// another node is decoded (read from SQ_TRANSIT over conn if large) and handed to the
// handler; this node's own are skipped (its broker delivered them).
func (n *Node) topicNote(ctx context.Context, conn *pgx.Conn, payload string) {
	h := n.onTopic.Load()
	epoch, rest, ok := strings.Cut(payload, ":")
	if !ok || epoch == strconv.FormatInt(n.epoch, 10) || h == nil {
		return
	}
	m, err := n.decodeTopicNote(ctx, conn, rest)
	if err != nil {
		n.log.Warn("shared topics: a topic message from another node could not be read; its subscribers here miss it",
			slog.String("from_epoch", epoch), slog.Any("err", pgstore.RedactError(err, n.o.Password)))
		return
	}
	(*h)(m)
}

func (n *Node) decodeTopicNote(ctx context.Context, conn *pgx.Conn, rest string) (*persistence.Message, error) {
	_, rest, _ = strings.Cut(rest, ":") // the notification's number
	kind, rest, _ := strings.Cut(rest, ":")
	l, rest, _ := strings.Cut(rest, ":")
	size, err := strconv.Atoi(l)
	if err != nil || size <= 0 || size > len(rest) || (kind != "i" && kind != "t") {
		return nil, fmt.Errorf("pgshared: malformed topic notification")
	}
	topic, data := rest[:size], rest[size:]
	var blob []byte
	if kind == "i" {
		if blob, err = base64.StdEncoding.DecodeString(data); err != nil {
			return nil, fmt.Errorf("pgshared: topic notification: %w", err)
		}
	} else {
		id, err := strconv.ParseInt(data, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("pgshared: topic notification: %w", err)
		}
		if err := conn.QueryRow(ctx, n.t.transitGet, id).Scan(&blob); err != nil {
			return nil, fmt.Errorf("pgshared: topic message %d in transit: %w", id, err)
		}
	}
	m := &persistence.Message{}
	if err := pgstore.DecodeMessage(blob, m); err != nil {
		return nil, err
	}
	m.Dest = topic
	return m, nil
}

// topicState is the node's part in topics: the handler and the notification counter.
type topicState struct {
	onTopic  atomic.Pointer[TopicHandler]
	topicSeq atomic.Uint64
}
