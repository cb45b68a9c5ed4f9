package tests

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestDurableClientIDsWithColonsAcrossRestart, for every durable adapter: the durable
// subscriptions (client-id "a:b", name "c") and (client-id "a", name "b:c") read
// "a:b:c" alike when joined with a colon, and must stay two subscriptions across a
// restart: each with its own backlog, and each with its own dispatch marker, which
// decides which messages come back flagged redelivered. The first held all six
// messages unacknowledged, the second only two (prefetch 2): after the restart exactly
// those are redelivered:true, to each.
func TestDurableClientIDsWithColonsAcrossRestart(t *testing.T) {
	eachDurableAdapter(t, func(t *testing.T, bc brokerConfig) {
		const topic = "/topic/colons"
		cli := []string{"ack", "client-individual"}
		b := startBroker(t, bc)
		x := durConnect(t, b.Addr, "a:b")
		xid := durAttach(x, topic, "c", cli...)
		y := durConnect(t, b.Addr, "a")
		durAttach(y, topic, "b:c", cli...)
		y.leave()
		all := numbered("m", 0, 6)
		durPublish(jmsDial(t, b.Addr), topic, true, all)
		durExpect(x, xid, all...) // held, never acknowledged
		y = durConnect(t, b.Addr, "a")
		yid := durAttach(y, topic, "b:c", append(cli, "activemq.prefetchSize", "2")...)
		durExpect(y, yid, all[:2]...)
		b.Stop()

		b = startBroker(t, bc)
		x = durConnect(t, b.Addr, "a:b")
		xid = durAttach(x, topic, "c", cli...)
		for _, m := range durExpect(x, xid, all...) {
			assert.Equal(t, "true", m.Header.Get("redelivered"), "(a:b, c) held %s before the restart", m.Body)
			x.ack(m)
		}
		durQuiet(x, xid)
		y = durConnect(t, b.Addr, "a")
		yid = durAttach(y, topic, "b:c", cli...)
		for i, m := range durExpect(y, yid, all...) {
			if i < 2 {
				assert.Equal(t, "true", m.Header.Get("redelivered"), "(a, b:c) held %s before the restart", m.Body)
			} else {
				assert.Empty(t, m.Header.Get("redelivered"), "(a, b:c) never got %s before the restart", m.Body)
			}
			y.ack(m)
		}
		durQuiet(y, yid)
	})
}
