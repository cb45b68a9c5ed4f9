package kafkalog

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"sync"
)

// Group is a consumer group: members that share the partitions of the topics they
// subscribe to, each partition going to exactly one subscribed member. Membership is in
// memory (members are live consumers); committed offsets are durable (Log.Commit).
//
// Every Join and Leave starts a new generation with a sticky rebalance: for each topic
// every member gets ⌊n/m⌋ or ⌈n/m⌉ of its n partitions (m subscribed members), keeping
// those it already had if it still may; only partitions of departed members and a
// member's excess over its share move. Members whose partitions change are notified on
// their Changes channel.
type Group struct {
	l    *Log
	name string

	mu      sync.Mutex
	gen     int64
	members map[string]*member
}

type member struct {
	topics []string
	owned  []TopicPartition
	ch     chan Assignment
}

// Group returns the consumer group with this name, creating it (empty) on first use.
func (l *Log) Group(name string) *Group {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.groups[name]
	if g == nil {
		g = &Group{l: l, name: name, members: map[string]*member{}}
		l.groups[name] = g
	}
	return g
}

// Name returns the group's name.
func (g *Group) Name() string { return g.name }

// Join adds member, subscribed to topics, and rebalances; it returns the member's new
// assignment. Joining again replaces the member's subscription.
func (g *Group) Join(memberID string, topics ...string) (Assignment, error) {
	for _, t := range topics {
		if g.l.Partitions(t) == 0 {
			return Assignment{}, fmt.Errorf("%w: %q", ErrUnknownTopic, t)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.members[memberID]
	if m == nil {
		m = &member{ch: make(chan Assignment, 1)}
		g.members[memberID] = m
	}
	m.topics = slices.Compact(slices.Sorted(slices.Values(topics)))
	g.rebalance()
	return g.assignmentOf(m), nil
}

// Leave removes member, closes its Changes channel and rebalances its partitions over
// the others.
func (g *Group) Leave(memberID string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.members[memberID]
	if m == nil {
		return fmt.Errorf("%w: %q in group %q", ErrUnknownMember, memberID, g.name)
	}
	delete(g.members, memberID)
	close(m.ch)
	g.rebalance()
	return nil
}

// Assignment returns member's current assignment.
func (g *Group) Assignment(memberID string) (Assignment, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.members[memberID]
	if m == nil {
		return Assignment{}, fmt.Errorf("%w: %q in group %q", ErrUnknownMember, memberID, g.name)
	}
	return g.assignmentOf(m), nil
}

// Changes returns a channel that receives member's assignment whenever a rebalance
// changes its partitions. It holds only the latest assignment (a stale one is replaced,
// never queued), and is closed when the member leaves.
func (g *Group) Changes(memberID string) (<-chan Assignment, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.members[memberID]
	if m == nil {
		return nil, fmt.Errorf("%w: %q in group %q", ErrUnknownMember, memberID, g.name)
	}
	return m.ch, nil
}

// Members returns the member ids, sorted.
func (g *Group) Members() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Sorted(func(yield func(string) bool) {
		for id := range g.members {
			if !yield(id) {
				return
			}
		}
	})
}

// Generation returns the number of rebalances so far.
func (g *Group) Generation() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gen
}

// Commit is Log.Commit for this group.
func (g *Group) Commit(topic string, partition int, offset int64) error {
	return g.l.Commit(g.name, topic, partition, offset)
}

// Committed is Log.Committed for this group.
func (g *Group) Committed(topic string, partition int) (int64, bool, error) {
	return g.l.Committed(g.name, topic, partition)
}

func (g *Group) assignmentOf(m *member) Assignment {
	return Assignment{Generation: g.gen, Partitions: slices.Clone(m.owned)}
}

// rebalance starts a new generation. The caller holds g.mu.
func (g *Group) rebalance() {
	g.gen++
	subs := make(map[string][]string, len(g.members))
	prev := make(map[string][]TopicPartition, len(g.members))
	counts := map[string]int{}
	for id, m := range g.members {
		subs[id], prev[id] = m.topics, m.owned
		for _, t := range m.topics {
			counts[t] = g.l.Partitions(t)
		}
	}
	next := stickyAssign(prev, subs, counts)
	moved := 0
	for id, m := range g.members {
		if !slices.Equal(m.owned, next[id]) {
			moved += len(symmetricDiff(m.owned, next[id]))
			m.owned = next[id]
			a := g.assignmentOf(m)
			select { // keep only the latest assignment
			case <-m.ch:
			default:
			}
			m.ch <- a
		}
	}
	g.l.opts.Logger.Info("kafkalog: group rebalanced", slog.String("group", g.name),
		slog.Int64("generation", g.gen), slog.Int("members", len(g.members)), slog.Int("moved", moved))
}

// symmetricDiff returns the partitions in exactly one of two sorted lists.
func symmetricDiff(a, b []TopicPartition) []TopicPartition {
	var d []TopicPartition
	for _, x := range a {
		if !slices.Contains(b, x) {
			d = append(d, x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			d = append(d, x)
		}
	}
	return d
}

func compareTP(a, b TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// stickyAssign computes a balanced assignment that moves as few partitions as possible
// from prev. For each topic (in name order) with n partitions and m subscribed members,
// the ⌈n/m⌉ quotas go to the members that hold most of the topic already (ties: least
// loaded over the topics so far, then by id); each member keeps up to its quota of what
// it held, and the partitions freed (excess, departed holders, new) go to members under
// their quota, lowest partition first.
func stickyAssign(prev map[string][]TopicPartition, subs map[string][]string, counts map[string]int) map[string][]TopicPartition {
	out := make(map[string][]TopicPartition, len(subs))
	load := make(map[string]int, len(subs))
	for id := range subs {
		out[id] = nil
	}
	for _, t := range slices.Sorted(func(yield func(string) bool) {
		for t := range counts {
			if !yield(t) {
				return
			}
		}
	}) {
		n := counts[t]
		var ms []string
		for id, ts := range subs {
			if slices.Contains(ts, t) {
				ms = append(ms, id)
			}
		}
		if len(ms) == 0 {
			continue
		}
		owner := make([]string, n) // partition -> current holder kept
		cur := make(map[string][]int, len(ms))
		for _, id := range ms {
			for _, tp := range prev[id] {
				if tp.Topic == t && tp.Partition < n && owner[tp.Partition] == "" {
					owner[tp.Partition] = id
					cur[id] = append(cur[id], tp.Partition)
				}
			}
		}
		slices.SortFunc(ms, func(a, b string) int {
			return cmp.Or(cmp.Compare(len(cur[b]), len(cur[a])), cmp.Compare(load[a], load[b]), cmp.Compare(a, b))
		})
		base, extra := n/len(ms), n%len(ms)
		quota := make(map[string]int, len(ms))
		for i, id := range ms {
			quota[id] = base
			if i < extra {
				quota[id]++
			}
			slices.Sort(cur[id])
			for _, p := range cur[id][min(quota[id], len(cur[id])):] {
				owner[p] = ""
			}
			cur[id] = cur[id][:min(quota[id], len(cur[id]))]
		}
		next := 0 // lowest possibly free partition
		for _, id := range ms {
			for len(cur[id]) < quota[id] {
				for owner[next] != "" {
					next++
				}
				owner[next] = id
				cur[id] = append(cur[id], next)
			}
			load[id] += quota[id]
		}
		for _, id := range ms {
			for _, p := range cur[id] {
				out[id] = append(out[id], TopicPartition{Topic: t, Partition: p})
			}
		}
	}
	for id := range out {
		slices.SortFunc(out[id], compareTP)
	}
	return out
}
