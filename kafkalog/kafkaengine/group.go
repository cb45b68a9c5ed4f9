package kafkaengine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/activemq-go/broker/destinations/streamlog"
)

// leaveGrace is how long a member that left stays in its Kafka group for the final
// commit of its positions (the broker writes positions nobody waits for at least
// every second).
const leaveGrace = 1500 * time.Millisecond

// commitRetry bounds how long CommitOffsets retries while the group rebalances.
const commitRetry = 10 * time.Second

// groupMembers are the members of one consumer group on this node.
type groupMembers struct {
	live    map[string]*member // by member id
	leaving []*member          // left, still in the Kafka group for a final commit
}

func (g *groupMembers) all() []*member {
	ms := slices.Clone(g.leaving)
	for _, m := range g.live {
		ms = append(ms, m)
	}
	return ms
}

// memberKey names a member as the broker does: its group and its id.
type memberKey struct{ group, id string }

// member is one Kafka group member: a franz-go client in the group, fetching nothing.
type member struct {
	e         *Engine
	key       memberKey
	group     string // the Kafka group id (kafkaGroup)
	topic     string // Kafka topic
	cl        *kgo.Client
	first     chan struct{} // closed at the first assignment
	some      chan struct{} // closed once the member owns a partition
	gotSome   bool
	closeOnce sync.Once
	mu        sync.Mutex
	closed    bool // close ran: a client set after it is closed at once
	owned     map[int32]bool
	ch        chan streamlog.Assignment // cap 1: the latest assignment
	left      bool
	gotFirst  bool
	leftTimer *time.Timer
	logTopic  string
}

// kafkaGroup is the Kafka consumer group of a broker consumer group on a stream: one
// per stream, so that a group name used on two streams rebalances each on its own.
func (e *Engine) kafkaGroup(group, topic string) string {
	return e.opts.TopicPrefix + topic + "/" + group
}

// Join makes member a member of the Kafka consumer group of group on topic, and
// returns its first assignment (in a cooperative rebalance, partitions a member gets
// from others usually follow in a second round, on Changes).
func (e *Engine) Join(group, memberID, topic string) (streamlog.Assignment, error) {
	kt := e.kafkaTopic(topic)
	kg := e.kafkaGroup(group, topic)
	m := &member{e: e, key: memberKey{group, memberID}, group: kg, topic: kt, logTopic: topic, first: make(chan struct{}), some: make(chan struct{}),
		owned: map[int32]bool{}, ch: make(chan streamlog.Assignment, 1)}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return streamlog.Assignment{}, streamlog.ErrClosed
	}
	if e.members[m.key] != nil {
		e.mu.Unlock()
		return streamlog.Assignment{}, fmt.Errorf("%w: %q in %q", ErrMemberExists, memberID, group)
	}
	g := e.groups[kg]
	if g == nil {
		g = &groupMembers{live: map[string]*member{}}
		e.groups[kg] = g
	}
	g.live[memberID] = m
	e.members[m.key] = m
	e.mu.Unlock()

	opts := append(e.opts.clientOpts(),
		kgo.ConsumerGroup(kg),
		kgo.ConsumeTopics(kt),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(e.opts.SessionTimeout),
		kgo.HeartbeatInterval(min(e.opts.SessionTimeout/5, 3*time.Second)),
		kgo.OnPartitionsAssigned(m.assigned),
		kgo.OnPartitionsRevoked(m.revoked),
		kgo.OnPartitionsLost(m.revoked),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		e.dropMember(m)
		return streamlog.Assignment{}, fmt.Errorf("kafkaengine: join %q: %w", group, err)
	}
	// The broker reads with Read; the member only holds the assignment.
	cl.PauseFetchTopics(kt)
	m.mu.Lock()
	if m.closed { // the engine closed meanwhile
		m.mu.Unlock()
		cl.Close()
		return streamlog.Assignment{}, streamlog.ErrClosed
	}
	m.cl = cl
	m.mu.Unlock()
	timer := time.NewTimer(e.opts.SessionTimeout + e.opts.RequestTimeout)
	defer timer.Stop()
	select {
	case <-m.first:
	case <-timer.C:
		m.close()
		e.dropMember(m)
		return streamlog.Assignment{}, fmt.Errorf("%w: member %q of %q", ErrNoAssignment, memberID, group)
	case <-e.ctx.Done():
		return streamlog.Assignment{}, streamlog.ErrClosed
	}
	// In a cooperative rebalance a member joining a group whose partitions others
	// own gets them in a second round, once the owners let go: wait for it, so that
	// like the embedded log's Join this returns with the member's share.
	settle := time.NewTimer(joinSettle(e.opts.SessionTimeout))
	defer settle.Stop()
	select {
	case <-m.some:
	case <-settle.C:
	case <-e.ctx.Done():
		return streamlog.Assignment{}, streamlog.ErrClosed
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.assignmentLocked(), nil
}

