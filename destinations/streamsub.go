package destinations

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/activemq-go/broker/destinations/streamlog"
	"github.com/activemq-go/broker/persistence"
)

// Stream subscriptions. Each subscription reads its partitions (all of them, or those
// its consumer group assigns it) with one goroutine per partition, which reads the log,
// waits for new records, and pushes Deliveries to the connection while the subscription
// has prefetch credit. A group member commits, per partition, the offset of the first
// message not yet acknowledged (a partTracker follows them), so after a restart or a
// rebalance reading resumes at or before the first unacknowledged message.

// readBytes bounds one read of a partition.
const readBytes = 1 << 20

// startKind is a form of x-stream-offset.
type startKind uint8

const (
	startNext startKind = iota // the next message appended (the default)
	startFirst
	startLast
	startOffset
	startTime
)

// streamStart is where a subscription starts reading a partition that its group has no
// committed offset for.
type streamStart struct {
	kind  startKind
	value int64 // the offset (startOffset) or the time in ms (startTime)
}

// parseStreamStart reads an x-stream-offset header: first | last | next | an offset |
// timestamp=<ms since the epoch> | an interval back from now such as 1h or 30m. Times
// are compared with the time each message was appended (by the broker's clock, now's).
func parseStreamStart(v string, now time.Time) (streamStart, error) {
	s := strings.TrimSpace(v)
	switch strings.ToLower(s) {
	case "", "next":
		return streamStart{kind: startNext}, nil
	case "first":
		return streamStart{kind: startFirst}, nil
	case "last":
		return streamStart{kind: startLast}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		return streamStart{kind: startOffset, value: n}, nil
	}
	if ts, ok := strings.CutPrefix(s, "timestamp="); ok {
		if ms, err := strconv.ParseInt(ts, 10, 64); err == nil && ms >= 0 {
			return streamStart{kind: startTime, value: ms}, nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return streamStart{kind: startTime, value: now.Add(-d).UnixMilli()}, nil
	}
	return streamStart{}, errorf(ErrInvalidStreamOffset, "invalid %s header %q: use first, last, next (the default), "+
		"an offset (0, 1, ...), timestamp=<ms since the epoch>, or an interval back from now such as 1h or 30m",
		"x-stream-offset", v)
}

// resolve turns the start into an offset of partition p.
func (st *Stream) resolve(p int, s streamStart) (int64, error) {
	oldest, err := st.log.OldestOffset(st.logTopic, p)
	if err != nil {
		return 0, err
	}
	hw, err := st.log.HighWatermark(st.logTopic, p)
	if err != nil {
		return 0, err
	}
	switch s.kind {
	case startFirst:
		return oldest, nil
	case startLast:
		return max(oldest, hw-1), nil
	case startOffset:
		return st.clamp(p, s.value)
	case startTime:
		off, err := st.log.OffsetForTime(st.logTopic, p, s.value)
		if err != nil {
			return 0, err
		}
		return max(off, oldest), nil
	}
	return hw, nil
}

// clamp moves off into the partition's retained range: below it (retention deleted
// those messages) to the oldest, past it to the next offset.
func (st *Stream) clamp(p int, off int64) (int64, error) {
	oldest, err := st.log.OldestOffset(st.logTopic, p)
	if err != nil {
		return 0, err
	}
	next, err := st.log.NextOffset(st.logTopic, p)
	if err != nil {
		return 0, err
	}
	return min(max(off, oldest), next), nil
}

// StreamReader is the stream side of a subscription.
type StreamReader struct {
	st     *Stream
	sub    *Consumer
	start  streamStart
	group  *groupState // nil: no consumer group
	member string      // the member id in the group

	ctx    context.Context // ends at close
	cancel context.CancelFunc

	// Credit waits: a reader without credit waits on creditCh, which kick closes when
	// credit came back (armed says a reader is waiting, so kicks cost nothing otherwise).
	creditMu sync.Mutex
	creditCh chan struct{}
	armed    bool

	mu        sync.Mutex // guards readers, draining and closed; serialises rebalances with close
	readers   map[int]*partReader
	draining  map[int]*drain // partitions revoked, not yet released (streamgroup.go)
	closed    bool
	coordDone chan struct{} // closed when the group coordinator ends
}

// partReader reads one partition for a subscription.
type partReader struct {
	part   int
	cancel context.CancelFunc
	// ready is closed once no other member reads the partition: this reader holds it,
	// or the member holding it stopped reading it and only settles what it holds.
	ready     chan struct{}
	readyOnce sync.Once
	done      chan struct{} // closed when the goroutine ends
	track     *partTracker  // set once it holds the partition; nil if it never did
	// Messages below redeliverBelow were handed to a member that let go of the
	// partition without settling them: they go out flagged redelivered.
	redeliverBelow int64
	buf            []*Delivery
}

func (r *partReader) setReady() { r.readyOnce.Do(func() { close(r.ready) }) }

// handoverWait bounds how long SUBSCRIBE of a group member waits for the members that
// lose partitions to it to let go of them.
const handoverWait = 10 * time.Second

// Subscribe makes s a reader of the stream starting at offset (an x-stream-offset
// value): of every partition, or, as member of group (if not ""), of those the group
// assigns it. A group member's SUBSCRIBE returns once it holds its
// partitions (the members that lose them to it stopped reading them), so from its
// RECEIPT on every partition has one reader.
func (st *Stream) Subscribe(ctx context.Context, s *Consumer, offset, group, member string) (*StreamReader, error) {
	start, err := parseStreamStart(offset, st.log.Now())
	if err != nil {
		return nil, err
	}
	ss := &StreamReader{st: st, sub: s, start: start, creditCh: make(chan struct{}), readers: map[int]*partReader{},
		draining: map[int]*drain{}}
	ss.ctx, ss.cancel = context.WithCancel(context.Background())
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		ss.cancel()
		return nil, closingError()
	}
	st.subs[ss] = struct{}{}
	if group != "" {
		ss.group = st.groupLocked(group)
	}
	st.mu.Unlock()
	// ss.mu is held while the readers start (and the member joins), so that a
	// concurrent close (the broker closing) either comes first and is seen, or stops them.
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return nil, closingError()
	}
	if ss.group == nil {
		defer ss.mu.Unlock()
		for p := range st.nparts {
			if err := ss.startPartition(p); err != nil {
				ss.stopAllLocked()
				ss.forget()
				return nil, streamReadError(st, err)
			}
		}
		return ss, nil
	}
	ss.member = member
	a, err := st.log.Join(group, ss.member, st.logTopic)
	if err != nil {
		ss.mu.Unlock()
		ss.forget()
		return nil, streamReadError(st, err)
	}
	changes, err := st.log.Changes(group, ss.member)
	if err != nil {
		_ = st.log.Leave(group, ss.member)
		ss.mu.Unlock()
		ss.forget()
		return nil, streamReadError(st, err)
	}
	// The first assignment is applied before SUBSCRIBE returns, so that the start
	// offsets are fixed before the client's next frame (a SEND it expects to read).
	ss.applyLocked(a)
	ss.coordDone = make(chan struct{})
	go ss.coordinate(changes)
	ss.mu.Unlock()
	ss.awaitHandover(ctx)
	st.env.Log.Debug("stream group member joined", slog.String("dest", st.t.client),
		slog.String("group", group), slog.String("member", ss.member), slog.Any("partitions", partitionsOf(a, st.logTopic)))
	return ss, nil
}

