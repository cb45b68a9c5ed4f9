package stomp

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/go-stomp/stomp/v3/frame"

	"github.com/activemq-go/broker/broker"
)

// maxHeldFrames bounds the frames read behind a held SEND; past it the connection is not
// read until the SEND goes through, and TCP holds the client back.
const maxHeldFrames = 256

// heldSend is a SEND that found no room (producer flow control, see package
// broker/flowcontrol): it is sent again when retry closes, and refused with err once the
// deadline passes (none when the broker holds producers without a limit).
type heldSend struct {
	f        *frame.Frame
	retry    <-chan struct{}
	err      error
	deadline time.Time
	timer    *time.Timer
}

// accept handles f, or keeps it behind a held SEND to be handled, in order, when that
// SEND goes through. ACK and NACK outside a transaction pass the held SEND: they free
// the room it waits for when the client consumes on the same connection.
func (s *session) accept(ctx context.Context, f *frame.Frame) {
	if s.held == nil {
		s.handle(ctx, f)
		return
	}
	if (f.Command == "ACK" || f.Command == "NACK") && f.Header.Get("transaction") == "" {
		s.handle(ctx, f)
		return
	}
	s.behind = append(s.behind, f)
}

// reading reports whether the session reads more frames now.
func (s *session) reading() bool {
	return len(s.pending) < maxInFlight && (s.held == nil || len(s.behind) < maxHeldFrames)
}

// hold keeps f, whose SEND failed with err, when err asks to retry and the deadline has
// not passed; it reports whether it did.
func (s *session) hold(f *frame.Frame, err error) bool {
	var be *broker.Error
	if !errors.As(err, &be) || be.Retry == nil {
		return false
	}
	h := s.retrying
	if h == nil || h.f != f {
		s.conn.SetBlocked(true)
		h = &heldSend{f: f}
		if wait := s.conn.NoSpaceWait(); wait > 0 {
			h.deadline = time.Now().Add(wait)
			h.timer = time.NewTimer(wait)
		}
		if time.Since(s.heldLogged) >= time.Minute {
			s.heldLogged = time.Now()
			s.log.Info("producer held until there is room (logged once a minute per connection)", slog.String("reason", be.Message))
		}
	} else if !h.deadline.IsZero() && !time.Now().Before(h.deadline) {
		return false
	}
	h.retry, h.err = be.Retry, err
	s.held = h
	return true
}

// heldWake returns what the run loop waits on for a held SEND.
func (s *session) heldWake() (retry <-chan struct{}, expire <-chan time.Time) {
	if s.held == nil {
		return nil, nil
	}
	if s.held.timer != nil {
		expire = s.held.timer.C
	}
	return s.held.retry, expire
}

// retryHeld sends the held SEND again (room may have been freed, or its time is up and
// it gets its ERROR), then the frames behind it until one is held again.
func (s *session) retryHeld(ctx context.Context) {
	h := s.held
	s.held, s.retrying = nil, h
	s.handle(ctx, h.f)
	s.retrying = nil
	if s.held != h && h.timer != nil {
		h.timer.Stop()
	}
	if s.held == nil {
		s.conn.SetBlocked(false)
	}
	for s.held == nil && len(s.behind) > 0 && !s.closing {
		f := s.behind[0]
		s.behind[0] = nil
		s.behind = s.behind[1:]
		s.handle(ctx, f)
	}
	if len(s.behind) == 0 {
		s.behind = nil
	}
}
