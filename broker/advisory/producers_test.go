package advisory

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
)

// TestProducers: a producer's advisory carries the producer count of its destination;
// a new subscriber hears the producers there are; a producer removed, and those of a
// connection that closes, are announced gone, in the order they came.
func TestProducers(t *testing.T) {
	a := newAdvisories(t)
	orders := destinations.Name{Kind: destinations.Queue, Name: "ORDERS"}
	a.Connected(Conn{ID: "c1"})
	var early, late sink
	a.Subscribed(subscriber(t, &early, "early", "/topic/ActiveMQ.Advisory.Producer.Queue.ORDERS", 100))
	a.ProducerAdded(Producer{Conn: "c1", Session: 1, Value: 1, Dest: orders})
	a.ProducerAdded(Producer{Conn: "c1", Session: 1, Value: 1, Dest: orders}) // again: nothing
	a.ProducerAdded(Producer{Conn: "c1", Session: 2, Value: 1, Dest: orders, Window: 1024})
	a.ProducerAdded(Producer{Conn: "c1", Session: 2, Value: 2, Dest: destinations.Name{Kind: destinations.Topic, Name: "PRICES"}})
	a.Subscribed(subscriber(t, &late, "late", "/topic/ActiveMQ.Advisory.Producer.>", 100))
	a.ProducerRemoved("c1", 1, 1)
	a.Disconnected("c1")

	type event struct{ topic, command, count, producer string }
	events := func(s *sink) []event {
		s.mu.Lock()
		defer s.mu.Unlock()
		var out []event
		for _, d := range s.got {
			var body map[string]struct {
				ProducerID jsonProducerID `json:"producerId"`
				ObjectID   jsonProducerID `json:"objectId"`
			}
			require.NoError(t, json.Unmarshal(d.Msg.Body, &body))
			for cmd, f := range body {
				id := f.ProducerID
				if cmd == "RemoveInfo" {
					id = f.ObjectID
				}
				count, _ := d.Msg.Headers.Get("producerCount")
				out = append(out, event{d.Destination, cmd, count, fmt.Sprintf("%s:%d:%d", id.ConnectionID, id.SessionID, id.Value)})
			}
		}
		return out
	}
	const q, tp = "/topic/ActiveMQ.Advisory.Producer.Queue.ORDERS", "/topic/ActiveMQ.Advisory.Producer.Topic.PRICES"
	assert.Equal(t, []event{
		{q, "ProducerInfo", "1", "c1:1:1"},
		{q, "ProducerInfo", "2", "c1:2:1"},
		{q, "RemoveInfo", "1", "c1:1:1"},
		{q, "RemoveInfo", "0", "c1:2:1"},
	}, events(&early))
	assert.Equal(t, []event{
		{q, "ProducerInfo", "2", "c1:1:1"}, // the replay
		{q, "ProducerInfo", "2", "c1:2:1"},
		{tp, "ProducerInfo", "1", "c1:2:2"},
		{q, "RemoveInfo", "1", "c1:1:1"},
		{q, "RemoveInfo", "0", "c1:2:1"},
		{tp, "RemoveInfo", "0", "c1:2:2"},
	}, events(&late))
	a.mu.Lock()
	defer a.mu.Unlock()
	assert.Empty(t, a.producers)
}
