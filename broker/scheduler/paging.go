package scheduler

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// The store side of the scheduler: the keys of persistent jobs, their stored form,
// paging them out of memory and back (see the package comment), and reading them
// back at start.

// reserveKey finds a key for a persistent job due at due that no stored job, and no job
// being stored or deleted, has, and reserves it.
func (s *Scheduler) reserveKey(ctx context.Context, due int64) (uint64, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return 0, &destinations.Error{Message: "broker is shutting down", Err: destinations.ErrClosed}
		}
		k := jobKey(due, s.counter)
		s.counter++
		_, inMemory := s.byKey[k]
		_, reserved := s.reserved[k]
		_, deleting := s.deleting[k]
		if inMemory || reserved || deleting {
			s.mu.Unlock()
			continue
		}
		// Memory holds every stored key up to cutoff; beyond it only the store knows.
		check := s.paged && k > s.cutoff
		s.reserved[k] = struct{}{}
		s.mu.Unlock()
		if !check {
			return k, nil
		}
		taken, err := s.storedKey(ctx, k)
		if err != nil || taken {
			s.unreserve(k)
		}
		if err != nil {
			return 0, destinations.StoreError(err)
		}
		if !taken {
			return k, nil
		}
	}
}

func (s *Scheduler) unreserve(k uint64) {
	s.mu.Lock()
	delete(s.reserved, k)
	s.mu.Unlock()
}

// storedKey reports whether the store holds a job under key k.
func (s *Scheduler) storedKey(ctx context.Context, k uint64) (bool, error) {
	if c, ok := s.store.(persistence.Container); ok {
		return c.Contains(ctx, StoreDest, k)
	}
	found := false
	err := s.store.Scan(ctx, StoreDest, k-1, 1, func(m *persistence.Message) error {
		found = m.Seq == k
		return nil
	})
	return found, err
}

// stored is the job as kept in the store.
func (s *Scheduler) stored(j *Job) *persistence.Message {
	c := j.msg.Clone()
	c.Dest, c.Seq = StoreDest, j.key
	names := make([]string, len(j.dests))
	for i, d := range j.dests {
		names[i] = d.String()
	}
	c.Headers = append(c.Headers,
		hdrJobDests, strings.Join(names, ","),
		hdrJobDue, strconv.FormatInt(j.due, 10),
		hdrJobRemaining, strconv.Itoa(j.remaining),
		hdrJobPeriod, strconv.FormatInt(j.period, 10))
	return c
}

// errBadJob: a stored job cannot be delivered any more.
var errBadJob = errors.New("broker: bad scheduled job")

// parseJob reads a stored job back; an error wrapping errBadJob means it names no
// destination that parses.
func parseJob(m *persistence.Message) (*Job, error) {
	c := m.Clone()
	j := &Job{key: c.Seq}
	var kept persistence.Headers
	var dests string
	for i := 0; i+1 < len(c.Headers); i += 2 {
		k, v := c.Headers[i], c.Headers[i+1]
		switch k {
		case hdrJobDests:
			dests = v
		case hdrJobDue:
			j.due, _ = strconv.ParseInt(v, 10, 64)
		case hdrJobRemaining:
			j.remaining, _ = strconv.Atoi(v)
		case hdrJobPeriod:
			j.period, _ = strconv.ParseInt(v, 10, 64)
		default:
			kept = append(kept, k, v)
		}
	}
	var err error
	if j.dests, err = destinations.Parse(dests); err != nil || len(j.dests) == 0 {
		return nil, fmt.Errorf("%w: destination %q: %v", errBadJob, dests, err)
	}
	c.Headers = kept
	j.msg = c
	j.size = int64(c.Size())
	return j, nil
}

