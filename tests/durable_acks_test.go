package tests

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// ---- 7: acknowledgement modes ---------------------------------------------------------

// TestDurableAckModes: with ack auto a message is consumed once written; with client an
// ACK covers every earlier message; with client-individual only the one it names. What
// was not acknowledged comes back, flagged redelivered:true and in order, when the
// consumer returns, ahead of what was published while it was away.
func TestDurableAckModes(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	p := jmsDial(t, b.Addr)
	cases := []struct {
		mode  string
		ack   []int // which of messages 0-5 to ACK
		again []int // which come back
	}{
		{"auto", nil, nil},
		{"client", []int{2}, []int{3, 4, 5}},
		{"client-individual", []int{0, 2, 4}, []int{1, 3, 5}},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			topic, clientID := "/topic/acks."+tc.mode, "app-"+tc.mode
			c := durConnect(t, b.Addr, clientID)
			id := durAttach(c, topic, "sub", "ack", tc.mode)
			bodies := numbered("m", 0, 6)
			durPublish(p, topic, true, bodies)
			got := durExpect(c, id, bodies...)
			for _, m := range got {
				assert.Empty(t, m.Header.Get("redelivered"), "first delivery of %s", m.Body)
			}
			for _, i := range tc.ack {
				c.ack(got[i])
			}
			c.leave()
			durPublish(p, topic, true, []string{"m-06"})

			c = durConnect(t, b.Addr, clientID)
			id = durAttach(c, topic, "sub", "ack", tc.mode)
			var want []string
			for _, i := range tc.again {
				want = append(want, bodies[i])
			}
			again := durExpect(c, id, append(want, "m-06")...)
			for i, m := range again {
				if i < len(tc.again) {
					assert.Equal(t, "true", m.Header.Get("redelivered"), "%s", m.Body)
				} else {
					assert.Empty(t, m.Header.Get("redelivered"), "%s", m.Body)
				}
			}
			durQuiet(c, id)
			if tc.mode != "auto" {
				c.ack(again[len(again)-1]) // client mode: covers everything
				if tc.mode == "client-individual" {
					for _, m := range again[:len(again)-1] {
						c.ack(m)
					}
				}
			}
			c.leave()
			c = durConnect(t, b.Addr, clientID)
			durQuiet(c, durAttach(c, topic, "sub", "ack", tc.mode))
		})
	}
}

// TestDurablePrefetch: a durable subscription's prefetch is the policy's
// durableTopicPrefetch unless the SUBSCRIBE sets activemq.prefetchSize; a consumer that
// acknowledges nothing gets that many messages and no more, each ACK lets one more in.
func TestDurablePrefetch(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: "destinationPolicy:\n  - topic: \">\"\n    durableTopicPrefetch: 2\n"})
	p := jmsDial(t, b.Addr)
	for _, tc := range []struct {
		name     string
		headers  []string
		prefetch int
	}{
		{"durableTopicPrefetch", nil, 2},
		{"activemq.prefetchSize", []string{"activemq.prefetchSize", "3"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic, clientID := "/topic/prefetch."+tc.name, "app-"+tc.name
			c := durConnect(t, b.Addr, clientID)
			durAttach(c, topic, "sub", tc.headers...)
			c.leave()
			bodies := numbered("m", 0, 6)
			durPublish(p, topic, true, bodies)

			c = durConnect(t, b.Addr, clientID)
			id := durAttach(c, topic, "sub", append([]string{"ack", "client-individual"}, tc.headers...)...)
			got := durExpect(c, id, bodies[:tc.prefetch]...)
			durQuiet(c, id)
			c.ack(got[0])
			durExpect(c, id, bodies[tc.prefetch])
			durQuiet(c, id)
		})
	}
}
