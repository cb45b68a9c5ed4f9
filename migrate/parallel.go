package migrate

import (
	"context"
	"fmt"
	"sync"
)

// DefaultParallel is how many queues MoveQueues moves at once by default: enough that
// the waits at the end of the queues overlap, few enough that the source does not
// serve many consumers at once.
const DefaultParallel = 4

// Tracker follows the moves of MoveQueues: Start is called as a queue's move begins
// and returns the callback counting its moved messages (nil for none); Done gets its
// Result when it ends, and may complete it (Duplicates). Both are called from the
// goroutines moving the queues.
type Tracker interface {
	Start(queue string) (moved func(n int))
	Done(r *Result)
}

// MoveQueues moves the queues with MoveQueue, parallel of them at once
// (DefaultParallel when not positive), each on its own connections. It returns the
// Results of the queues whose move began, in the order of queues, and the first
// error: then no other queue begins and the moves under way stop (ctx is cancelled
// for them), their Results counting what they moved.
func (m *Mover) MoveQueues(ctx context.Context, queues []string, parallel int, tr Tracker) ([]Result, error) {
	if parallel <= 0 {
		parallel = DefaultParallel
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]Result, len(queues))
	began := make([]bool, len(queues))
	next := make(chan int)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range min(parallel, len(queues)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				q := queues[i]
				r, err := m.MoveQueue(ctx, q, tr.Start(q))
				tr.Done(&r)
				results[i] = r
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("queue %s (%d moved before): %w", q, r.Moved, err)
					}
					mu.Unlock()
					cancel()
				}
			}
		}()
	}
	for i := range queues {
		if ctx.Err() != nil {
			break
		}
		select {
		case next <- i:
			began[i] = true
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	out := make([]Result, 0, len(queues))
	for i, r := range results {
		if began[i] {
			out = append(out, r)
		}
	}
	return out, firstErr
}