// admitLocked puts a job in memory, or leaves it in the store only when it falls beyond
// what memory holds.
func (s *Scheduler) admitLocked(j *Job) {
	if s.closed {
		return
	}
	if j.msg.Persistent {
		if _, gone := s.removed[j.key]; gone {
			delete(s.removed, j.key) // removed while its store write was under way
			return
		}
		if s.paged && j.key > s.cutoff {
			if s.loading {
				s.arrived = append(s.arrived, j)
			}
			return
		}
		if s.byKey[j.key] != nil {
			return // read back by a load already
		}
		s.byKey[j.key] = j
		s.memBytes += j.size
		s.peakBytes = max(s.peakBytes, s.memBytes)
	}
	s.mem.Add(j.size)
	heap.Push(&s.jobs, j)
	s.evictLocked()
	s.armLocked()
}

// releaseLocked accounts for a job leaving memory (out of the heap already).
func (s *Scheduler) releaseLocked(j *Job) {
	if j.msg.Persistent {
		delete(s.byKey, j.key)
		s.memBytes -= j.size
	}
	s.mem.Add(-j.size)
	s.space.Notify()
}

// evictLocked keeps the persistent jobs in memory within memLimit: past it the latest
// ones leave memory (they are in the store) until three quarters of it are used, and
// the cutoff moves below them. The soonest job always stays. Nothing is evicted while a
// load runs (it sets the cutoff when it ends, then evicts).
func (s *Scheduler) evictLocked() {
	if s.memBytes <= s.memLimit || s.loading {
		return
	}
	var ps []*Job
	for _, j := range s.jobs {
		if j.msg.Persistent {
			ps = append(ps, j)
		}
	}
	slices.SortFunc(ps, func(a, b *Job) int { return cmp.Compare(b.key, a.key) })
	var lowest uint64
	for _, j := range ps[:len(ps)-1] {
		if s.memBytes <= s.memLimit/4*3 {
			break
		}
		heap.Remove(&s.jobs, j.index)
		s.releaseLocked(j)
		lowest = j.key
	}
	if lowest == 0 {
		return
	}
	s.paged, s.cutoff = true, lowest-1
	if now := time.Now(); now.Sub(s.logged) > time.Minute {
		s.logged = now
		s.log.Info("scheduled messages over the scheduler's memory limit: the later ones wait in the store",
			slog.Int64("schedulerMemoryLimit", s.memLimit))
	}
}

// maybeLoadLocked starts reading paged-out jobs back once memory holds less than half
// the limit.
func (s *Scheduler) maybeLoadLocked() {
	if !s.paged || s.loading || s.closed || s.starting || s.memBytes >= s.memLimit/2 {
		return
	}
	s.loading = true
	s.wg.Add(1)
	go s.load()
}

// load reads the next stored jobs after cutoff into memory, in key order, up to half the
// memory limit.
func (s *Scheduler) load() {
	defer s.wg.Done()
	s.mu.Lock()
	after := s.cutoff
	budget := max(s.memLimit/2-s.memBytes, 1)
	s.mu.Unlock()

	var got []*Job
	var bad []badJob
	var loaded int64
	n, last, complete := 0, after, true
	err := s.store.Scan(context.Background(), StoreDest, after, pageBatch, func(m *persistence.Message) error {
		n++
		last = m.Seq
		j, err := parseJob(m)
		if err != nil {
			bad = append(bad, badJob{m.Seq, err})
			return nil
		}
		if keyDue(j.key) != j.due {
			j.due = keyDue(j.key) // never after the start's migration; the key decides
		}
		got = append(got, j)
		if loaded += j.size; loaded >= budget {
			complete = false
			return errStopScan
		}
		return nil
	})
	if n == pageBatch {
		complete = false
	}
	s.mu.Lock()
	s.loading = false
	if err != nil && !errors.Is(err, errStopScan) {
		s.log.Error("reading scheduled messages from the store failed; retrying", slog.Any("err", err))
		s.mu.Unlock()
		s.retryLater(func() {
			s.mu.Lock()
			s.maybeLoadLocked()
			s.mu.Unlock()
		})
		return
	}
	if complete {
		s.paged, s.cutoff = false, 0
	} else {
		s.cutoff = last
	}
	for _, j := range got {
		if _, gone := s.deleting[j.key]; !gone {
			s.admitLocked(j)
		}
	}
	arrived := s.arrived
	s.arrived = nil
	for _, j := range arrived {
		s.admitLocked(j)
	}
	for _, k := range s.deleted {
		delete(s.deleting, k)
	}
	s.deleted = nil
	s.evictLocked()
	s.armLocked()
	s.maybeLoadLocked()
	s.mu.Unlock()
	s.dropBad(bad)
}

