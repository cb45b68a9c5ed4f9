package tests

import (
	"strconv"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenWireProducerFlowControl: ActiveMQ's client sending synchronously to a queue
// past its memoryLimit is held, the answer to its send withheld, until a consumer makes
// room, as ActiveMQ's broker holds it; it is never refused, and every message arrives.
// A STOMP consumer drains the queue: the two protocols share the limit.
func TestOpenWireProducerFlowControl(t *testing.T) {
	b := startOpenWireBroker(t, `
destinationPolicy:
  - queue: "owflow.>"
    memoryLimit: 256kb
`)
	const n = 200
	q := "owflow." + owName(t, "q")
	wait := startOW(t, nil, "tcp://"+b.OpenWireAddr()+"?jms.alwaysSyncSend=true", "sync-count", "dest="+q,
		"n="+strconv.Itoa(n), "persistent=false", "size=8192")
	awaitLogLine(t, b, time.Minute, "producer held until there is room")

	c := dial(t, b.Addr)
	sub, err := c.Subscribe("/queue/"+q, stomp.AckAuto)
	require.NoError(t, err)
	for i := range n {
		select {
		case m := <-sub.C:
			require.NoError(t, m.Err)
			want := "s" + strconv.Itoa(i)
			require.Equal(t, want, string(m.Body[:len(want)]), "in order")
		case <-time.After(time.Minute):
			t.Fatalf("only %d of %d messages over STOMP", i, n)
		}
	}
	r := wait()
	assert.Equal(t, strconv.Itoa(n), r.get("sent"), "every synchronous send returned")
	assert.Empty(t, r.all("error"))
}
