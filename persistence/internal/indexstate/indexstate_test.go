package indexstate

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
)

type dest struct {
	st    persistence.DestState
	added bool
}

func (d *dest) State() (persistence.DestState, bool) { return d.st, d.added }

type sub struct {
	info    persistence.SubInfo
	pending int64
}

func (s *sub) Info() persistence.SubInfo { return s.info }
func (s *sub) Pending() int64            { return s.pending }

func TestRecoveredListsAddedDestinationsInOrder(t *testing.T) {
	dests := map[string]*dest{
		"queue://b": {persistence.DestState{Name: "queue://b", LastSeq: 7, Msgs: 2, Bytes: 10}, true},
		"queue://a": {persistence.DestState{Name: "queue://a", LastSeq: 1}, true},
		"topic://x": {persistence.DestState{Name: "topic://x"}, false}, // only named by AddSub
	}
	k1, k2 := persistence.SubKey{ClientID: "c", Name: "z"}, persistence.SubKey{ClientID: "a", Name: "y"}
	subs := map[persistence.SubKey]*sub{
		k1: {persistence.SubInfo{Key: k1, Dest: "topic://x"}, 3},
		k2: {persistence.SubInfo{Key: k2, Dest: "topic://x"}, 0},
	}
	r := Recovered(dests, subs)
	require.Equal(t, []persistence.DestState{dests["queue://a"].st, dests["queue://b"].st}, r.Destinations)
	require.Equal(t, []persistence.SubInfo{subs[k2].info, subs[k1].info}, r.Subs)
	require.Equal(t, map[persistence.SubKey]int64{k1: 3}, r.Pending, "backlogs; none for a subscription owing nothing")

	msgs, bytes := Stats(dests, "queue://b")
	require.Equal(t, [2]int64{2, 10}, [2]int64{msgs, bytes})
	msgs, bytes = Stats(dests, "queue://none")
	require.Zero(t, msgs+bytes)
}
