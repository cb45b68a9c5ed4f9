package destinations

import (
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/destinations/streamlog"
	"github.com/activemq-go/broker/persistence"
)

// Stream  A topic whose policy says Stream keeps every message sent to it in a
// partitioned log (a streamlog.Log: the embedded kafkalog or Kafka) for the policy's
// retention, whatever is consumed, and whatever the message's persistent header says:
//
//   - SEND appends the message to one partition: by the hash of its partition-key
//     header, else of its JMSXGroupID (the log's KeyPartitioner if it has one: Kafka's
//     murmur2), else round-robin. Appends are handed to one
//     goroutine per partition (appender), which writes everything queued meanwhile as one
//     batch, so with the batch flush policy one fsync covers many messages and the
//     connection never waits for it; the RECEIPT follows once the batch is durable. A
//     SEND that finds its partition's queue full is held by the transport (producer
//     flow control), never by blocking the connection.
//   - SUBSCRIBE reads the partitions from x-stream-offset (streamsub.go), alone or as a
//     member of a consumer group that shares the partitions and commits its offsets
//     (streamgroup.go). Order holds within a partition.
//   - A SEND to a stream inside a transaction is refused: the append could not be part
//     of the COMMIT atomically. Transacted ACKs are settled at COMMIT, after the
//     transaction's store batch.
//   - A wildcard subscription that matches a stream gets its new messages as a plain
//     topic subscriber does (live, no replay, no offsets).
//
// The log topic is named after the broker's topic; names with characters a log topic
// may not hold are escaped reversibly (logTopicName).

// PartitionKeyProperty is the message property whose value picks a stream message's
// partition: messages with one key go to one partition, in order. It rides in the
// message's headers like JMSXGroupID, which is the fallback.
const PartitionKeyProperty = "partition-key"

// Stream is the broker side of one stream topic.
type Stream struct {
	env      *Env
	t        *TopicDest
	log      streamlog.Log
	streams  *Streams
	logTopic string
	nparts   int
	// rebalanceTimeout bounds the handover of a partition between group members.
	rebalanceTimeout time.Duration
	keys             streamlog.KeyPartitioner // nil: FNV-1a of the key
	apps             []*appender
	rr               atomic.Uint32
	appWG            sync.WaitGroup

	mu     sync.Mutex
	subs   map[*StreamReader]struct{}
	groups map[string]*groupState
	closed bool

	delivered atomic.Int64 // messages written to subscribers since start
}

// Stream returns the stream behind t, opening it on first use; nil if t is not one.
func (t *TopicDest) Stream() (*Stream, error) {
	if !t.isStream {
		return nil, nil
	}
	if st := t.st.Load(); st != nil {
		return st, nil
	}
	t.streamMu.Lock()
	defer t.streamMu.Unlock()
	if st := t.st.Load(); st != nil {
		return st, nil
	}
	if t.env.Stopping() {
		return nil, closingError()
	}
	st, err := t.openStream(t.env.Policy(Topic, t.name))
	if err != nil {
		return nil, err
	}
	t.st.Store(st)
	return st, nil
}

// CloseStream stops the stream behind t if it was opened (Stream.close).
func (t *TopicDest) CloseStream() {
	t.streamMu.Lock()
	st := t.st.Load()
	t.streamMu.Unlock()
	if st != nil {
		st.close()
	}
}

// Topic is the topic the stream keeps.
func (st *Stream) Topic() *TopicDest { return st.t }

// openStream declares the stream's log topic (again, at every start: that applies
// the current retention) and starts its appenders.
func (t *TopicDest) openStream(p policy.Policy) (*Stream, error) {
	streams := t.env.Streams
	if streams == nil {
		return nil, errorf(ErrInvalidDestination, "%s is a stream (destinationPolicy type: stream) but the broker has no streams log", t.client)
	}
	ln, ok := logTopicName(t.name)
	if !ok {
		return nil, errorf(ErrInvalidDestination, "%s cannot be a stream: its name is too long for the stream log (at most 200 bytes once escaped)", t.client)
	}
	n := max(p.Partitions, 1)
	if have := streams.log.Partitions(ln); have > 0 && have != n {
		t.env.Log.Warn("stream keeps its partition count: partitions cannot be added or removed",
			slog.String("dest", t.client), slog.Int("partitions", have), slog.Int("configured", n))
		n = have
	}
	// The policy's 0 means "no limit"; the log's 0 means "the log's default".
	cfg := streamlog.TopicConfig{Retention: -1, RetentionBytes: -1}
	if p.Retention > 0 {
		cfg.Retention = p.Retention
	}
	if p.RetentionBytes > 0 {
		cfg.RetentionBytes = int64(p.RetentionBytes)
	}
	if err := streams.log.CreateTopicWith(ln, n, cfg); err != nil {
		return nil, &Error{Message: "stream " + t.client + " cannot be opened: " + err.Error(), Err: fmt.Errorf("%w: %w", ErrStore, err)}
	}
	st := &Stream{env: t.env, t: t, log: streams.log, streams: streams, logTopic: ln, nparts: n, rebalanceTimeout: p.RebalanceTimeout,
		subs: map[*StreamReader]struct{}{}, groups: map[string]*groupState{}}
	if st.rebalanceTimeout <= 0 {
		st.rebalanceTimeout = policy.DefaultRebalanceTimeout
	}
	st.keys, _ = streams.log.(streamlog.KeyPartitioner)
	for i := range n {
		a := newAppender(st, i)
		st.apps = append(st.apps, a)
		st.appWG.Add(1)
		go a.run()
	}
	t.env.Log.Info("stream opened", slog.String("dest", t.client), slog.String("logTopic", ln),
		slog.Int("partitions", n), slog.Duration("retention", p.Retention), slog.Int64("retentionBytes", int64(p.RetentionBytes)))
	return st, nil
}

