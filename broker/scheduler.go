package broker

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
	"sync"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// Scheduled delivery (ActiveMQ's AMQ_SCHEDULED_DELAY, AMQ_SCHEDULED_PERIOD and
// AMQ_SCHEDULED_REPEAT headers, in milliseconds and counts). A scheduled persistent
// message is stored under the store destination schedulerDest until it is due, so it
// survives a restart; delivering it (and, for a repeating one, rescheduling it) is one
// store batch, and one sent in a transaction is stored in the COMMIT's batch.
// AMQ_SCHEDULED_CRON is refused with an error: cron schedules are not supported.
//
// # Paging
//
// Memory holds at most memLimit bytes of persistent jobs (systemUsage
// schedulerMemoryLimit), the soonest ones, as a queue holds its first messages: a job is
// stored under a sequence number (its key) made of its due time in milliseconds and a
// counter, so the store's order is due order. While paged, memory holds every stored
// job whose key is at most cutoff and the later ones are in the store only; they are
// read back in key order (Scan after cutoff) when the jobs in memory fall below half
// the limit, as time delivers them. Non-persistent jobs cannot be paged: they stay in
// memory, counted against memoryUsage, and past it the SEND is refused with an ERROR.
//
// Keys are unique among stored jobs: a new key is checked against the jobs in memory
// and, when it falls in the paged-out range, against the store. The memory store keeps
// a destination as one sorted array and pays O(stored jobs) for a job due before the
// latest stored one; kahaDB inserts it into a block of at most 512 and keeps the jobs of
// sealed segments in sorted run files (about a byte of memory a job).

// Scheduling header names, as ActiveMQ spells them.
const (
	HeaderScheduledDelay  = "AMQ_SCHEDULED_DELAY"
	HeaderScheduledPeriod = "AMQ_SCHEDULED_PERIOD"
	HeaderScheduledRepeat = "AMQ_SCHEDULED_REPEAT"
	HeaderScheduledCron   = "AMQ_SCHEDULED_CRON"
	HeaderScheduledJobID  = "scheduledJobId"
)

// DefaultSchedulerMemoryLimit is how many bytes of persistent scheduled messages the
// scheduler keeps in memory by default; the later ones wait in the store.
const DefaultSchedulerMemoryLimit = 32 << 20

// schedulerDest is the store destination holding scheduled persistent messages.
const schedulerDest = "scheduler://jobs"

// Internal headers of a stored job; removed before delivery.
const (
	hdrJobDests     = "x-amq-scheduled-dests"
	hdrJobDue       = "x-amq-scheduled-due"
	hdrJobRemaining = "x-amq-scheduled-remaining"
	hdrJobPeriod    = HeaderScheduledPeriod + "-ms"
)

// A job's key: its due time (ms since the epoch) above keyCounterBits bits of a counter.
// Keys stay below 2^63, the largest sequence number every store takes.
const (
	keyCounterBits = 21
	keyCounterMask = 1<<keyCounterBits - 1
	maxDue         = 1<<(63-keyCounterBits) - 1 // in the year 2109
)

func jobKey(due int64, n uint64) uint64 { return uint64(due)<<keyCounterBits | n&keyCounterMask }

func keyDue(key uint64) int64 { return int64(key >> keyCounterBits) }

// jobRetryDelay is how long a job whose delivery could not be stored waits before it
// is tried again, and a failed page-in before the next.
const jobRetryDelay = time.Second

type job struct {
	key       uint64 // store sequence of a persistent job; orders every job
	due       int64  // ms since the epoch
	period    int64  // ms
	remaining int    // deliveries left after the next one
	dests     []destinations.Name
	msg       *persistence.Message
	size      int64
	index     int
}

type jobHeap []*job

