package broker

import (
	"container/heap"
	"context"
	"log/slog"
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
// store batch. AMQ_SCHEDULED_CRON is refused with an error: cron schedules are not
// supported.

// Scheduling header names, as ActiveMQ spells them.
const (
	HeaderScheduledDelay  = "AMQ_SCHEDULED_DELAY"
	HeaderScheduledPeriod = "AMQ_SCHEDULED_PERIOD"
	HeaderScheduledRepeat = "AMQ_SCHEDULED_REPEAT"
	HeaderScheduledCron   = "AMQ_SCHEDULED_CRON"
	HeaderScheduledJobID  = "scheduledJobId"
)

// schedulerDest is the store destination holding scheduled persistent messages.
const schedulerDest = "scheduler://jobs"

// Internal headers of a stored job; removed before delivery.
const (
	hdrJobDests     = "x-amq-scheduled-dests"
	hdrJobDue       = "x-amq-scheduled-due"
	hdrJobRemaining = "x-amq-scheduled-remaining"
)

type job struct {
	seq       uint64
	due       int64 // ms since the epoch
	period    int64 // ms
	remaining int   // deliveries left after the next one
	dests     []destinations.Name
	msg       *persistence.Message
	index     int
}

type jobHeap []*job

func (h jobHeap) Len() int { return len(h) }
func (h jobHeap) Less(i, j int) bool {
	if h[i].due != h[j].due {
		return h[i].due < h[j].due
	}
	return h[i].seq < h[j].seq
}
func (h jobHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *jobHeap) Push(x any)   { j := x.(*job); j.index = len(*h); *h = append(*h, j) }
func (h *jobHeap) Pop() any     { old := *h; j := old[len(old)-1]; *h = old[:len(old)-1]; return j }
func (h jobHeap) peek() *job    { return h[0] }
func (h jobHeap) isEmpty() bool { return len(h) == 0 }

type scheduler struct {
	b       *Broker
	mu      sync.Mutex
	jobs    jobHeap
	nextSeq uint64
	timer   *time.Timer
	closed  bool
}

func newScheduler(b *Broker) *scheduler { return &scheduler{b: b, nextSeq: 1} }

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

func headerInt(m *persistence.Message, name string) (int64, bool, error) {
	v, ok := m.Headers.Get(name)
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, true, errorf(ErrInvalidDestination, "invalid %s %q: a non-negative integer", name, v)
	}
	return n, true, nil
}

// maybeSchedule takes a message that asks for scheduled delivery. It returns false when
// the message is due at once after all (no delay, period or repeat). done is called when
// the job is as durable as the message.
func (s *scheduler) maybeSchedule(dests []destinations.Name, m *persistence.Message, done func(error)) (bool, error) {
	if _, ok := m.Headers.Get(HeaderScheduledCron); ok {
		return false, &Error{Message: "AMQ_SCHEDULED_CRON is not supported; use AMQ_SCHEDULED_DELAY, AMQ_SCHEDULED_PERIOD and AMQ_SCHEDULED_REPEAT", Err: ErrInvalidDestination}
	}
	delay, _, err := headerInt(m, HeaderScheduledDelay)
	if err != nil {
		return false, err
	}
	period, _, err := headerInt(m, HeaderScheduledPeriod)
	if err != nil {
		return false, err
	}
	repeat, _, err := headerInt(m, HeaderScheduledRepeat)
	if err != nil {
		return false, err
	}
	if repeat > 0 && period == 0 {
		period = 1 // ActiveMQ repeats back to back when no period is given
	}
	j := &job{due: time.Now().UnixMilli() + delay, period: period, remaining: int(repeat), dests: dests, msg: m}
	s.mu.Lock()
	j.seq = s.nextSeq
	s.nextSeq++
	s.mu.Unlock()
	m.Headers = append(m.Headers, HeaderScheduledJobID, m.ID)
	if !m.Persistent {
		s.add(j)
		done(nil)
		return true, nil
	}
	batch := s.b.store.Begin()
	batch.Add(s.stored(j))
	s.b.commit(batch, persistence.Sync, func(err error) {
		if err == nil {
			s.add(j)
		} else {
			err = storeError(err)
		}
		done(err)
	})
	return true, nil
}

