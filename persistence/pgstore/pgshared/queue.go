package pgshared

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/pgstore"
)

// GroupHeader is the header whose value puts a message in a message group.
const GroupHeader = "JMSXGroupID"

// Lease names one claimed message as this node holds it: the message's ID and the
// epoch of the node's life that claimed it.
type Lease struct {
	ID    int64
	Epoch int64
}

// Claimed is one message taken by Claim.
type Claimed struct {
	Lease Lease
	// Message is the stored message with Dest, Seq (= Lease.ID) and RedeliveryCount
	// (the sender's count plus Redeliveries) filled in. The caller owns it.
	Message *persistence.Message
	// Redeliveries counts the times the message was given back as redelivered
	// (Release with redelivered, Close, a dead node's leases returned by the reaper).
	Redeliveries int
	// Group is the message's JMSXGroupID, "" for none. This node owns the group
	// until ReleaseGroups or Close.
	Group string
}

// Send stores msgs (each to its Dest, a queue) in one transaction and notifies the
// destinations at its commit. The database assigns the IDs, in the order of msgs,
// and Send sets each message's Seq to its ID. A message whose Dest is a topic
// ("topic://NAME") is published instead (see Publish in topics.go): stored for the
// topic's durable subscriptions and passed to the other nodes, in the same
// transaction. Nothing is stored if an error is returned.
func (n *Node) Send(ctx context.Context, msgs []*persistence.Message) error {
	if n.closed.Load() {
		return ErrClosed
	}
	if len(msgs) == 0 {
		return nil
	}
	var topics bool
	for _, m := range msgs {
		if err := validMessage(m); err != nil {
			return err
		}
		topics = topics || persistence.KindOf(m.Dest) == persistence.KindTopic
	}
	if topics {
		return n.sendWithTopics(ctx, msgs)
	}
	var r rows
	for _, m := range msgs {
		r.add(m.Dest, m)
	}
	ids, err := r.insert(ctx, n.pool, n.t)
	if err != nil {
		return n.dbErr("send", err)
	}
	for i, m := range msgs {
		m.Seq = uint64(ids[i])
	}
	return nil
}

// validMessage refuses a message the tables cannot hold.
func validMessage(m *persistence.Message) error {
	g, _ := m.Headers.Get(GroupHeader)
	switch {
	case m.Dest == "" || len(m.Dest) > maxContainer || !utf8.ValidString(m.Dest) || !validText(m.Dest):
		return fmt.Errorf("%w: destination %q", ErrInvalid, m.Dest)
	case !utf8.ValidString(g) || !validText(g):
		return fmt.Errorf("%w: %s %q", ErrInvalid, GroupHeader, g)
	}
	return nil
}

// rows are messages on their way into SQ_MSGS, column by column.
type rows struct {
	dests  []string
	prios  []int16
	blobs  [][]byte
	groups []string
	exps   []int64
}

// add adds m as a row of container; blob is its encoding, made if nil.
func (r *rows) add(container string, m *persistence.Message) {
	r.addBlob(container, m, pgstore.EncodeMessage(nil, m))
}