func (h jobHeap) Len() int           { return len(h) }
func (h jobHeap) Less(i, j int) bool { return h[i].key < h[j].key }
func (h jobHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *jobHeap) Push(x any)        { j := x.(*job); j.index = len(*h); *h = append(*h, j) }
func (h *jobHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return j
}
func (h jobHeap) peek() *job    { return h[0] }
func (h jobHeap) isEmpty() bool { return len(h) == 0 }

type scheduler struct {
	b        *Broker
	memLimit int64

	// fireMu makes deliveries one at a time, in key order: the timer may fire again
	// (rearmed by a new job) while an earlier fire still delivers.
	fireMu sync.Mutex

	mu       sync.Mutex
	jobs     jobHeap
	byKey    map[uint64]*job     // the persistent jobs in memory
	reserved map[uint64]struct{} // keys of persistent jobs whose store write is in flight
	deleting map[uint64]struct{} // keys whose store delete is in flight: never loaded
	memBytes int64               // of the persistent jobs in memory
	paged    bool                // stored jobs with a key above cutoff are in the store only
	cutoff   uint64
	loading  bool
	arrived  []*job   // stored beyond cutoff while a load ran: the load decides
	deleted  []uint64 // deletes that completed while a load ran
	counter  uint64
	timer    *time.Timer
	starting bool // recovering: no timer yet
	closed   bool
	logged   time.Time // the last "paging" log line

	peakBytes int64 // the most memBytes ever held, for tests
}

func newScheduler(b *Broker, memLimit int64) *scheduler {
	if memLimit <= 0 {
		memLimit = DefaultSchedulerMemoryLimit
	}
	return &scheduler{b: b, memLimit: memLimit, byKey: map[uint64]*job{},
		reserved: map[uint64]struct{}{}, deleting: map[uint64]struct{}{}, starting: true}
}

// wants reports whether m asks for scheduled delivery.
func (s *scheduler) wants(m *persistence.Message) bool {
	for i := 0; i+1 < len(m.Headers); i += 2 {
		switch m.Headers[i] {
		case HeaderScheduledDelay, HeaderScheduledPeriod, HeaderScheduledRepeat, HeaderScheduledCron:
			return true
		}
	}
	return false
}

func headerInt(m *persistence.Message, name string) (int64, error) {
	v, ok := m.Headers.Get(name)
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 || n > maxDue {
		return 0, errorf(ErrInvalidDestination, "invalid %s %q: a non-negative integer of at most %d", name, v, int64(maxDue))
	}
	return n, nil
}

// schedule is what a message's AMQ_SCHEDULED_* headers ask for.
type schedule struct {
	delay, period, repeat int64
}

// parse reads and checks the scheduling headers of m.
func (s *scheduler) parse(m *persistence.Message) (schedule, error) {
	if _, ok := m.Headers.Get(HeaderScheduledCron); ok {
		return schedule{}, &Error{Message: "AMQ_SCHEDULED_CRON is not supported; use AMQ_SCHEDULED_DELAY, AMQ_SCHEDULED_PERIOD and AMQ_SCHEDULED_REPEAT", Err: ErrInvalidDestination}
	}
	var sc schedule
	var err error
	if sc.delay, err = headerInt(m, HeaderScheduledDelay); err != nil {
		return schedule{}, err
	}
	if sc.period, err = headerInt(m, HeaderScheduledPeriod); err != nil {
		return schedule{}, err
	}
	if sc.repeat, err = headerInt(m, HeaderScheduledRepeat); err != nil {
		return schedule{}, err
	}
	if sc.repeat > 0 && sc.period == 0 {
		sc.period = 1 // ActiveMQ repeats back to back when no period is given
	}
	if time.Now().UnixMilli()+sc.delay > maxDue {
		return schedule{}, errorf(ErrInvalidDestination, "%s %d is too far in the future", HeaderScheduledDelay, sc.delay)
	}
	return sc, nil
}

