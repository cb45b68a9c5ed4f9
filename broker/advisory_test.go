package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence/memstore"
)

// TestAdvisoryChurn: connections that come and go, subscribe and unsubscribe at once,
// while a monitor hears every advisory through a wildcard: none is lost or doubled,
// the replay a late subscriber gets holds what is there and nothing that went, and
// (under -race) the advisories' state is safe.
func TestAdvisoryChurn(t *testing.T) {
	b, err := New(context.Background(), Options{Name: "test", Store: memstore.New(), AdvisorySupport: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	mon := newClient(t, b, "")
	mon.subscribe("all", "/topic/ActiveMQ.Advisory.>", AckAuto, 0)

	const workers, rounds = 8, 20
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				c := newClient(t, b, "")
				q := fmt.Sprintf("/queue/CHURN.%d.%d", w, r)
				c.subscribe("s", q, AckAuto, 0)
				c.send(q, "x", false)
				c.recv()
				c.do(func() { require.NoError(t, c.conn.Unsubscribe(context.Background(), UnsubscribeRequest{ID: "s"})) })
				c.close()
			}
		}()
	}
	wg.Wait()

	// Each round: a connection opened and closed, a queue made, its consumer added
	// and removed: five advisories, each once.
	want := workers * rounds * 5
	counts := map[string]int{}
	deadline := time.After(20 * time.Second)
	for n := 0; n < want; n++ {
		select {
		case d := <-mon.got:
			var body map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(d.Msg.Body, &body))
			for k := range body {
				counts[strings.TrimPrefix(d.Destination, "/topic/ActiveMQ.Advisory.")[:5]+" "+k]++
			}
		case <-deadline:
			t.Fatalf("%d advisories of %d after 20s: %v", n, want, counts)
		}
	}
	assert.Equal(t, map[string]int{
		"Conne ConnectionInfo": workers * rounds, "Conne RemoveInfo": workers * rounds,
		"Queue DestinationInfo": workers * rounds,
		"Consu ConsumerInfo":    workers * rounds, "Consu RemoveInfo": workers * rounds,
	}, counts)

	// A late subscriber of the consumers hears of none (they are gone, and the
	// monitor's is of an advisory topic: never announced), one of the connections of
	// the monitor's and its own only.
	late := newClient(t, b, "")
	late.subscribe("cons", "/topic/ActiveMQ.Advisory.Consumer.>", AckAuto, 0)
	late.subscribe("conns", "/topic/ActiveMQ.Advisory.Connection", AckAuto, 0)
	var ids []string
	for range 2 {
		d := late.recv()
		require.Equal(t, "/topic/ActiveMQ.Advisory.Connection", d.Destination, "%s", d.Msg.Body)
		var body struct {
			Info struct {
				ConnectionID struct{ Value string } `json:"connectionId"`
			} `json:"ConnectionInfo"`
		}
		require.NoError(t, json.Unmarshal(d.Msg.Body, &body))
		ids = append(ids, body.Info.ConnectionID.Value)
	}
	assert.Equal(t, []string{mon.conn.ID, late.conn.ID}, ids)
	select {
	case d := <-late.got:
		t.Fatalf("replayed more: %s %s", d.Destination, d.Msg.Body)
	default:
	}
}
