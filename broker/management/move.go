package management

import (
	"context"
	"log/slog"
	"slices"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/selector"
	"github.com/activemq-go/broker/persistence"
)

// Moving and copying a queue's waiting messages: to another destination or, for a
// dead-letter queue retried, to each message's original destination, in chunks, each
// of which is one store batch that adds the messages to their targets (Host.Accept)
// and (for a move) deletes them from their source.

// moveChunk and moveChunkBytes bound one store batch of a move or copy.
const (
	moveChunk      = 1000
	moveChunkBytes = 16 << 20
)

// Headers the dead-letter strategy adds to a dead-letter copy (destinations' deadLetter).
const (
	OriginalDestinationHeader = "original-destination"
	DeadLetterCauseHeader     = "dlqDeliveryFailureCause"
)

// MoveRequest says which messages of a queue MoveMessages moves where.
type MoveRequest struct {
	// To is the target; with Original each message goes back to the destination its
	// original-destination header names (a dead-letter queue retried), and those
	// without one stay.
	To       destinations.Name
	Original bool
	// Selector picks the messages (empty: all); Limit bounds how many (0: all).
	Selector string
	Limit    int
	// Copy leaves the messages where they are and sends copies, each with a new
	// message id; a moved message keeps its id.
	Copy bool
}

// MoveMessages moves (or copies) waiting messages of the queue called from as r says
// and returns how many it moved. Each chunk of messages is added to its targets and
// (for a move) deleted from the source in one store batch: a crash halfway leaves each
// message in exactly one place, and a message is dispatched from its target only once
// that batch is durable. Messages sent to the queue after the move began stay.
func (m *Manager) MoveMessages(ctx context.Context, who, from string, r MoveRequest) (int, error) {
	q, err := m.queue(from)
	if err != nil {
		return 0, err
	}
	var sel *selector.Selector
	if r.Selector != "" {
		if sel, err = selector.Parse(r.Selector); err != nil {
			return 0, errorf(ErrInvalidSelector, "invalid selector %q: %v", r.Selector, err)
		}
	}
	source := destinations.Name{Kind: destinations.Queue, Name: from}
	if !r.Original {
		if err := m.checkMoveTarget(source, r.To); err != nil {
			return 0, err
		}
	}
	op := "move"
	if r.Copy {
		op = "copy"
	}
	m.c.Log.Info(op+" started", slog.String("dest", q.ClientName()), slog.String("to", moveTargetName(r)), slog.String("by", who))
	target := func(msg *persistence.Message) (destinations.Name, bool) {
		if !r.Original {
			return r.To, true
		}
		v, ok := msg.Headers.Get(OriginalDestinationHeader)
		if !ok {
			return destinations.Name{}, false
		}
		d, err := destinations.ParseOne(v)
		if err != nil || m.checkMoveTarget(source, d) != nil {
			return destinations.Name{}, false
		}
		return d, true
	}
	copied := map[uint64]bool{} // the source sequences copied (Copy: they stay, so are met again)
	match := func(msg *persistence.Message) bool {
		if copied[msg.Seq] || (sel != nil && !sel.MatchesMessage(msg, msg.RedeliveryCount+1)) {
			return false
		}
		_, ok := target(msg)
		return ok
	}
	below := q.NextSeq()
	var after uint64
	moved := 0
	for r.Limit <= 0 || moved < r.Limit {
		if err := ctx.Err(); err != nil {
			m.Failed(who, op, q.ClientName(), moved, err)
			return moved, err
		}
		max := moveChunk
		if r.Limit > 0 {
			max = min(max, r.Limit-moved)
		}
		c, err := q.Claim(ctx, destinations.ClaimOptions{Match: match, Max: max, MaxBytes: moveChunkBytes, Keep: true, Below: below, After: after})
		if err != nil {
			err = storeOrCtx(err)
			m.Failed(who, op, q.ClientName(), moved, err)
			return moved, err
		}
		if c.Len() == 0 {
			c.Finish(nil)
			break
		}
		n, err := m.moveChunk(ctx, c, target, r.Copy, r.Original)
		if err != nil {
			m.Failed(who, op, q.ClientName(), moved, err)
			return moved, err
		}
		if r.Copy {
			for _, msg := range c.Msgs {
				copied[msg.Seq] = true
			}
		}
		moved += n
		after = c.Next
		if !c.More {
			break
		}
	}
	m.Done(who, op, q.ClientName(), moved, slog.String("to", moveTargetName(r)))
	return moved, nil
}

func moveTargetName(r MoveRequest) string {
	if r.Original {
		return "original"
	}
	return r.To.String()
}

// checkMoveTarget refuses a target messages of source cannot be moved to: itself, a
// temporary or wildcard destination, a stream (its appends cannot be part of a store
// batch).
func (m *Manager) checkMoveTarget(source, to destinations.Name) error {
	switch {
	case to.Kind != destinations.Queue && to.Kind != destinations.Topic:
		return errorf(destinations.ErrInvalidDestination, "cannot move messages to a temporary destination: %s", to)
	case to.IsWildcard():
		return errorf(destinations.ErrInvalidDestination, "cannot move messages to a wildcard destination: %s", to)
	case to == source:
		return errorf(destinations.ErrInvalidDestination, "cannot move messages of %s to itself", to)
	case to.Kind == destinations.Topic && m.c.Host.Policy(destinations.Topic, to.Name).IsStream():
		return errorf(destinations.ErrInvalidDestination, "cannot move messages to a stream: %s (its appends cannot be atomic with the store)", to)
	}
	return nil
}

// moveChunk writes the claimed messages to their targets and, for a move, deletes them
// from the source, in one store batch, then settles both sides with its outcome. Topic
// targets publish to their live subscribers once the batch is durable.
func (m *Manager) moveChunk(ctx context.Context, c *destinations.Claim, target func(*persistence.Message) (destinations.Name, bool), copyMsgs, original bool) (int, error) {
	batch := m.c.Store.Begin()
	var entries []destinations.Accepted
	var publish []func()
	settle := func(err error) {
		destinations.SettleAll(entries, err)
		if copyMsgs {
			c.Release()
		} else {
			c.Finish(err)
		}
	}
	if !copyMsgs {
		c.Ack(batch)
	}
	for _, msg := range c.Msgs {
		to, _ := target(msg)
		msg = msg.Clone()
		msg.Dest, msg.Seq, msg.Subs, msg.RedeliveryCount = "", 0, nil, 0
		if copyMsgs {
			msg.ID = m.c.Host.NewMessageID()
		}
		if original {
			msg.Headers = withoutHeaders(msg.Headers, OriginalDestinationHeader, DeadLetterCauseHeader)
		}
		acc, pub, err := m.c.Host.Accept(batch, to, msg)
		entries = append(entries, acc...)
		if err != nil {
			batch.Rollback()
			settle(err)
			return 0, err
		}
		if pub != nil {
			publish = append(publish, pub)
		}
	}
	var err error
	if batch.Len() == 0 {
		batch.Rollback()
	} else {
		err = batch.Commit(context.WithoutCancel(ctx), persistence.Sync)
	}
	settle(err)
	if err != nil {
		return 0, destinations.StoreError(err)
	}
	for _, p := range publish {
		p()
	}
	return c.Len(), nil
}

// withoutHeaders returns h without the headers named.
func withoutHeaders(h persistence.Headers, names ...string) persistence.Headers {
	out := h[:0:0]
	for i := 0; i+1 < len(h); i += 2 {
		if !slices.Contains(names, h[i]) {
			out = append(out, h[i], h[i+1])
		}
	}
	return out
}