// newJob makes the job of m for dests. A persistent job gets its key reserved until
// written reports the outcome of its store write; a non-persistent one must fit in
// memoryUsage.
func (s *scheduler) newJob(ctx context.Context, dests []destinations.Name, m *persistence.Message, sc schedule) (*job, error) {
	j := &job{due: time.Now().UnixMilli() + sc.delay, period: sc.period, remaining: int(sc.repeat), dests: dests, msg: m}
	m.Headers = append(m.Headers, HeaderScheduledJobID, m.ID)
	j.size = int64(m.Size())
	if !m.Persistent {
		if !s.b.mem.Fits(j.size) {
			used, limit := s.b.mem.Used()
			s.b.log.Warn("memory limit reached: scheduled non-persistent message refused", slog.Int64("used", used), slog.Int64("limit", limit))
			return nil, &Error{Message: "Usage Manager memory limit reached: scheduled non-persistent message refused (send it persistent:true)", Err: destinations.ErrMemoryFull}
		}
		s.mu.Lock()
		j.key = jobKey(j.due, s.counter)
		s.counter++
		s.mu.Unlock()
		return j, nil
	}
	k, err := s.reserveKey(ctx, j.due)
	if err != nil {
		return nil, err
	}
	j.key = k
	return j, nil
}

// reserveKey finds a key for a persistent job due at due that no stored job, and no job
// being stored or deleted, has, and reserves it.
func (s *scheduler) reserveKey(ctx context.Context, due int64) (uint64, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return 0, &Error{Message: "broker is shutting down", Err: ErrClosed}
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
			return 0, storeError(err)
		}
		if !taken {
			return k, nil
		}
	}
}

func (s *scheduler) unreserve(k uint64) {
	s.mu.Lock()
	delete(s.reserved, k)
	s.mu.Unlock()
}

// storedKey reports whether the store holds a job under key k.
func (s *scheduler) storedKey(ctx context.Context, k uint64) (bool, error) {
	if c, ok := s.b.store.(persistence.Container); ok {
		return c.Contains(ctx, schedulerDest, k)
	}
	found := false
	err := s.b.store.Scan(ctx, schedulerDest, k-1, 1, func(m *persistence.Message) error {
		found = m.Seq == k
		return nil
	})
	return found, err
}

// maybeSchedule takes a message that asks for scheduled delivery (outside a
// transaction). done is called when the job is as durable as the message.
func (s *scheduler) maybeSchedule(ctx context.Context, dests []destinations.Name, m *persistence.Message, done func(error)) error {
	sc, err := s.parse(m)
	if err != nil {
		return err
	}
	j, err := s.newJob(ctx, dests, m, sc)
	if err != nil {
		return err
	}
	if !m.Persistent {
		s.written(j, nil)
		done(nil)
		return nil
	}
	batch := s.b.store.Begin()
	batch.Add(s.stored(j))
	s.b.commit(batch, persistence.Sync, func(err error) {
		s.written(j, err)
		if err != nil {
			err = storeError(err)
		}
		done(err)
	})
	return nil
}

// written takes a new job whose store write (in the batch stage added it to) finished
// with err: it is scheduled unless err is set.
func (s *scheduler) written(j *job, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j.msg.Persistent {
		delete(s.reserved, j.key)
	}
	if err == nil {
		s.admitLocked(j)
	}
}

