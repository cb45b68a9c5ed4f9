package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/activemq-go/broker/kafkalog"
	"github.com/activemq-go/broker/persistence"
)

// Appender limits. A partition's queue holds at most appendQueueMsgs messages or
// appendQueueBytes bytes; a producer that would pass either waits (flow control) until
// the appender has taken the queue. One Append writes at most appendBatchBytes, well
// under kafkalog's batch limit, so a queue drains in a few batches.
const (
	appendQueueMsgs  = 16384
	appendQueueBytes = 16 << 20
	appendBatchBytes = 4 << 20
)

// appendReq is one message waiting for its partition's appender: what its record is
// made of (recordBuilder makes the record when the batch is written).
type appendReq struct {
	// Key and Value; no Headers yet, and no Timestamp: the log stamps the record with
	// its clock, the broker's, which time retention, the time index and timestamp
	// starts go by (a producer's timestamp in the future must not keep a segment).
	rec     kafkalog.Record
	headers persistence.Headers // the application headers (the message's, only read)
	// the fields of the broker's header (appendMeta)
	priority   uint8
	persistent bool
	expires    int64
	timestamp  int64 // the message's (JMSTimestamp: the producer's, if it set one)
	id         string

	size int // approximately the bytes the record takes in a batch
	done func(error)
}

func newAppendReq(m *persistence.Message, key string, done func(error)) appendReq {
	r := appendReq{
		rec:      kafkalog.Record{Value: m.Body},
		headers:  m.Headers,
		priority: m.Priority, persistent: m.Persistent, expires: m.Expires, timestamp: m.Timestamp, id: m.ID,
		done: done,
	}
	if key != "" {
		r.rec.Key = []byte(key)
	}
	// The broker's header: its name, its value (at most 48 bytes besides the id), and
	// 4 bytes of lengths.
	r.size = len(r.rec.Value) + len(r.rec.Key) + 16 + len(recMeta) + 48 + len(r.id) + 4
	for i := 0; i+1 < len(r.headers); i += 2 {
		r.size += len(r.headers[i]) + len(r.headers[i+1]) + 4
	}
	return r
}

// appender writes one partition of a stream: connections queue messages and go on; its
// goroutine takes everything queued, appends it as one batch (one fsync under the batch
// flush policy, shared by every message that arrived while the previous one ran), then
// calls each message's done. So producers pipeline while the disk syncs.
type appender struct {
	st   *stream
	part int

	mu     sync.Mutex
	queue  []appendReq
	bytes  int
	closed bool
	room   chan struct{} // closed when the queue is taken; nil while nobody waits
	wake   chan struct{} // cap 1: the queue became non-empty, or close

	spare []appendReq   // the other queue buffer, owned by run
	recs  recordBuilder // the records of a batch, owned by run
}

func newAppender(st *stream, part int) *appender {
	return &appender{st: st, part: part, wake: make(chan struct{}, 1)}
}

// enqueue adds r to the queue, waiting while it is full unless force is set (callers
// that may not block, with a bound of their own). It fails once the appender is closed
// or ctx ends.
func (a *appender) enqueue(ctx context.Context, r appendReq, force bool) error {
	size := r.size
	for {
		a.mu.Lock()
		if a.closed {
			a.mu.Unlock()
			return &Error{Message: "broker is shutting down: message not stored", Err: ErrClosed}
		}
		if force || len(a.queue) == 0 || len(a.queue) < appendQueueMsgs && a.bytes+size <= appendQueueBytes {
			a.queue = append(a.queue, r)
			a.bytes += size
			first := len(a.queue) == 1
			a.mu.Unlock()
			if first {
				a.signal()
			}
			return nil
		}
		if a.room == nil {
			a.room = make(chan struct{})
		}
		room := a.room
		a.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return &Error{Message: "message not stored: " + ctx.Err().Error(), Err: ctx.Err()}
		}
	}
}

func (a *appender) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// queued is the number of messages waiting to be written.
func (a *appender) queued() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.queue)
}

// close makes the appender write what is queued and stop; enqueue fails from now on.
func (a *appender) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.signal()
}

func (a *appender) run() {
	defer a.st.appWG.Done()
	for {
		a.mu.Lock()
		batch := a.queue
		closed := a.closed
		a.queue, a.bytes = a.spare[:0], 0
		room := a.room
		a.room = nil
		a.mu.Unlock()
		if room != nil {
			close(room)
		}
		if len(batch) == 0 {
			a.spare = batch
			if closed {
				return
			}
			<-a.wake
			continue
		}
		a.write(batch)
		clear(batch)
		a.spare = batch
	}
}

// write appends batch in chunks of at most appendBatchBytes and settles each message.
func (a *appender) write(batch []appendReq) {
	for len(batch) > 0 {
		n, bytes := 0, 0
		for n < len(batch) && (n == 0 || bytes+batch[n].size <= appendBatchBytes) {
			bytes += batch[n].size
			n++
		}
		chunk := batch[:n]
		batch = batch[n:]
		recs := a.recs.build(chunk)
		base, err := a.st.log.Append(a.st.logTopic, a.part, recs)
		if err != nil {
			a.st.b.log.Error("stream append failed", slog.String("dest", a.st.t.stomp),
				slog.Int("partition", a.part), slog.Int("messages", n), slog.Any("err", err))
			err = appendError(a.st, err)
		}
		for i := range chunk {
			chunk[i].done(err)
		}
		if err == nil {
			a.st.publishLive(recs, a.part, base)
		}
		a.recs.reset()
	}
}

// appendError is what a producer hears when its message could not be appended.
func appendError(st *stream, err error) error {
	if errors.Is(err, kafkalog.ErrClosed) {
		return &Error{Message: "broker is shutting down: message not stored", Err: ErrClosed}
	}
	return &Error{Message: fmt.Sprintf("message not stored in stream %s: %v", st.t.stomp, err), Err: fmt.Errorf("%w: %w", ErrStore, err)}
}

// publishLive hands freshly appended messages to the wildcard subscriptions that match
// the stream (its topic's plain subscribers), as a topic would.
func (st *stream) publishLive(recs []kafkalog.Record, part int, base int64) {
	st.t.mu.RLock()
	n := len(st.t.subs)
	st.t.mu.RUnlock()
	if n == 0 {
		return
	}
	now := time.Now().UnixMilli()
	for i := range recs {
		r := recs[i]
		r.Offset = base + int64(i)
		m := st.decodeRecord(&r, part)
		if m.Expires > 0 && m.Expires <= now {
			continue
		}
		st.t.publish(m, nil)
	}
}