// AppendStreams queues m for each stream. done is called once every append is durable
// (or failed); with more, the caller has other destinations to serve, and gets the
// callback to call for them. It never waits: when a partition's queue is full it
// queues nothing and returns the Error of a full queue, with Retry set (the transport
// holds the SEND and sends it again, so nothing may have been queued for it before).
func AppendStreams(streams []*Stream, m *persistence.Message, more bool, done func(error)) (func(error), error) {
	if len(streams) == 1 && !more {
		return nil, streams[0].append(m, done)
	}
	parts := len(streams)
	if more {
		parts++
	}
	j := NewJoin(parts, done)
	if len(streams) == 1 {
		if err := streams[0].append(m, j.Part); err != nil {
			return nil, err
		}
		return j.Part, nil
	}
	// Several streams: room in every one first, then each is queued whatever its queue
	// holds by then (others may have queued meanwhile: the overshoot is bounded by the
	// producers at work).
	reqs := make([]appendReq, len(streams))
	apps := make([]*appender, len(streams))
	for i, st := range streams {
		p, key := st.partitionFor(m)
		reqs[i], apps[i] = newAppendReq(m, key, j.Part), st.apps[p]
		if err := apps[i].full(reqs[i].size); err != nil {
			return nil, err
		}
	}
	for i, a := range apps {
		if err := a.enqueue(reqs[i], true); err != nil {
			j.Part(err)
		}
	}
	return j.Part, nil
}

// append queues m for its partition, or returns the Error of a full queue (see
// appendStreams); done follows the write.
func (st *Stream) append(m *persistence.Message, done func(error)) error {
	p, key := st.partitionFor(m)
	return st.apps[p].enqueue(newAppendReq(m, key, done), false)
}

// partitionFor picks m's partition and returns the key that chose it ("" for
// round-robin).
func (st *Stream) partitionFor(m *persistence.Message) (int, string) {
	key, ok := m.Headers.Get(PartitionKeyProperty)
	if !ok || key == "" {
		key, _ = m.Headers.Get("JMSXGroupID")
	}
	if st.nparts == 1 {
		return 0, key
	}
	if key != "" && st.keys != nil {
		return st.keys.PartitionForKey(st.logTopic, []byte(key), st.nparts), key
	}
	if key != "" {
		h := fnv.New32a()
		_, _ = h.Write([]byte(key))
		return int(h.Sum32() % uint32(st.nparts)), key
	}
	return int(st.rr.Add(1) % uint32(st.nparts)), ""
}

// close stops the stream's subscriptions (committing group positions) and its
// appenders, which write what is queued first. The broker's Close calls it
// (TopicDest.CloseStream).
func (st *Stream) close() {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return
	}
	st.closed = true
	subs := make([]*StreamReader, 0, len(st.subs))
	for ss := range st.subs {
		subs = append(subs, ss)
	}
	st.mu.Unlock()
	for _, ss := range subs {
		ss.Close()
	}
	for _, a := range st.apps {
		a.close()
	}
	st.appWG.Wait()
}

// StreamPartitionStats describes one partition of a stream.
type StreamPartitionStats struct {
	Partition int
	Oldest    int64 // oldest offset retention kept
	Next      int64 // offset the next message gets
	Bytes     int64 // size of its segments
	// Appends and Syncs count the batches written and fsynced since start: messages
	// per append show how well appends are gathered.
	Appends, Syncs int64
}