// stored is the job as kept in the store.
func (s *scheduler) stored(j *job) *persistence.Message {
	c := j.msg.Clone()
	c.Dest, c.Seq = schedulerDest, j.seq
	names := make([]string, len(j.dests))
	for i, d := range j.dests {
		names[i] = d.String()
	}
	c.Headers = append(c.Headers,
		hdrJobDests, strings.Join(names, ","),
		hdrJobDue, strconv.FormatInt(j.due, 10),
		hdrJobRemaining, strconv.Itoa(j.remaining),
		HeaderScheduledPeriod+"-ms", strconv.FormatInt(j.period, 10))
	return c
}

// recover loads the stored jobs.
func (s *scheduler) recover(ctx context.Context) error {
	return s.b.store.Scan(ctx, schedulerDest, 0, 0, func(m *persistence.Message) error {
		c := m.Clone()
		j := &job{seq: c.Seq}
		var kept persistence.Headers
		for i := 0; i+1 < len(c.Headers); i += 2 {
			k, v := c.Headers[i], c.Headers[i+1]
			switch k {
			case hdrJobDests:
				j.dests, _ = destinations.Parse(v)
			case hdrJobDue:
				j.due, _ = strconv.ParseInt(v, 10, 64)
			case hdrJobRemaining:
				j.remaining, _ = strconv.Atoi(v)
			case HeaderScheduledPeriod + "-ms":
				j.period, _ = strconv.ParseInt(v, 10, 64)
			default:
				kept = append(kept, k, v)
			}
		}
		c.Headers = kept
		j.msg = c
		s.mu.Lock()
		s.nextSeq = max(s.nextSeq, c.Seq+1)
		s.mu.Unlock()
		if len(j.dests) > 0 {
			s.add(j)
		}
		return nil
	})
}

func (s *scheduler) add(j *job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	heap.Push(&s.jobs, j)
	s.armLocked()
}

func (s *scheduler) armLocked() {
	if s.jobs.isEmpty() || s.closed {
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
	now := time.Now().UnixMilli()
	var due []*job
	s.mu.Lock()
	for !s.jobs.isEmpty() && s.jobs.peek().due <= now {
		due = append(due, heap.Pop(&s.jobs).(*job))
	}
	s.mu.Unlock()
	for _, j := range due {
		s.deliver(j)
	}
	s.mu.Lock()
	s.armLocked()
	s.mu.Unlock()
}

// deliver sends one occurrence of j and reschedules or retires it, in one store batch.
func (s *scheduler) deliver(j *job) {
	m := j.msg.Clone()
	m.ID = s.b.newMessageID()
	m.Timestamp = time.Now().UnixMilli()
	m.Seq, m.Dest = 0, ""
	batch, entries, refused := s.b.route(j.dests, m, nil)
	if refused != nil {
		s.b.log.Warn("scheduled message refused", slog.Any("err", refused))
	}
	again := j.remaining > 0
	if again {
		j.remaining--
		j.due += j.period
	}
	if j.msg.Persistent {
		if batch == nil {
			batch = s.b.store.Begin()
		}
		if again {
			batch.Add(s.stored(j))
		} else {
			batch.Ack(schedulerDest, j.seq)
		}
	}
	if again {
		s.add(j)
	}
	if batch == nil {
		return
	}
	s.b.commit(batch, persistence.Sync, func(err error) {
		settleEntries(entries, err)
		if err != nil {
			s.b.log.Error("scheduled delivery not stored", slog.Any("err", err))
		}
	})
}

func (s *scheduler) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
}
