package broker

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnsubscribeDelivered: a subscription removed with how far its client's application
// got (UnsubscribeRequest.Delivered, OpenWire's lastDeliveredSequenceId) gives its
// unacknowledged messages back counted delivered up to and including that delivery; the
// ones after it were only prefetched and come again as first deliveries. Without it,
// every unacknowledged message counts delivered.
func TestUnsubscribeDelivered(t *testing.T) {
	for _, tc := range []struct {
		name      string
		delivered func(ds []*Delivery) *uint64
		want      []string // body/redelivered/delivery count, as the next consumer gets them
	}{
		{"through the second", func(ds []*Delivery) *uint64 { return &ds[1].Tag }, []string{"m0/true/2", "m1/true/2", "m2/false/1", "m3/false/1"}},
		{"none", func([]*Delivery) *uint64 { none := uint64(0); return &none }, []string{"m0/false/1", "m1/false/1", "m2/false/1", "m3/false/1"}},
		{"unknown", func([]*Delivery) *uint64 { return nil }, []string{"m0/true/2", "m1/true/2", "m2/true/2", "m3/true/2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBroker(t)
			c := newClient(t, b, "")
			for i := range 4 {
				c.send("/queue/pf", fmt.Sprint("m", i), true)
			}
			c.subscribe("s", "/queue/pf", AckClientIndividual, 4)
			ds := c.recvN(4)
			req := UnsubscribeRequest{ID: "s", Delivered: tc.delivered(ds)}
			c.do(func() { require.NoError(t, c.conn.Unsubscribe(context.Background(), req)) })

			next := newClient(t, b, "")
			next.subscribe("s", "/queue/pf", AckClientIndividual, 4)
			var got []string
			for _, d := range next.recvN(4) {
				got = append(got, fmt.Sprintf("%s/%v/%d", d.Msg.Body, d.Redelivered, d.DeliveryCount))
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