func (st *Stream) stats() Stats {
	st.mu.Lock()
	consumers := len(st.subs)
	st.mu.Unlock()
	ds := Stats{Name: st.t.client, Consumers: consumers, Dequeued: st.delivered.Load()}
	for p, a := range st.apps {
		oldest, err1 := st.log.OldestOffset(st.logTopic, p)
		next, err2 := st.log.NextOffset(st.logTopic, p)
		ps, err3 := st.log.Stats(st.logTopic, p)
		if err1 != nil || err2 != nil || err3 != nil {
			continue // the log is closing
		}
		ds.Enqueued += next
		ds.Stored += next - oldest
		ds.Pending += a.queued()
		ds.Partitions = append(ds.Partitions, StreamPartitionStats{Partition: p, Oldest: oldest, Next: next,
			Bytes: ps.Bytes, Appends: ps.Appends, Syncs: ps.Syncs})
	}
	ds.Groups = st.groupsFor(ds.Partitions)
	return ds
}

// Record layout of a stream message (version 2): Value is the body, Timestamp the time
// of the append by the log's clock (the broker's: retention and timestamp starts go by
// it), Key the partition key (nil without one). The first header is the broker's: name
// recMeta, value "2;<priority>;<expires>;<persistent 0|1>;<timestamp>;<message-id>"
// (one header rather than five keeps reading cheap), where timestamp is the message's
// own (JMSTimestamp: the producer's if it sent one, else the time of the SEND) minus
// the record's Timestamp, in ms (a few digits, usually); the application headers
// follow as sent. Version 1, written before, has no timestamp
// field ("1;<priority>;<expires>;<persistent>;<message-id>"): the record's Timestamp
// was the message's. The broker's header is recognised by position, so an application
// header may use the same name without confusion; a record without it (written by
// another client of the log) is delivered with defaults and an id made of its position.
const recMeta = "amq"

// encodeRecord is the record of m appended at now (ms).
func encodeRecord(m *persistence.Message, key string, now int64) streamlog.Record {
	var b recordBuilder
	return b.build([]appendReq{newAppendReq(m, key, nil)}, now)[0]
}

// appendMeta appends the value of the broker's record header of r, appended at now, to
// dst.
func (r *appendReq) appendMeta(dst []byte, now int64) []byte {
	dst = append(dst, "2;"...)
	dst = strconv.AppendUint(dst, uint64(r.priority), 10)
	dst = append(dst, ';')
	dst = strconv.AppendInt(dst, r.expires, 10)
	if r.persistent {
		dst = append(dst, ";1;"...)
	} else {
		dst = append(dst, ";0;"...)
	}
	dst = strconv.AppendInt(dst, r.timestamp-now, 10)
	dst = append(dst, ';')
	return append(dst, r.id...)
}

// recordBuilder makes the records of one batch from queued messages, with shared
// storage: the values of the broker's headers are cut from one string, and the header
// pairs from one slice. The records are valid until the next build.
type recordBuilder struct {
	meta []byte
	ends []int
	hdrs [][2]string
	recs []streamlog.Record
}

// Above these sizes a builder's buffers are not kept for the next batch.
const (
	builderKeepMeta = 64 << 10
	builderKeepHdrs = 4096
)

// build makes the records of reqs, appended at now (ms since the epoch).
func (b *recordBuilder) build(reqs []appendReq, now int64) []streamlog.Record {
	b.meta, b.ends = b.meta[:0], b.ends[:0]
	n := 0
	for i := range reqs {
		b.meta = reqs[i].appendMeta(b.meta, now)
		b.ends = append(b.ends, len(b.meta))
		n += 1 + len(reqs[i].headers)/2
	}
	metas := string(b.meta)
	if cap(b.hdrs) < n {
		b.hdrs = make([][2]string, n)
	}
	b.hdrs = b.hdrs[:n]
	hdrs := b.hdrs
	b.recs = b.recs[:0]
	start, h := 0, 0
	for i := range reqs {
		r := &reqs[i]
		first := h
		hdrs[h] = [2]string{recMeta, metas[start:b.ends[i]]}
		h++
		for j := 0; j+1 < len(r.headers); j += 2 {
			hdrs[h] = [2]string{r.headers[j], r.headers[j+1]}
			h++
		}
		start = b.ends[i]
		rec := r.rec
		rec.Timestamp = now
		rec.Headers = hdrs[first:h:h]
		b.recs = append(b.recs, rec)
	}
	return b.recs
}

// reset drops what the last build referred to, and buffers grown unusually large.
func (b *recordBuilder) reset() {
	clear(b.recs)
	clear(b.hdrs)
	if cap(b.meta) > builderKeepMeta {
		b.meta = nil
	}
	if cap(b.hdrs) > builderKeepHdrs {
		b.hdrs = nil
	}
	if cap(b.recs) > builderKeepHdrs {
		b.recs = nil
	}
}

