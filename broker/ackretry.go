package broker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// Bounds of ackRetrier: how many acknowledgements it keeps, and how long it waits
// between attempts (doubling from the first to the last).
const (
	maxRetriedAcks   = 1 << 20
	ackRetryFirst    = 100 * time.Millisecond
	ackRetryLongest  = 30 * time.Second
	ackRetryLogEvery = time.Minute
)

// ackRetrier writes again the store acknowledgements of auto-acknowledged messages
// whose first write failed. Those messages were consumed (written to their client); a
// store that kept them would deliver them again after a restart, and would count them
// as stored. It tries, with a growing pause, until the store takes them, and once more
// when the broker closes; past maxRetriedAcks it gives the newest up, with a log line.
type ackRetrier struct {
	b *Broker

	mu      sync.Mutex
	acks    []destinations.StoreAck
	timer   *time.Timer
	delay   time.Duration
	logged  time.Time
	failed  int64 // acknowledgements whose write failed since the last log line
	dropped int64
	stopped bool
}

// failed takes acknowledgements whose write failed with err.
func (r *ackRetrier) add(acks []destinations.StoreAck, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	room := max(maxRetriedAcks-len(r.acks), 0)
	if len(acks) > room {
		r.dropped += int64(len(acks) - room)
		acks = acks[:room]
	}
	r.acks = append(r.acks, acks...)
	r.failed += int64(len(acks))
	if now := time.Now(); now.Sub(r.logged) >= ackRetryLogEvery {
		r.logged = now
		r.b.log.Error("auto-ack store write failed; writing it again until the store takes it",
			slog.Int64("acknowledgements", r.failed), slog.Int("waiting", len(r.acks)), slog.Any("err", err))
		if r.dropped > 0 {
			r.b.log.Error("too many auto-acknowledgements waiting to be written: the newest are given up, their messages come back after a restart",
				slog.Int64("givenUp", r.dropped), slog.Int("limit", maxRetriedAcks))
		}
		r.failed, r.dropped = 0, 0
	}
	r.scheduleLocked()
}

func (r *ackRetrier) scheduleLocked() {
	if r.timer != nil || r.stopped || len(r.acks) == 0 {
		return
	}
	if r.delay == 0 {
		r.delay = ackRetryFirst
	}
	r.b.wg.Add(1)
	r.timer = time.AfterFunc(r.delay, r.retry)
}

// retry writes what is waiting, or schedules the next attempt.
func (r *ackRetrier) retry() {
	defer r.b.wg.Done()
	r.mu.Lock()
	r.timer = nil
	if r.stopped {
		r.mu.Unlock()
		return
	}
	acks := r.acks
	r.acks = nil
	r.mu.Unlock()
	err := r.write(acks)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.acks = append(acks, r.acks...)
		r.delay = min(r.delay*2, ackRetryLongest)
		r.scheduleLocked()
		return
	}
	r.delay = 0
	r.b.log.Info("auto-acknowledgements written after a failed store write", slog.Int("acknowledgements", len(acks)))
	r.scheduleLocked()
}

func (r *ackRetrier) write(acks []destinations.StoreAck) error {
	if len(acks) == 0 {
		return nil
	}
	batch := r.b.store.Begin()
	for _, a := range acks {
		a.AddTo(batch)
	}
	return batch.Commit(context.Background(), persistence.Sync)
}

// stop ends the retries; the caller then waits for the broker's goroutines and calls
// flush before closing the store.
func (r *ackRetrier) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	if r.timer != nil && r.timer.Stop() {
		r.timer = nil
		r.b.wg.Done()
	}
}

// flush makes the last attempt, at close.
func (r *ackRetrier) flush() {
	r.mu.Lock()
	acks := r.acks
	r.acks = nil
	r.mu.Unlock()
	if err := r.write(acks); err != nil {
		r.b.log.Error("auto-acknowledgements not written: their messages come back after a restart",
			slog.Int("acknowledgements", len(acks)), slog.Any("err", err))
	}
}
