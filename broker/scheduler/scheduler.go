// Package scheduler delivers messages later: ActiveMQ's scheduled delivery (the
// AMQ_SCHEDULED_DELAY, AMQ_SCHEDULED_PERIOD and AMQ_SCHEDULED_REPEAT headers, in
// milliseconds and counts). A scheduled persistent
// message is stored under the store destination StoreDest until it is due, so it
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
//
// The broker runs one Scheduler (New) when schedulerSupport is on and calls it for every
// SEND that asks for scheduling (Wants); a due job goes back to the broker through its
// Host, which routes it as a send from no connection and commits the store batch. The
// scheduler imports nothing of the broker.
package scheduler

import (
	"container/heap"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/activemq-go/broker/broker/limits"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// Scheduling header names, as ActiveMQ spells them.
const (
	HeaderDelay  = "AMQ_SCHEDULED_DELAY"
	HeaderPeriod = "AMQ_SCHEDULED_PERIOD"
	HeaderRepeat = "AMQ_SCHEDULED_REPEAT"
	HeaderCron   = "AMQ_SCHEDULED_CRON"
	HeaderJobID  = "scheduledJobId"
)

// StoreDest is the store destination holding scheduled persistent messages.
const StoreDest = "scheduler://jobs"

// Internal headers of a stored job; removed before delivery.
const (
	hdrJobDests     = "x-amq-scheduled-dests"
	hdrJobDue       = "x-amq-scheduled-due"
	hdrJobRemaining = "x-amq-scheduled-remaining"
	hdrJobPeriod    = HeaderPeriod + "-ms"
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

// Job is one scheduled message: its destinations, when it is due, how often it repeats.
// Prepare makes one to be stored in a caller's batch; Written settles it.
type Job struct {
	key       uint64 // store sequence of a persistent job; orders every job
	due       int64  // ms since the epoch
	period    int64  // ms
	remaining int    // deliveries left after the next one
	dests     []destinations.Name
	msg       *persistence.Message
	size      int64
	index     int
}

type jobHeap []*Job

func (h jobHeap) Len() int           { return len(h) }
func (h jobHeap) Less(i, j int) bool { return h[i].key < h[j].key }
func (h jobHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *jobHeap) Push(x any)        { j := x.(*Job); j.index = len(*h); *h = append(*h, j) }
func (h *jobHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return j
}
func (h jobHeap) peek() *Job    { return h[0] }
func (h jobHeap) isEmpty() bool { return len(h) == 0 }

// Host is what the scheduler asks of the broker it runs in.
type Host interface {
	// NewMessageID returns a new message id, for one delivery of a job.
	NewMessageID() string
	// Route hands m to dests (resolved already) as a send from no connection does:
	// topics publish at once, queues queue it. It returns the store batch the
	// persistent copies need (nil if none), the queue entries to settle with that
	// batch's outcome, and the error of a destination that refused m (the others took
	// it).
	Route(dests []destinations.Name, m *persistence.Message) (persistence.Batch, []destinations.Accepted, error)
	// Commit writes batch with durability d (as the host groups its writes) and calls
	// done with the outcome. A new job is committed Sync (its producer waits for it); a
	// delivery of a due job Async (nobody waits: should a crash undo it, the job is still
	// stored and delivered again), riding the store's next sync.
	Commit(batch persistence.Batch, d persistence.Durability, done func(error))
}

// Config is what a Scheduler runs with.
type Config struct {
	Store persistence.Store
	Host  Host
	Log   *slog.Logger
	// Memory is the broker-wide memoryUsage that every job in memory counts against;
	// a non-persistent job must fit in it. Space is told when a job leaves memory.
	Memory *destinations.Usage
	Space  *destinations.SpaceSignal
	// MemoryLimit bounds the bytes of persistent jobs held in memory
	// (schedulerMemoryLimit); 0 for limits.DefaultSchedulerMemoryLimit.
	MemoryLimit int64
}

// Scheduler keeps the scheduled messages and delivers each when it is due.
type Scheduler struct {
	store    persistence.Store
	host     Host
	log      *slog.Logger
	mem      *destinations.Usage
	space    *destinations.SpaceSignal
	memLimit int64
	wg       sync.WaitGroup // page-ins under way: Close waits for them

	// fireMu makes deliveries one at a time, in key order: the timer may fire again
	// (rearmed by a new job) while an earlier fire still delivers.
	fireMu sync.Mutex

	mu       sync.Mutex
	jobs     jobHeap
	byKey    map[uint64]*Job     // the persistent jobs in memory
	reserved map[uint64]struct{} // keys of persistent jobs whose store write is in flight
	deleting map[uint64]struct{} // keys whose store delete is in flight: never loaded
	removed  map[uint64]struct{} // keys of jobs removed (manage.go): never admitted
	memBytes int64               // of the persistent jobs in memory
	paged    bool                // stored jobs with a key above cutoff are in the store only
	cutoff   uint64
	loading  bool
	arrived  []*Job   // stored beyond cutoff while a load ran: the load decides
	deleted  []uint64 // deletes that completed while a load ran
	counter  uint64
	timer    *time.Timer
	starting bool // recovering: no timer yet
	closed   bool
	logged   time.Time // the last "paging" log line

	peakBytes int64 // the most memBytes ever held (Memory)
}

// New returns a scheduler that holds no job yet: Recover reads the stored ones and
// starts delivering.
func New(c Config) *Scheduler {
	if c.MemoryLimit <= 0 {
		c.MemoryLimit = limits.DefaultSchedulerMemoryLimit
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{store: c.Store, host: c.Host, log: c.Log, mem: c.Memory, space: c.Space,
		memLimit: c.MemoryLimit, byKey: map[uint64]*Job{},
		reserved: map[uint64]struct{}{}, deleting: map[uint64]struct{}{}, removed: map[uint64]struct{}{},
		starting: true}
}

// Wants reports whether m asks for scheduled delivery: a scheduling header (STOMP's,
// text) or typed property (OpenWire's, a long or an int).
func (s *Scheduler) Wants(m *persistence.Message) bool {
	for i := 0; i+1 < len(m.Headers); i += 2 {
		if isScheduling(m.Headers[i]) {
			return true
		}
	}
	for _, p := range m.Props {
		if isScheduling(p.Name) {
			return true
		}
	}
	return false
}

// withoutScheduling removes the scheduling headers and properties from a delivered copy,
// as ActiveMQ does: its consumers see scheduledJobId, not what made it.
func withoutScheduling(m *persistence.Message) {
	hs := m.Headers[:0]
	for i := 0; i+1 < len(m.Headers); i += 2 {
		if !isScheduling(m.Headers[i]) {
			hs = append(hs, m.Headers[i], m.Headers[i+1])
		}
	}
	m.Headers = hs
	ps := m.Props[:0]
	for _, p := range m.Props {
		if !isScheduling(p.Name) {
			ps = append(ps, p)
		}
	}
	m.Props = ps
}

func isScheduling(name string) bool {
	switch name {
	case HeaderDelay, HeaderPeriod, HeaderRepeat, HeaderCron:
		return true
	}
	return false
}

func headerInt(m *persistence.Message, name string) (int64, error) {
	n, v, _, err := intProperty(m, name)
	if err != nil || n < 0 || n > maxDue {
		return 0, invalid("invalid %s %q: a non-negative integer of at most %d", name, v, int64(maxDue))
	}
	return n, nil
}

// schedule is what a message's AMQ_SCHEDULED_* headers ask for.
type schedule struct {
	delay, period, repeat int64
}

// Check reports what is wrong with the scheduling headers of m, if anything: a SEND in
// a transaction is checked when it is sent and scheduled at COMMIT (Prepare).
func (s *Scheduler) Check(m *persistence.Message) error {
	_, err := s.parse(m)
	return err
}

// parse reads and checks the scheduling headers of m.
func (s *Scheduler) parse(m *persistence.Message) (schedule, error) {
	if _, _, ok := m.Property(HeaderCron); ok {
		return schedule{}, &destinations.Error{Message: "AMQ_SCHEDULED_CRON is not supported; use AMQ_SCHEDULED_DELAY, AMQ_SCHEDULED_PERIOD and AMQ_SCHEDULED_REPEAT", Err: destinations.ErrInvalidDestination}
	}
	var sc schedule
	var err error
	if sc.delay, err = headerInt(m, HeaderDelay); err != nil {
		return schedule{}, err
	}
	if sc.period, err = headerInt(m, HeaderPeriod); err != nil {
		return schedule{}, err
	}
	if sc.repeat, err = headerInt(m, HeaderRepeat); err != nil {
		return schedule{}, err
	}
	if sc.repeat > 0 && sc.period == 0 {
		sc.period = 1 // ActiveMQ repeats back to back when no period is given
	}
	if time.Now().UnixMilli()+sc.delay > maxDue {
		return schedule{}, invalid("%s %d is too far in the future", HeaderDelay, sc.delay)
	}
	return sc, nil
}

// newJob makes the job of m for dests. A persistent job gets its key reserved until
// written reports the outcome of its store write; a non-persistent one must fit in
// memoryUsage.
func (s *Scheduler) newJob(ctx context.Context, dests []destinations.Name, m *persistence.Message, sc schedule) (*Job, error) {
	j := &Job{due: time.Now().UnixMilli() + sc.delay, period: sc.period, remaining: int(sc.repeat), dests: dests, msg: m}
	m.Headers = append(m.Headers, HeaderJobID, m.ID)
	j.size = int64(m.Size())
	if !m.Persistent {
		if !s.mem.Fits(j.size) {
			used, limit := s.mem.Used()
			s.log.Warn("memory limit reached: scheduled non-persistent message refused", slog.Int64("used", used), slog.Int64("limit", limit))
			return nil, &destinations.Error{Message: "Usage Manager memory limit reached: scheduled non-persistent message refused (send it persistent:true)", Err: destinations.ErrMemoryFull}
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

// Prepare makes the job of m, a message that asks for scheduled delivery, for dests
// and, when it is persistent, adds it to batch (a transaction's COMMIT): once batch is
// written the job survives a crash. The caller calls Written with batch's outcome.
func (s *Scheduler) Prepare(ctx context.Context, dests []destinations.Name, m *persistence.Message, batch persistence.Batch) (*Job, error) {
	sc, err := s.parse(m)
	if err != nil {
		return nil, err
	}
	j, err := s.newJob(ctx, dests, m, sc)
	if err != nil {
		return nil, err
	}
	if m.Persistent {
		batch.Add(s.stored(j))
	}
	return j, nil
}

// Schedule takes a message that asks for scheduled delivery (outside a transaction)
// for dests. done is called when the job is as durable as the message.
func (s *Scheduler) Schedule(ctx context.Context, dests []destinations.Name, m *persistence.Message, done func(error)) error {
	sc, err := s.parse(m)
	if err != nil {
		return err
	}
	j, err := s.newJob(ctx, dests, m, sc)
	if err != nil {
		return err
	}
	if !m.Persistent {
		s.Written(j, nil)
		done(nil)
		return nil
	}
	batch := s.store.Begin()
	batch.Add(s.stored(j))
	s.host.Commit(batch, persistence.Sync, func(err error) {
		s.Written(j, err)
		if err != nil {
			err = destinations.StoreError(err)
		}
		done(err)
	})
	return nil
}

// Written takes a new job whose store write (in the batch Prepare added it to)
// finished with err: it is scheduled unless err is set.
func (s *Scheduler) Written(j *Job, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j.msg.Persistent {
		delete(s.reserved, j.key)
	}
	if err == nil {
		s.admitLocked(j)
	}
}

func (s *Scheduler) armLocked() {
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
func (s *Scheduler) fire() {
	s.fireMu.Lock()
	defer s.fireMu.Unlock()
	now := time.Now().UnixMilli()
	var due []*Job
	s.mu.Lock()
	for !s.jobs.isEmpty() && s.jobs.peek().due <= now {
		j := heap.Pop(&s.jobs).(*Job)
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
func (s *Scheduler) deliver(j *Job) {
	m := j.msg.Clone()
	withoutScheduling(m)
	m.ID = s.host.NewMessageID()
	m.Timestamp = time.Now().UnixMilli()
	m.Seq, m.Dest = 0, ""
	batch, entries, refused := s.host.Route(j.dests, m)
	if refused != nil {
		s.log.Warn("scheduled message refused", slog.Any("err", refused))
	}
	prev := *j
	again := j.remaining > 0
	if again {
		j.remaining--
		j.due += j.period
		if j.due > maxDue {
			again = false
			s.log.Warn("repeating scheduled message retired: its next delivery is past the year 2109", slog.String("id", j.msg.ID))
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
			s.host.Commit(batch, persistence.Async, func(err error) { destinations.SettleAll(entries, err) })
		}
		return
	}
	if batch == nil {
		batch = s.store.Begin()
	}
	s.mu.Lock()
	s.deleting[prev.key] = struct{}{}
	s.mu.Unlock()
	batch.Ack(StoreDest, prev.key)
	if again {
		k, err := s.reserveKey(context.Background(), j.due)
		if err != nil {
			s.log.Error("repeating scheduled message retired: no key for its next delivery", slog.Any("err", err))
			again = false
		} else {
			j.key = k
			batch.Add(s.stored(j))
		}
	}
	s.host.Commit(batch, persistence.Async, func(err error) {
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
			s.log.Error("scheduled delivery not stored; trying again", slog.Any("err", err), slog.Duration("in", jobRetryDelay))
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

// Memory reports the bytes of persistent jobs in memory and the most ever held.
func (s *Scheduler) Memory() (now, peak int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.memBytes, s.peakBytes
}

// MemoryLimit is the most bytes of persistent jobs memory holds (schedulerMemoryLimit).
func (s *Scheduler) MemoryLimit() int64 { return s.memLimit }

// Close stops delivering and waits for a page-in under way; what is stored stays
// stored for the next start.
func (s *Scheduler) Close() {
	s.mu.Lock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func invalid(format string, args ...any) *destinations.Error {
	return &destinations.Error{Message: fmt.Sprintf(format, args...), Err: destinations.ErrInvalidDestination}
}
