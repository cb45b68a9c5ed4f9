package loadtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-stomp/stomp/v3"
)

// Stop reasons, reported in Result.Stop.
const (
	StopComplete = "complete"     // every expected delivery arrived
	StopIdle     = "idle-timeout" // nothing arrived for Options.IdleTimeout
	StopMax      = "max-duration" // Options.MaxDuration passed
	StopError    = "error"        // a connection failed; see Result.Err
	StopCanceled = "canceled"     // the context ended
)

// teardownGrace is how long a stopping run waits for its goroutines to
// notice before it acts: closes the producers' sockets under them, then
// leaves them; tells the consumers to quit.
const teardownGrace = time.Second

// run is the state shared by the goroutines of one Run.
type run struct {
	o            Options
	id           string // bench-run header value
	counts       []int  // messages per producer
	body         []byte
	receiptEvery int
	mode         stomp.AckMode

	// Set for a step of the durable scenario (see phase): label names it
	// in progress lines; clientIDs, one per consumer, make the consumers
	// attach to their durable subscriptions; backlog counts the messages
	// published before this run, which its consumers expect as well.
	label     string
	clientIDs []string
	backlog   int64

	start    time.Time
	stopping atomic.Bool

	unique   atomic.Int64 // first deliveries (per consumer for a topic)
	target   atomic.Int64 // expected deliveries, MaxInt64 until producers end
	done     chan struct{}
	doneOnce sync.Once

	errOnce sync.Once
	err     error
	failed  chan struct{}

	quit chan struct{} // closed when consumers must stop draining

	producers []*producer
	consumers []*consumer
}

// Run performs one load run and returns its figures. The returned error is
// Result.Err: a setup failure (nothing was sent) or a connection that failed
// during the run (the figures then cover what happened before). Lost or
// duplicated messages are not errors of Run; see Result.Failure.
//
// With Options.DurableSubscribers, Run performs the durable catch-up
// scenario instead, with Options.Connects the connect scenario; see the
// package comment.
func Run(ctx context.Context, o Options) (Result, error) {
	o = o.withDefaults(time.Now())
	res := Result{Destination: o.Destination}
	if err := o.validate(); err != nil {
		res.Err = err
		return res, err
	}
	if o.Connects > 0 {
		return runConnects(ctx, o)
	}
	if o.DurableSubscribers > 0 {
		return runDurable(ctx, o)
	}
	if o.Replay {
		return runReplay(ctx, o)
	}
	r, err := newRun(o)
	if err != nil {
		res.Err = err
		return res, err
	}
	stop, end, err := r.execute(ctx)
	if err != nil {
		res.Err = err
		return res, err
	}
	return r.result(stop, end), r.err
}

// execute connects, starts the producers together and waits until the run
// stops; it returns why and when. An error means the run could not connect
// and nothing was sent; errors during the run are in r.err.
func (r *run) execute(ctx context.Context) (stop string, end time.Time, err error) {
	var consumers, producers sync.WaitGroup
	if err := r.connect(ctx, &consumers); err != nil {
		r.stopping.Store(true)
		r.closeAll()
		r.stopConsumers(&consumers)
		return "", time.Time{}, err
	}

	r.start = time.Now()
	for _, p := range r.producers {
		producers.Go(p.run)
	}
	producersDone := make(chan struct{})
	go func() {
		producers.Wait()
		r.expect()
		close(producersDone)
	}()

	stop = r.monitor(ctx)
	end = time.Now()
	r.stopping.Store(true)
	r.teardown(producersDone, &consumers)
	return stop, end, nil
}

