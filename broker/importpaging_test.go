package broker

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker/dedup"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/journal"
	"github.com/activemq-go/broker/persistence/memstore"
)

// TestImportDurablePagedBacklogBeforeLive: a backlog imported into an offline durable
// subscription in batches, far past its view's memory limit (most of it paged out to
// the store), reaches the subscriber whole and in order before a message published after
// it attached, with the memory and the journal store.
func TestImportDurablePagedBacklogBeforeLive(t *testing.T) {
	stores := map[string]func(t *testing.T) persistence.Store{
		"memory": func(*testing.T) persistence.Store { return memstore.New() },
		"journal": func(t *testing.T) persistence.Store {
			st, err := journal.Open(context.Background(), journal.Options{Dir: t.TempDir(), SyncStrategy: journal.SyncNever, CheckpointInterval: -1})
			require.NoError(t, err)
			return st
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			b, err := New(context.Background(), Options{Name: "t", Store: open(t), DestinationMemoryLimit: 256 << 10, MemoryUsage: 1 << 30})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, b.Close()) })
			c := newClient(t, b, "app1")
			c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("feed"), DurableName: "feed", Mode: AckClientIndividual})
			c.close()
			key := persistence.SubKey{ClientID: "app1", Name: "feed"}
			const n, batch = 6000, 100
			for from := 0; from < n; from += batch {
				var ms []*persistence.Message
				for i := from; i < from+batch; i++ {
					ms = append(ms, &persistence.Message{Body: []byte("message " + strconv.Itoa(i)), Persistent: true, Priority: 4,
						Headers: persistence.Headers{dedup.IDHeader, "ID:src-" + strconv.Itoa(i), "seq", strconv.Itoa(i), "kind", "a", "type", "tick"}})
				}
				_, err := b.ImportDurable(t.Context(), "test", key, ms)
				require.NoError(t, err)
			}
			c = newClient(t, b, "app1")
			c.subscribeReq(SubscribeRequest{ID: "s", Dest: topicName("feed"), DurableName: "feed", Mode: AckClientIndividual, Prefetch: 500})
			p := newClient(t, b, "")
			p.send("/topic/feed", "fence", true)
			for i := 0; ; i++ {
				d := c.recv()
				require.NoError(t, c.ack(d))
				if string(d.Msg.Body) == "fence" {
					require.Equal(t, n, i, "messages before the fence")
					break
				}
				require.Equal(t, "message "+strconv.Itoa(i), string(d.Msg.Body))
			}
		})
	}
}
