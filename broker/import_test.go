package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker/dedup"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// TestImportDurableOneSubscriptionOnly: messages imported into one durable subscription
// are stored once, owed by it alone, delivered to it in order after what it held, and
// to no other subscriber of the topic; an import repeated with the same duplicate ids
// imports nothing; a subscription that does not exist is refused.
func TestImportDurableOneSubscriptionOnly(t *testing.T) {
	st := memstore.New()
	b, err := New(context.Background(), Options{Name: "t", Store: st})
	require.NoError(t, err)
	defer b.Close()
	for _, id := range []string{"app1", "app2"} {
		c := newClient(t, b, id)
		c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("prices"), DurableName: "feed", Mode: AckClientIndividual})
		c.close()
	}
	p := newClient(t, b, "")
	p.send("/topic/prices", "published", true) // for both

	imports := func() []*persistence.Message {
		var ms []*persistence.Message
		for i := range 3 {
			ms = append(ms, &persistence.Message{Body: []byte("old-" + strconv.Itoa(i)), Persistent: true, Priority: 4,
				Timestamp: 1000 + int64(i), Headers: persistence.Headers{dedup.IDHeader, "ID:src-" + strconv.Itoa(i), "k", "v"}})
		}
		return ms
	}
	key := persistence.SubKey{ClientID: "app1", Name: "feed"}
	res, err := b.ImportDurable(t.Context(), "test", key, imports())
	require.NoError(t, err)
	assert.Equal(t, ImportResult{Imported: 3}, res)
	res, err = b.ImportDurable(t.Context(), "test", key, imports())
	require.NoError(t, err)
	assert.Equal(t, ImportResult{Duplicates: 3}, res, "the same ids again: nothing imported")
	n, _ := st.Stats("topic://prices")
	assert.EqualValues(t, 4, n, "one stored copy each")

	_, err = b.ImportDurable(t.Context(), "test", persistence.SubKey{ClientID: "app9", Name: "feed"}, imports())
	require.ErrorIs(t, err, ErrNotFound)

	c1 := newClient(t, b, "app1")
	c1.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("prices"), DurableName: "feed", Mode: AckClientIndividual})
	for _, want := range []string{"published", "old-0", "old-1", "old-2"} {
		d := c1.recv()
		require.Equal(t, want, string(d.Msg.Body))
		if want != "published" {
			v, _ := d.Msg.Headers.Get("k")
			assert.Equal(t, "v", v)
			assert.Equal(t, int64(1000+int(want[4]-'0')), d.Msg.Timestamp, "the source's timestamp kept")
		}
		require.NoError(t, c1.ack(d))
	}
	c1.close()

	c2 := newClient(t, b, "app2")
	c2.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("prices"), DurableName: "feed", Mode: AckClientIndividual})
	d := c2.recv()
	require.Equal(t, "published", string(d.Msg.Body))
	require.NoError(t, c2.ack(d))
	c2.expectNone(200 * time.Millisecond)
	c2.close()
	eventually(t, func() bool { n, _ := st.Stats("topic://prices"); return n == 0 })
}
