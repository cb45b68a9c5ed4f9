package destinations

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/activemq-go/broker/destinations/streamlog"
)

// Consumer groups of streams. Membership and partition assignment are the log's
// (streamlog.Log's Join and Changes; the embedded log rebalances stickily on join and
// leave). The broker keeps, per group and stream, the highest position any member asked
// to commit per partition (groupState), so a member that takes a partition over starts
// where the group got to even before that position is on disk, and positions never go
// back. Every position stands for
// "everything before it was acknowledged by some member", so the highest is right.
//
// Commits rewrite the embedded log's offsets file with an fsync, so they are gathered: one
// committer goroutine per broker writes everything asked since its last round in one
// CommitOffsets call, the latest position per partition winning, then calls the
// waiters (ACK receipts). At most one round is in flight. A round starts at once when
// someone waits for it (an ACK); positions nobody waits for (auto-ack, rebalances) are
// written at most every autoCommitInterval, as Kafka's auto.commit.interval.ms does, and
// at close: after a crash an auto-ack group may see up to that much again.

// groupState is one consumer group's positions in one stream, and which member holds
// each partition. The log assigns partitions; a member that is assigned one still held
// by another waits for it to be released, so that a partition never has two readers and
// the new one starts where the old one got to. The member losing a partition (revoked
// in a rebalance) stops reading it at once, marks it quiet, and releases it only once it
// settled (acknowledged, NACKed) every message of it it holds, or left, or the stream's
// rebalance timeout passed (as Kafka's cooperative rebalancing commits on revoke): so
// the new owner starts after what the old one consumed rather than delivering it twice.
type groupState struct {
	name string

	mu     sync.Mutex
	pos    map[int]int64 // per partition: the highest position asked for
	owners map[int]*StreamReader
	// quiet holds the partitions whose holder stopped reading them and is settling
	// what it handed out before it releases them.
	quiet map[int]bool
	// redeliver is, per partition, the offset below which messages were handed to a
	// member that let go of the partition without settling them all: a new reader
	// flags those redelivered.
	redeliver map[int]int64
	changed   chan struct{} // closed (and replaced) whenever a partition is released or quiet
}

// groupLocked returns the state of group name in st. The caller holds st.mu.
func (st *Stream) groupLocked(name string) *groupState {
	g := st.groups[name]
	if g == nil {
		g = &groupState{name: name, pos: map[int]int64{}, owners: map[int]*StreamReader{}, quiet: map[int]bool{},
			redeliver: map[int]int64{}, changed: make(chan struct{})}
		st.groups[name] = g
	}
	return g
}

// claim makes ss the reader of partition p if nobody else is; false if another is.
func (g *groupState) claim(p int, ss *StreamReader) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if o := g.owners[p]; o != nil && o != ss {
		return false
	}
	g.owners[p] = ss
	return true
}

