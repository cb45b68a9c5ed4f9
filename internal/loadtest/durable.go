package loadtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
)

// runDurable performs the durable catch-up scenario with options o, which
// have their defaults and are valid; see the package comment.
func runDurable(ctx context.Context, o Options) (res Result, err error) {
	d := &DurableResult{
		Subscribers:    o.DurableSubscribers,
		ClientIDPrefix: o.ClientIDPrefix,
		Catchup:        o.Catchup,
		Kept:           o.KeepDurable,
	}
	res = Result{Destination: o.Destination, Durable: d}
	stopWith := func(e error) (Result, error) {
		res.Err = e
		return res, e
	}
	if o.DataDir != "" {
		if _, err := measureDir(o.DataDir); err != nil {
			return stopWith(fmt.Errorf("%w: data dir: %w", ErrOptions, err))
		}
	}
	r, err := newRun(o)
	if err != nil {
		return stopWith(err)
	}
	ids := make([]string, o.DurableSubscribers)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", o.ClientIDPrefix, i)
	}

	registered, err := registerDurables(ctx, o, ids)
	defer func() {
		if o.KeepDurable || len(registered) == 0 {
			return
		}
		d.Deleted, d.CleanupErr = deleteDurables(ctx, o, registered)
		if d.CleanupErr != nil && res.Err != nil && res.Sent == 0 {
			// Nothing was published, so the caller reports only the
			// error: it must tell what was left behind.
			res.Err = failures{res.Err, d.CleanupErr}
			err = res.Err
		}
	}()
	if err != nil {
		return stopWith(err)
	}
	progressf(o, "bench: %d durable subscriptions created and offline: client-ids %s .. %s\n",
		len(ids), ids[0], ids[len(ids)-1])

	if o.DataDir != "" {
		if d.StoreBefore, err = measureDir(o.DataDir); err != nil {
			return stopWith(fmt.Errorf("%w: before publishing: %w", ErrStore, err))
		}
	}

	pub := r.phase("publish", o.Producers, nil)
	stop, end, err := pub.execute(ctx)
	if err != nil {
		return stopWith(err)
	}
	start := pub.start
	sent := pub.result(stop, end)
	res.Sent, res.SendElapsed, res.SendRate = sent.Sent, sent.SendElapsed, sent.SendRate
	res.Stop, res.Err, res.Elapsed = stop, pub.err, end.Sub(start)
	d.Payload = res.Sent * int64(o.Size)
	if stop != StopComplete {
		return res, res.Err
	}
	if o.DataDir != "" {
		if d.StoreAfter, err = measureDir(o.DataDir); err != nil {
			return stopWith(fmt.Errorf("%w: after publishing: %w", ErrStore, err))
		}
		d.Measured = true
	}

	res.Expected = res.Sent * int64(len(ids))
	drainDurables(ctx, r, ids, &res, start)
	return res, res.Err
}

// drainDurables lets every subscriber of ids drain its backlog of
// res.Sent messages, in parallel or one after the other, and adds the
// figures to res. Subscribers not drained because of an error count as
// lost.
func drainDurables(ctx context.Context, r *run, ids []string, res *Result, start time.Time) {
	groups := [][]string{ids}
	if r.o.Catchup == CatchupSequential {
		groups = make([][]string, len(ids))
		for i, id := range ids {
			groups[i] = []string{id}
		}
	}
	var (
		unique      int64
		first, last int64 // unix nanos of the first SUBSCRIBE, the last message
	)
	for n, group := range groups {
		label := "catch-up"
		if len(groups) > 1 {
			label = fmt.Sprintf("catch-up %d/%d", n+1, len(groups))
		}
		c := r.phase(label, 0, group)
		c.backlog = res.Sent
		stop, end, err := c.execute(ctx)
		if err != nil {
			res.Stop, res.Elapsed = StopError, time.Since(start)
			if res.Err == nil {
				res.Err = err
			}
			break
		}
		res.Elapsed = end.Sub(start)
		for i, k := range c.consumers {
			s := SubscriberResult{
				ClientID:   group[i],
				Received:   k.received.Load(),
				Lost:       max(res.Sent-k.seen.count(), 0),
				Duplicated: k.duplicated,
				OutOfOrder: k.outOfOrder,
			}
			if lr := k.lastRecv.Load(); lr > 0 {
				s.Elapsed = time.Duration(lr - k.subscribed)
				s.Rate = rate(s.Received, s.Elapsed)
				last = max(last, lr)
			}
			if first == 0 || k.subscribed < first {
				first = k.subscribed
			}
			unique += k.seen.count()
			res.Received += s.Received
			res.Duplicated += s.Duplicated
			res.OutOfOrder += s.OutOfOrder
			res.Foreign += k.foreign
			res.Durable.Subscriber = append(res.Durable.Subscriber, s)
		}
		if stop != StopComplete && res.Stop == StopComplete {
			res.Stop = stop
		}
		if res.Err == nil {
			res.Err = c.err
		}
		if stop == StopError || stop == StopCanceled {
			break
		}
	}
	res.Lost = max(res.Expected-unique, 0)
	if last > first {
		res.RecvElapsed = time.Duration(last - first)
		res.RecvRate = rate(res.Received, res.RecvElapsed)
	}
}

