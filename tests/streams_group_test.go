package tests

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
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
	// A group member's prefetch is 100 unless it asks: this one asks to hold them all.
	a := joinGroup(t, b.Addr, dest, "G", "x-stream-offset", "first", "activemq.prefetchSize", "4000")
	held := a.receiveN(4000)

	bm := joinGroup(t, b.Addr, dest, "G", "activemq.prefetchSize", "1000") // its SUBSCRIBE's RECEIPT comes meanwhile
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
	// Members hold what they receive here (a group member's prefetch is 100 unless it asks).
	room := []string{"activemq.prefetchSize", "1000"}
	a := joinGroup(t, b.Addr, dest, "G", append([]string{"x-stream-offset", "first"}, room...)...)
	held := a.receiveN(400)
	byPart := map[int][]string{}
	for _, f := range held {
		p := posOf(t, f.Header).part
		byPart[p] = append(byPart[p], string(f.Body))
	}

	bm := joinGroup(t, b.Addr, dest, "G", room...)
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

// groupEvents is what the members of a group did, in one order: each MESSAGE as it was
// taken from the client, each ACK just before it was sent, and when a member left.
type groupEvents struct {
	mu     sync.Mutex
	seq    int
	recv   []groupEvent
	acks   []groupEvent
	taken  []int           // per member
	limits []int           // per member: reached[i] is closed once it took limits[i]
	reach  []chan struct{} // per member
	left   map[int]int     // member -> seq of its leaving
	target int             // messages expected in all
	done   chan struct{}   // closed once target messages arrived
}

type groupEvent struct {
	seq, member int
	at          time.Time
	pos         streamPos
	body        string
	redelivered bool
}

func newGroupEvents(target int, limits ...int) *groupEvents {
	e := &groupEvents{taken: make([]int, len(limits)), limits: limits, left: map[int]int{}, target: target, done: make(chan struct{})}
	for range limits {
		e.reach = append(e.reach, make(chan struct{}))
	}
	return e
}

// take records m, received by member, and its ACK, which it sends.
func (e *groupEvents) take(t testing.TB, member int, c *stomp.Conn, m *stomp.Message) error {
	pos := posOf(t, m.Header)
	ev := groupEvent{member: member, at: time.Now(), pos: pos, body: string(m.Body), redelivered: m.Header.Get("redelivered") == "true"}
	e.mu.Lock()
	e.seq++
	ev.seq = e.seq
	e.recv = append(e.recv, ev)
	e.seq++
	ev.seq = e.seq
	e.acks = append(e.acks, ev)
	if e.taken[member]++; e.taken[member] == e.limits[member] {
		close(e.reach[member])
	}
	if len(e.recv) == e.target {
		close(e.done)
	}
	e.mu.Unlock()
	return c.Ack(m)
}

// consume takes and acknowledges member's messages until stop.
func (e *groupEvents) consume(t testing.TB, member int, c *stomp.Conn, sub *stomp.Subscription, stop <-chan struct{}) error {
	for {
		select {
		case m, ok := <-sub.C:
			if !ok || m.Err != nil {
				return fmt.Errorf("member %d: subscription ended: %v", member, m)
			}
			if err := e.take(t, member, c, m); err != nil {
				return err
			}
		case <-stop:
			return nil
		}
	}
}

// leave records that member leaves the group, and disconnects it (after its ACKs).
// What reaches it meanwhile is dropped unacknowledged (go-stomp's reader waits for
// the subscription's channel to take each MESSAGE before it reads the RECEIPT).
func (e *groupEvents) leave(t testing.TB, member int, c *stomp.Conn, sub *stomp.Subscription) {
	e.mu.Lock()
	e.seq++
	e.left[member] = e.seq
	e.mu.Unlock()
	go func() {
		for range sub.C {
		}
	}()
	require.NoError(t, c.Disconnect())
}

// requireHandovers checks each partition's history: its messages go to one member at
// a time, in offset order without gaps, and a member gets a partition only after its
// previous holder acknowledged everything it received of it (or left). A message comes
// flagged redelivered only to a member taking over from one that left.
func (e *groupEvents) requireHandovers(t testing.TB) map[int][]int {
	t.Helper()
	holders := map[int][]int{} // per partition, its members in turn
	acked := map[string]int{}  // body -> seq of its ACK
	for _, a := range e.acks {
		acked[a.body] = a.seq
	}
	prev := map[int]groupEvent{}
	for _, r := range e.recv {
		p := r.pos.part
		was, seen := prev[p]
		prev[p] = r
		if !seen {
			holders[p] = []int{r.member}
			continue
		}
		require.Equal(t, was.pos.off+1, r.pos.off, "partition %d: %s follows %s", p, r.body, was.body)
		if was.member == r.member {
			continue
		}
		holders[p] = append(holders[p], r.member)
		left, gone := e.left[was.member]
		gone = gone && left < r.seq
		if !gone {
			require.Greater(t, r.seq, acked[was.body],
				"partition %d reached member %d before member %d acknowledged what it held of it", p, r.member, was.member)
		}
		require.True(t, gone || !r.redelivered, "%s redelivered though its holder settled it", r.body)
	}
	return holders
}

// TestStreamGroupSharesBacklog (issue 22 §0.1): 4,000 keyed messages on 4 partitions;
// a group's first member takes some and acknowledges as it goes, then a second joins:
// it gets its share of the partitions within the rebalance timeout while the first
// keeps acknowledging (the first stops getting messages of the partitions it lost and
// hands them over once it acknowledged what it held of them: revoke, then assign).
// Then the second leaves, and the first takes its partitions back. Every message is
// delivered and acknowledged once, each key in order.
func TestStreamGroupSharesBacklog(t *testing.T) {
	forEachEngine(t, testStreamGroupSharesBacklog)
}

