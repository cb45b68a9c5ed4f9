package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Group limits: the writer stops adding batches to a group at any of them. maxGroupOps
// bounds a transaction's length: it holds the lease row FOR SHARE (the fencing check),
// so the lease renewal waits for it; acknowledgements count no bytes, and a fast drain
// once grouped a million DELETEs into one transaction, which outlasted the lease.
const (
	maxGroupBatches = 1024
	maxGroupBytes   = 16 << 20
	maxGroupOps     = 16 << 10
	// queueLen is how many batches may wait for the writer; a commit past it waits
	// (CommitAsync too), which holds back the producer or consumer it is for. A deep
	// queue's drain commits a batch of acknowledgements per write to a consumer: at
	// 1024 waiting batches of up to a prefetch each, a drain faster than the database
	// held a million acknowledgements (RssAnon 336 MiB at 10M stored).
	queueLen = 256
)

// States of a request.
const (
	reqQueued   int32 = iota // waiting for the writer; Commit may still withdraw it
	reqTaken                 // the writer has it; the outcome will be reported
	reqCanceled              // withdrawn by Commit (its ctx ended): the writer skips it
)

// request is one committed batch (or a control action) waiting for the writer.
type request struct {
	ops    []op
	bytes  int
	sync   bool
	result chan error  // Commit waits here (buffered 1) ...
	done   func(error) // ... or CommitAsync is called back
	// ctrl, if set, makes this a control request: the writer runs it between groups.
	ctrl  func(ctx context.Context) error
	state atomic.Int32
}

// writer is the one goroutine that writes: it takes every request queued while it
// was busy, applies them in one SQL transaction (one pgx.Batch, one COMMIT), updates
// the in-memory state, and completes all of them.
type writer struct {
	s      *Store
	queue  chan *request
	exited chan struct{}
	seg    []*request
}

func newWriter(s *Store) *writer {
	return &writer{s: s, queue: make(chan *request, queueLen), exited: make(chan struct{})}
}

// run serves the queue until it is closed and drained.
func (w *writer) run() {
	defer close(w.exited)
	var group []*request
	for {
		r, ok := <-w.queue
		if !ok {
			return
		}
		var open bool
		group, open = takeGroup(append(group[:0], r), w.queue)
		w.process(group)
		clear(group)
		if !open {
			return
		}
	}
}

// takeGroup adds to group (holding the first request) the requests waiting in queue,
// up to the group limits. open is false once queue is closed.
func takeGroup(group []*request, queue <-chan *request) (_ []*request, open bool) {
	bytes, ops := 0, 0
	for _, r := range group {
		bytes, ops = bytes+r.bytes, ops+len(r.ops)
	}
	for len(group) < maxGroupBatches && bytes < maxGroupBytes && ops < maxGroupOps {
		select {
		case r, ok := <-queue:
			if !ok {
				return group, false
			}
			group = append(group, r)
			bytes += r.bytes
			ops += len(r.ops)
		default:
			return group, true
		}
	}
	return group, true
}

// process commits the batches of group, running control requests in their place in
// the order.
func (w *writer) process(group []*request) {
	seg := w.seg[:0]
	for _, r := range group {
		if r.ctrl != nil {
			w.commitGroup(seg)
			seg = seg[:0]
			ctx, cancel := context.WithTimeout(context.Background(), w.s.opts.CommitTimeout)
			err := r.ctrl(ctx)
			cancel()
			w.complete(r, w.s.publicErr(err))
			continue
		}
		if r.state.CompareAndSwap(reqQueued, reqTaken) {
			seg = append(seg, r)
		}
	}
	w.commitGroup(seg)
	clear(seg)
	w.seg = seg[:0]
}

// commitGroup applies reqs in one transaction and completes them. If the transaction
// fails on a statement (an SQL error, not a lost connection), each batch is retried
// in a transaction of its own, so one bad batch cannot fail the others.
func (w *writer) commitGroup(reqs []*request) {
	if len(reqs) == 0 {
		return
	}
	err := w.prepare()
	if err == nil {
		err = w.transact(reqs)
		if err != nil && len(reqs) > 1 && isStatementError(err) {
			for _, r := range reqs {
				err := w.prepare()
				if err == nil {
					err = w.transact([]*request{r})
				}
				w.complete(r, w.s.publicErr(err))
			}
			return
		}
	}
	err = w.s.publicErr(err)
	for _, r := range reqs {
		w.complete(r, err)
	}
}

