package loadtest

import (
	"context"
	"time"
)

// runReplay performs the replay scenario with options o, which have their
// defaults and are valid: the producers publish every message with no
// consumer subscribed (the last send of each is receipted, so once they are
// done the broker holds them all), then the consumers subscribe and drain
// what is stored. Result has the publishing in Sent and SendRate, the drain
// in Received and RecvRate, which runs from the first SUBSCRIBE to the last
// message.
func runReplay(ctx context.Context, o Options) (Result, error) {
	res := Result{Destination: o.Destination}
	r, err := newRun(o)
	if err != nil {
		res.Err = err
		return res, err
	}
	pub := r.phase("publish", o.Producers, nil)
	stop, end, err := pub.execute(ctx)
	if err != nil {
		res.Err = err
		return res, err
	}
	sent := pub.result(stop, end)
	res.Sent, res.SendElapsed, res.SendRate = sent.Sent, sent.SendElapsed, sent.SendRate
	res.Stop, res.Err, res.Elapsed = stop, pub.err, end.Sub(pub.start)
	if stop != StopComplete {
		return res, res.Err
	}
	progressf(o, "bench: published %d; replaying\n", res.Sent)

	drain := r.phase("replay", 0, nil)
	drain.o.Consumers = o.Consumers
	drain.backlog = res.Sent
	stop, end, err = drain.execute(ctx)
	if err != nil {
		res.Stop, res.Err = StopError, err
		return res, err
	}
	got := drain.result(stop, end)
	res.Expected, res.Received = got.Expected, got.Received
	res.Lost, res.Duplicated, res.OutOfOrder, res.Foreign = got.Lost, got.Duplicated, got.OutOfOrder, got.Foreign
	res.Stop, res.Err = stop, drain.err
	res.Elapsed += end.Sub(drain.start)
	var first, last int64
	for _, k := range drain.consumers {
		if first == 0 || k.subscribed < first {
			first = k.subscribed
		}
		last = max(last, k.lastRecv.Load())
	}
	if last > first {
		res.RecvElapsed = time.Duration(last - first)
		res.RecvRate = rate(res.Received, res.RecvElapsed)
	}
	return res, res.Err
}
