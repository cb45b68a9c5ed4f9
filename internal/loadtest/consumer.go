package loadtest

import (
	"fmt"
	"math"
	"math/bits"
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

	appendAck func([]byte) []byte // encodeAck, for the raw client

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
	k.appendAck = k.encodeAck
	return k
}

// run drains the subscription until go-stomp closes it, which it does once
// the connection is gone, or until told to quit. It must keep draining after
// the run stops: go-stomp's connection goroutine blocks while a
// subscription is full.
func (k *consumer) run() {
	if k.c.w != nil {
		k.runRaw()
		return
	}
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

// handle accounts for one MESSAGE of go-stomp received at now (unix nanos).
func (k *consumer) handle(h *frame.Header, now int64) {
	handleBench(k, h.Get(hdrRun), h.Get(hdrP), h.Get(hdrSeq), h.Get(hdrTS), now)
}

// runRaw is run for the raw client: the consumer reads its connection
// itself until it fails or is closed, acking each message as it goes when
// the ack mode asks for it.
func (k *consumer) runRaw() {
	r, w := k.r, k.c.w
	ack := r.mode.ShouldAck()
	for {
		kind, err := w.readFrame()
		if err == nil && kind != kindMessage {
			err = w.control(kind)
		}
		if err != nil {
			w.fail(err)
			r.fail(fmt.Errorf("%w: %s: %w", ErrConnection, k.name, err))
			return
		}
		if kind != kindMessage || r.stopping.Load() {
			continue
		}
		now := time.Now().UnixNano()
		in := &w.in
		// Ack before accounting, as run does.
		if ack {
			if err := w.put(k.appendAck); err != nil {
				r.fail(fmt.Errorf("%w: %s: ack: %w", ErrConnection, k.name, err))
			}
		}
		handleBench(k, in.run, in.p, in.seq, in.ts, now)
	}
}

// encodeAck appends the ACK of the message just read, in the form of the
// negotiated version, its ids as they came.
func (k *consumer) encodeAck(b []byte) []byte {
	in := &k.c.w.in
	switch k.c.w.version {
	case "1.2":
		b = append(b, "ACK\nid:"...)
		b = append(b, in.ack...)
	case "1.1":
		b = append(b, "ACK\nsubscription:"...)
		b = append(b, in.subscription...)
		b = append(b, "\nmessage-id:"...)
		b = append(b, in.messageID...)
	default:
		b = append(b, "ACK\nmessage-id:"...)
		b = append(b, in.messageID...)
	}
	return append(b, "\n\n\x00"...)
}

// handle accounts for one MESSAGE received at now (unix nanos), given its
// bench headers.
func handleBench[S ~string | ~[]byte](k *consumer, run, ps, seqs, tss S, now int64) {
	r := k.r
	p, seq, ts, ok := parseBench(run, ps, seqs, tss, r.id, r.counts)
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
func parseBench[S ~string | ~[]byte](run, ps, seqs, tss S, id string, counts []int) (p, seq int, ts int64, ok bool) {
	if !equal(run, id) {
		return 0, 0, 0, false
	}
	p64, ok := parseDecimal(ps)
	if !ok || p64 >= int64(len(counts)) {
		return 0, 0, 0, false
	}
	p = int(p64)
	seq64, ok := parseDecimal(seqs)
	if !ok || seq64 >= int64(counts[p]) {
		return 0, 0, 0, false
	}
	ts, ok = parseDecimal(tss)
	if !ok {
		return 0, 0, 0, false
	}
	return p, int(seq64), ts, true
}

func equal[S ~string | ~[]byte](a S, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(b) {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// parseDecimal parses a non-negative decimal int64.
func parseDecimal[S ~string | ~[]byte](s S) (int64, bool) {
	if len(s) == 0 {
		return 0, false
	}
	var n int64
	for i := range len(s) {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}
