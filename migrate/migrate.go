// Package migrate moves the messages stored in another STOMP broker's queues (ActiveMQ
// 5.x above all) into this broker, losing none and moving each once.
//
// Each queue is read by one consumer on the source with ack:client-individual and a
// prefetch window; every message is sent on to the same queue of the target with a
// receipt, many receipts outstanding at once, in the order received (so the order
// per queue, and per priority level, is kept). A source message is acknowledged only
// after the target's RECEIPT for it arrived: a crash of either broker or of the mover
// leaves every message on the source, the target, or both, never neither.
//
// "Both" is what duplicate detection resolves: every SEND carries the source's
// message-id in _AMQ_DUPL_ID (the duplicate-id header of Artemis, which this broker
// honours), so when a re-run moves again a message that reached the target but was not
// yet acknowledged on the source, the target answers its receipt and stores nothing.
//
// Headers: everything the source's MESSAGE carries goes on the SEND as it is
// (persistent, priority, expires as the absolute time it was, timestamp, which this
// broker keeps when a client sets it, type, correlation-id, reply-to, JMSXGroupID,
// JMSXGroupSeq, content-type, the application's own), except what belongs to the
// delivery on the source: message-id, destination, subscription, ack, redelivered and
// the redelivery counters, content-length (the client sets it from the body, so binary
// bodies survive) and receipt.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-stomp/stomp/v3/frame"

	"github.com/activemq-go/broker/internal/stompclient"
)

// DuplicateIDHeader carries the source's message-id on every moved message: the
// target's duplicate detection id.
const DuplicateIDHeader = "_AMQ_DUPL_ID"

// Defaults of Mover.
const (
	DefaultIdle   = 2 * time.Second
	DefaultWindow = 256
	DefaultSettle = 2 * time.Second
)

// flushAfter is how long the mover waits for the next source message, with sends
// outstanding, before it collects their receipts and acknowledges.
const flushAfter = 20 * time.Millisecond

// Endpoint is a broker to connect to.
type Endpoint struct {
	URL     *stompclient.URL
	Options stompclient.Options
}

// Mover moves queues from Source to Target.
type Mover struct {
	Source, Target Endpoint
	// Idle is how long a queue must stay silent to be drained. Default DefaultIdle.
	Idle time.Duration
	// Window is the source prefetch and the most target receipts outstanding.
	// Default DefaultWindow, at most stompclient.MaxOutstanding.
	Window int
}

// Result is what moving one queue did.
type Result struct {
	Queue   string
	Moved   int64 // messages sent to the target and acknowledged on the source
	Elapsed time.Duration
	// Duplicates counts, of Moved, the messages the target already held (duplicate
	// detection dropped them); -1 when not known (a queue's, without the target's
	// admin API).
	Duplicates int64
	// Empty: a browse found the queue empty on the source, so it was not waited on.
	Empty bool
	// IdleWaits counts the waits of Idle with nothing received that ended the move.
	IdleWaits int
}

// Rate is messages moved per second.
func (r Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Moved) / r.Elapsed.Seconds()
}

// pending is a message sent to the target whose receipt has not arrived.
type pending struct {
	receipt string
	msg     *frame.Frame
}

// MoveQueue moves the queue named queue until it stays empty for Idle; moved, if not
// nil, is called with each batch of messages acknowledged on the source. On an error
// the Result counts what was moved before it.
func (m *Mover) MoveQueue(ctx context.Context, queue string, moved func(n int)) (Result, error) {
	start := time.Now()
	res := Result{Queue: queue, Duplicates: -1}
	idle, window := m.Idle, m.Window
	if idle <= 0 {
		idle = DefaultIdle
	}
	if window <= 0 {
		window = DefaultWindow
	}
	window = min(window, stompclient.MaxOutstanding)
	dest := "/queue/" + queue

	empty, waited, err := m.browseEmpty(ctx, dest, idle)
	if err != nil {
		return res, err
	}
	if empty {
		res.Empty, res.Elapsed = !waited, time.Since(start)
		if waited {
			res.IdleWaits++
		}
		return res, nil
	}
	dst, err := stompclient.Dial(ctx, m.Target.URL, m.Target.Options)
	if err != nil {
		return res, fmt.Errorf("target: %w", err)
	}
	defer dst.Close()
	src, err := stompclient.Dial(ctx, m.Source.URL, m.Source.Options)
	if err != nil {
		return res, fmt.Errorf("source: %w", err)
	}
	defer src.Close()
	if err := src.Subscribe(ctx, stompclient.Subscription{ID: "migrate", Destination: dest, Ack: "client-individual", Prefetch: window}); err != nil {
		return res, fmt.Errorf("source: subscribe %s: %w", dest, err)
	}

	var fifo []pending
	last := start // of the last acknowledgement: the idle wait that ends a queue is not its time
	acks := make([]*frame.Frame, 0, window)
	collect := func(n int) error {
		acks = acks[:0]
		for range n {
			id, err := dst.AwaitReceipt(ctx)
			if err != nil {
				return fmt.Errorf("target: %w", err)
			}
			if fifo[0].receipt != id {
				return fmt.Errorf("%w: %q, expected %q", ErrReceipt, id, fifo[0].receipt)
			}
			acks = append(acks, fifo[0].msg)
			fifo[0] = pending{}
			fifo = fifo[1:]
		}
		if err := src.Ack(acks...); err != nil {
			return fmt.Errorf("source: ack: %w", err)
		}
		res.Moved += int64(n)
		last = time.Now()
		if moved != nil && n > 0 {
			moved(n)
		}
		return nil
	}
	for {
		msg, err := receive(ctx, src, len(fifo) > 0, idle)
		if err != nil {
			res.Elapsed = time.Since(start)
			return res, err
		}
		if msg == nil {
			if len(fifo) == 0 {
				res.IdleWaits++
				break // drained
			}
			if err := collect(len(fifo)); err != nil {
				res.Elapsed = time.Since(start)
				return res, err
			}
			continue
		}
		id, err := dst.Send(dest, sendHeaders(msg), msg.Body, true)
		if err != nil {
			res.Elapsed = time.Since(start)
			return res, fmt.Errorf("target: send: %w", err)
		}
		fifo = append(fifo, pending{receipt: id, msg: msg})
		if len(fifo) >= window {
			if err := collect(window / 2); err != nil {
				res.Elapsed = time.Since(start)
				return res, err
			}
		}
	}
	// Everything sent was acknowledged; DISCONNECT's receipt says the source handled
	// the acks.
	if err := src.Disconnect(ctx); err != nil {
		res.Elapsed = time.Since(start)
		return res, fmt.Errorf("source: %w", err)
	}
	if err := dst.Disconnect(ctx); err != nil {
		res.Elapsed = time.Since(start)
		return res, fmt.Errorf("target: %w", err)
	}
	res.Elapsed = last.Sub(start)
	return res, nil
}