// prepare refuses to write without the lease, and reloads the state if it may be
// stale.
func (w *writer) prepare() error {
	if err := w.s.lease.lostErr(); err != nil {
		return err
	}
	if !w.s.stale.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.s.opts.CommitTimeout)
	defer cancel()
	return w.reload(ctx)
}

// reload replaces the in-memory state with the tables' (the writer's goroutine only).
func (w *writer) reload(ctx context.Context) error {
	st, err := loadState(ctx, w.s.pool, w.s.t)
	if err != nil {
		return fmt.Errorf("reload state: %w", err)
	}
	w.s.mu.Lock()
	w.s.st = st
	w.s.mu.Unlock()
	w.s.stale.Store(false)
	return nil
}

// countPending counts the rows of SUB_PENDING by SUB_ID: the backlog of every durable
// subscription, read from the table's primary key (SUB_ID, ID) alone, one aggregate
// query over every pending row. Run on the writer, between transactions.
func (w *writer) countPending(ctx context.Context) (map[int64]int64, error) {
	rows, _ := w.s.pool.Query(ctx, w.s.t.countPending)
	out := map[int64]int64{}
	var id, n int64
	_, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		out[id] = n
		return nil
	})
	return out, err
}

// errFenced is returned by the lease check of a transaction when the lease is gone.
var errFenced = errors.New("lease not held")

// transact applies reqs in one transaction: the lease check and the planned
// statements, sent as one pgx.Batch. Without BEGIN, PostgreSQL runs the statements of
// one pipeline (up to its Sync) as one implicit transaction, committed at the Sync and
// rolled back entirely by an error in any statement: one round trip per group. The
// in-memory state changes only once the commit is known.
func (w *writer) transact(reqs []*request) error {
	s := w.s
	ov := newOverlay(s.st) // s.st changes only on this goroutine: no lock needed to read it
	b := &pgx.Batch{}
	async := true
	for _, r := range reqs {
		async = async && !r.sync
	}
	if async { // local to the (implicit) transaction
		b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	}
	if holder, ok := s.lease.fencing(); ok {
		b.Queue(s.t.leaseCheck, holder).Query(func(rows pgx.Rows) error {
			rows.Close()
			var pgErr *pgconn.PgError
			if err := rows.Err(); errors.As(err, &pgErr) && pgErr.Code == "22012" {
				return errFenced
			}
			return rows.Err()
		})
	}
	header := b.Len()
	p := newPlanner(s.t, b, ov)
	for _, r := range reqs {
		for i := range r.ops {
			p.apply(&r.ops[i])
		}
	}
	p.finish()
	if b.Len() == header { // nothing to write (empty batches, no-ops)
		s.countGroup(len(reqs))
		return nil
	}

	ctx, cancel := context.WithTimeout(context.Background(), s.opts.CommitTimeout)
	defer cancel()
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		var pgErr *pgconn.PgError
		switch {
		case errors.Is(err, errFenced):
			s.lease.markLost("the lease was no longer held at commit")
		case !errors.As(err, &pgErr):
			// The connection failed: the transaction may have been committed at the
			// Sync. Reload the state from the tables before writing again.
			s.stale.Store(true)
		}
		return err
	}
	s.mu.Lock()
	ov.merge()
	s.mu.Unlock()
	s.countGroup(len(reqs))
	return nil
}

// isStatementError tells an SQL error of one statement (worth retrying the batches one
// by one) from a lost connection, a server going down or the lease being lost.
func isStatementError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code[:2] {
	case "08", "53", "57", "58": // connection, resources, operator intervention, system
		return false
	}
	return true
}

func (w *writer) complete(r *request, err error) {
	if r.result != nil {
		r.result <- err
		return
	}
	w.s.completer.Push(r.done, err)
}
