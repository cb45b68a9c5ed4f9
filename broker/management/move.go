package management

import (
	"context"
	"fmt"
	"log/slog"

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
	OriginalDestinationHeader = destinations.OriginalDestinationProperty
	DeadLetterCauseHeader     = destinations.DeadLetterCauseProperty
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

// MoveResult is what MoveMessages did: how many messages it moved, and those of a retry
// it left where they were because their producer may not write their original
// destination (oldest first, at most maxRefusals).
type MoveResult struct {
	Moved   int
	Refused []Refusal
	// MoreRefused counts the refused messages beyond those listed.
	MoreRefused int
}

// Refusal is a message a retry did not move, and why.
type Refusal struct {
	ID, Reason string
}

// maxRefusals bounds the refusals a MoveResult lists.
const maxRefusals = 100

// MoveMessages moves (or copies) waiting messages of the queue called from as r says
// and returns how many it moved. Each chunk of messages is added to its targets and
// (for a move) deleted from the source in one store batch: a crash halfway leaves each
// message in exactly one place, and a message is dispatched from its target only once
// that batch is durable. Messages sent to the queue after the move began stay. A retry
// (r.Original) also leaves, and reports, each message whose producer may not write its
// original destination now (Config.ProducerMayWrite); the others go ahead.
func (m *Manager) MoveMessages(ctx context.Context, who, from string, r MoveRequest) (MoveResult, error) {
	var res MoveResult
	q, err := m.queue(from)
	if err != nil {
		return res, err
	}
	var sel *selector.Selector
	if r.Selector != "" {
		if sel, err = selector.Parse(r.Selector); err != nil {
			return res, errorf(ErrInvalidSelector, "invalid selector %q: %v", r.Selector, err)
		}
	}
	source := destinations.Name{Kind: destinations.Queue, Name: from}
	if !r.Original {
		if err := m.checkMoveTarget(source, r.To); err != nil {
			return res, err
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
	copied := map[uint64]bool{}   // the source sequences copied (Copy: they stay, so are met again)
	refused := map[uint64]bool{}  // the source sequences a retry refused
	mayWrite := map[string]bool{} // user NUL destination: ProducerMayWrite's answers
	match := func(msg *persistence.Message) bool {
		if copied[msg.Seq] || refused[msg.Seq] || (sel != nil && !sel.MatchesMessage(msg, msg.RedeliveryCount+1)) {
			return false
		}
		to, ok := target(msg)
		if ok && r.Original {
			if why := m.producerRefusal(msg, to, mayWrite); why != "" {
				refused[msg.Seq] = true
				res.refuse(Refusal{ID: msg.ID, Reason: why})
				return false
			}
		}
		return ok
	}
	below := q.NextSeq()
	var after uint64
	for r.Limit <= 0 || res.Moved < r.Limit {
		if err := ctx.Err(); err != nil {
			m.Failed(who, op, q.ClientName(), res.Moved, err)
			return res, err
		}
		max := moveChunk
		if r.Limit > 0 {
			max = min(max, r.Limit-res.Moved)
		}
		c, err := q.Claim(ctx, destinations.ClaimOptions{Match: match, Max: max, MaxBytes: moveChunkBytes, Keep: true, Below: below, After: after})
		if err != nil {
			err = storeOrCtx(err)
			m.Failed(who, op, q.ClientName(), res.Moved, err)
			return res, err
		}
		if c.Len() == 0 {
			c.Finish(nil)
			break
		}
		n, err := m.moveChunk(ctx, c, target, r.Copy, r.Original)
		if err != nil {
			m.Failed(who, op, q.ClientName(), res.Moved, err)
			return res, err
		}
		if r.Copy {
			for _, msg := range c.Msgs {
				copied[msg.Seq] = true
			}
		}
		res.Moved += n
		after = c.Next
		if !c.More {
			break
		}
	}
	attrs := []any{slog.String("to", moveTargetName(r))}
	if n := len(res.Refused) + res.MoreRefused; n > 0 {
		attrs = append(attrs, slog.Int("refused", n))
	}
	m.Done(who, op, q.ClientName(), res.Moved, attrs...)
	return res, nil
}

// refuse lists f, or counts it beyond maxRefusals.
func (res *MoveResult) refuse(f Refusal) {
	if len(res.Refused) < maxRefusals {
		res.Refused = append(res.Refused, f)
	} else {
		res.MoreRefused++
	}
}

// producerRefusal says why a retry may not send msg back to to, its original
// destination: its producer, the user its JMSXUserID names (the broker's record when
// populateJMSXUserID is on), may not write there now. A message that names no producer
// goes back, and every message without an authorization map. known holds the answers
// asked so far, by user and destination.
func (m *Manager) producerRefusal(msg *persistence.Message, to destinations.Name, known map[string]bool) string {
	if m.c.ProducerMayWrite == nil {
		return ""
	}
	user, _ := msg.Headers.Get(destinations.UserIDProperty)
	if user == "" {
		return ""
	}
	key := user + "\x00" + to.String()
	ok, asked := known[key]
	if !asked {
		ok = m.c.ProducerMayWrite(user, to)
		known[key] = ok
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("its producer %s (JMSXUserID) may not write to %s; move it there by name to send it anyway", user, to)
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
			msg.Headers = msg.Headers.Without(destinations.DeadLetterProperties...)
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