// browseEmpty tells whether the queue dest is empty on the source, from the first
// answer to a browser (a separate connection, closed after): ActiveMQ sends a
// browser the messages waiting and then a MESSAGE with browser:end, at once, so an end
// first is an empty queue, told without waiting. A message first is a queue to move. A
// source that answers nothing within idle (one that does not browse, and holds no
// message: a broker that ignores browser:true delivers what waits to this
// client-individual subscription, unacknowledged) is empty too, after that wait
// (waited). ActiveMQ's browse includes the messages delivered to a consumer and not
// yet acknowledged (5.17: those of a killed run's connection too), so those make the
// queue one to move, and wait for. The queue is empty at the time of the browse: as
// with --idle, a message sent after it is not moved.
func (m *Mover) browseEmpty(ctx context.Context, dest string, idle time.Duration) (empty, waited bool, err error) {
	c, err := stompclient.Dial(ctx, m.Source.URL, m.Source.Options)
	if err != nil {
		return false, false, fmt.Errorf("source: %w", err)
	}
	defer c.Close()
	if err := c.Subscribe(ctx, stompclient.Subscription{ID: "browse", Destination: dest, Ack: "client-individual", Browser: true}); err != nil {
		return false, false, fmt.Errorf("source: browse %s: %w", dest, err)
	}
	msg, err := receive(ctx, c, false, idle)
	if err != nil {
		return false, false, err
	}
	empty = msg == nil || msg.Header.Get("browser") == "end"
	if err := c.Disconnect(ctx); err != nil {
		return false, false, fmt.Errorf("source: %w", err)
	}
	return empty, msg == nil, nil
}

// receive returns the source's next message, or nil when none came for idle (nothing
// pending) or flushAfter (sends pending, whose receipts are then collected).
func receive(ctx context.Context, src *stompclient.Conn, pending bool, idle time.Duration) (*frame.Frame, error) {
	wait := idle
	if pending {
		wait = flushAfter
	}
	rctx, cancel := context.WithTimeout(ctx, wait)
	msg, err := src.Receive(rctx)
	cancel()
	switch {
	case err == nil:
		return msg, nil
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return nil, nil
	}
	return nil, fmt.Errorf("source: %w", err)
}

// dropped are the headers of a source MESSAGE that belong to its delivery there, not to
// the message.
var dropped = map[string]bool{
	"message-id": true, "destination": true, "subscription": true, "ack": true,
	"redelivered": true, "redelivery-count": true, "JMSXDeliveryCount": true,
	"JMSXGroupFirstForConsumer": true, "content-length": true, "receipt": true,
	"transformation": true, DuplicateIDHeader: true,
}

// sendHeaders are the headers of the SEND that moves m: its own but the dropped ones,
// and its message-id as the duplicate id.
func sendHeaders(m *frame.Frame) *frame.Header {
	h := &frame.Header{}
	for i := range m.Header.Len() {
		k, v := m.Header.GetAt(i)
		if !dropped[k] {
			h.Add(k, v)
		}
	}
	h.Add(DuplicateIDHeader, m.Header.Get(frame.MessageId))
	return h
}

func hdr(kv ...string) *frame.Header {
	h := &frame.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}