// decodeRecord rebuilds the message stored in r, read from partition part of st.
func (st *Stream) decodeRecord(r *streamlog.Record, part int) *persistence.Message {
	m := new(persistence.Message)
	st.decodeRecordInto(m, r, part)
	return m
}

// decodeRecordInto is decodeRecord into a zero message m.
func (st *Stream) decodeRecordInto(m *persistence.Message, r *streamlog.Record, part int) {
	m.Dest, m.Body, m.Timestamp, m.Priority = st.t.dest, r.Value, r.Timestamp, 4
	hs := r.Headers
	if len(hs) > 0 && hs[0][0] == recMeta {
		if f, n := splitMeta(hs[0][1]); n > 0 {
			if p, err := strconv.Atoi(f[1]); err == nil && p >= 0 && p <= 9 {
				m.Priority = uint8(p)
			}
			m.Expires, _ = strconv.ParseInt(f[2], 10, 64)
			m.Persistent = f[3] == "1"
			m.ID = f[n-1]
			if n == 6 {
				if d, err := strconv.ParseInt(f[4], 10, 64); err == nil {
					m.Timestamp = r.Timestamp + d
				}
			}
			hs = hs[1:]
		}
	}
	if m.ID == "" {
		m.ID = "ID:stream:" + st.logTopic + ":" + strconv.Itoa(part) + ":" + strconv.FormatInt(r.Offset, 10)
	}
	m.Headers = make(persistence.Headers, 0, 2*len(hs))
	for _, h := range hs {
		m.Headers = append(m.Headers, h[0], h[1])
	}
}

// splitMeta splits the broker's record header into its fields, as
// strings.SplitN(v, ";", n) does, without allocating: n is 5 for version 1, 6 for
// version 2 (the message id, last, may hold ';'), 0 for another version or too few
// fields.
func splitMeta(v string) (f [6]string, n int) {
	switch {
	case strings.HasPrefix(v, "1;"):
		n = 5
	case strings.HasPrefix(v, "2;"):
		n = 6
	default:
		return f, 0
	}
	for i := range n - 1 {
		j := strings.IndexByte(v, ';')
		if j < 0 {
			return f, 0
		}
		f[i], v = v[:j], v[j+1:]
	}
	f[n-1] = v
	return f, n
}

// logTopicName maps a broker topic name to a log topic name, reversibly: letters,
// digits, '.' and '-' stay, '_' doubles, every other byte becomes _XX (hex). It fails
// for a name that is too long once escaped.
func logTopicName(name string) (string, bool) {
	// "." and ".." name directories: their dots are escaped too.
	dotsSafe := name != "." && name != ".."
	safe := func(c byte) bool { return logSafe(c) && (c != '.' || dotsSafe) }
	plain := true
	for i := 0; i < len(name) && plain; i++ {
		plain = safe(name[i])
	}
	if plain {
		return name, streamlog.ValidTopicName(name)
	}
	var sb strings.Builder
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '_':
			sb.WriteString("__")
		case safe(c):
			sb.WriteByte(c)
		default:
			fmt.Fprintf(&sb, "_%02X", c)
		}
	}
	s := sb.String()
	return s, streamlog.ValidTopicName(s)
}

func logSafe(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-'
}

// brokerTopicName inverts logTopicName; false for a name logTopicName never makes.
func brokerTopicName(ln string) (string, bool) {
	if !strings.Contains(ln, "_") {
		return ln, ln != "." && ln != ".."
	}
	var sb strings.Builder
	for i := 0; i < len(ln); i++ {
		c := ln[i]
		if c != '_' {
			sb.WriteByte(c)
			continue
		}
		switch {
		case i+1 < len(ln) && ln[i+1] == '_':
			sb.WriteByte('_')
			i++
		case i+2 < len(ln):
			v, err := strconv.ParseUint(ln[i+1:i+3], 16, 8)
			if err != nil {
				return "", false
			}
			sb.WriteByte(byte(v))
			i += 2
		default:
			return "", false
		}
	}
	name := sb.String()
	if back, ok := logTopicName(name); !ok || back != ln {
		return "", false
	}
	return name, true
}

// Join calls done once, after n parts finished, with the first error.
type Join struct {
	mu   sync.Mutex
	n    int
	err  error
	done func(error)
}

// NewJoin returns a Join of n parts.
func NewJoin(n int, done func(error)) *Join { return &Join{n: n, done: done} }

// Part reports one part finished, with err.
func (j *Join) Part(err error) {
	j.mu.Lock()
	if err != nil && j.err == nil {
		j.err = err
	}
	j.n--
	last := j.n == 0
	err = j.err
	j.mu.Unlock()
	if last {
		j.done(err)
	}
}
