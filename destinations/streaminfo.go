package destinations

import (
	"sort"

	"github.com/activemq-go/broker/destinations/streamlog"
)

// StreamGroupStats is a consumer group's position in a stream (Kafka's
// kafka-consumer-groups --describe).
type StreamGroupStats struct {
	Group string
	// Members is the number of the group's members reading the stream now.
	Members    int
	Partitions []StreamGroupPartition
}

// StreamGroupPartition is a group's position in one partition: the next offset it
// reads (the highest a member asked to commit since start, else the one committed in
// the log; HasPosition false when it has neither), and the partition's next offset.
type StreamGroupPartition struct {
	Partition   int
	Position    int64
	HasPosition bool
	Next        int64
	// Lag is what the group has still to read: Next minus its position, or minus the
	// oldest offset kept when it has none.
	Lag int64
}

// Partitions describes the stream's partitions.
func (st *Stream) Partitions() []StreamPartitionStats { return st.stats().Partitions }

// Groups describes every consumer group of the stream, seen since start or with
// offsets committed in the log, by name.
func (st *Stream) Groups() []StreamGroupStats { return st.groupsFor(st.Partitions()) }

// groupsFor is Groups for the partitions parts.
func (st *Stream) groupsFor(parts []StreamPartitionStats) []StreamGroupStats {
	st.mu.Lock()
	states := map[string]*groupState{}
	members := map[string]int{}
	for name, g := range st.groups {
		states[name] = g
	}
	for ss := range st.subs {
		if ss.group != nil {
			members[ss.group.name]++
		}
	}
	st.mu.Unlock()
	if gl, ok := st.log.(streamlog.GroupLister); ok {
		for _, name := range gl.CommittedGroups(st.logTopic) {
			if states[name] == nil {
				states[name] = nil // committed offsets only
			}
		}
	}
	out := make([]StreamGroupStats, 0, len(states))
	for name, g := range states {
		gs := StreamGroupStats{Group: name, Members: members[name]}
		for _, p := range parts {
			var pos int64
			var ok bool
			var err error
			if g != nil {
				pos, ok, err = g.position(st, p.Partition)
			} else {
				pos, ok, err = st.log.Committed(name, st.logTopic, p.Partition)
			}
			if err != nil {
				continue // the log is closing
			}
			gp := StreamGroupPartition{Partition: p.Partition, Position: pos, HasPosition: ok, Next: p.Next}
			from := p.Oldest
			if ok {
				from = max(pos, p.Oldest)
			}
			gp.Lag = max(p.Next-from, 0)
			gs.Partitions = append(gs.Partitions, gp)
		}
		out = append(out, gs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}
