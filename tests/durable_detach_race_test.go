package tests

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"
)

// TestDurableKeepsWhatIsPublishedRightAfterDetach: a durable subscriber (raw STOMP 1.2,
// client-id and activemq.subscriptionName, client-individual) SUBSCRIBEs without a
// receipt and DISCONNECTs with one, closing its socket at the RECEIPT; a second
// connection publishes persistent messages at once. The RECEIPT means the SUBSCRIBE
// before it was done, so the subscription keeps every one of them: its pending count is
// all of them, and its subscriber, coming back, gets them all, in order. Rounds repeat
// it, each with a client-id of its own, since the publishes race the broker's detaching.
// (stomp.py's disconnect() does not wait for the RECEIPT: a publisher that starts when
// it returns can publish before the broker has read the SUBSCRIBE, and those messages
// are, rightly, not kept.)
func TestDurableKeepsWhatIsPublishedRightAfterDetach(t *testing.T) {
	const rounds, n = 6, 10
	eachDurableAdapter(t, func(t *testing.T, bc brokerConfig) {
		bc.Env = append(bc.Env, adminEnv)
		b := startBroker(t, bc)
		a := newAPI(t, "http://"+statsAddr(t, b))
		for r := 0; r < rounds; r++ {
			clientID, topic := fmt.Sprintf("detach-%d", r), fmt.Sprintf("/topic/detach.%d", r)
			s := dialRaw(t, b.Addr)
			require.Equal(t, "CONNECTED", s.connect("client-id", clientID).Command)
			s.send(frame.New("SUBSCRIBE", "id", "d", "destination", topic, "ack", "client-individual",
				"activemq.subscriptionName", "s"))
			s.send(frame.New("DISCONNECT", "receipt", "bye"))
			require.Equal(t, "RECEIPT", s.read().Command)
			require.NoError(t, s.nc.Close())

			p := dialRaw(t, b.Addr)
			require.Equal(t, "CONNECTED", p.connect().Command)
			for i := 0; i < n; i++ {
				p.send(frame.New("SEND", "destination", topic, "persistent", "true", "seq", strconv.Itoa(i)))
			}
			p.send(frame.New("DISCONNECT", "receipt", "sent"))
			require.Equal(t, "RECEIPT", p.read().Command)

			var rows []durableRow
			a.get("/api/durable-subscriptions", &rows)
			pending := int64(-1)
			for _, row := range rows {
				if row.ClientID == clientID {
					pending = row.Pending
				}
			}
			require.EqualValues(t, n, pending, "round %d: the offline subscription's pending messages", r)

			c := dialRaw(t, b.Addr)
			require.Equal(t, "CONNECTED", c.connect("client-id", clientID).Command)
			c.send(frame.New("SUBSCRIBE", "id", "d", "destination", topic, "ack", "client-individual",
				"activemq.subscriptionName", "s"))
			for i := 0; i < n; i++ {
				m := c.read()
				require.Equal(t, "MESSAGE", m.Command, "round %d: %v", r, m)
				require.Equal(t, strconv.Itoa(i), m.Header.Get("seq"), "round %d", r)
				c.send(frame.New("ACK", "id", m.Header.Get("ack")))
			}
			c.send(frame.New("DISCONNECT", "receipt", "done"))
			require.Equal(t, "RECEIPT", c.read().Command)
		}
	})
}
