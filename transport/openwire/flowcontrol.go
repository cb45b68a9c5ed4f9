package openwire

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/broker"
	ow "github.com/activemq-go/broker/internal/openwire"
)

// Producer flow control, as ActiveMQ's broker does it for OpenWire: a send refused for
// lack of room (a destination's or the broker's memory limit, the store's) is held,
// its answer with it (a synchronous send's Response, an asynchronous one's ProducerAck),
// until there is room, or, with systemUsage sendFailIfNoSpaceAfterTimeout, until that
// time is up and the client gets its ResourceAllocationException. While a send is held
// the commands read behind it wait, up to maxHeldCommands; then the connection stops
// reading and TCP holds the client back.

// maxHeldCommands bounds the commands read behind a held send.
const maxHeldCommands = 1024

// heldSend is a send that producer flow control holds until retry is closed.
type heldSend struct {
	m        *ow.Message
	retry    <-chan struct{}
	deadline time.Time   // zero: held as long as it takes
	timer    *time.Timer // fires at deadline
}

// reading reports whether the owner takes the next command from the reader.
func (c *conn) reading() bool { return c.held == nil || len(c.behind) < maxHeldCommands }

// heldWake returns what the owner waits on for a held send.
func (c *conn) heldWake() (retry <-chan struct{}, expire <-chan time.Time) {
	if c.held == nil {
		return nil, nil
	}
	if c.held.timer != nil {
		expire = c.held.timer.C
	}
	return c.held.retry, expire
}

// hold keeps m, whose send failed with err, when err asks to retry and its deadline has
// not passed; it reports whether it did.
func (c *conn) hold(m *ow.Message, err error) bool {
	var be *broker.Error
	if !errors.As(err, &be) || be.Retry == nil {
		return false
	}
	h := c.retrying
	if h == nil || h.m != m {
		c.bc.SetBlocked(true)
		h = &heldSend{m: m}
		if wait := c.bc.NoSpaceWait(); wait > 0 {
			h.deadline = time.Now().Add(wait)
			h.timer = time.NewTimer(wait)
		}
		if time.Since(c.heldLogged) >= time.Minute {
			c.heldLogged = time.Now()
			c.log.Info("producer held until there is room (logged once a minute per connection)", slog.String("reason", be.Message))
		}
	} else if !h.deadline.IsZero() && !time.Now().Before(h.deadline) {
		return false
	}
	h.retry = be.Retry
	c.held = h
	return true
}

// retryHeld sends the held message again (room may have been freed, or its time is up
// and it gets its exception), then the commands read behind it until one is held again.
func (c *conn) retryHeld(ctx context.Context) {
	h := c.held
	c.held, c.retrying = nil, h
	c.onMessage(ctx, h.m)
	c.retrying = nil
	if c.held != h && h.timer != nil {
		h.timer.Stop()
	}
	if c.held == nil {
		c.bc.SetBlocked(false)
	}
	for c.held == nil && len(c.behind) > 0 && !c.closing {
		cmd := c.behind[0]
		c.behind[0] = nil
		c.behind = c.behind[1:]
		c.handle(ctx, cmd)
	}
	if len(c.behind) == 0 {
		c.behind = nil
	}
}
