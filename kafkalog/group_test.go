package kafkalog

import (
	"fmt"
	"testing"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/stretchr/testify/require"
)

// checkBalanced asserts every partition of topic has exactly one owner among members and
// shares differ by at most one.
func checkBalanced(t *testing.T, g *Group, topic string, n int) map[TopicPartition]string {
	t.Helper()
	owner := map[TopicPartition]string{}
	lo, hi := n, 0
	for _, m := range g.Members() {
		a, err := g.Assignment(m)
		require.NoError(t, err)
		for _, tp := range a.Partitions {
			require.Empty(t, owner[tp], "%v assigned twice", tp)
			owner[tp] = m
		}
		lo, hi = min(lo, len(a.Partitions)), max(hi, len(a.Partitions))
	}
	require.Len(t, owner, n)
	require.LessOrEqual(t, hi-lo, 1)
	return owner
}

func moved(a, b map[TopicPartition]string) int {
	n := 0
	for tp, m := range a {
		if b[tp] != m {
			n++
		}
	}
	return n
}

func TestStickyRebalance(t *testing.T) {
	l := openT(t, memOpts(vfs.NewMem(), newClock()))
	defer l.Close()
	require.NoError(t, l.CreateTopic("t", 12))
	g := l.Group("g")
	a, err := g.Join("m1", "t")
	require.NoError(t, err)
	require.Len(t, a.Partitions, 12)
	before := checkBalanced(t, g, "t", 12)

	// join: the newcomer takes exactly its share, nobody else swaps
	for i, want := range []int{6, 4, 3, 3} { // moves for members 2..5: 12/2, 12/3 ... ≈ share
		id := fmt.Sprintf("m%d", i+2)
		a, err := g.Join(id, "t")
		require.NoError(t, err)
		after := checkBalanced(t, g, "t", 12)
		require.Equal(t, len(a.Partitions), moved(before, after), "only the newcomer's partitions move")
		require.LessOrEqual(t, moved(before, after), want)
		before = after
	}
	gen := g.Generation()
	ch, err := g.Changes("m3")
	require.NoError(t, err)
	for len(ch) > 0 {
		<-ch
	}
	// leave: only the leaver's partitions move
	leaver, _ := g.Assignment("m2")
	require.NoError(t, g.Leave("m2"))
	after := checkBalanced(t, g, "t", 12)
	require.Equal(t, len(leaver.Partitions), moved(before, after)-0)
	require.Equal(t, gen+1, g.Generation())
	select {
	case a := <-ch:
		require.Equal(t, gen+1, a.Generation)
	default:
		// m3 may not have gained a partition; its assignment is still current
		a, _ := g.Assignment("m3")
		require.Equal(t, gen+1, a.Generation)
	}
	_, err = g.Assignment("m2")
	require.ErrorIs(t, err, ErrUnknownMember)
	require.ErrorIs(t, g.Leave("m2"), ErrUnknownMember)
	for _, m := range g.Members() {
		require.NoError(t, g.Leave(m))
	}
	require.Empty(t, g.Members())
	_, err = g.Join("x", "missing")
	require.ErrorIs(t, err, ErrUnknownTopic)
}

func TestStickyAssignMultiTopic(t *testing.T) {
	counts := map[string]int{"a": 1, "b": 1, "c": 1, "d": 5}
	subs := map[string][]string{"x": {"a", "b", "c", "d"}, "y": {"a", "b", "c", "d"}, "z": {"a", "b", "c", "d"}}
	out := stickyAssign(nil, subs, counts)
	total := 0
	for _, tps := range out {
		require.GreaterOrEqual(t, len(tps), 2)
		total += len(tps)
	}
	require.Equal(t, 8, total)
	again := stickyAssign(out, subs, counts)
	require.Equal(t, out, again, "no change, no movement")
	// a member subscribed to one topic only gets partitions of that topic
	subs["w"] = []string{"d"}
	out2 := stickyAssign(out, subs, counts)
	for _, tp := range out2["w"] {
		require.Equal(t, "d", tp.Topic)
	}
}

