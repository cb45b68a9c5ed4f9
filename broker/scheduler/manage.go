package scheduler

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"slices"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// Browsing and removing jobs, as ActiveMQ's JobScheduler does for its
// ActiveMQ.Scheduler.Management destination (BROWSE, REMOVE, REMOVEALL, with or
// without a range of next-run times) and the admin API.
//
// The store is where persistent jobs are found (the ones in memory are stored too, and
// paged-out ones are stored only); non-persistent jobs are in memory only. A removal
// holds fireMu, so no delivery runs meanwhile, and marks each removed key in removed:
// a job whose store write (a new job's, or a repeating job's next occurrence) was under
// way when it was found is then not admitted when that write reports (admitLocked).

// JobInfo is a scheduled job as browsed.
type JobInfo struct {
	// ID is the job's scheduledJobId (the id of the message that scheduled it).
	ID string
	// Next is when the job is next due (ms since the epoch).
	Next int64
	// Period is the ms between occurrences, Remaining the occurrences left after Next.
	Period    int64
	Remaining int
	Dests     []destinations.Name
	Size      int64
	// Msg is the message as scheduled: its AMQ_SCHEDULED_* headers and scheduledJobId
	// included. The caller may change it.
	Msg *persistence.Message
}

// AllTimes is the widest range of next-run times Jobs and RemoveRange take.
const AllTimes = maxDue

// Jobs returns the jobs whose next run is within [start, end] (ms since the epoch,
// inclusive as ActiveMQ's getAllJobs(start, finish)), soonest first; at most limit of
// them when limit > 0.
func (s *Scheduler) Jobs(ctx context.Context, start, end int64, limit int) ([]JobInfo, error) {
	stored, err := s.scanStored(ctx, start, end, limit, nil)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	var jobs []*Job
	for _, j := range stored {
		if !s.goneLocked(j.key) {
			jobs = append(jobs, j)
		}
	}
	for _, j := range s.jobs {
		if !j.msg.Persistent && j.due >= start && j.due <= end {
			c := *j
			c.msg = j.msg.Clone()
			c.dests = slices.Clone(j.dests)
			jobs = append(jobs, &c)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(jobs, func(a, b *Job) int { return cmp.Compare(a.key, b.key) })
	if limit > 0 && len(jobs) > limit {
		jobs = jobs[:limit]
	}
	out := make([]JobInfo, len(jobs))
	for i, j := range jobs {
		out[i] = JobInfo{ID: j.msg.ID, Next: j.due, Period: j.period, Remaining: j.remaining,
			Dests: j.dests, Size: j.size, Msg: j.msg}
	}
	return out, nil
}

// Remove removes the job whose scheduledJobId is id; it reports whether there was one.
func (s *Scheduler) Remove(ctx context.Context, id string) (bool, error) {
	n, err := s.remove(ctx, 0, AllTimes, func(m *persistence.Message) bool { return m.ID == id })
	return n > 0, err
}

// RemoveRange removes every job whose next run is within [start, end] and returns how
// many it removed.
func (s *Scheduler) RemoveRange(ctx context.Context, start, end int64) (int, error) {
	return s.remove(ctx, start, end, nil)
}

// remove removes the jobs due within [start, end] that match (all when nil), from
// memory and from the store (one batch).
func (s *Scheduler) remove(ctx context.Context, start, end int64, match func(*persistence.Message) bool) (int, error) {
	s.fireMu.Lock()
	defer s.fireMu.Unlock()
	stored, err := s.scanStored(ctx, start, end, 0, match)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	var volatile []*Job
	for _, j := range s.jobs {
		if !j.msg.Persistent && j.due >= start && j.due <= end && (match == nil || match(j.msg)) {
			volatile = append(volatile, j)
		}
	}
	for _, j := range volatile {
		heap.Remove(&s.jobs, j.index)
		s.releaseLocked(j)
	}
	var keys []uint64
	var fromMemory []*Job
	for _, sj := range stored {
		if s.goneLocked(sj.key) {
			continue
		}
		if j := s.byKey[sj.key]; j != nil {
			heap.Remove(&s.jobs, j.index)
			s.releaseLocked(j)
			fromMemory = append(fromMemory, j)
		}
		s.deleting[sj.key] = struct{}{}
		s.removed[sj.key] = struct{}{}
		keys = append(keys, sj.key)
	}
	s.armLocked()
	s.mu.Unlock()
	if len(keys) == 0 {
		return len(volatile), nil
	}
	batch := s.store.Begin()
	for _, k := range keys {
		batch.Ack(StoreDest, k)
	}
	done := make(chan error, 1)
	s.host.Commit(batch, persistence.Sync, func(err error) { // an operator waits for it
		s.mu.Lock()
		for _, k := range keys {
			if s.loading {
				s.deleted = append(s.deleted, k)
			} else {
				delete(s.deleting, k)
			}
			if _, writing := s.reserved[k]; !writing || err != nil {
				delete(s.removed, k) // else the write's report finds it (admitLocked)
			}
		}
		if err != nil {
			for _, j := range fromMemory {
				s.admitLocked(j) // still stored: still scheduled
			}
		}
		s.mu.Unlock()
		done <- err
	})
	if err := <-done; err != nil {
		return len(volatile), destinations.StoreError(err)
	}
	return len(volatile) + len(keys), nil
}

// goneLocked reports whether the stored job under key k is being delivered or removed.
func (s *Scheduler) goneLocked(k uint64) bool {
	_, deleting := s.deleting[k]
	_, removed := s.removed[k]
	return deleting || removed
}

// scanStored reads the stored jobs due within [start, end] that match (all when nil),
// in key order, at most limit of them when limit > 0. A job that no longer parses is
// left to the page-in that drops it.
func (s *Scheduler) scanStored(ctx context.Context, start, end int64, limit int, match func(*persistence.Message) bool) ([]*Job, error) {
	var after uint64
	if start > 0 {
		after = jobKey(start, 0) - 1
	}
	var out []*Job
	err := s.store.Scan(ctx, StoreDest, after, 0, func(m *persistence.Message) error {
		if keyDue(m.Seq) > end || limit > 0 && len(out) >= limit {
			return errStopScan
		}
		j, err := parseJob(m)
		if err != nil || match != nil && !match(j.msg) {
			return nil
		}
		j.due = keyDue(j.key)
		out = append(out, j)
		return nil
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return nil, destinations.StoreError(err)
	}
	return out, nil
}

// RemoveAll removes every job and returns how many it removed.
func (s *Scheduler) RemoveAll(ctx context.Context) (int, error) {
	return s.RemoveRange(ctx, 0, AllTimes)
}