func newRun(o Options) (*run, error) {
	k, err := receiptInterval(o.Receipts)
	if err != nil {
		return nil, err
	}
	mode, err := ackMode(o.Ack)
	if err != nil {
		return nil, err
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	body := make([]byte, o.Size)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	r := &run{
		o:            o,
		id:           hex.EncodeToString(id[:]),
		counts:       shares(o.Messages, o.Producers),
		body:         body,
		receiptEvery: k,
		mode:         mode,
	}
	r.reset()
	return r, nil
}

// reset prepares the run state of a fresh run.
func (r *run) reset() {
	r.done = make(chan struct{})
	r.failed = make(chan struct{})
	r.quit = make(chan struct{})
	r.target.Store(math.MaxInt64)
}

// phase returns a fresh run for one step of the durable scenario, sharing
// r's id, message counts and body: producers producer connections, and one
// consumer per client-id, attached to that client's durable subscription.
func (r *run) phase(label string, producers int, clientIDs []string) *run {
	o := r.o
	o.Producers, o.Consumers = producers, len(clientIDs)
	p := &run{
		o:            o,
		id:           r.id,
		counts:       r.counts,
		body:         r.body,
		receiptEvery: r.receiptEvery,
		mode:         r.mode,
		label:        label,
		clientIDs:    clientIDs,
	}
	p.reset()
	return p
}

// consumerName names consumer i in errors.
func (r *run) consumerName(i int) string {
	if r.clientIDs != nil {
		return "subscriber " + r.clientIDs[i]
	}
	return fmt.Sprintf("consumer %d", i)
}

// connect opens every connection in parallel: consumers subscribed and
// confirmed, their goroutines started (tracked by consumers), producers
// connected. The first failure is returned.
func (r *run) connect(ctx context.Context, consumers *sync.WaitGroup) error {
	ctx, cancel := context.WithTimeout(ctx, r.o.IdleTimeout)
	defer cancel()

	r.consumers = make([]*consumer, r.o.Consumers)
	r.producers = make([]*producer, r.o.Producers)
	var shared *tracker
	if !r.o.Topic {
		shared = newTracker(r.counts)
	}
	consumerRead, consumerWrite := readQueue, 16
	if r.mode.ShouldAck() {
		consumerRead, consumerWrite = ackQueue(r.o.Prefetch), ackQueue(r.o.Prefetch)
	}

	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	setErr := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = err
			cancel() // no point waiting for the others
		}
	}
	durable := r.clientIDs != nil
	for i := range r.consumers {
		wg.Go(func() {
			name := r.consumerName(i)
			clientID := ""
			if durable {
				clientID = r.clientIDs[i]
			}
			c, err := dial(ctx, r.o, clientID, consumerRead, consumerWrite)
			if err != nil {
				setErr(fmt.Errorf("%w: %s: %w", ErrConnect, name, err))
				return
			}
			subscribed := time.Now()
			sub, err := c.subscribe(r.o, r.mode, durable)
			if err != nil {
				c.close()
				setErr(fmt.Errorf("%w: %s: subscribe: %w", ErrConnect, name, err))
				return
			}
			seen := shared
			if seen == nil {
				seen = newTracker(r.counts)
			}
			k := newConsumer(r, i, c, sub, seen)
			k.subscribed = subscribed.UnixNano()
			mu.Lock()
			r.consumers[i] = k
			mu.Unlock()
			consumers.Go(k.run)
			if durable {
				// Its backlog is on the way already; a refused
				// SUBSCRIBE fails the drain.
				return
			}
			if err := c.confirm(ctx); err != nil {
				setErr(fmt.Errorf("%w: %s: confirm subscription: %w", ErrConnect, name, err))
			}
		})
	}
	for i := range r.producers {
		wg.Go(func() {
			c, err := dial(ctx, r.o, "", readQueue, producerWriteQueue)
			if err != nil {
				setErr(fmt.Errorf("%w: producer %d: %w", ErrConnect, i, err))
				return
			}
			mu.Lock()
			r.producers[i] = newProducer(r, i, r.counts[i], c)
			mu.Unlock()
		})
	}
	wg.Wait()
	return first
}

// monitor waits for the run to stop, printing progress meanwhile, and
// returns why it stopped.
func (r *run) monitor(ctx context.Context) string {
	maxTimer := time.NewTimer(r.o.MaxDuration)
	defer maxTimer.Stop()
	idleTimer := time.NewTimer(r.o.IdleTimeout)
	defer idleTimer.Stop()
	var tick <-chan time.Time
	if r.o.ProgressOut != nil {
		t := time.NewTicker(r.o.Progress)
		defer t.Stop()
		tick = t.C
	}
	lastTick, lastRecv := r.start, int64(0)
	for {
		select {
		case <-r.done:
			return StopComplete
		case <-r.failed:
			return StopError
		case <-ctx.Done():
			r.fail(ctx.Err())
			return StopCanceled
		case <-maxTimer.C:
			return StopMax
		case now := <-idleTimer.C:
			idle := now.Sub(r.lastActivity())
			if idle >= r.o.IdleTimeout {
				return StopIdle
			}
			idleTimer.Reset(r.o.IdleTimeout - idle)
		case now := <-tick:
			lastRecv = r.progress(now, lastTick, lastRecv)
			lastTick = now
		}
	}
}

// progress writes a progress line at now: what was sent and received, and
// the rate since the line at then, when the count was last. A run without
// consumers (publishing) counts sends; it returns the count.
func (r *run) progress(now, then time.Time, last int64) int64 {
	elapsed := now.Sub(r.start).Round(100 * time.Millisecond)
	perSec := func(n int64) string {
		return groupDigits(int64(float64(n-last) / now.Sub(then).Seconds()))
	}
	sent, recv := r.sent(), r.received()
	switch {
	case len(r.consumers) == 0:
		fmt.Fprintf(r.o.ProgressOut, "bench: %s %s sent %s (%s msgs/s)\n",
			r.label, elapsed, groupDigits(sent), perSec(sent))
		return sent
	case len(r.producers) == 0:
		fmt.Fprintf(r.o.ProgressOut, "bench: %s %s received %s of %s (%s msgs/s)\n",
			r.label, elapsed, groupDigits(recv), groupDigits(r.expected()), perSec(recv))
	default:
		fmt.Fprintf(r.o.ProgressOut, "bench: %s sent %s received %s (%s msgs/s)\n",
			elapsed, groupDigits(sent), groupDigits(recv), perSec(recv))
	}
	return recv
}