func streamReadError(st *Stream, err error) error {
	if errors.Is(err, streamlog.ErrClosed) {
		return closingError()
	}
	return &Error{Message: "stream " + st.t.client + " cannot be read: " + err.Error(), Err: errors.Join(ErrStore, err)}
}

// forget removes a subscription that failed to start from its stream.
func (ss *StreamReader) forget() {
	ss.cancel()
	ss.st.mu.Lock()
	delete(ss.st.subs, ss)
	ss.st.mu.Unlock()
}

func partitionsOf(a streamlog.Assignment, topic string) []int {
	var ps []int
	for _, tp := range a.Partitions {
		if tp.Topic == topic {
			ps = append(ps, tp.Partition)
		}
	}
	return ps
}

// coordinate follows the group's rebalances until the member leaves (which closes ch).
func (ss *StreamReader) coordinate(ch <-chan streamlog.Assignment) {
	defer close(ss.coordDone)
	for a := range ch {
		ss.apply(a)
	}
}

// apply makes the readers match an assignment: revoked partitions stop (committing how
// far they were acknowledged) before assigned ones start.
func (ss *StreamReader) apply(a streamlog.Assignment) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if !ss.closed {
		ss.applyLocked(a)
	}
}

// applyLocked is apply with ss.mu held.
func (ss *StreamReader) applyLocked(a streamlog.Assignment) {
	want := map[int]bool{}
	for _, p := range partitionsOf(a, ss.st.logTopic) {
		want[p] = true
	}
	for p, r := range ss.readers {
		if !want[p] {
			ss.revokeLocked(r)
		}
	}
	for p := range want {
		if ss.readers[p] != nil {
			continue
		}
		if err := ss.startPartition(p); err != nil {
			ss.st.env.Log.Error("stream partition not read: cannot find where to start", slog.String("dest", ss.st.t.client),
				slog.Int("partition", p), slog.String("group", ss.group.name), slog.Any("err", err))
		}
	}
}