// registerDurables creates the durable subscription of every client-id and
// leaves it offline: CONNECT, SUBSCRIBE with activemq.subscriptionName,
// DISCONNECT, each waiting for its receipt, all subscribers in parallel.
// It returns the client-ids whose SUBSCRIBE the broker confirmed and the
// first error.
func registerDurables(ctx context.Context, o Options, ids []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, o.IdleTimeout)
	defer cancel()
	subscribed := make([]bool, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { subscribed[i], errs[i] = registerDurable(ctx, o, id) })
	}
	wg.Wait()
	var done []string
	for i, id := range ids {
		if subscribed[i] {
			done = append(done, id)
		}
	}
	for i, err := range errs {
		if err != nil {
			return done, fmt.Errorf("%w: subscriber %s: %w", ErrConnect, ids[i], err)
		}
	}
	return done, nil
}

func registerDurable(ctx context.Context, o Options, clientID string) (subscribed bool, err error) {
	c, err := dialControl(ctx, o, clientID, o.IdleTimeout)
	if err != nil {
		return false, err
	}
	sub := frame.New(frame.SUBSCRIBE,
		frame.Destination, o.subscribed(),
		frame.Id, durableSubID,
		frame.Ack, o.Ack,
		"activemq.subscriptionName", durableName)
	if err := c.request(sub); err != nil {
		c.close()
		return false, connectErr(ctx, err)
	}
	if err := c.disconnect(); err != nil {
		return true, connectErr(ctx, err)
	}
	return true, nil
}

// deleteDurables deletes the durable subscription of every client-id:
// CONNECT, UNSUBSCRIBE with activemq.subscriptionName, DISCONNECT, all
// subscribers in parallel. It goes on after ctx has ended, so that an
// interrupted run leaves nothing behind, for at most the larger of
// Options.IdleTimeout and Options.MaxDuration: ActiveMQ 5.17 takes minutes
// to delete subscriptions with large backlogs, one at a time under its
// index lock, and goes on with an UNSUBSCRIBE whose client has left. It
// returns how many were deleted and an error naming the first failure.
func deleteDurables(ctx context.Context, o Options, ids []string) (int, error) {
	timeout := max(o.IdleTimeout, o.MaxDuration)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	progressf(o, "bench: deleting %d durable subscriptions (waiting up to %s)\n", len(ids), timeout)
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { errs[i] = deleteDurable(ctx, o, id, timeout) })
	}
	wg.Wait()
	deleted, first := 0, -1
	for i, err := range errs {
		switch {
		case err == nil:
			deleted++
		case first < 0:
			first = i
		}
	}
	if first >= 0 {
		return deleted, fmt.Errorf("%w: %d of %d: subscriber %s: %w",
			ErrCleanup, len(ids)-deleted, len(ids), ids[first], errs[first])
	}
	return deleted, nil
}

// deleteDurable deletes one durable subscription. ActiveMQ refuses to
// delete one that a consumer is attached to, so it is named on a connection
// of its own; with STOMP 1.0, ActiveMQ looks it up under the subscription
// name as client-id and does not find it.
func deleteDurable(ctx context.Context, o Options, clientID string, timeout time.Duration) error {
	c, err := dialControl(ctx, o, clientID, timeout)
	if err != nil {
		return err
	}
	unsub := frame.New(frame.UNSUBSCRIBE,
		frame.Id, durableSubID,
		frame.Destination, o.subscribed(),
		"activemq.subscriptionName", durableName)
	if err := c.request(unsub); err != nil {
		c.close()
		return connectErr(ctx, err)
	}
	_ = c.disconnect() // deleted: a lost DISCONNECT receipt changes nothing
	return nil
}

// dialControl opens a raw connection for a set-up or clean-up step: every
// request waits for its receipt, for at most timeout, and the connection
// is closed when ctx ends. go-stomp cannot do either step. It routes the
// RECEIPT of a receipted SUBSCRIBE to the subscription, which then closes
// (see the package comment), and it sends UNSUBSCRIBE only for a
// subscription of its own connection, while deleting a durable subscription
// must name one that no connection holds.
func dialControl(ctx context.Context, o Options, clientID string, timeout time.Duration) (*wire, error) {
	w, err := dialWire(ctx, o, clientID, timeout)
	if err != nil {
		return nil, err
	}
	go w.pump()
	stop := context.AfterFunc(ctx, w.close)
	go func() {
		<-w.dead
		stop()
	}()
	return w, nil
}

// progressf writes a progress line when progress is wanted.
func progressf(o Options, format string, args ...any) {
	if o.ProgressOut != nil {
		fmt.Fprintf(o.ProgressOut, format, args...)
	}
}
