package loadtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// connectDeadline bounds one connect of the connect scenario, from the
	// dial to the DISCONNECT's RECEIPT: a broker may delay its answer to a
	// failed login on purpose.
	connectDeadline = 30 * time.Second

	// connectReadBuffer is the read buffer of a connect: it reads nothing
	// but CONNECTED, ERROR and RECEIPT frames.
	connectReadBuffer = 4 << 10
)

// disconnectReceipt is the receipt of the connect scenario's DISCONNECT.
const disconnectReceipt = "bench-disconnect"

// disconnectFrame is the connect scenario's DISCONNECT.
var disconnectFrame = []byte("DISCONNECT\nreceipt:" + disconnectReceipt + "\n\n\x00")

// connectOutcome is how one connect ended.
type connectOutcome uint8

const (
	connectOK      connectOutcome = iota // CONNECTED, then the DISCONNECT's RECEIPT
	connectRefused                       // an ERROR frame in answer to CONNECT
	connectFailed                        // anything else
)

// connectRun is the state shared by the workers of the connect scenario.
type connectRun struct {
	o        Options
	connect  []byte        // the CONNECT frame, the same for every connect
	deadline time.Duration // of one connect

	start                    time.Time
	ok, refused, failed      atomic.Int64
	firstRefusal, firstError atomic.Pointer[string]
}

// connector makes one worker's connects, one after another. Its frame
// reader is reused for every connection.
type connector struct {
	r    *connectRun
	w    wire
	hist histogram // CONNECT sent to the expected answer
}

// runConnects performs the connect scenario with options o, which have
// their defaults and are valid; see the package comment.
func runConnects(ctx context.Context, o Options) (Result, error) {
	r, err := newConnectRun(o)
	if err != nil {
		res := Result{Connects: &ConnectResult{Connects: o.Connects, ExpectRefused: o.ExpectRefused}, Err: err}
		return res, err
	}
	return r.execute(ctx)
}

func newConnectRun(o Options) (*connectRun, error) {
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("%w: addr: %w", ErrOptions, err)
	}
	return &connectRun{
		o:        o,
		connect:  appendConnect(nil, o, host, ""),
		deadline: connectDeadline,
	}, nil
}

// execute runs the workers until every connect is made, MaxDuration
// passes or ctx ends, printing progress meanwhile.
func (r *connectRun) execute(ctx context.Context) (Result, error) {
	runCtx, cancel := context.WithTimeout(ctx, r.o.MaxDuration)
	defer cancel()
	counts := shares(r.o.Connects, r.o.Producers)
	workers := make([]*connector, len(counts))
	var wg sync.WaitGroup
	r.start = time.Now()
	for i, n := range counts {
		c := &connector{r: r, w: wire{
			br:      bufio.NewReaderSize(nil, connectReadBuffer),
			scratch: make([]byte, 0, 256),
		}}
		workers[i] = c
		wg.Go(func() { c.run(runCtx, n) })
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	r.monitor(done)
	end := time.Now()

	var hist histogram
	for _, c := range workers {
		hist.merge(&c.hist)
	}
	c := &ConnectResult{
		Connects:      r.o.Connects,
		ExpectRefused: r.o.ExpectRefused,
		OK:            r.ok.Load(),
		Refused:       r.refused.Load(),
		Errors:        r.failed.Load(),
		P50:           hist.quantile(0.50),
		P90:           hist.quantile(0.90),
		P99:           hist.quantile(0.99),
		Max:           time.Duration(hist.max),
	}
	if p := r.firstRefusal.Load(); p != nil {
		c.FirstRefusal = *p
	}
	if p := r.firstError.Load(); p != nil {
		c.FirstError = *p
	}
	res := Result{Connects: c, Elapsed: end.Sub(r.start), Stop: StopComplete}
	c.Rate = rate(c.Done(), res.Elapsed)
	if c.Done() < int64(c.Connects) {
		switch {
		case ctx.Err() != nil:
			res.Stop, res.Err = StopCanceled, ctx.Err()
		case ended(runCtx):
			res.Stop = StopMax
		}
	}
	return res, res.Err
}

// monitor writes progress lines until done is closed.
func (r *connectRun) monitor(done <-chan struct{}) {
	if r.o.ProgressOut == nil {
		<-done
		return
	}
	t := time.NewTicker(r.o.Progress)
	defer t.Stop()
	then, last := r.start, int64(0)
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			n := r.ok.Load() + r.refused.Load() + r.failed.Load()
			fmt.Fprintf(r.o.ProgressOut, "bench: %s connects %s of %s (%s connects/s) refused %s errors %s\n",
				now.Sub(r.start).Round(100*time.Millisecond), groupDigits(n), groupDigits(int64(r.o.Connects)),
				groupDigits(int64(float64(n-last)/now.Sub(then).Seconds())),
				groupDigits(r.refused.Load()), groupDigits(r.failed.Load()))
			then, last = now, n
		}
	}
}