// startPartition starts reading partition p. Without a group, or when no other member
// of the group holds p, its start is resolved now (so a SEND after SUBSCRIBE is read
// with x-stream-offset: next); otherwise the reader first waits for the holder to let
// go and then starts at the group's position. The caller holds ss.mu.
func (ss *StreamReader) startPartition(p int) error {
	ctx, cancel := context.WithCancel(ss.ctx)
	r := &partReader{part: p, cancel: cancel, ready: make(chan struct{}), done: make(chan struct{})}
	if d := ss.draining[p]; d != nil {
		// Given back while it was being handed over: read on where it stopped.
		ss.undrainLocked(p, d)
		r.track = d.track
		r.setReady()
		ss.readers[p] = r
		go ss.read(ctx, r, d.track.resumeAt())
		return nil
	}
	if ss.group != nil && !ss.group.claim(p, ss) {
		ss.readers[p] = r
		go ss.readAfterHandover(ctx, r)
		return nil
	}
	off, err := ss.startOffset(p)
	if err != nil {
		cancel()
		if ss.group != nil {
			ss.group.release(p, ss, 0)
		}
		return err
	}
	if ss.group != nil {
		r.redeliverBelow = ss.group.redeliverBelow(p)
	}
	r.track = newPartTracker(off)
	r.setReady()
	ss.readers[p] = r
	go ss.read(ctx, r, off)
	return nil
}

// readAfterHandover is the goroutine of a reader whose partition another member still
// held when it was assigned: it waits for it, then reads.
func (ss *StreamReader) readAfterHandover(ctx context.Context, r *partReader) {
	if err := ss.group.awaitClaim(ctx, r.part, ss, r.setReady); err != nil {
		close(r.done)
		return
	}
	off, err := ss.startOffset(r.part)
	if err != nil {
		ss.st.env.Log.Error("stream partition not read: cannot find where to start", slog.String("dest", ss.st.t.client),
			slog.Int("partition", r.part), slog.String("group", ss.group.name), slog.Any("err", err))
		ss.group.release(r.part, ss, 0)
		close(r.done)
		return
	}
	r.redeliverBelow = ss.group.redeliverBelow(r.part)
	r.track = newPartTracker(off)
	r.setReady()
	ss.read(ctx, r, off)
}

// startOffset is where reading partition p starts: at the group's position if it has
// one, else at the subscription's start.
func (ss *StreamReader) startOffset(p int) (int64, error) {
	st := ss.st
	if g := ss.group; g != nil {
		off, known, err := g.position(st, p)
		if err != nil {
			return 0, err
		}
		if known {
			return st.clamp(p, off)
		}
	}
	off, err := st.resolve(p, ss.start)
	if err == nil && ss.group != nil {
		// The group starts here: record it, so that a member that gets the partition
		// later (after this one left without acknowledging anything) continues here
		// rather than at its own start, which could skip messages.
		ss.commit([]int{p}, []int64{off}, nil)
	}
	return off, err
}

