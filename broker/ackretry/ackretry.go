// Package ackretry writes again the store acknowledgements of auto-acknowledged
// messages whose first write failed (see Retrier). It asks nothing of the broker but
// its store, its logger and the wait group its Close waits on.
package ackretry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// Bounds of Retrier: how many acknowledgements it keeps, and how long it waits
// between attempts (doubling from the first to the last).
const (
	maxRetriedAcks   = 1 << 20
	ackRetryFirst    = 100 * time.Millisecond
	ackRetryLongest  = 30 * time.Second
	ackRetryLogEvery = time.Minute
)

// Retrier writes again the store acknowledgements of auto-acknowledged messages
// whose first write failed. Those messages were consumed (written to their client); a
// store that kept them would deliver them again after a restart, and would count them
// as stored. It tries, with a growing pause, until the store takes them, and once more
// when the broker closes; past maxRetriedAcks it gives the newest up, with a log line.
type Retrier struct {
	store persistence.Store
	log   *slog.Logger
	wg    *sync.WaitGroup // the broker's background goroutines, which Close waits for

	mu      sync.Mutex
	acks    []destinations.StoreAck
	timer   *time.Timer
	delay   time.Duration
	logged  time.Time
	failed  int64 // acknowledgements whose write failed since the last log line
	dropped int64
	stopped bool
}

// New returns a Retrier that writes to store and counts its timers in wg.
func New(store persistence.Store, log *slog.Logger, wg *sync.WaitGroup) *Retrier {
	return &Retrier{store: store, log: log, wg: wg}
}

// Add takes acknowledgements whose write failed with err.
func (r *Retrier) Add(acks []destinations.StoreAck, err error) {
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
		r.log.Error("auto-ack store write failed; writing it again until the store takes it",
			slog.Int64("acknowledgements", r.failed), slog.Int("waiting", len(r.acks)), slog.Any("err", err))
		if r.dropped > 0 {
			r.log.Error("too many auto-acknowledgements waiting to be written: the newest are given up, their messages come back after a restart",
				slog.Int64("givenUp", r.dropped), slog.Int("limit", maxRetriedAcks))
		}
		r.failed, r.dropped = 0, 0
	}
	r.scheduleLocked()
}

func (r *Retrier) scheduleLocked() {
	if r.timer != nil || r.stopped || len(r.acks) == 0 {
		return
	}
	if r.delay == 0 {
		r.delay = ackRetryFirst
	}
	r.wg.Add(1)
	r.timer = time.AfterFunc(r.delay, r.retry)
}

// retry writes what is waiting, or schedules the next attempt.
func (r *Retrier) retry() {
	defer r.wg.Done()
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
	r.log.Info("auto-acknowledgements written after a failed store write", slog.Int("acknowledgements", len(acks)))
	r.scheduleLocked()
}

func (r *Retrier) write(acks []destinations.StoreAck) error {
	if len(acks) == 0 {
		return nil
	}
	batch := r.store.Begin()
	for _, a := range acks {
		a.AddTo(batch)
	}
	return batch.Commit(context.Background(), persistence.Sync)
}

// Stop ends the retries; the caller then waits for the broker's goroutines and calls
// Flush before closing the store.
func (r *Retrier) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	if r.timer != nil && r.timer.Stop() {
		r.timer = nil
		r.wg.Done()
	}
}

// Flush makes the last attempt, at close.
func (r *Retrier) Flush() {
	r.mu.Lock()
	acks := r.acks
	r.acks = nil
	r.mu.Unlock()
	if err := r.write(acks); err != nil {
		r.log.Error("auto-acknowledgements not written: their messages come back after a restart",
			slog.Int("acknowledgements", len(acks)), slog.Any("err", err))
	}
}
