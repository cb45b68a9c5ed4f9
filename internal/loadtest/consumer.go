package loadtest

import (
	"fmt"
	"math/bits"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
)

// tracker remembers which (producer, seq) pairs were delivered: one bit each,
// set atomically so that the consumers of a queue can share one tracker.
type tracker struct {
	words [][]uint64
}

func newTracker(counts []int) *tracker {
	t := &tracker{words: make([][]uint64, len(counts))}
	for p, n := range counts {
		t.words[p] = make([]uint64, (n+63)/64)
	}
	return t
}

// mark records a delivery and reports whether it had been seen before.
func (t *tracker) mark(p, seq int) (seen bool) {
	bit := uint64(1) << (seq & 63)
	return atomic.OrUint64(&t.words[p][seq>>6], bit)&bit != 0
}

// count returns the number of distinct deliveries.
func (t *tracker) count() int64 {
	var n int
	for _, ws := range t.words {
		for i := range ws {
			n += bits.OnesCount64(atomic.LoadUint64(&ws[i]))
		}
	}
	return int64(n)
}

// consumer reads one subscription. Its counters other than the atomics are
// owned by its goroutine and read only after it has ended.
type consumer struct {
	r    *run
	name string // in errors
	c    *client
	sub  *stomp.Subscription
	seen *tracker // shared by all consumers of a queue, own for a topic

	checkOrder bool
	lastSeq    []int // per producer, -1 before the first

	hist       histogram
	duplicated int64
	outOfOrder int64
	foreign    int64

	received   atomic.Int64 // bench messages, duplicates included
	lastRecv   atomic.Int64 // unix nanos of the last bench message, 0 before
	subscribed int64        // unix nanos just before SUBSCRIBE
}

func newConsumer(r *run, id int, c *client, sub *stomp.Subscription, seen *tracker) *consumer {
	k := &consumer{
		r:          r,
		name:       r.consumerName(id),
		c:          c,
		sub:        sub,
		seen:       seen,
		checkOrder: r.o.ordered(),
		lastSeq:    make([]int, len(r.counts)),
	}
	for i := range k.lastSeq {
		k.lastSeq[i] = -1
	}
	return k
}

// run drains the subscription until go-stomp closes it, which it does once
// the connection is gone, or until told to quit. It must keep draining after
// the run stops: go-stomp's connection goroutine blocks while a
// subscription is full.
func (k *consumer) run() {
	r := k.r
	for {
		var m *stomp.Message
		select {
		case msg, ok := <-k.sub.C:
			if !ok {
				return
			}
			m = msg
		case <-r.quit:
			return
		}
		if r.stopping.Load() {
			continue
		}
		if m.Err != nil {
			r.fail(fmt.Errorf("%w: %s: %w", ErrConnection, k.name, m.Err))
			continue
		}
		now := time.Now().UnixNano()
		// Ack before accounting: the last delivery completes the run,
		// whose DISCONNECT must queue behind this ACK.
		if m.ShouldAck() {
			if err := k.c.stomp.Ack(m); err != nil {
				r.fail(fmt.Errorf("%w: %s: ack: %w", ErrConnection, k.name, err))
			}
		}
		k.handle(m.Header, now)
	}
}

// handle accounts for one MESSAGE received at now (unix nanos).
func (k *consumer) handle(h *frame.Header, now int64) {
	r := k.r
	p, seq, ts, ok := parseBench(h, r.id, r.counts)
	if !ok {
		k.foreign++
		return
	}
	k.hist.record(now - ts)
	k.received.Add(1)
	k.lastRecv.Store(now)
	if k.seen.mark(p, seq) {
		k.duplicated++
		return
	}
	if k.checkOrder {
		if seq < k.lastSeq[p] {
			k.outOfOrder++
		} else {
			k.lastSeq[p] = seq
		}
	}
	r.delivered()
}

// parseBench reads the bench headers of a message of run id; ok is false for
// anything that run did not send.
func parseBench(h *frame.Header, id string, counts []int) (p, seq int, ts int64, ok bool) {
	if h.Get(hdrRun) != id {
		return 0, 0, 0, false
	}
	p, err := strconv.Atoi(h.Get(hdrP))
	if err != nil || p < 0 || p >= len(counts) {
		return 0, 0, 0, false
	}
	seq, err = strconv.Atoi(h.Get(hdrSeq))
	if err != nil || seq < 0 || seq >= counts[p] {
		return 0, 0, 0, false
	}
	ts, err = strconv.ParseInt(h.Get(hdrTS), 10, 64)
	if err != nil {
		return 0, 0, 0, false
	}
	return p, seq, ts, true
}