func TestGroupOffsetsSurviveReopen(t *testing.T) {
	fs := vfs.NewMem()
	o := memOpts(fs, newClock())
	l := openT(t, o)
	require.NoError(t, l.CreateTopic("t", 3))
	require.NoError(t, l.Commit("g1", "t", 0, 42))
	require.NoError(t, l.Group("g2").Commit("t", 2, 7))
	require.NoError(t, l.Commit("g1", "t", 0, 43))
	_, ok, err := l.Committed("g1", "t", 1)
	require.NoError(t, err)
	require.False(t, ok)
	require.ErrorIs(t, l.Commit("g1", "nope", 0, 1), ErrUnknownTopic)
	crashed := fs.CrashClone() // commits are durable when Commit returns
	require.NoError(t, l.Close())
	for _, f := range []vfs.FS{fs, crashed} {
		o.FS = f
		l = openT(t, o)
		off, ok, err := l.Committed("g1", "t", 0)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, int64(43), off)
		off, ok, _ = l.Group("g2").Committed("t", 2)
		require.True(t, ok)
		require.Equal(t, int64(7), off)
		require.NoError(t, l.Close())
	}
}

func TestCommitOffsetsIsOneDurableRewrite(t *testing.T) {
	fs := vfs.NewMem()
	o := memOpts(fs, newClock())
	l := openT(t, o)
	require.NoError(t, l.CreateTopic("t", 3))
	at := func(group string, p int, off int64) GroupOffset {
		return GroupOffset{Group: group, Topic: "t", Partition: p, Offset: off}
	}
	require.NoError(t, l.CommitOffsets(nil))
	require.NoError(t, l.CommitOffsets([]GroupOffset{at("g", 0, 5), at("g", 2, 9), at("h", 1, 1)}))
	require.ErrorIs(t, l.CommitOffsets([]GroupOffset{at("g", 0, 6), at("g", 3, 1)}), ErrUnknownPartition)
	off, _, _ := l.Committed("g", "t", 0)
	require.Equal(t, int64(5), off, "a refused call records nothing")
	crashed := fs.CrashClone()
	require.NoError(t, l.Close())
	l = openT(t, Options{FS: crashed, Dir: o.Dir, RetentionCheckInterval: -1, Logger: o.Logger})
	defer l.Close()
	for _, want := range []GroupOffset{at("g", 0, 5), at("g", 2, 9), at("h", 1, 1)} {
		off, ok, err := l.Committed(want.Group, want.Topic, want.Partition)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, want.Offset, off)
	}
	require.Equal(t, []string{"g", "h"}, l.CommittedGroups("t"), "the groups survive the crash")
	require.Empty(t, l.CommittedGroups("other"))
}

// GroupOffsets lists every group's committed offsets in one topic, by group then
// partition, and nothing of other topics.
func TestGroupOffsetsOfTopic(t *testing.T) {
	l := openT(t, memOpts(vfs.NewMem(), newClock()))
	defer l.Close()
	require.NoError(t, l.CreateTopic("t", 3))
	require.NoError(t, l.CreateTopic("u", 1))
	require.NoError(t, l.Commit("g2", "t", 2, 7))
	require.NoError(t, l.Commit("g1", "t", 1, 5))
	require.NoError(t, l.Commit("g1", "t", 0, 4))
	require.NoError(t, l.Commit("g1", "u", 0, 9))
	require.Equal(t, []GroupOffset{
		{Group: "g1", Topic: "t", Partition: 0, Offset: 4},
		{Group: "g1", Topic: "t", Partition: 1, Offset: 5},
		{Group: "g2", Topic: "t", Partition: 2, Offset: 7},
	}, l.GroupOffsets("t"))
	require.Empty(t, l.GroupOffsets("none"))
}
