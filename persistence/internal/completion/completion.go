// Package completion runs the callbacks of asynchronous commits (persistence.AsyncBatch)
// on one goroutine, in the order they were handed over, so that a store's writer is never
// held up by a slow callback and a callback may itself commit on the store (on the
// writer's goroutine such a commit would wait for itself).
package completion

import "sync"

// Runner calls queued callbacks one at a time, in push order, on its own goroutine.
// It is safe for concurrent use.
type Runner struct {
	mu     sync.Mutex
	queue  []call
	closed bool
	wake   chan struct{} // capacity 1: something was queued, or closing
	exited chan struct{} // closed when the goroutine returns
}

type call struct {
	fn  func(error)
	err error
}

// NewRunner starts a Runner's goroutine; Close stops it.
func NewRunner() *Runner {
	r := &Runner{wake: make(chan struct{}, 1), exited: make(chan struct{})}
	go r.run()
	return r
}

// Push queues fn(err). Once the Runner is closed (every earlier callback has run) it
// calls fn on the caller's goroutine instead, so a late callback is never lost.
func (r *Runner) Push(fn func(error), err error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		fn(err)
		return
	}
	r.queue = append(r.queue, call{fn, err})
	r.mu.Unlock()
	r.signal()
}

func (r *Runner) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Runner) run() {
	defer close(r.exited)
	var batch []call
	for {
		r.mu.Lock()
		batch, r.queue = r.queue, batch[:0]
		closed := r.closed
		r.mu.Unlock()
		for i, c := range batch {
			c.fn(c.err)
			batch[i] = call{}
		}
		if len(batch) > 0 {
			continue
		}
		if closed {
			return
		}
		<-r.wake
	}
}

// Close runs what is queued and stops the goroutine; it returns once the last queued
// callback returned. It must not be called from a callback. A second Close is a no-op.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.signal()
	<-r.exited
}
