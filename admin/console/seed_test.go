package console

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/activemq-go/broker/admin"
)

// testToken is the CSRF token of the tests' session.
const testToken = "csrf-test-token-5f2c"

// env is a console over a fake broker, served by an httptest server.
type env struct {
	f   *fakeBackend
	c   *Console
	srv *httptest.Server
}

// newEnv serves a console over a fake broker filled by seed.
func newEnv(t testing.TB) *env {
	t.Helper()
	f := newFakeBackend()
	seed(f)
	c := New(f, testSession{user: "admin", token: testToken})
	mux := http.NewServeMux()
	c.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &env{f: f, c: c, srv: srv}
}

// url is the absolute URL of path on the test server.
func (e *env) url(path string) string { return e.srv.URL + path }

// seed fills f with a realistic broker: a few busy queues, one nobody consumes, a
// dead-letter queue with three messages, topics, durable subscriptions, connections
// and a stream with two consumer groups.
func seed(f *fakeBackend) {
	now := time.Now()
	f.overview = admin.Overview{
		Name: "broker-eu-1", Version: "1.4.0", Started: now.Add(-(3*24*time.Hour + 5*time.Hour + 12*time.Minute)),
		Uptime: (3*24*time.Hour + 5*time.Hour + 12*time.Minute).Seconds(), Adapter: "kahadb",
		MemoryUsed: 412 << 20, MemoryLimit: 1 << 30, StoreUsed: 61 << 30, StoreLimit: 100 << 30,
		MessagesIn: 48_211_907, MessagesOut: 48_190_344,
	}
	f.mu.Lock()
	defer f.mu.Unlock()

	f.queueLocked("orders", admin.Destination{Consumers: 3, Producers: 2, Enqueued: 1_204_311, Dequeued: 1_204_304, Dispatched: 7, Memory: 18 << 10})
	for i, c := range []string{"DE", "FR", "NL"} {
		f.putLocked("orders", fmt.Sprintf("ID:broker-eu-1-1714561200000-%d", 880412+i),
			fmt.Sprintf(`{"order":%d,"customer":"C-%d","country":%q,"lines":[{"sku":"A-100","qty":2},{"sku":"B-220","qty":1}],"total":"149.90"}`, 70311+i, 4410+i, c),
			map[string]string{"content-type": "application/json", "correlation-id": fmt.Sprintf("web-%d", 9131+i), "type": "OrderPlaced", "tenant": "eu"},
			true, now.Add(-time.Duration(40-i*10)*time.Second))
	}
	f.queueLocked("payments", admin.Destination{Consumers: 2, Producers: 1, Enqueued: 602_118, Dequeued: 602_118})
	f.queueLocked("invoices.render", admin.Destination{Consumers: 0, Producers: 1, Enqueued: 31_870, Dequeued: 30_620, Memory: 2 << 20})
	for i := range 60 {
		f.putLocked("invoices.render", fmt.Sprintf("ID:broker-eu-1-1714561200000-%d", 700100+i),
			fmt.Sprintf(`{"invoice":"INV-2026-%05d","template":"standard","locale":"de-DE"}`, 18000+i),
			map[string]string{"content-type": "application/json", "type": "RenderInvoice"},
			true, now.Add(-time.Duration(47*60-i*20)*time.Second))
	}
	f.queueLocked("notifications.email", admin.Destination{Consumers: 4, Producers: 3, Enqueued: 2_340_007, Dequeued: 2_339_995, Dispatched: 12})
	for i := range 12 {
		f.putLocked("notifications.email", fmt.Sprintf("ID:broker-eu-1-1714561200000-%d", 990000+i),
			fmt.Sprintf("To: customer-%d@example.com\nSubject: Your order has shipped\n\nHello, your parcel is on its way.", i),
			map[string]string{"content-type": "text/plain"}, false, now.Add(-time.Duration(12-i)*time.Second))
	}
	f.queueLocked("reports.nightly", admin.Destination{Enqueued: 412, Dequeued: 412})

	f.queueLocked("ActiveMQ.DLQ", admin.Destination{Enqueued: 17, Dequeued: 14, DLQ: true})
	for i, d := range []struct{ orig, body, reason string }{
		{"/queue/orders", `{"order":70102,"customer":"C-4371","country":"AT","total":"-5.00"}`, "validation failed: negative total"},
		{"/queue/payments", `{"payment":"PAY-88120","amount":"120.00","currency":"EUR","card":"**** 4242"}`, "gateway timeout"},
		{"/queue/orders", `{"order":70119,"customer":"C-4402","country":"BE","lines":[]}`, "no order lines"},
	} {
		f.putLocked("ActiveMQ.DLQ", fmt.Sprintf("ID:broker-eu-1-1714561200000-%d", 650210+i*37), d.body,
			map[string]string{"content-type": "application/json", "original-destination": d.orig, "dlqDeliveryFailureCause": d.reason, "type": "Redelivered"},
			true, now.Add(-time.Duration(95-i*30)*time.Minute))
		q := f.queues["/queue/ActiveMQ.DLQ"]
		q.msgs[len(q.msgs)-1].Redelivered = true
	}

	f.topics["/topic/prices.eur"] = admin.Destination{Name: "/topic/prices.eur", Type: "topic", Consumers: 5, Producers: 1, Enqueued: 9_823_114, Dequeued: 49_115_570, Messages: 1520}
	f.topics["/topic/prices.usd"] = admin.Destination{Name: "/topic/prices.usd", Type: "topic", Consumers: 2, Producers: 1, Enqueued: 9_823_002, Dequeued: 19_646_004}
	f.topics["/topic/ActiveMQ.Advisory.Connection"] = admin.Destination{Name: "/topic/ActiveMQ.Advisory.Connection", Type: "topic", Consumers: 1, Enqueued: 884, Dequeued: 884}

	f.durables = []admin.DurableSubscription{
		{ClientID: "pricing-cache", Name: "eur", Topic: "/topic/prices.eur", Active: true},
		{ClientID: "audit-service", Name: "prices", Topic: "/topic/prices.eur", Selector: "region = 'EU'", Pending: 1520, OfflineSeconds: 5*3600 + 17*60},
		{ClientID: "risk-engine", Name: "usd-feed", Topic: "/topic/prices.usd", Active: true, Pending: 3},
	}

	f.conns = []admin.Connection{
		{ID: "ID:broker-eu-1-1714561200000-c41", ClientID: "order-service-1", User: "orders", Remote: "10.20.1.14:51122", Protocol: "stomp", Connector: "stomp", Version: "1.2", ConnectedAt: now.Add(-(26*time.Hour + 4*time.Minute)), Subscriptions: 1},
		{ID: "ID:broker-eu-1-1714561200000-c42", ClientID: "order-service-2", User: "orders", Remote: "10.20.1.15:40318", Protocol: "stomp", Connector: "stomp", Version: "1.2", ConnectedAt: now.Add(-(26*time.Hour + 3*time.Minute)), Subscriptions: 1},
		{ID: "ID:broker-eu-1-1714561200000-c57", ClientID: "pricing-cache", User: "pricing", Remote: "10.20.3.2:38801", Protocol: "stomp", Connector: "stomp+ssl", Version: "1.2", ConnectedAt: now.Add(-(5*time.Hour + 41*time.Minute)), Subscriptions: 2},
		{ID: "ID:broker-eu-1-1714561200000-c63", User: "dashboard", Remote: "192.0.2.44:61002", Protocol: "stomp_ws", Connector: "ws", Version: "1.1", ConnectedAt: now.Add(-(12 * time.Minute)), Subscriptions: 3},
	}

	f.streams["/queue/events"] = admin.Stream{
		Name: "/queue/events",
		Partitions: []admin.StreamPartition{
			{Partition: 0, StartOffset: 120_000, EndOffset: 611_204, Bytes: 181 << 20},
			{Partition: 1, StartOffset: 118_400, EndOffset: 609_877, Bytes: 179 << 20},
			{Partition: 2, StartOffset: 121_050, EndOffset: 612_330, Bytes: 182 << 20},
		},
		Groups: []admin.StreamGroup{
			{Group: "analytics", Members: 3, Lag: 4_102, Partitions: []admin.StreamGroupPartition{
				{Partition: 0, Committed: 609_900, End: 611_204, Lag: 1_304},
				{Partition: 1, Committed: 608_100, End: 609_877, Lag: 1_777},
				{Partition: 2, Committed: 611_309, End: 612_330, Lag: 1_021},
			}},
			{Group: "search-indexer", Members: 1, Lag: 12, Partitions: []admin.StreamGroupPartition{
				{Partition: 0, Committed: 611_200, End: 611_204, Lag: 4},
				{Partition: 1, Committed: 609_873, End: 609_877, Lag: 4},
				{Partition: 2, Committed: 612_326, End: 612_330, Lag: 4},
			}},
		},
	}
}