// awaitHandover waits (within handoverWait) until no other member reads any of the
// subscription's partitions: each reader holds its partition, or the member losing it
// stopped reading it (it may still be settling what it holds; the reader starts once
// that is done).
func (ss *StreamReader) awaitHandover(ctx context.Context) {
	ss.mu.Lock()
	readers := make([]*partReader, 0, len(ss.readers))
	for _, r := range ss.readers {
		readers = append(readers, r)
	}
	ss.mu.Unlock()
	timer := time.NewTimer(handoverWait)
	defer timer.Stop()
	for _, r := range readers {
		select {
		case <-r.ready:
		case <-r.done:
		case <-ctx.Done():
			return
		case <-timer.C:
			ss.st.env.Log.Warn("stream group member subscribed before every partition was handed over to it",
				slog.String("dest", ss.st.t.client), slog.String("group", ss.group.name), slog.String("member", ss.member))
			return
		}
	}
}

// stopPartition stops a reader and lets go of its partition at once (finishPartition).
// The caller holds ss.mu.
func (ss *StreamReader) stopPartition(r *partReader) {
	r.cancel()
	<-r.done
	delete(ss.readers, r.part)
	if r.track != nil { // else it never held the partition
		ss.finishPartition(r.part, r.track)
	}
}

// finishPartition records how far partition p was acknowledged; deliveries of it still
// unacknowledged no longer count. Then the partition is free for the member it goes
// to, which starts from there (and flags redelivered what this one left unsettled).
func (ss *StreamReader) finishPartition(p int, track *partTracker) {
	point, unsettledBelow := track.retire()
	if ss.group != nil {
		ss.commit([]int{p}, []int64{point}, nil)
		ss.group.release(p, ss, unsettledBelow)
	}
}

// stopAllLocked stops every reader and lets go of every partition, also those being
// handed over. The caller holds ss.mu.
func (ss *StreamReader) stopAllLocked() {
	for _, r := range ss.readers {
		ss.stopPartition(r)
	}
	for p, d := range ss.draining {
		close(d.stop)
		delete(ss.draining, p)
		ss.finishPartition(p, d.track)
	}
}

// commit raises the group's positions in parts to offs and has them written; done
// (if not nil) is called once they are durable. Positions never go back: a member
// that got a partition before another's final commit of it may report less.
func (ss *StreamReader) commit(parts []int, offs []int64, done func(error)) {
	var req []streamlog.GroupOffset
	for i, p := range parts {
		if ss.group.advance(p, offs[i]) {
			req = append(req, streamlog.GroupOffset{Group: ss.group.name, Topic: ss.st.logTopic, Partition: p, Offset: offs[i]})
		}
	}
	if len(req) == 0 {
		if done != nil {
			done(nil)
		}
		return
	}
	ss.st.streams.committer.request(req, done)
}

// Close stops the subscription: readers stop, the group positions are committed, and
// the member leaves its group (its partitions go to the others). Idempotent.
func (ss *StreamReader) Close() {
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return
	}
	ss.closed = true
	ss.stopAllLocked()
	joined := ss.coordDone != nil
	ss.mu.Unlock()
	ss.cancel()
	if joined {
		if err := ss.st.log.Leave(ss.group.name, ss.member); err != nil {
			ss.st.env.Log.Warn("stream group member did not leave cleanly", slog.String("group", ss.group.name),
				slog.String("member", ss.member), slog.Any("err", err))
		}
		<-ss.coordDone
	}
	ss.st.mu.Lock()
	delete(ss.st.subs, ss)
	ss.st.mu.Unlock()
}

