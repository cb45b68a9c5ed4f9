package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/activemq-go/broker/destinations"
	"github.com/stretchr/testify/require"
)

// groupMember subscribes c to stream topic as a member of group G with individual acks.
func groupMember(c *client, topic, offset string) {
	c.subscribeReq(SubscribeRequest{ID: "g", Dest: topicName(topic), ConsumerGroup: "G", Mode: AckClientIndividual,
		StreamOffset: offset})
}

// sendKeyed sends n messages <prefix>-<i> to topic, over ten partition keys.
func sendKeyed(p *client, topic, prefix string, n int) {
	for i := range n {
		p.sendMsg("/topic/"+topic, hdrMsg(prefix+"-"+strconv.Itoa(i), destinations.PartitionKeyProperty, "k"+strconv.Itoa(i%10)))
	}
}

// takeUntil receives from the clients until n messages whose body starts with prefix
// arrived, and returns, per client, every delivery received meanwhile.
func takeUntil(t *testing.T, n int, prefix string, cs ...*client) [][]*Delivery {
	t.Helper()
	got := make([][]*Delivery, len(cs))
	deadline := time.Now().Add(10 * time.Second)
	for fresh := 0; fresh < n; {
		require.True(t, time.Now().Before(deadline), "only %d of %d arrived", fresh, n)
		for i, c := range cs {
			select {
			case d := <-c.got:
				got[i] = append(got[i], d)
				if len(d.Msg.Body) > len(prefix) && string(d.Msg.Body[:len(prefix)]) == prefix {
					fresh++
				}
			case <-time.After(time.Millisecond):
			}
		}
	}
	return got
}

func committedSum(t *testing.T, e *streamEnv, topic string) int64 {
	t.Helper()
	var sum int64
	for p := range e.parts {
		off, _, err := e.log.Committed("G", topic, p)
		require.NoError(t, err)
		sum += off
	}
	return sum
}

// A member that joins reads the partitions it takes over only once the member losing
// them settled what it holds of them, and then after it: nothing comes twice.
func TestStreamGroupHandoverWaitsForSettle(t *testing.T) {
	e := newStreamEnv(t, 4)
	p := newClient(t, e.b, "")
	sendKeyed(p, "s.h", "old", 40)
	a, b := newClient(t, e.b, ""), newClient(t, e.b, "")
	groupMember(a, "s.h", "first")
	held := a.recvN(40)

	groupMember(b, "s.h", "")
	b.expectNone(50 * time.Millisecond)
	for _, d := range held {
		require.NoError(t, a.ack(d))
	}
	sendKeyed(p, "s.h", "new", 40)
	got := takeUntil(t, 40, "new-", a, b)
	require.NotEmpty(t, got[1], "the new member reads")
	seen := map[string]bool{}
	for _, ds := range got {
		for _, d := range ds {
			body := string(d.Msg.Body)
			require.False(t, seen[body], "%s twice", body)
			require.Equal(t, "new-", body[:4], "%s again", body)
			require.False(t, d.Redelivered)
			seen[body] = true
		}
	}
}

// A partition given back to the member that was handing it over is read on where that
// member stopped, with what it holds still counted.
func TestStreamGroupPartitionGivenBackWhileHandedOver(t *testing.T) {
	e := newStreamEnv(t, 4)
	p := newClient(t, e.b, "")
	sendKeyed(p, "s.back", "old", 40)
	a, b := newClient(t, e.b, ""), newClient(t, e.b, "")
	groupMember(a, "s.back", "first")
	held := a.recvN(40)
	groupMember(b, "s.back", "")
	require.NoError(t, b.unsubscribe("g", "")) // before a settled anything: all back to a

	sendKeyed(p, "s.back", "new", 40)
	fresh := takeUntil(t, 40, "new-", a)[0]
	require.Len(t, fresh, 40, "only the new ones: the old ones are still held")
	for _, d := range append(held, fresh...) {
		require.NoError(t, a.ack(d))
	}
	require.Equal(t, int64(80), committedSum(t, e, "s.back"))
	b.expectNone(20 * time.Millisecond)
}

// A member that does not settle loses the partition after the rebalance timeout: the
// new owner gets the unsettled messages, flagged redelivered, and the old member's
// acknowledgements of them no longer count.
func TestStreamGroupRevokedAfterRebalanceTimeout(t *testing.T) {
	e := newStreamEnv(t, 2)
	e.rebalance = 200 * time.Millisecond
	e.restart()
	p := newClient(t, e.b, "")
	sendKeyed(p, "s.to", "old", 20)
	a, b := newClient(t, e.b, ""), newClient(t, e.b, "")
	groupMember(a, "s.to", "first")
	held := a.recvN(20)
	groupMember(b, "s.to", "")

	first := b.recv() // of one of the two partitions, which b now reads
	part := first.StreamPartition
	var want []string
	for _, d := range held {
		if d.StreamPartition == part {
			want = append(want, string(d.Msg.Body))
		}
	}
	again := append([]*Delivery{first}, b.recvN(len(want)-1)...)
	require.Equal(t, want, bodies(again), "all of it, in order")
	b.expectNone(20 * time.Millisecond)
	for _, d := range again {
		require.Equal(t, part, d.StreamPartition)
		require.True(t, d.Redelivered)
		require.Equal(t, uint32(2), d.DeliveryCount)
	}
	for _, d := range held {
		require.NoError(t, a.ack(d)) // too late for the partition b has: ignored there
	}
	off, _, err := e.log.Committed("G", "s.to", part)
	require.NoError(t, err)
	require.Zero(t, off, "the old member's late acks do not move the new owner's partition")
	for _, d := range again {
		require.NoError(t, b.ack(d))
	}
	require.Equal(t, int64(20), committedSum(t, e, "s.to"))
}