// run makes n connects, one after another, until ctx ends. A connect
// that fails because ctx ended is not counted.
func (c *connector) run(ctx context.Context, n int) {
	for range n {
		if ended(ctx) {
			return
		}
		out, err := c.once(ctx)
		switch {
		case out == connectOK:
			c.r.ok.Add(1)
		case out == connectRefused:
			c.r.refused.Add(1)
			if c.r.firstRefusal.Load() == nil {
				msg := err.Error()
				c.r.firstRefusal.CompareAndSwap(nil, &msg)
			}
		case ended(ctx):
			return // interrupted, not failed
		default:
			c.r.failed.Add(1)
			if c.r.firstError.Load() == nil {
				msg := err.Error()
				c.r.firstError.CompareAndSwap(nil, &msg)
			}
		}
	}
}

// ended reports whether ctx is done or its deadline has passed: a dial that failed
// because the deadline passed can return before the context's timer has run, while
// ctx.Err() is still nil (seen on a busy machine: hundreds of dials failed as "i/o
// timeout" in that moment and were counted as failed connects).
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// once makes one connect: dial, CONNECT, CONNECTED, DISCONNECT, RECEIPT,
// close, all within the run's deadline. A refusal's error is the ERROR
// frame's message. The latency of the expected answer, CONNECTED (ERROR
// with Options.ExpectRefused), goes into the histogram.
func (c *connector) once(ctx context.Context) (connectOutcome, error) {
	deadline := time.Now().Add(c.r.deadline)
	d := net.Dialer{Deadline: deadline}
	nc, err := d.DialContext(ctx, "tcp", c.r.o.Addr)
	if err != nil {
		return connectFailed, fmt.Errorf("dial: %w", err)
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	if err := nc.SetDeadline(deadline); err != nil {
		return connectFailed, err
	}
	w := &c.w
	w.version = "1.0"
	w.br.Reset(nc)

	sent := time.Now()
	if _, err := nc.Write(c.r.connect); err != nil {
		return connectFailed, c.stepErr("CONNECT", err)
	}
	kind, err := w.readFrame()
	answered := time.Since(sent)
	switch {
	case err != nil:
		return connectFailed, c.stepErr("CONNECT", err)
	case kind == kindError:
		if c.r.o.ExpectRefused {
			c.hist.record(int64(answered))
		}
		return connectRefused, errors.New(w.errorMessage())
	case kind != kindConnected:
		return connectFailed, errors.New("CONNECT: answered by a frame other than CONNECTED or ERROR")
	}
	if !c.r.o.ExpectRefused {
		c.hist.record(int64(answered))
	}
	if v := string(w.in.version); v == "1.1" || v == "1.2" {
		w.version = v
	}

	if _, err := nc.Write(disconnectFrame); err != nil {
		return connectFailed, c.stepErr("DISCONNECT", err)
	}
	for {
		kind, err := w.readFrame()
		switch {
		case err != nil:
			return connectFailed, c.stepErr("DISCONNECT", err)
		case kind == kindError:
			return connectFailed, fmt.Errorf("DISCONNECT: ERROR: %s", w.errorMessage())
		case kind == kindReceipt && string(w.in.receiptID) == disconnectReceipt:
			return connectOK, nil
		}
	}
}

// stepErr says why step (CONNECT or DISCONNECT) got no answer.
func (c *connector) stepErr(step string, err error) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%s: no answer within %s", step, c.r.deadline)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%s: connection closed without an answer", step)
	}
	return fmt.Errorf("%s: %w", step, err)
}