// read is a partition reader's goroutine.
func (ss *StreamReader) read(ctx context.Context, r *partReader, pos int64) {
	defer close(r.done)
	st := ss.st
	for ctx.Err() == nil {
		recs, err := st.log.Read(st.logTopic, r.part, pos, readBytes)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, streamlog.ErrClosed) {
				return
			}
			if errors.Is(err, streamlog.ErrOffsetOutOfRange) {
				// Retention deleted the messages here while we read: go on from the oldest.
				if oldest, e := st.log.OldestOffset(st.logTopic, r.part); e == nil && pos < oldest {
					r.track.jump(oldest)
					pos = oldest
					continue
				}
			}
			st.env.Log.Error("stream read failed; retrying in a second", slog.String("dest", st.t.client),
				slog.Int("partition", r.part), slog.Int64("offset", pos), slog.Any("err", err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		if len(recs) == 0 {
			if err := st.log.Wait(ctx, st.logTopic, r.part, pos); err != nil {
				return // ctx ended or the log closed
			}
			continue
		}
		if !ss.deliver(ctx, r, recs) {
			return
		}
		pos = recs[len(recs)-1].Offset + 1
	}
}

// deliver hands recs to the connection as credit allows; false if ctx ended first.
// Expired messages and those the selector rejects are passed over (and count as
// acknowledged).
func (ss *StreamReader) deliver(ctx context.Context, r *partReader, recs []streamlog.Record) bool {
	st, s := ss.st, ss.sub
	now := time.Now().UnixMilli()
	out := r.buf[:0]
	defer func() { clear(out); r.buf = out[:0] }()
	var dm *deliveredMessage
	for i := range recs {
		rec := &recs[i]
		if dm == nil {
			dm = new(deliveredMessage)
		}
		m := &dm.m
		st.decodeRecordInto(m, rec, r.part)
		if m.Expires > 0 && m.Expires <= now || !s.Selector.MatchesMessage(m, 1) {
			r.track.skip(rec.Offset)
			*m = persistence.Message{} // reused for the next record
			continue
		}
		if !ss.tryCredit() {
			s.Sink.PushAll(out)
			clear(out)
			out = out[:0]
			if ss.waitCredit(ctx) != nil {
				return false
			}
		}
		r.track.add(rec.Offset)
		dm.d = Delivery{Sub: s, Msg: m, Destination: st.t.client, DeliveryCount: 1,
			Stream: true, StreamPartition: r.part, StreamOffset: rec.Offset, track: r.track, ss: ss}
		if rec.Offset < r.redeliverBelow {
			dm.d.Redelivered, dm.d.DeliveryCount = true, 2
		}
		out = append(out, &dm.d)
		dm = nil
	}
	s.Sink.PushAll(out)
	return true
}

// deliveredMessage is a stream delivery with its message, allocated together.
type deliveredMessage struct {
	d Delivery
	m persistence.Message
}

func (ss *StreamReader) tryCredit() bool {
	for {
		c := ss.sub.Credit.Load()
		if c <= 0 {
			return false
		}
		if ss.sub.Credit.CompareAndSwap(c, c-1) {
			return true
		}
	}
}

// waitCredit returns once it took one credit, or with ctx's error.
func (ss *StreamReader) waitCredit(ctx context.Context) error {
	for {
		ss.creditMu.Lock()
		ss.armed = true
		ch := ss.creditCh
		ss.creditMu.Unlock()
		if ss.tryCredit() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Kick wakes the readers waiting for credit.
func (ss *StreamReader) Kick() {
	ss.creditMu.Lock()
	if ss.armed {
		close(ss.creditCh)
		ss.creditCh = make(chan struct{})
		ss.armed = false
	}
	ss.creditMu.Unlock()
}

// written is called as a delivery reaches the client: with auto-ack it is consumed.
func (ss *StreamReader) written(d *Delivery, auto bool) {
	ss.st.delivered.Add(1)
	if !auto {
		return
	}
	if point, moved := d.track.ack(d.StreamOffset); moved && ss.group != nil && ss.group.advance(d.StreamPartition, point) {
		ss.st.streams.committer.requestOne(groupPartition{ss.group.name, ss.st.logTopic, d.StreamPartition}, point)
	}
}

// Ack settles acknowledged (or NACKed: a stream keeps every message, so a NACK only
// moves on) deliveries; done follows once the group's new positions are durable, at
// once when they did not move.
func (ss *StreamReader) Ack(ds []*Delivery, done func(error)) {
	var parts []int
	var offs []int64
	for _, d := range ds {
		point, moved := d.track.ack(d.StreamOffset)
		if !moved || ss.group == nil {
			continue
		}
		if i := indexOf(parts, d.StreamPartition); i >= 0 {
			offs[i] = max(offs[i], point)
		} else {
			parts = append(parts, d.StreamPartition)
			offs = append(offs, point)
		}
	}
	if len(parts) == 0 {
		done(nil)
		return
	}
	ss.commit(parts, offs, done)
}

func indexOf(xs []int, x int) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// StreamWritten tells the stream a delivery of it reached the client: with auto (the
// consumer acknowledges automatically) it is consumed.
func (d *Delivery) StreamWritten(auto bool) { d.ss.written(d, auto) }