func testStreamGroupSharesBacklog(t *testing.T, eng streamEngine) {
	const rebalanceTimeout = 20 * time.Second
	b := engineBroker(t, eng, 4, "", fmt.Sprintf("    rebalanceTimeout: %s\n", rebalanceTimeout))
	const dest, n = "/topic/s.backlog", 4000
	prod := dial(t, b.Addr)
	sent := keyedSend(t, prod, dest, 0, n, 100)

	ev := newGroupEvents(n, n, 500)
	group := []string{"consumer-group", "G", "x-stream-offset", "first"}
	// Room for every ACK in go-stomp's write queue: its one goroutine blocks handing a
	// MESSAGE to a full subscription, and a consumer blocked queueing an ACK would never
	// empty it.
	ackRoom := stomp.ConnOpt.WriteChannelCapacity(2 * n)
	ca := dial(t, b.Addr, ackRoom)
	subA := goSubscribe(t, ca, dest, stomp.AckClientIndividual, group...)
	// The first member takes and acknowledges messages of every partition (at least 100):
	// the rest is its backlog, of which it holds its prefetch.
	tookOf := map[int]int{} // per partition, the offset of the last message the first took
	for len(tookOf) < 4 || len(ev.recv) < 100 {
		m := recv(t, subA)
		tookOf[posOf(t, m.Header).part] = posOf(t, m.Header).off
		require.NoError(t, ev.take(t, 0, ca, m))
	}

	// The second joins. Its SUBSCRIBE's RECEIPT comes once the first stopped reading
	// the partitions it loses (on Kafka: after the cooperative rebalance's two rounds);
	// the second takes what it gets meanwhile (go-stomp reads no RECEIPT while a
	// MESSAGE waits).
	joined := time.Now()
	// Its RECEIPTs may wait for the handover, which a busy machine (two suites at once)
	// took past go-stomp's default 30 s to start.
	cb := dial(t, b.Addr, ackRoom, stomp.ConnOpt.RcvReceiptTimeout(raceScaled(30*time.Second)))
	subB := goSubscribe(t, cb, dest, stomp.AckClientIndividual, group...)
	stopA, stopB := make(chan struct{}), make(chan struct{})
	errA, errB := make(chan error, 1), make(chan error, 1)
	go func() { errB <- ev.consume(t, 1, cb, subB, stopB) }()
	syncSubscriptions(t, cb)
	// Then both take and acknowledge, until the second took 500 of its share.
	go func() { errA <- ev.consume(t, 0, ca, subA, stopA) }()
	stop := func(ch chan struct{}, errs chan error) {
		close(ch)
		require.NoError(t, <-errs)
	}
	bound := time.After(rebalanceTimeout + 20*time.Second) // a generous bound: a second or two is usual
	select {
	case <-ev.reach[1]:
	case <-ev.done: // the first took the rest
	case <-bound:
	}
	ev.mu.Lock()
	short := ev.taken[1] < ev.limits[1]
	ev.mu.Unlock()
	if short {
		stop(stopA, errA)
		stop(stopB, errB)
		t.Fatalf("the second member took %d, the first %d", ev.taken[1], ev.taken[0])
	}
	// The second leaves; the first takes the rest.
	stop(stopB, errB)
	ev.leave(t, 1, cb, subB)
	select {
	case <-ev.done:
	case <-bound:
	}
	stop(stopA, errA)

	got := map[string]int{}
	seen := []keyedSeen{{}, {}}
	firstB := map[int]groupEvent{}
	during := 0 // messages the first member took while the second was a member
	for _, e := range ev.recv {
		got[e.body]++
		seen[e.member].add(e.body)
		if _, ok := firstB[e.pos.part]; !ok && e.member == 1 {
			firstB[e.pos.part] = e
		}
		if e.member == 0 && e.at.After(joined) && e.seq < ev.left[1] {
			during++
		}
	}
	requireExactlyOnce(t, got, sent)
	requireKeyOrder(t, "first member", seen[0])
	requireKeyOrder(t, "second member", seen[1])
	holders := ev.requireHandovers(t)
	require.NotEmpty(t, firstB, "the second member got no partition: the first took %d", ev.taken[0])
	require.Positive(t, during, "the first member went on acknowledging")
	back := 0 // partitions the first member took back when the second left
	for p, e := range firstB {
		require.Less(t, e.at.Sub(joined), rebalanceTimeout, "partition %d handed over within the rebalance timeout", p)
		if h := holders[p]; h[len(h)-1] == 0 {
			back++
		}
		t.Logf("partition %d: holders %v; the first member held %d when the second joined, which got it at offset %d %v after",
			p, holders[p], e.pos.off-tookOf[p]-1, e.pos.off, e.at.Sub(joined).Round(time.Millisecond))
	}
	require.Positive(t, back, "the first member took the partitions of the one that left")

	// Every ACK counted: the group's next member starts after the 4,000.
	require.NoError(t, ca.Disconnect())
	cc := dial(t, b.Addr)
	subC := goSubscribe(t, cc, dest, stomp.AckClientIndividual, group...)
	more := keyedSend(t, prod, dest, n, n+40, 100)
	var after []string
	for range more {
		after = append(after, string(recv(t, subC).Body))
	}
	require.ElementsMatch(t, more, after)
}
