package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// newBroker returns a broker on the memory store and a connection to send with.
func newBroker(tb testing.TB) (*broker.Broker, *broker.Conn) {
	tb.Helper()
	b, err := broker.New(context.Background(), broker.Options{Name: "m", Store: memstore.New()})
	require.NoError(tb, err)
	conn, err := b.Connect(context.Background(), broker.ConnectInfo{})
	require.NoError(tb, err)
	tb.Cleanup(func() {
		conn.Close()
		require.NoError(tb, b.Close())
	})
	return b, conn
}

// send sends one persistent message to queue name and waits until it is stored.
func send(tb testing.TB, conn *broker.Conn, name string) {
	tb.Helper()
	done := make(chan error, 1)
	err := conn.Send(context.Background(), []destinations.Name{{Kind: destinations.Queue, Name: name}},
		&persistence.Message{Body: []byte("hello"), Persistent: true, Priority: 4}, "", func(err error) { done <- err })
	require.NoError(tb, err)
	require.NoError(tb, <-done)
}

// The real broker is a Source: what it was sent shows in the exposition.
func TestBrokerSource(t *testing.T) {
	b, conn := newBroker(t)
	for range 3 {
		send(t, conn, "orders")
	}
	send(t, conn, "audit")
	fams := scrape(t, Handler(b.Management(), Options{PerDestination: true, MaxDestinationSeries: 1}))
	v := func(name string, labels ...string) float64 { return value(t, fams, name, labels...) }
	assert.Equal(t, 4.0, v("broker_messages_received_total", "protocol", "stomp"))
	assert.Equal(t, 1.0, v("broker_connections", "protocol", "stomp"))
	assert.Equal(t, 3.0, v("broker_messages", "destination", "orders", "type", "queue"), "the deepest queue keeps its series")
	assert.Equal(t, 1.0, v("broker_messages", "destination", "_other", "type", "queue"))
	assert.Equal(t, 2.0, v("broker_destinations", "type", "queue"))
	assert.Equal(t, 4.0, v("broker_send_latency_seconds", "persistent", "true"))
	assert.Positive(t, v("broker_resource_used_bytes", "resource", "memory"))
	assert.Positive(t, v("broker_resource_used_bytes", "resource", "store"))
	assert.InDelta(t, float64(time.Now().Unix()), v("broker_start_time_seconds"), 60)
}

// BenchmarkScrape10000 is one GET /metrics of a broker with 10,000 queues holding a
// message each: with the cardinality guard at its default (1,000 destinations exported
// one by one, the rest in _other; the target is under 100 ms), with
// perDestination off (everything in _other), and with no guard to speak of (every
// queue exported).
func BenchmarkScrape10000(b *testing.B) {
	br, conn := newBroker(b)
	for i := range 10000 {
		send(b, conn, "q"+strconv.Itoa(i))
	}
	for _, bc := range []struct {
		name string
		o    Options
	}{
		{"guard=1000", Options{PerDestination: true}},
		{"perDestination=false", Options{PerDestination: false}},
		{"guard=off", Options{PerDestination: true, MaxDestinationSeries: 1 << 30}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := Handler(br.Management(), bc.o)
			b.ReportAllocs()
			var size int
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code)
				}
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size), "bytes/scrape")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/scrape")
		})
	}
}