// stored is the job as kept in the store.
func (s *scheduler) stored(j *job) *persistence.Message {
	c := j.msg.Clone()
	c.Dest, c.Seq = schedulerDest, j.key
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
func parseJob(m *persistence.Message) (*job, error) {
	c := m.Clone()
	j := &job{key: c.Seq}
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
func (s *scheduler) admitLocked(j *job) {
	if s.closed {
		return
	}
	if j.msg.Persistent {
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
	s.b.mem.Add(j.size)
	heap.Push(&s.jobs, j)
	s.evictLocked()
	s.armLocked()
}

// releaseLocked accounts for a job leaving memory (out of the heap already).
func (s *scheduler) releaseLocked(j *job) {
	if j.msg.Persistent {
		delete(s.byKey, j.key)
		s.memBytes -= j.size
	}
	s.b.mem.Add(-j.size)
	s.b.space.Notify()
}

// evictLocked keeps the persistent jobs in memory within memLimit: past it the latest
// ones leave memory (they are in the store) until three quarters of it are used, and
// the cutoff moves below them. The soonest job always stays. Nothing is evicted while a
// load runs (it sets the cutoff when it ends, then evicts).
func (s *scheduler) evictLocked() {
	if s.memBytes <= s.memLimit || s.loading {
		return
	}
	var ps []*job
	for _, j := range s.jobs {
		if j.msg.Persistent {
			ps = append(ps, j)
		}
	}
	slices.SortFunc(ps, func(a, b *job) int { return cmp.Compare(b.key, a.key) })
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
		s.b.log.Info("scheduled messages over the scheduler's memory limit: the later ones wait in the store",
			slog.Int64("schedulerMemoryLimit", s.memLimit))
	}
}

// maybeLoadLocked starts reading paged-out jobs back once memory holds less than half
// the limit.
func (s *scheduler) maybeLoadLocked() {
	if !s.paged || s.loading || s.closed || s.starting || s.memBytes >= s.memLimit/2 {
		return
	}
	s.loading = true
	s.b.wg.Add(1)
	go s.load()
}

// load reads the next stored jobs after cutoff into memory, in key order, up to half the
// memory limit.
func (s *scheduler) load() {
	defer s.b.wg.Done()
	s.mu.Lock()
	after := s.cutoff
	budget := max(s.memLimit/2-s.memBytes, 1)
	s.mu.Unlock()

	var got []*job
	var bad []badJob
	var loaded int64
	n, last, complete := 0, after, true
	err := s.b.store.Scan(context.Background(), schedulerDest, after, pageBatch, func(m *persistence.Message) error {
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
		s.b.log.Error("reading scheduled messages from the store failed; retrying", slog.Any("err", err))
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

// retryLater runs fn after jobRetryDelay. fn finds the scheduler closed if the broker
// closed meanwhile, and then does nothing.
func (s *scheduler) retryLater(fn func()) { time.AfterFunc(jobRetryDelay, fn) }

type badJob struct {
	seq uint64
	err error
}

// dropBad deletes stored jobs that can never be delivered (their destination no longer
// parses), with a log line each.
func (s *scheduler) dropBad(bad []badJob) {
	if len(bad) == 0 {
		return
	}
	batch := s.b.store.Begin()
	for _, bj := range bad {
		s.b.log.Warn("scheduled message deleted: its destination no longer parses",
			slog.Uint64("job", bj.seq), slog.Any("err", bj.err))
		batch.Ack(schedulerDest, bj.seq)
	}
	if err := batch.Commit(context.Background(), persistence.Sync); err != nil {
		s.b.log.Error("deleting undeliverable scheduled messages failed", slog.Any("err", err))
	}
}

// recover loads the stored jobs at start: the soonest, up to the memory limit; the
// others stay in the store for later loads. Jobs stored by an older version, keyed by a
// plain counter, are rekeyed first.
func (s *scheduler) recover(ctx context.Context) error {
	if err := s.rekey(ctx); err != nil {
		return err
	}
	var bad []badJob
	err := s.b.store.Scan(ctx, schedulerDest, 0, 0, func(m *persistence.Message) error {
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
func (s *scheduler) rekey(ctx context.Context) error {
	for {
		var old []*persistence.Message
		err := s.b.store.Scan(ctx, schedulerDest, 0, rekeyBatch, func(m *persistence.Message) error {
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
		batch := s.b.store.Begin()
		var bad []badJob
		for _, m := range old {
			batch.Ack(schedulerDest, m.Seq)
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
			s.b.log.Warn("scheduled message deleted: its destination no longer parses",
				slog.Uint64("job", bj.seq), slog.Any("err", bj.err))
		}
		if err := batch.Commit(ctx, persistence.Sync); err != nil {
			return err
		}
		s.b.log.Info("scheduled messages of an older version rekeyed", slog.Int("jobs", len(old)-len(bad)))
	}
}

func (s *scheduler) armLocked() {
	if s.jobs.isEmpty() || s.closed || s.starting {
		return
	}
	wait := time.Until(time.UnixMilli(s.jobs.peek().due))
	if s.timer == nil {
		s.timer = time.AfterFunc(wait, s.fire)
		return
	}
	s.timer.Reset(wait)
}

// fire delivers every due job.
func (s *scheduler) fire() {
	s.fireMu.Lock()
	defer s.fireMu.Unlock()
	now := time.Now().UnixMilli()
	var due []*job
	s.mu.Lock()
	for !s.jobs.isEmpty() && s.jobs.peek().due <= now {
		j := heap.Pop(&s.jobs).(*job)
		s.releaseLocked(j)
		due = append(due, j)
	}
	s.maybeLoadLocked()
	s.mu.Unlock()
	for _, j := range due {
		s.deliver(j)
	}
	s.mu.Lock()
	s.armLocked()
	s.mu.Unlock()
}

// deliver sends one occurrence of j and reschedules or retires it, in one store batch.
// If that batch fails, j is tried again after jobRetryDelay: the store still has it.
func (s *scheduler) deliver(j *job) {
	m := j.msg.Clone()
	m.ID = s.b.newMessageID()
	m.Timestamp = time.Now().UnixMilli()
	m.Seq, m.Dest = 0, ""
	batch, entries, refused := s.b.route(j.dests, m, nil)
	if refused != nil {
		s.b.log.Warn("scheduled message refused", slog.Any("err", refused))
	}
	prev := *j
	again := j.remaining > 0
	if again {
		j.remaining--
		j.due += j.period
		if j.due > maxDue {
			again = false
			s.b.log.Warn("repeating scheduled message retired: its next delivery is past the year 2109", slog.String("id", j.msg.ID))
		}
	}
	if !j.msg.Persistent {
		if again {
			s.mu.Lock()
			j.key = jobKey(j.due, s.counter)
			s.counter++
			s.admitLocked(j)
			s.mu.Unlock()
		}
		if batch != nil {
			s.b.commit(batch, persistence.Sync, func(err error) { destinations.SettleAll(entries, err) })
		}
		return
	}
	if batch == nil {
		batch = s.b.store.Begin()
	}
	s.mu.Lock()
	s.deleting[prev.key] = struct{}{}
	s.mu.Unlock()
	batch.Ack(schedulerDest, prev.key)
	if again {
		k, err := s.reserveKey(context.Background(), j.due)
		if err != nil {
			s.b.log.Error("repeating scheduled message retired: no key for its next delivery", slog.Any("err", err))
			again = false
		} else {
			j.key = k
			batch.Add(s.stored(j))
		}
	}
	s.b.commit(batch, persistence.Sync, func(err error) {
		destinations.SettleAll(entries, err)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.loading {
			s.deleted = append(s.deleted, prev.key)
		} else {
			delete(s.deleting, prev.key)
		}
		if again {
			delete(s.reserved, j.key)
		}
		if err != nil {
			s.b.log.Error("scheduled delivery not stored; trying again", slog.Any("err", err), slog.Duration("in", jobRetryDelay))
			*j = prev
			s.retryLater(func() {
				s.mu.Lock()
				s.admitLocked(j)
				s.mu.Unlock()
			})
			return
		}
		if again {
			s.admitLocked(j)
		}
	})
}

// memory reports the bytes of persistent jobs in memory and the most ever held.
func (s *scheduler) memory() (now, peak int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.memBytes, s.peakBytes
}

func (s *scheduler) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
}

// pageBatch is the most scheduled messages one page-in reads.
const pageBatch = 2000

// errStopScan ends a store scan early.
var errStopScan = errors.New("stop scan")
