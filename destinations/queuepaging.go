package destinations

import (
	"context"
	"errors"
	"log/slog"
	"math"

	"github.com/activemq-go/broker/persistence"
)

// pageBatch is the most messages one page-in reads.
const pageBatch = 2000

// pagedDone settles a paged-out message whose store write finished.
func (q *QueueDest) pagedDone(seq uint64, err error) {
	q.mu.Lock()
	size := q.inflight[seq]
	delete(q.inflight, seq)
	q.pagedSettled++
	q.pageBlocked = false
	if err != nil {
		q.enqueued--
		q.pagedOut--
		q.pagedOutBytes -= size
	}
	q.maybePageInLocked()
	q.wakeRetireLocked()
	q.mu.Unlock()
}

// maybePageInLocked starts reading paged-out messages back when consumers have drained
// the queue to half its memory limit.
func (q *QueueDest) maybePageInLocked() {
	if !q.paged || q.pagingNow || q.pageBlocked || len(q.consumers) == 0 || q.memBytes > q.memLimit/2 || q.env.Memory.Over() {
		return
	}
	q.pagingNow = true
	q.env.Background.Add(1)
	go q.pageIn()
}

var errStopScan = errors.New("stop scan")

// pageIn reads the next paged-out messages from the store into memory, in order, up to
// half the memory limit, never past a message whose write is still in flight.
func (q *QueueDest) pageIn() {
	defer q.env.Background.Done()
	q.mu.Lock()
	after := q.pageAfter
	bound := uint64(math.MaxUint64)
	for s := range q.inflight {
		bound = min(bound, s)
	}
	accepts, settled := q.pagedAccepts, q.pagedSettled
	q.pageFloor = math.MaxUint64
	used, limit := q.env.Memory.Used()
	budget := max(min(q.memLimit/2-q.memBytes, limit/4*3-used), 1)
	hwm := q.recoveredHWM
	q.mu.Unlock()

	var got []*Entry
	var loaded int64
	last, complete := after, true
	scan := q.env.Store.Scan
	dest := q.dest
	if q.sub != nil {
		key := *q.sub
		scan = func(ctx context.Context, _ string, after uint64, max int, fn func(*persistence.Message) error) error {
			return q.env.Store.ScanSub(ctx, key, after, max, fn)
		}
	}
	err := scan(context.Background(), dest, after, pageBatch, func(m *persistence.Message) error {
		if m.Seq >= bound {
			complete = false
			return errStopScan
		}
		c := m.Clone()
		size := int64(c.Size())
		deliveries := c.RedeliveryCount
		if deliveries == 0 && c.Seq <= hwm {
			deliveries = 1 // dispatched before the restart: possibly delivered
		}
		got = append(got, &Entry{Msg: c, Ready: true, Size: size,
			Redelivered: deliveries > 0, Deliveries: deliveries})
		last = m.Seq
		loaded += size
		if loaded >= budget || len(got) == pageBatch {
			complete = false
			return errStopScan
		}
		return nil
	})
	q.mu.Lock()
	defer q.mu.Unlock()
	q.releasePagingLocked()
	if err != nil && !errors.Is(err, errStopScan) {
		q.env.Log.Error("paging messages in from the store failed", slog.String("dest", q.client), slog.Any("err", err))
		return
	}
	// What was paged out after the snapshot is left to the next page-in from the first
	// such message on (see pageFloor): its write, or that of one before it, may have
	// completed only after the scan passed.
	kept := 0
	for kept < len(got) && got[kept].Msg.Seq < q.pageFloor {
		kept++
	}
	if kept < len(got) {
		complete = false
		for _, e := range got[kept:] {
			loaded -= e.Size
		}
		clear(got[kept:])
		got = got[:kept]
		last = after
		if kept > 0 {
			last = got[kept-1].Msg.Seq
		}
	}
	for _, e := range got {
		q.hold(e.Size)
		q.pending.Push(e)
	}
	q.pagedOut -= int64(len(got))
	q.pagedOutBytes = max(q.pagedOutBytes-loaded, 0)
	q.pageAfter = last
	if complete && len(q.inflight) == 0 && q.pagedAccepts == accepts {
		q.paged = false
		q.pagedOut, q.pagedOutBytes = 0, 0
	}
	q.pageBlocked = q.paged && len(got) == 0 && q.pagedSettled == settled
	q.dispatchLocked()
}
