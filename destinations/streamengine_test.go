package destinations

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations/streamlog"
	"github.com/activemq-go/broker/persistence"
)

// committedLog is a streamlog.Log whose only power is a committed offset that another
// broker node (sharing the log) may move.
type committedLog struct {
	streamlog.Log
	off int64
	ok  bool
}

func (l *committedLog) Committed(string, string, int) (int64, bool, error) { return l.off, l.ok, nil }

// A group's position is the higher of what was asked here and what the log has
// committed, which a member on another node may have moved on.
func TestGroupPositionFollowsTheLog(t *testing.T) {
	l := &committedLog{}
	st := &Stream{log: l, logTopic: "t"}
	g := &groupState{name: "G", pos: map[int]int64{}}
	_, ok, err := g.position(st, 0)
	require.NoError(t, err)
	require.False(t, ok)

	l.off, l.ok = 5, true
	off, ok, _ := g.position(st, 0)
	require.True(t, ok)
	require.Equal(t, int64(5), off)

	g.advance(0, 8) // asked here, not yet written
	off, _, _ = g.position(st, 0)
	require.Equal(t, int64(8), off)

	l.off = 12 // another node's member went on
	off, _, _ = g.position(st, 0)
	require.Equal(t, int64(12), off)
	require.False(t, g.advance(0, 10), "positions never go back")
}

// fixedKeys partitions every key into one partition.
type fixedKeys int

func (k fixedKeys) PartitionForKey(string, []byte, int) int { return int(k) }

// A log with a KeyPartitioner picks the partitions of keyed messages; unkeyed ones go
// round-robin whatever it says.
func TestPartitionForUsesTheLogsKeyPartitioner(t *testing.T) {
	st := &Stream{nparts: 4, logTopic: "t", keys: fixedKeys(3)}
	m := &persistence.Message{Headers: persistence.Headers{PartitionKeyProperty, "alice"}}
	p, key := st.partitionFor(m)
	require.Equal(t, 3, p)
	require.Equal(t, "alice", key)
	m = &persistence.Message{Headers: persistence.Headers{"JMSXGroupID", "bob"}}
	p, key = st.partitionFor(m)
	require.Equal(t, 3, p, "the fallback key too")
	require.Equal(t, "bob", key)
	seen := map[int]bool{}
	for range 8 {
		p, key = st.partitionFor(&persistence.Message{})
		require.Empty(t, key)
		seen[p] = true
	}
	require.Len(t, seen, 4, "round-robin")
}