// joinSettle is how long Join waits for a member's first partitions: the second round
// of a cooperative rebalance, or the session timeout of a member that died holding
// them. A member of a group with more members than partitions waits it out.
func joinSettle(session time.Duration) time.Duration {
	return min(session+2*time.Second, 15*time.Second)
}

// Changes is the member's assignment channel: it holds the latest assignment when it
// changed, and is closed when the member leaves.
func (e *Engine) Changes(group, memberID string) (<-chan streamlog.Assignment, error) {
	m, err := e.liveMember(group, memberID)
	if err != nil {
		return nil, err
	}
	return m.ch, nil
}

// Leave ends the member: its Changes channel closes at once; it leaves the Kafka group
// after the next commit of the group through this node or leaveGrace, whichever comes
// first, and its partitions go to the other members.
func (e *Engine) Leave(group, memberID string) error {
	e.mu.Lock()
	m := e.members[memberKey{group, memberID}]
	if m == nil {
		e.mu.Unlock()
		return fmt.Errorf("%w: %q in %q", streamlog.ErrUnknownMember, memberID, group)
	}
	delete(e.members, m.key)
	g := e.groups[m.group]
	delete(g.live, memberID)
	g.leaving = append(g.leaving, m)
	m.mu.Lock()
	m.left = true
	close(m.ch)
	m.leftTimer = time.AfterFunc(leaveGrace, func() { e.retire(m) })
	m.mu.Unlock()
	e.mu.Unlock()
	return nil
}

func (e *Engine) liveMember(group, memberID string) (*member, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m := e.members[memberKey{group, memberID}]; m != nil {
		return m, nil
	}
	return nil, fmt.Errorf("%w: %q in %q", streamlog.ErrUnknownMember, memberID, group)
}

// dropMember forgets m.
func (e *Engine) dropMember(m *member) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.groups[m.group]
	if g == nil {
		return
	}
	if e.members[m.key] == m {
		delete(e.members, m.key)
	}
	if g.live[m.key.id] == m {
		delete(g.live, m.key.id)
	}
	g.leaving = slices.DeleteFunc(g.leaving, func(x *member) bool { return x == m })
	if len(g.live) == 0 && len(g.leaving) == 0 {
		delete(e.groups, m.group)
	}
}

// retire takes a member that left out of its Kafka group.
func (e *Engine) retire(m *member) {
	e.dropMember(m)
	m.close()
}

// close leaves the Kafka group and closes the member's client; a second call does
// nothing.
func (m *member) close() {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		if m.leftTimer != nil {
			m.leftTimer.Stop()
		}
		cl := m.cl
		m.closed = true
		m.mu.Unlock()
		if cl != nil {
			cl.Close()
		}
	})
}

func (m *member) assigned(_ context.Context, cl *kgo.Client, ps map[string][]int32) {
	m.update(cl, ps, true)
}

func (m *member) revoked(_ context.Context, cl *kgo.Client, ps map[string][]int32) {
	m.update(cl, ps, false)
}

// update records partitions assigned (own) or revoked, and publishes the assignment.
func (m *member) update(cl *kgo.Client, ps map[string][]int32, own bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cl = cl
	for _, p := range ps[m.topic] {
		if own {
			m.owned[p] = true
		} else {
			delete(m.owned, p)
		}
	}
	m.publishLocked()
}

// publishLocked offers the assignment on the Changes channel, replacing one not yet
// taken. The callbacks are serial, so the channel has one writer.
func (m *member) publishLocked() {
	if !m.gotFirst {
		m.gotFirst = true
		close(m.first)
	}
	if !m.gotSome && len(m.owned) > 0 {
		m.gotSome = true
		close(m.some)
	}
	if m.left {
		return
	}
	a := m.assignmentLocked()
	select {
	case <-m.ch:
	default:
	}
	m.ch <- a
}

func (m *member) assignmentLocked() streamlog.Assignment {
	a := streamlog.Assignment{}
	if m.cl != nil {
		_, gen := m.cl.GroupMetadata()
		a.Generation = int64(gen)
	}
	for p := range m.owned {
		a.Partitions = append(a.Partitions, streamlog.TopicPartition{Topic: m.logTopic, Partition: int(p)})
	}
	slices.SortFunc(a.Partitions, func(x, y streamlog.TopicPartition) int { return x.Partition - y.Partition })
	return a
}