// awaitClaim waits until ss could claim partition p, or ctx ends. It calls quiet (if
// not nil) once the holder stopped reading p and only settles what it holds.
func (g *groupState) awaitClaim(ctx context.Context, p int, ss *StreamReader, quiet func()) error {
	for {
		g.mu.Lock()
		if o := g.owners[p]; o == nil || o == ss {
			g.owners[p] = ss
			g.mu.Unlock()
			return nil
		}
		if g.quiet[p] && quiet != nil {
			quiet()
			quiet = nil
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// setQuiet records whether ss, the holder of p, stopped reading it to hand it over.
func (g *groupState) setQuiet(p int, ss *StreamReader, quiet bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.owners[p] != ss || g.quiet[p] == quiet {
		return
	}
	if quiet {
		g.quiet[p] = true
	} else {
		delete(g.quiet, p)
	}
	g.changedLocked()
}

// release lets go of partition p if ss holds it; messages below unsettledBelow (if
// not 0) were handed out and not settled, and come again.
func (g *groupState) release(p int, ss *StreamReader, unsettledBelow int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.owners[p] != ss {
		return
	}
	delete(g.owners, p)
	delete(g.quiet, p)
	if unsettledBelow > g.redeliver[p] {
		g.redeliver[p] = unsettledBelow
	}
	g.changedLocked()
}

// redeliverBelow is the offset below which messages of p come again (0: none).
func (g *groupState) redeliverBelow(p int) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.redeliver[p]
}

func (g *groupState) changedLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// position is the group's position in partition p: the higher of the highest asked
// for here since start and the one committed in the log (which members on other
// broker nodes sharing the log, Kafka, may have moved on); false if the group never
// had one.
func (g *groupState) position(st *Stream, p int) (int64, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	off, ok, err := st.log.Committed(g.name, st.logTopic, p)
	if err != nil {
		return 0, false, err
	}
	if cur, had := g.pos[p]; had && (!ok || cur > off) {
		return cur, true, nil
	}
	if !ok {
		return 0, false, nil
	}
	g.pos[p] = off
	return off, true, nil
}

// advance raises the position of partition p to off; false if it was there already.
func (g *groupState) advance(p int, off int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cur, ok := g.pos[p]; ok && cur >= off {
		return false
	}
	g.pos[p] = off
	return true
}

// drain is a partition revoked from a member and not yet released: the member stopped
// reading it and waits for what it handed out to be settled.
type drain struct {
	track *partTracker
	stop  chan struct{} // closed when the drain ends otherwise: given back, or closed
}

// revokeLocked stops reading a partition the group gave to another member. The
// partition is released (finishPartition) at once if every message of it this member
// handed out is settled, else once they are, or the member leaves, or the stream's
// rebalance timeout passes, whichever comes first; the new owner then starts at the
// group's position. The caller holds ss.mu.
func (ss *StreamReader) revokeLocked(r *partReader) {
	r.cancel()
	<-r.done
	delete(ss.readers, r.part)
	if r.track == nil {
		return // it never held the partition
	}
	settled := r.track.whenSettled()
	select {
	case <-settled:
		ss.finishPartition(r.part, r.track)
		return
	default:
	}
	d := &drain{track: r.track, stop: make(chan struct{})}
	ss.draining[r.part] = d
	ss.group.setQuiet(r.part, ss, true)
	go ss.awaitSettled(r.part, d, settled)
}

// awaitSettled ends the drain of partition p: it releases the partition once the
// member settled what it holds of it, or at the rebalance timeout.
func (ss *StreamReader) awaitSettled(p int, d *drain, settled <-chan struct{}) {
	timer := time.NewTimer(ss.st.rebalanceTimeout)
	defer timer.Stop()
	timedOut := false
	select {
	case <-settled:
	case <-timer.C:
		timedOut = true
	case <-d.stop:
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.draining[p] != d {
		return // given back or closed meanwhile
	}
	delete(ss.draining, p)
	if timedOut {
		ss.st.env.Log.Warn("stream group member did not settle its messages of a revoked partition within the rebalance timeout: they go to the partition's new owner again",
			slog.String("dest", ss.st.t.client), slog.String("group", ss.group.name), slog.String("member", ss.member),
			slog.Int("partition", p), slog.Duration("rebalanceTimeout", ss.st.rebalanceTimeout))
	}
	ss.finishPartition(p, d.track)
}

// undrainLocked ends the drain of p without releasing it. The caller holds ss.mu.
func (ss *StreamReader) undrainLocked(p int, d *drain) {
	close(d.stop)
	delete(ss.draining, p)
	ss.group.setQuiet(p, ss, false)
}

// autoCommitInterval bounds how often positions nobody waits for are written.
const autoCommitInterval = time.Second

// committer writes group positions to the log in rounds.
type committer struct {
	log    streamlog.Log
	logger *slog.Logger

	mu      sync.Mutex
	pending map[groupPartition]int64
	waiters []func(error)
	closed  bool
	wake    chan struct{}
	done    chan struct{}
}

type groupPartition struct {
	group, topic string
	partition    int
}

func newCommitter(l streamlog.Log, logger *slog.Logger) *committer {
	c := &committer{log: l, logger: logger, pending: map[groupPartition]int64{},
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	go c.run()
	return c
}

// request asks for offs to be committed; done (if not nil) is called once they are.
// The committer is woken when someone waits, or when nothing was pending: while
// something is, it already waits with its timer set for the next round.
func (c *committer) request(offs []streamlog.GroupOffset, done func(error)) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		// Late (a subscription closing after the broker): write it here.
		err := c.write(offs)
		if done != nil {
			done(err)
		}
		return
	}
	wake := len(c.pending) == 0 || done != nil
	for _, o := range offs {
		c.addLocked(groupPartition{o.Group, o.Topic, o.Partition}, o.Offset)
	}
	if done != nil {
		c.waiters = append(c.waiters, done)
	}
	c.mu.Unlock()
	if wake {
		c.signal()
	}
}

// requestOne is request of one position with nobody waiting (an auto-ack), without
// building a slice for it.
func (c *committer) requestOne(k groupPartition, off int64) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.request([]streamlog.GroupOffset{{Group: k.group, Topic: k.topic, Partition: k.partition, Offset: off}}, nil)
		return
	}
	wake := len(c.pending) == 0
	c.addLocked(k, off)
	c.mu.Unlock()
	if wake {
		c.signal()
	}
}

// addLocked raises the pending position of k to off. The caller holds c.mu.
func (c *committer) addLocked(k groupPartition, off int64) {
	if cur, ok := c.pending[k]; !ok || off > cur {
		c.pending[k] = off
	}
}

func (c *committer) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *committer) run() {
	defer close(c.done)
	var offs []streamlog.GroupOffset
	last := time.Now() // of the last round
	timer := time.NewTimer(autoCommitInterval)
	defer timer.Stop()
	for {
		c.mu.Lock()
		for len(c.waiters) == 0 && !(len(c.pending) > 0 && (c.closed || time.Since(last) >= autoCommitInterval)) {
			if c.closed && len(c.pending) == 0 {
				c.mu.Unlock()
				return
			}
			var due <-chan time.Time
			if len(c.pending) > 0 {
				timer.Reset(autoCommitInterval - time.Since(last))
				due = timer.C
			}
			c.mu.Unlock()
			select {
			case <-c.wake:
			case <-due:
			}
			c.mu.Lock()
		}
		offs = offs[:0]
		for k, off := range c.pending {
			offs = append(offs, streamlog.GroupOffset{Group: k.group, Topic: k.topic, Partition: k.partition, Offset: off})
		}
		clear(c.pending)
		waiters := c.waiters
		c.waiters = nil
		c.mu.Unlock()
		err := c.write(offs)
		last = time.Now()
		for _, w := range waiters {
			w(err)
		}
	}
}

// write commits offs, turning a failure into the error an ACK's sender gets.
func (c *committer) write(offs []streamlog.GroupOffset) error {
	err := c.log.CommitOffsets(offs)
	if err == nil {
		return nil
	}
	c.logger.Error("stream consumer group offsets not committed", slog.Int("partitions", len(offs)), slog.Any("err", err))
	return &Error{Message: "acknowledgement not stored: " + err.Error(), Err: fmt.Errorf("%w: %w", ErrStore, err)}
}

// close writes what is pending and stops the committer.
func (c *committer) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	<-c.done
}