// retryLater runs fn after jobRetryDelay. fn finds the scheduler closed if it closed
// meanwhile, and then does nothing.
func (s *Scheduler) retryLater(fn func()) { time.AfterFunc(jobRetryDelay, fn) }

type badJob struct {
	seq uint64
	err error
}

// dropBad deletes stored jobs that can never be delivered (their destination no longer
// parses), with a log line each.
func (s *Scheduler) dropBad(bad []badJob) {
	if len(bad) == 0 {
		return
	}
	batch := s.store.Begin()
	for _, bj := range bad {
		s.log.Warn("scheduled message deleted: its destination no longer parses",
			slog.Uint64("job", bj.seq), slog.Any("err", bj.err))
		batch.Ack(StoreDest, bj.seq)
	}
	if err := batch.Commit(context.Background(), persistence.Sync); err != nil {
		s.log.Error("deleting undeliverable scheduled messages failed", slog.Any("err", err))
	}
}

// Recover loads the stored jobs at start: the soonest, up to the memory limit; the
// others stay in the store for later loads. Jobs stored by an older version, keyed by a
// plain counter, are rekeyed first.
func (s *Scheduler) Recover(ctx context.Context) error {
	if err := s.rekey(ctx); err != nil {
		return err
	}
	var bad []badJob
	err := s.store.Scan(ctx, StoreDest, 0, 0, func(m *persistence.Message) error {
		j, err := parseJob(m)
		if err != nil {
			bad = append(bad, badJob{m.Seq, err})
			return nil
		}
		if keyDue(j.key) != j.due {
			j.due = keyDue(j.key)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.paged {
			return errStopScan // the rest is read as memory drains
		}
		s.admitLocked(j)
		return nil
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return err
	}
	s.dropBad(bad)
	s.mu.Lock()
	s.starting = false
	s.armLocked()
	s.maybeLoadLocked()
	s.mu.Unlock()
	return nil
}

// rekeyBatch is how many old-style jobs one rekeying batch rewrites.
const rekeyBatch = 1000

// rekey rewrites jobs whose key is not their due time (as an older version stored them:
// they sort before every other job) under a key that is.
func (s *Scheduler) rekey(ctx context.Context) error {
	for {
		var old []*persistence.Message
		err := s.store.Scan(ctx, StoreDest, 0, rekeyBatch, func(m *persistence.Message) error {
			if due, _ := m.Headers.Get(hdrJobDue); due == strconv.FormatInt(keyDue(m.Seq), 10) {
				return errStopScan
			}
			old = append(old, m.Clone())
			return nil
		})
		if err != nil && !errors.Is(err, errStopScan) {
			return err
		}
		if len(old) == 0 {
			return nil
		}
		batch := s.store.Begin()
		var bad []badJob
		for _, m := range old {
			batch.Ack(StoreDest, m.Seq)
			j, err := parseJob(m)
			if err != nil {
				bad = append(bad, badJob{m.Seq, err})
				continue
			}
			j.due = min(max(j.due, 1), maxDue)
			for {
				j.key = jobKey(j.due, s.counter)
				s.counter++
				taken, err := s.storedKey(ctx, j.key)
				if err != nil {
					batch.Rollback()
					return err
				}
				if !taken {
					break
				}
			}
			batch.Add(s.stored(j))
		}
		for _, bj := range bad {
			s.log.Warn("scheduled message deleted: its destination no longer parses",
				slog.Uint64("job", bj.seq), slog.Any("err", bj.err))
		}
		if err := batch.Commit(ctx, persistence.Sync); err != nil {
			return err
		}
		s.log.Info("scheduled messages of an older version rekeyed", slog.Int("jobs", len(old)-len(bad)))
	}
}

// pageBatch is the most scheduled messages one page-in reads.
const pageBatch = 2000

// errStopScan ends a store scan early.
var errStopScan = errors.New("stop scan")
