package destinations

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/activemq-go/broker/destinations/streamlog"
	"github.com/activemq-go/broker/persistence"
)

// Appender limits. A partition's queue holds at most appendQueueMsgs messages or
// appendQueueBytes bytes; a SEND that would pass either is held (producer flow control,
// package broker/flowcontrol) until the appender has taken the queue: the transport keeps the frame
// and sends it again then, and the connection goes on delivering and heart-beating
// meanwhile. One Append writes at most appendBatchBytes, well under the embedded log's
// batch limit, so a queue drains in a few batches.
const (
	appendQueueMsgs  = 16384
	appendQueueBytes = 16 << 20
	appendBatchBytes = 4 << 20
)

// appendReq is one message waiting for its partition's appender: what its record is
// made of (recordBuilder makes the record when the batch is written).
type appendReq struct {
	// Key and Value; no Headers yet, and no Timestamp: the appender stamps the records
	// of a batch with the time by the log's clock, the broker's, which time retention,
	// the time index and timestamp starts go by (a producer's timestamp in the future
	// must not keep a segment).
	rec     streamlog.Record
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
		rec:      streamlog.Record{Value: m.Body},
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
	st   *Stream
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

func newAppender(st *Stream, part int) *appender {
	return &appender{st: st, part: part, wake: make(chan struct{}, 1)}
}

// enqueue adds r to the queue. When the queue has no room for it, it adds nothing and
// returns the Error of a full queue, whose Retry closes once the appender took the
// queue; with force it adds r whatever the queue holds (for callers with a bound of
// their own, or that checked the room first). It fails once the appender is closed.
func (a *appender) enqueue(r appendReq, force bool) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return &Error{Message: "broker is shutting down: message not stored", Err: ErrClosed}
	}
	if !force && !a.fitsLocked(r.size) {
		room := a.roomLocked()
		a.mu.Unlock()
		return a.fullError(room)
	}
	a.queue = append(a.queue, r)
	a.bytes += r.size
	first := len(a.queue) == 1
	a.mu.Unlock()
	if first {
		a.signal()
	}
	return nil
}

// full returns nil if a message of size bytes fits in the queue now, else the Error
// of a full queue (see enqueue).
func (a *appender) full(size int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.fitsLocked(size) {
		return nil // enqueue reports the closing
	}
	return a.fullError(a.roomLocked())
}

// fitsLocked reports whether a message of size bytes fits in the queue; an empty queue
// takes any message. The caller holds a.mu.
func (a *appender) fitsLocked(size int) bool {
	return len(a.queue) == 0 || len(a.queue) < appendQueueMsgs && a.bytes+size <= appendQueueBytes
}

// roomLocked returns the channel closed when the appender takes the queue. The caller
// holds a.mu.
func (a *appender) roomLocked() <-chan struct{} {
	if a.room == nil {
		a.room = make(chan struct{})
	}
	return a.room
}

func (a *appender) fullError(room <-chan struct{}) error {
	return &Error{Message: fmt.Sprintf("stream %s cannot take more now: the append queue of its partition %d is full (%d messages waiting for the disk)",
		a.st.t.client, a.part, len(a.queue)), Err: ErrStreamBusy, Retry: room}
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
		recs := a.recs.build(chunk, a.st.log.Now().UnixMilli())
		base, err := a.st.log.Append(a.st.logTopic, a.part, recs)
		if err != nil {
			a.st.env.Log.Error("stream append failed", slog.String("dest", a.st.t.client),
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
func appendError(st *Stream, err error) error {
	if errors.Is(err, streamlog.ErrClosed) {
		return &Error{Message: "broker is shutting down: message not stored", Err: ErrClosed}
	}
	return &Error{Message: fmt.Sprintf("message not stored in stream %s: %v", st.t.client, err), Err: fmt.Errorf("%w: %w", ErrStore, err)}
}

// publishLive hands freshly appended messages to the wildcard subscriptions that match
// the stream (its topic's plain subscribers), as a topic would.
func (st *Stream) publishLive(recs []streamlog.Record, part int, base int64) {
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
		st.t.Publish(m, nil)
	}
}