// teardown stops producers, then disconnects consumers, and waits for the
// goroutines of the run, each wait bounded.
func (r *run) teardown(producersDone <-chan struct{}, consumers *sync.WaitGroup) {
	if !waitFor(producersDone, teardownGrace) {
		// A producer blocked in Send: closing its socket fails the
		// send, unless go-stomp's connection goroutine died before it
		// registered the receipt the send waits for; then only the
		// receipt timeout (IdleTimeout) ends it. Such a producer is left
		// behind: it touches nothing but atomics from here on.
		for _, p := range r.producers {
			p.c.close()
		}
		waitFor(producersDone, teardownGrace)
	}
	var wg sync.WaitGroup
	for _, k := range r.consumers {
		wg.Go(func() { _ = k.c.disconnect() })
	}
	wg.Wait()
	r.stopConsumers(consumers)
}

// stopConsumers waits for the consumer goroutines once their sockets are
// closed. go-stomp closes a subscription's channel when its connection
// ends, except when its connection goroutine hangs delivering an error to a
// receipt nobody waits for any more (a timed-out DISCONNECT); after a grace
// period the consumers are told to quit.
func (r *run) stopConsumers(consumers *sync.WaitGroup) {
	done := make(chan struct{})
	go func() {
		consumers.Wait()
		close(done)
	}()
	if !waitFor(done, teardownGrace) {
		close(r.quit)
		<-done
	}
}

// waitFor reports whether ch was closed within d.
func waitFor(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// closeAll closes every socket opened so far.
func (r *run) closeAll() {
	for _, k := range r.consumers {
		if k != nil {
			k.c.close()
		}
	}
	for _, p := range r.producers {
		if p != nil {
			p.c.close()
		}
	}
}

// fail records the first error of a running run and stops it. Errors after
// the run has stopped come from tearing it down and are dropped.
func (r *run) fail(err error) {
	if r.stopping.Load() {
		return
	}
	r.errOnce.Do(func() {
		r.err = err
		close(r.failed)
	})
}

// delivered counts a first delivery and completes the run at the target.
func (r *run) delivered() {
	if r.unique.Add(1) >= r.target.Load() {
		r.complete()
	}
}

// expect sets the target once the producers have ended: everything they
// sent (and the backlog), to every consumer for a topic.
func (r *run) expect() {
	r.target.Store(r.expected())
	if r.unique.Load() >= r.target.Load() {
		r.complete()
	}
}

func (r *run) expected() int64 {
	if r.o.Consumers == 0 {
		return 0 // publishing only (a phase of the durable or replay scenario)
	}
	n := r.sent() + r.backlog
	if r.o.Topic {
		n *= int64(len(r.consumers))
	}
	return n
}

func (r *run) complete() { r.doneOnce.Do(func() { close(r.done) }) }

func (r *run) sent() int64 {
	var n int64
	for _, p := range r.producers {
		n += p.sent.Load()
	}
	return n
}

func (r *run) received() int64 {
	var n int64
	for _, k := range r.consumers {
		n += k.received.Load()
	}
	return n
}

// lastActivity is when a bench message last arrived (was last sent, in a
// run without consumers), or the start.
func (r *run) lastActivity() time.Time {
	last := r.start.UnixNano()
	for _, k := range r.consumers {
		last = max(last, k.lastRecv.Load())
	}
	if len(r.consumers) == 0 {
		for _, p := range r.producers {
			last = max(last, p.lastSend.Load())
		}
	}
	return time.Unix(0, last)
}

// result computes the figures once every goroutine has ended.
func (r *run) result(stop string, end time.Time) Result {
	res := Result{
		Destination: r.o.Destination,
		Stop:        stop,
		Elapsed:     end.Sub(r.start),
		Sent:        r.sent(),
		Expected:    r.expected(),
		Err:         r.err,
	}
	var lastSend int64
	for _, p := range r.producers {
		lastSend = max(lastSend, p.finished.Load())
	}
	if res.Sent > 0 {
		res.SendElapsed = time.Unix(0, lastSend).Sub(r.start)
		res.SendRate = rate(res.Sent, res.SendElapsed)
	}

	var hist histogram
	var lastRecv int64
	var unique int64
	for _, k := range r.consumers {
		hist.merge(&k.hist)
		res.Received += k.received.Load()
		res.Duplicated += k.duplicated
		res.Foreign += k.foreign
		if k.checkOrder {
			res.OutOfOrder += k.outOfOrder
		}
		lastRecv = max(lastRecv, k.lastRecv.Load())
		if r.o.Topic {
			unique += k.seen.count()
		}
	}
	if !r.o.Topic && len(r.consumers) > 0 {
		unique = r.consumers[0].seen.count()
	}
	res.Lost = max(res.Expected-unique, 0)
	if res.Received > 0 {
		res.RecvElapsed = time.Unix(0, lastRecv).Sub(r.start)
		res.RecvRate = rate(res.Received, res.RecvElapsed)
	}
	res.P50 = hist.quantile(0.50)
	res.P90 = hist.quantile(0.90)
	res.P99 = hist.quantile(0.99)
	res.Max = time.Duration(hist.max)
	return res
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