func (r *rows) addBlob(container string, m *persistence.Message, blob []byte) {
	g, _ := m.Headers.Get(GroupHeader)
	r.dests = append(r.dests, container)
	r.prios = append(r.prios, int16(m.Priority))
	r.blobs = append(r.blobs, blob)
	r.groups = append(r.groups, g)
	r.exps = append(r.exps, m.Expires)
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// insert stores the rows in one statement that notifies their destinations, and
// returns their IDs in order.
func (r *rows) insert(ctx context.Context, q querier, t *tables) ([]int64, error) {
	if len(r.dests) == 0 {
		return nil, nil
	}
	res, _ := q.Query(ctx, t.insert, r.dests, r.prios, r.blobs, r.groups, r.exps, t.channel)
	ids, err := pgx.CollectRows(res, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	if len(ids) != len(r.dests) {
		return nil, fmt.Errorf("pgshared: send: %d ids for %d messages", len(ids), len(r.dests))
	}
	return ids, nil
}

// Claim leases up to max available messages of dest to this node, highest priority
// first, then oldest (ID), skipping rows other claimers hold locked, expired messages
// and messages of groups owned by another node; the groups of what it takes become
// this node's. It returns an empty slice when nothing is available. A message that
// cannot be decoded is not returned: it stays leased to this node (so no other node
// trips on it until this one closes) and the error, wrapping pgstore.ErrCorrupt, names
// it beside the messages that were claimed.
func (n *Node) Claim(ctx context.Context, dest string, max int) ([]Claimed, error) {
	if err := n.usable(); err != nil {
		return nil, err
	}
	if max <= 0 {
		return nil, nil
	}
	var (
		out    []Claimed
		id     int64
		blob   []byte
		redel  int32
		group  string
		decErr error
	)
	err := n.lazyQuery(ctx, func(rows pgx.Rows) error {
		_, err := pgx.ForEachRow(rows, []any{&id, &blob, &redel, &group}, func() error {
			m := &persistence.Message{}
			if err := pgstore.DecodeMessage(blob, m); err != nil {
				// Left leased to this node (out of the way of the others) and reported.
				decErr = errors.Join(decErr, fmt.Errorf("pgshared: message %d of %s: %w", id, dest, err))
				return nil
			}
			m.Dest, m.Seq = dest, uint64(id)
			m.RedeliveryCount += uint32(redel)
			out = append(out, Claimed{Lease: Lease{ID: id, Epoch: n.epoch}, Message: m, Redeliveries: int(redel), Group: group})
			blob = nil // a fresh slice for the next row: m.Body aliases this one
			return nil
		})
		return err
	}, n.t.claim, dest, max, n.o.NodeID, n.epoch)
	if err != nil {
		return nil, n.dbErr("claim", err)
	}
	// The update returns rows in no particular order.
	slices.SortFunc(out, func(a, b Claimed) int {
		if a.Message.Priority != b.Message.Priority {
			return int(b.Message.Priority) - int(a.Message.Priority)
		}
		return cmp.Compare(a.Lease.ID, b.Lease.ID)
	})
	if decErr != nil {
		return out, decErr
	}
	return out, nil
}

// Ack deletes the messages of leases that this node still holds. lost lists the
// leases whose message was not deleted: it had been given to another node (the
// reaper returned it after this node was declared dead, or a previous life's
// lease), or was already acknowledged or released. Each lease is acknowledged at
// most once: a second Ack of it reports it lost.
func (n *Node) Ack(ctx context.Context, leases []Lease) (lost []Lease, err error) {
	if n.closed.Load() {
		return nil, ErrClosed
	}
	if len(leases) == 0 {
		return nil, nil
	}
	ids, epochs := split(leases)
	done, err := n.lazyIDs(ctx, n.t.ack, ids, epochs, n.o.NodeID)
	if err != nil {
		return nil, n.dbErr("ack", err)
	}
	return missing(leases, done), nil
}

// Release gives leases back: their messages become available to every node again,
// with REDELIVERIES one higher if redelivered (the message may have reached a
// consumer: a NACK, a consumer that went away with unacknowledged messages), and
// their destinations are notified. lost lists the leases this node no longer held.
// The node keeps its groups (ReleaseGroups gives them up).
func (n *Node) Release(ctx context.Context, leases []Lease, redelivered bool) (lost []Lease, err error) {
	if n.closed.Load() {
		return nil, ErrClosed
	}
	if len(leases) == 0 {
		return nil, nil
	}
	inc := 0
	if redelivered {
		inc = 1
	}
	ids, epochs := split(leases)
	done, err := n.lazyIDs(ctx, n.t.release, ids, epochs, n.o.NodeID, inc, n.t.channel)
	if err != nil {
		return nil, n.dbErr("release", err)
	}
	return missing(leases, done), nil
}

// ReleaseGroups gives up this node's ownership of the groups of dest (the group's
// consumer closed, or a JMSXGroupSeq of -1 ended it), so that the next claim of any
// node may take them. Messages of those groups this node holds stay leased to it.
func (n *Node) ReleaseGroups(ctx context.Context, dest string, groups []string) error {
	if n.closed.Load() {
		return ErrClosed
	}
	if len(groups) == 0 {
		return nil
	}
	if _, err := n.pool.Exec(ctx, n.t.releaseGroups, dest, groups, n.o.NodeID, n.epoch); err != nil {
		return n.dbErr("release groups", err)
	}
	return nil
}

// lazyQuery runs sql in a transaction of its own committed with synchronous_commit
// off (PostgreSQL answers before its WAL flush) and hands its rows to scan. Claims,
// acknowledgements and releases take this way, as the jdbc adapter's acknowledgements
// do: a crash of the database server (not of a node) may undo the last ones, about
// three wal_writer_delay (600 ms by default), which delivers those messages again; a
// SEND is always committed synchronously.
func (n *Node) lazyQuery(ctx context.Context, scan func(pgx.Rows) error, sql string, args ...any) error {
	b := &pgx.Batch{}
	b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	b.Queue(sql, args...).Query(scan)
	return n.pool.SendBatch(ctx, b).Close()
}

// lazyIDs is lazyQuery of a statement returning IDs.
func (n *Node) lazyIDs(ctx context.Context, sql string, args ...any) (ids []int64, err error) {
	err = n.lazyQuery(ctx, func(rows pgx.Rows) error {
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	}, sql, args...)
	return ids, err
}

// DestStats counts the messages of one destination.
type DestStats struct {
	Dest      string
	Available int64 // nobody holds them (expired ones not yet deleted included)
	Leased    int64 // claimed by some node, not yet acknowledged
}

// Stats counts the messages of every destination of the shared tables, sorted by
// destination: one GROUP BY over the table, for operators, not for a hot path.
func (n *Node) Stats(ctx context.Context) ([]DestStats, error) {
	if n.closed.Load() {
		return nil, ErrClosed
	}
	rows, _ := n.pool.Query(ctx, n.t.stats)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[DestStats])
	if err != nil {
		return nil, n.dbErr("stats", err)
	}
	slices.SortFunc(out, func(a, b DestStats) int { return cmp.Compare(a.Dest, b.Dest) })
	return out, nil
}

// dbErr wraps a database error of op, without the password.
func (n *Node) dbErr(op string, err error) error {
	return pgstore.RedactError(fmt.Errorf("pgshared: %s: %w", op, err), n.o.Password)
}

func split(leases []Lease) (ids, epochs []int64) {
	ids = make([]int64, len(leases))
	epochs = make([]int64, len(leases))
	for i, l := range leases {
		ids[i], epochs[i] = l.ID, l.Epoch
	}
	return ids, epochs
}

// missing returns the leases whose ID is not in done.
func missing(leases []Lease, done []int64) []Lease {
	if len(done) == len(leases) {
		return nil
	}
	set := make(map[int64]bool, len(done))
	for _, id := range done {
		set[id] = true
	}
	var lost []Lease
	for _, l := range leases {
		if !set[l.ID] {
			lost = append(lost, l)
		}
		set[l.ID] = false // a lease given twice is done once
	}
	return lost
}
