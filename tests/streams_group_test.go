package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"
)

// Consumer group handover, end to end: a member that joins takes over partitions only
// once the member losing them settled what it holds of them (or the broker's
// rebalanceTimeout passed), as Kafka's cooperative rebalancing commits on revoke.

// sendKeyed sends n messages <prefix>-<i> to dest, keyed over 100 partition keys, with
// a receipt on the last.
func sendKeyed(t *testing.T, addr, dest, prefix string, n int) {
	t.Helper()
	c := jmsDial(t, addr)
	for i := range n {
		f := frame.New("SEND", "destination", dest, "persistent", "true", "partition-key", fmt.Sprintf("k%d", i%100))
		f.Body = fmt.Appendf(nil, "%s-%d", prefix, i)
		c.raw.send(f)
	}
	c.sync()
}

// receiveN takes n messages of m's subscription.
func (m groupMember) receiveN(n int) []*frame.Frame {
	out := make([]*frame.Frame, n)
	for i := range out {
		out[i] = m.c.next(m.sub)
	}
	return out
}

// ackAll acknowledges ms (pipelined) and waits until the broker processed the ACKs.
func (m groupMember) ackAll(ms []*frame.Frame) {
	for _, f := range ms {
		m.c.raw.send(frame.New("ACK", "id", f.Header.Get("ack")))
	}
	m.c.sync()
}

// collectNew receives from the members until n messages whose body starts with "new-"
// arrived, and returns, per member, the messages received meanwhile.
func collectNew(t *testing.T, n int, members ...groupMember) [][]*frame.Frame {
	t.Helper()
	got := make([][]*frame.Frame, len(members))
	fresh := 0
	deadline := time.Now().Add(20 * time.Second)
	for fresh < n {
		require.True(t, time.Now().Before(deadline), "only %d of %d new messages arrived", fresh, n)
		for i, m := range members {
			if f := m.c.nextWithin(m.sub, 5*time.Millisecond); f != nil {
				got[i] = append(got[i], f)
				if strings.HasPrefix(string(f.Body), "new-") {
					fresh++
				}
			}
		}
	}
	return got
}

// TestStreamGroupJoinWaitsForInFlight: a member holds 4,000 unacknowledged messages of
// every partition when a second member joins; the first acknowledges them; the second
// starts after them: nothing is delivered twice.
func TestStreamGroupJoinWaitsForInFlight(t *testing.T) {
	b := streamBroker(t, 4, "")
	const dest = "/topic/s.handover"
	sendKeyed(t, b.Addr, dest, "old", 4000)
	a := joinGroup(t, b.Addr, dest, "G", "x-stream-offset", "first")
	held := a.receiveN(4000)

	bm := joinGroup(t, b.Addr, dest, "G") // its SUBSCRIBE's RECEIPT comes meanwhile
	a.ackAll(held)

	sendKeyed(t, b.Addr, dest, "new", 400)
	got := collectNew(t, 400, a, bm)
	seen := map[string]int{}
	for _, f := range held {
		seen[string(f.Body)]++
	}
	dups := 0
	for _, fs := range got {
		for _, f := range fs {
			if seen[string(f.Body)] > 0 {
				dups++
			}
			seen[string(f.Body)]++
		}
	}
	require.Zero(t, dups, "messages delivered twice")
	require.NotEmpty(t, got[1], "the new member reads its partitions")
	require.Len(t, seen, 4400)
}

// TestStreamGroupRevokesAfterTimeout: a member that never settles what it holds loses
// the partitions after rebalanceTimeout; the new owner gets those messages again,
// flagged redelivered, and nothing is lost.
func TestStreamGroupRevokesAfterTimeout(t *testing.T) {
	b := streamBroker(t, 4, "", "    rebalanceTimeout: 1s\n")
	const dest = "/topic/s.revoke"
	sendKeyed(t, b.Addr, dest, "old", 400)
	a := joinGroup(t, b.Addr, dest, "G", "x-stream-offset", "first")
	held := a.receiveN(400)
	byPart := map[int][]string{}
	for _, f := range held {
		p := posOf(t, f.Header).part
		byPart[p] = append(byPart[p], string(f.Body))
	}

	bm := joinGroup(t, b.Addr, dest, "G")
	bm.c.expectNone(bm.sub, 300*time.Millisecond) // the first member may still settle

	sendKeyed(t, b.Addr, dest, "new", 400)
	got := collectNew(t, 400, a, bm)
	parts := map[int]bool{}
	var again []string
	for _, f := range got[1] {
		parts[posOf(t, f.Header).part] = true
		if strings.HasPrefix(string(f.Body), "old-") {
			require.Equal(t, "true", f.Header.Get("redelivered"), "%s comes again", f.Body)
			again = append(again, string(f.Body))
		}
	}
	require.NotEmpty(t, parts, "the new member reads its partitions")
	var want []string
	for p := range parts {
		want = append(want, byPart[p]...)
	}
	require.ElementsMatch(t, want, again, "every unsettled message of the partitions taken over, once")
	for _, f := range got[0] {
		require.False(t, parts[posOf(t, f.Header).part], "a partition has one reader")
		require.True(t, strings.HasPrefix(string(f.Body), "new-"))
	}
}
