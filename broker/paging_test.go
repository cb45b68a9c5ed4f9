package broker

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence/memstore"
)

func newSmallBroker(t testing.TB, destLimit, total int64) *Broker {
	t.Helper()
	b, err := New(context.Background(), Options{Name: "t", Store: memstore.New(), DestinationMemoryLimit: destLimit, MemoryUsage: total})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// TestDeepQueueStaysWithinMemoryLimit: persistent messages past the queue's memory limit
// are kept in the store only and come back in order as the consumer drains.
func TestDeepQueueStaysWithinMemoryLimit(t *testing.T) {
	const limit, n = 64 << 10, 5000
	b := newSmallBroker(t, limit, 1<<30)
	p := newClient(t, b, "")
	body := string(make([]byte, 1024))
	var peak int64
	for i := 0; i < n; i++ {
		p.send("/queue/deep", strconv.Itoa(i)+":"+body, true)
		st, _ := b.QueueStats("deep")
		peak = max(peak, st.MemoryBytes)
	}
	st, _ := b.QueueStats("deep")
	assert.Equal(t, n, st.Pending)
	assert.EqualValues(t, n, st.Stored)
	assert.LessOrEqual(t, peak, int64(limit), "memory held while filling")

	c := newClient(t, b, "")
	c.subscribe("s", "/queue/deep", AckClientIndividual, 100)
	for i := 0; i < n; i++ {
		d := c.recv()
		seq, _, _ := cut(string(d.Msg.Body))
		require.Equal(t, strconv.Itoa(i), seq, "message %d out of order", i)
		require.NoError(t, c.ack(d))
		st, _ := b.QueueStats("deep")
		peak = max(peak, st.MemoryBytes)
	}
	assert.LessOrEqual(t, peak, int64(limit)+100*1200, "memory held while draining (limit + prefetch)")
	st, _ = b.QueueStats("deep")
	assert.Zero(t, st.Pending)
	assert.Zero(t, st.Stored)
}

func cut(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// TestPagingWithConcurrentProducers: paging in while several producers keep writing never
// loses, duplicates or reorders a producer's messages.
func TestPagingWithConcurrentProducers(t *testing.T) {
	b := newSmallBroker(t, 16<<10, 1<<30)
	const producers, per = 4, 1500
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/mix", AckAuto, 20)
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			pc := newClient(t, b, "")
			for i := 0; i < per; i++ {
				pc.send("/queue/mix", fmt.Sprintf("%d:%d:%s", p, i, make([]byte, 200)), true)
			}
		}(p)
	}
	last := map[int]int{}
	for got := 0; got < producers*per; got++ {
		var d *Delivery
		select {
		case d = <-c.got:
		case <-time.After(10 * time.Second):
			t.Fatalf("stalled after %d messages", got)
		}
		var p, i int
		_, err := fmt.Sscanf(string(d.Msg.Body), "%d:%d:", &p, &i)
		require.NoError(t, err)
		if prev, ok := last[p]; ok {
			require.Equal(t, prev+1, i, "producer %d", p)
		} else {
			require.Equal(t, 0, i)
		}
		last[p] = i
	}
	wg.Wait()
}

// TestNonPersistentOverMemoryIsRefused: a non-persistent message cannot be paged out; past
// the broker-wide limit the producer is told, and what was accepted is still delivered.
func TestNonPersistentOverMemoryIsRefused(t *testing.T) {
	b := newSmallBroker(t, 1<<30, 1<<20)
	p := newClient(t, b, "")
	dest, _ := parseDests("/queue/np")
	accepted := 0
	var refused error
	for i := 0; i < 2000 && refused == nil; i++ {
		p.do(func() {
			refused = p.conn.Send(context.Background(), dest, msg(string(make([]byte, 1024))), "", func(error) {})
		})
		if refused == nil {
			accepted++
		}
	}
	var be *Error
	require.ErrorAs(t, refused, &be)
	assert.False(t, be.Fatal)
	assert.Contains(t, be.Message, "memory limit")
	c := newClient(t, b, "")
	c.subscribe("s", "/queue/np", AckAuto, 1000)
	for i := 0; i < accepted; i++ {
		c.recv()
	}
}