// Committed is the group's committed offset in a partition (Kafka's OffsetFetch);
// false if it has none.
func (e *Engine) Committed(group, topic string, partition int) (int64, bool, error) {
	if e.ctx.Err() != nil {
		return 0, false, streamlog.ErrClosed
	}
	ctx, cancel := e.reqCtx()
	defer cancel()
	kt := e.kafkaTopic(topic)
	os, err := e.adm.FetchOffsets(ctx, e.kafkaGroup(group, topic))
	if err != nil {
		return 0, false, e.failed("fetch committed offsets of "+group+" in", topic, partition, err)
	}
	o, ok := os.Lookup(kt, int32(partition))
	if !ok {
		return 0, false, nil
	}
	if o.Err != nil {
		return 0, false, e.failed("fetch committed offsets of "+group+" in", topic, partition, o.Err)
	}
	if o.At < 0 {
		return 0, false, nil
	}
	return o.At, true, nil
}

// CommitOffsets commits the positions as Kafka committed offsets, each group's in one
// OffsetCommit: through a member of the group on this node (the one that left last,
// whose final positions these usually are, else a live one), or as a simple commit if
// none is here. It retries while the group rebalances.
func (e *Engine) CommitOffsets(offs []streamlog.GroupOffset) error {
	if len(offs) == 0 {
		return nil
	}
	if e.ctx.Err() != nil {
		return streamlog.ErrClosed
	}
	byGroup := map[string]map[string]map[int32]kgo.EpochOffset{} // by Kafka group id
	for _, o := range offs {
		if o.Group == "" {
			return fmt.Errorf("kafkaengine: commit with an empty group name")
		}
		kg := e.kafkaGroup(o.Group, o.Topic)
		g := byGroup[kg]
		if g == nil {
			g = map[string]map[int32]kgo.EpochOffset{}
			byGroup[kg] = g
		}
		kt := e.kafkaTopic(o.Topic)
		if g[kt] == nil {
			g[kt] = map[int32]kgo.EpochOffset{}
		}
		g[kt][int32(o.Partition)] = kgo.EpochOffset{Epoch: -1, Offset: o.Offset}
	}
	var errs []error
	for group, tps := range byGroup {
		errs = append(errs, e.commitGroup(group, tps))
	}
	return errors.Join(errs...)
}

// commitGroup commits one group's positions.
func (e *Engine) commitGroup(group string, tps map[string]map[int32]kgo.EpochOffset) error {
	ctx, cancel := context.WithTimeout(e.ctx, commitRetry)
	defer cancel()
	for {
		m := e.committer(group)
		var err error
		if m != nil {
			err = m.commit(ctx, tps)
		} else {
			err = e.simpleCommit(ctx, group, tps)
		}
		if err == nil {
			if m != nil && m.isLeft() {
				go e.retire(m) // its last positions are in: it may go
			}
			return nil
		}
		retry := errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.IllegalGeneration) ||
			errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.NotCoordinator) ||
			errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.CoordinatorNotAvailable)
		if !retry {
			return fmt.Errorf("kafkaengine: commit offsets of group %q: %w", group, err)
		}
		select {
		case <-ctx.Done():
			if e.ctx.Err() != nil {
				return streamlog.ErrClosed
			}
			return fmt.Errorf("kafkaengine: commit offsets of group %q: %w (retried %s)", group, err, commitRetry)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// committer is the member of group on this node that commits for it, nil if none.
func (e *Engine) committer(group string) *member {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.groups[group]
	if g == nil {
		return nil
	}
	if n := len(g.leaving); n > 0 {
		return g.leaving[n-1]
	}
	for _, m := range g.live {
		if m.client() != nil {
			return m
		}
	}
	return nil
}

func (m *member) client() *kgo.Client {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cl
}

func (m *member) isLeft() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.left
}

// commit commits through the member's client, with its generation.
func (m *member) commit(ctx context.Context, tps map[string]map[int32]kgo.EpochOffset) error {
	var rerr error
	m.client().CommitOffsetsSync(ctx, tps, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			rerr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil && rerr == nil {
					rerr = err
				}
			}
		}
	})
	if rerr != nil {
		m.e.opts.Logger.Debug("kafka group commit through member failed", slog.String("group", m.group), slog.Any("err", rerr))
	}
	return rerr
}

// simpleCommit commits outside any generation, as Kafka allows for an empty group.
func (e *Engine) simpleCommit(ctx context.Context, group string, tps map[string]map[int32]kgo.EpochOffset) error {
	os := kadm.Offsets{}
	for t, ps := range tps {
		for p, eo := range ps {
			os.Add(kadm.Offset{Topic: t, Partition: p, At: eo.Offset, LeaderEpoch: -1})
		}
	}
	rs, err := e.adm.CommitOffsets(ctx, group, os)
	if err != nil {
		return err
	}
	return rs.Error()
}
