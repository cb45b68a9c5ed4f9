package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/durable"
	"github.com/activemq-go/broker/internal/histogram"
	"github.com/activemq-go/broker/security"
)

// fakeSource is a broker as the collector sees it.
type fakeSource struct {
	counters  management.Counters
	dests     []management.DestinationMetrics
	durables  []durable.Stats
	subs      management.SubscriptionCounts
	resources []management.ResourceUsage
}

func (f *fakeSource) Counters() management.Counters { return f.counters }
func (f *fakeSource) DestinationMetrics() []management.DestinationMetrics {
	return slices.Clone(f.dests) // the collector sorts what it gets
}
func (f *fakeSource) DurableSubscriptions() []durable.Stats        { return slices.Clone(f.durables) }
func (f *fakeSource) Subscriptions() management.SubscriptionCounts { return f.subs }
func (f *fakeSource) Resources(context.Context) []management.ResourceUsage {
	return f.resources
}

type fakeSecurity struct{ st security.Stats }

func (f fakeSecurity) Stats() security.Stats { return f.st }

func queue(name string, pending, inFlight int) management.DestinationMetrics {
	return management.DestinationMetrics{Type: management.TypeQueue, Dest: name, DestinationStats: management.DestinationStats{
		Name: "/queue/" + name, Pending: pending, InFlight: inFlight, Enqueued: int64(pending + inFlight + 10),
		Dequeued: 10, Dispatched: 12, Consumers: 1, MemoryBytes: 100,
	}}
}

// snapshot is a histogram with two observations: 1ms and 20ms.
func snapshot() histogram.Snapshot {
	h := histogram.New(nil)
	h.Observe(time.Millisecond)
	h.Observe(20 * time.Millisecond)
	return h.Snapshot()
}

// fullSource has something of every kind, so that every family shows.
func fullSource() *fakeSource {
	var c management.Counters
	c.Started = time.Unix(1700000000, 0)
	c.Connections = [management.NumProtocols]int64{3, 1}
	c.Opened = [management.NumProtocols]int64{10, 2}
	c.Closed = [management.NumProtocols]int64{7, 1}
	c.Rejected[management.RejectAuth] = 4
	c.Received[management.ProtocolSTOMP] = 1000
	c.Delivered[management.ProtocolSTOMP] = [2]int64{600, 300}
	c.Acknowledged[management.ProtocolSTOMP] = 290
	c.Redelivered = 5
	c.Expired = 6
	c.Duplicates = 12
	c.DeadLettered[destinations.DeadLetterNack] = 2
	c.Discarded[destinations.DiscardSlowConsumer] = 8
	c.Denied[management.OpSend] = 9
	c.ProducersBlocked, c.SendsBlocked = 1, 11
	c.SendLatency = [2]histogram.Snapshot{snapshot(), snapshot()}
	c.StoreSync, c.StoreSyncs = snapshot(), true
	stream := management.DestinationMetrics{Type: management.TypeStream, Dest: "events", DestinationStats: management.DestinationStats{
		Name: "/topic/events", Enqueued: 50, Stored: 40, Consumers: 2, Dequeued: 30,
		Partitions: []destinations.StreamPartitionStats{{Partition: 0, Oldest: 5, Next: 30, Bytes: 3000}, {Partition: 1, Oldest: 5, Next: 20, Bytes: 2000}},
		Groups: []destinations.StreamGroupStats{{Group: "G", Partitions: []destinations.StreamGroupPartition{
			{Partition: 0, Position: 25, HasPosition: true, Lag: 5}, {Partition: 1, Position: 18, HasPosition: true, Lag: 2}}}},
	}}
	oldest := queue("orders", 5, 2)
	oldest.OldestTimestamp = time.Now().Add(-10 * time.Second).UnixMilli()
	oldest.MemoryLimit = 1 << 20
	oldest.Expired = 3
	return &fakeSource{
		counters: c,
		dests: []management.DestinationMetrics{
			oldest,
			{Type: management.TypeTopic, Dest: "prices", DestinationStats: management.DestinationStats{Name: "/topic/prices", Enqueued: 70, Dequeued: 140, Consumers: 2}},
			{Type: management.TypeTempQueue, Dest: "ID:c1:reply", DestinationStats: management.DestinationStats{Name: "/temp-queue/reply", Pending: 1}},
			stream,
		},
		durables: []durable.Stats{{ClientID: "app", Name: "sub", Topic: "/topic/prices", Active: false, Backlog: 12}},
		subs:     management.SubscriptionCounts{DurableActive: 0, DurableOffline: 1, NonDurable: 4},
		resources: []management.ResourceUsage{
			{Resource: management.ResourceMemory, Used: 1000, Limit: 1 << 30},
			{Resource: management.ResourceStore, Used: 5000, Limit: 1 << 40, Alarm: true},
		},
	}
}

// scrape serves one GET /metrics and parses the text exposition.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.True(t, strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain"), rec.Header().Get("Content-Type"))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	require.NoError(t, err)
	return fams
}

// value finds the series of family name with exactly the labels given (name=value
// pairs) and returns its value (a histogram's count).
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := find(fams, name, labels...)
	require.NotNil(t, m, "no series %s%v", name, labels)
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	t.Fatalf("series %s%v has no value", name, labels)
	return 0
}

func find(fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, m := range f.Metric {
		if len(m.Label) != len(want) {
			continue
		}
		ok := true
		for _, l := range m.Label {
			if want[l.GetName()] != l.GetValue() || want[l.GetName()] == "" && l.GetValue() != "" {
				ok = false
			}
		}
		if ok {
			return m
		}
	}
	return nil
}

// The exposition parses and has every family of operations.md §2.4 the broker
// implements, and the Go and process collectors'.
func TestExpositionHasEveryImplementedName(t *testing.T) {
	fams := scrape(t, Handler(fullSource(), Options{Version: "1.2.3", Commit: "abc", Store: "kahadb",
		Security: fakeSecurity{security.Stats{LoginsOK: 7, LoginsFailed: 3}}, PerDestination: true}))
	want := []string{
		"broker_build_info", "broker_start_time_seconds",
		"broker_connections", "broker_connections_opened_total", "broker_connections_closed_total", "broker_connections_rejected_total",
		"broker_auth_attempts_total", "broker_authz_denied_total", "broker_password_hash_verifications_total",
		"broker_destinations", "broker_consumers",
		"broker_messages_received_total", "broker_messages_delivered_total", "broker_messages_acknowledged_total",
		"broker_messages_redelivered_total", "broker_messages_dead_lettered_total", "broker_messages_expired_total",
		"broker_messages_discarded_total", "broker_messages_duplicate_total",
		"broker_messages", "broker_messages_unacked",
		"broker_queue_consumers", "broker_queue_enqueued_total", "broker_queue_dispatched_total", "broker_queue_acked_total",
		"broker_queue_expired_total", "broker_queue_oldest_message_age_seconds", "broker_queue_memory_bytes", "broker_queue_memory_limit_bytes",
		"broker_subscription_pending_messages", "broker_subscriptions",
		"broker_stream_end_offset", "broker_stream_size_bytes", "broker_stream_group_committed_offset", "broker_stream_group_lag",
		"broker_resource_used_bytes", "broker_resource_limit_bytes", "broker_resource_alarm",
		"broker_producers_blocked", "broker_sends_blocked_total",
		"broker_store_sync_duration_seconds", "broker_store_syncs_total", "broker_send_latency_seconds",
		"broker_metrics_series_dropped_total",
		"go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total", "process_open_fds", "process_start_time_seconds",
	}
	var missing []string
	for _, name := range want {
		if fams[name] == nil {
			missing = append(missing, name)
		}
	}
	assert.Empty(t, missing)
	var extra []string
	for name := range fams {
		if strings.HasPrefix(name, "broker_") && !slices.Contains(want, name) {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	assert.Empty(t, extra, "families the test does not know: add them to the list and to docs/metrics.md")
	assert.Equal(t, dto.MetricType_HISTOGRAM, fams["broker_send_latency_seconds"].GetType())
	assert.Equal(t, dto.MetricType_COUNTER, fams["broker_messages_received_total"].GetType())
	assert.Equal(t, dto.MetricType_GAUGE, fams["broker_messages"].GetType())
}

// The broker-wide series carry the source's numbers under the right labels.
func TestBrokerWideSeries(t *testing.T) {
	fams := scrape(t, Handler(fullSource(), Options{Version: "1.2.3", Commit: "abc", Store: "kahadb",
		Security: fakeSecurity{security.Stats{LoginsOK: 7, LoginsFailed: 3}}, PerDestination: true}))
	v := func(name string, labels ...string) float64 { return value(t, fams, name, labels...) }
	require.Len(t, fams["broker_build_info"].GetMetric(), 1)
	bi := fams["broker_build_info"].Metric[0]
	labels := map[string]string{}
	for _, l := range bi.Label {
		labels[l.GetName()] = l.GetValue()
	}
	assert.Equal(t, map[string]string{"version": "1.2.3", "commit": "abc", "go_version": labels["go_version"]}, labels)
	assert.True(t, strings.HasPrefix(labels["go_version"], "go"))
	assert.Equal(t, 1700000000.0, v("broker_start_time_seconds"))
	assert.Equal(t, 3.0, v("broker_connections", "protocol", "stomp"))
	assert.Equal(t, 1.0, v("broker_connections", "protocol", "stomp_ws"))
	assert.Equal(t, 10.0, v("broker_connections_opened_total", "protocol", "stomp"))
	assert.Equal(t, 7.0, v("broker_connections_closed_total", "protocol", "stomp"))
	assert.Equal(t, 4.0, v("broker_connections_rejected_total", "reason", "auth"))
	assert.Equal(t, 0.0, v("broker_connections_rejected_total", "reason", "tls"))
	assert.Equal(t, 7.0, v("broker_auth_attempts_total", "result", "success"))
	assert.Equal(t, 3.0, v("broker_auth_attempts_total", "result", "failure"))
	assert.Equal(t, 9.0, v("broker_authz_denied_total", "operation", "send"))
	assert.Equal(t, 1000.0, v("broker_messages_received_total", "protocol", "stomp"))
	assert.Equal(t, 600.0, v("broker_messages_delivered_total", "protocol", "stomp", "ack", "auto"))
	assert.Equal(t, 300.0, v("broker_messages_delivered_total", "protocol", "stomp", "ack", "client"))
	assert.Equal(t, 290.0, v("broker_messages_acknowledged_total", "protocol", "stomp"))
	assert.Equal(t, 5.0, v("broker_messages_redelivered_total"))
	assert.Equal(t, 6.0, v("broker_messages_expired_total"))
	assert.Equal(t, 12.0, v("broker_messages_duplicate_total"))
	assert.Equal(t, 2.0, v("broker_messages_dead_lettered_total", "reason", "nack"))
	assert.Equal(t, 0.0, v("broker_messages_dead_lettered_total", "reason", "max_redeliveries"))
	assert.Equal(t, 8.0, v("broker_messages_discarded_total", "reason", "slow_consumer"))
	assert.Equal(t, 1.0, v("broker_producers_blocked"))
	assert.Equal(t, 11.0, v("broker_sends_blocked_total"))
	assert.Equal(t, 1.0, v("broker_destinations", "type", "queue"))
	assert.Equal(t, 1.0, v("broker_destinations", "type", "stream"))
	assert.Equal(t, 0.0, v("broker_destinations", "type", "temp_topic"))
	assert.Equal(t, 2.0, v("broker_consumers", "type", "topic"))
	assert.Equal(t, 1.0, v("broker_subscriptions", "type", "durable", "state", "offline"))
	assert.Equal(t, 4.0, v("broker_subscriptions", "type", "non_durable", "state", "active"))
	assert.Equal(t, 1000.0, v("broker_resource_used_bytes", "resource", "memory"))
	assert.Equal(t, float64(1<<30), v("broker_resource_limit_bytes", "resource", "memory"))
	assert.Equal(t, 1.0, v("broker_resource_alarm", "resource", "store"))
	assert.Equal(t, 0.0, v("broker_resource_alarm", "resource", "memory"))

	h := find(fams, "broker_store_sync_duration_seconds", "store", "kahadb").Histogram
	assert.EqualValues(t, 2, h.GetSampleCount())
	assert.Equal(t, 2.0, v("broker_store_syncs_total", "store", "kahadb"), "the histogram's count")
	assert.InDelta(t, 0.021, h.GetSampleSum(), 1e-9)
	for _, b := range h.Bucket {
		switch b.GetUpperBound() {
		case 0.001:
			assert.EqualValues(t, 1, b.GetCumulativeCount(), "le is inclusive")
		case 0.025:
			assert.EqualValues(t, 2, b.GetCumulativeCount())
		}
	}
	assert.Equal(t, 2.0, v("broker_send_latency_seconds", "persistent", "true"))
	assert.Equal(t, 2.0, v("broker_send_latency_seconds", "persistent", "false"))
}

// Without a security service there is no auth series; without a syncing store no
// sync histogram; a destination without its own memory limit has no limit series.
func TestAbsentSeries(t *testing.T) {
	src := fullSource()
	src.counters.StoreSyncs = false
	var none *security.Service
	fams := scrape(t, Handler(src, Options{Security: none, PerDestination: true}))
	assert.Nil(t, fams["broker_auth_attempts_total"])
	assert.Nil(t, fams["broker_store_sync_duration_seconds"])
	assert.Nil(t, fams["broker_store_syncs_total"])
	assert.Nil(t, find(fams, "broker_queue_memory_limit_bytes", "destination", "prices", "type", "topic"))
	assert.NotNil(t, find(fams, "broker_queue_memory_limit_bytes", "destination", "orders", "type", "queue"))
}

// Each destination's series carry its numbers; a stream's partitions and groups too.
func TestPerDestinationSeries(t *testing.T) {
	fams := scrape(t, Handler(fullSource(), Options{PerDestination: true}))
	v := func(name string, labels ...string) float64 { return value(t, fams, name, labels...) }
	q := []string{"destination", "orders", "type", "queue"}
	assert.Equal(t, 7.0, v("broker_messages", q...), "waiting and in flight")
	assert.Equal(t, 2.0, v("broker_messages_unacked", q...))
	assert.Equal(t, 1.0, v("broker_queue_consumers", q...))
	assert.Equal(t, 17.0, v("broker_queue_enqueued_total", q...))
	assert.Equal(t, 12.0, v("broker_queue_dispatched_total", q...))
	assert.Equal(t, 10.0, v("broker_queue_acked_total", q...))
	assert.Equal(t, 3.0, v("broker_queue_expired_total", q...))
	assert.InDelta(t, 10.0, v("broker_queue_oldest_message_age_seconds", q...), 5)
	assert.Equal(t, 100.0, v("broker_queue_memory_bytes", q...))
	assert.Equal(t, float64(1<<20), v("broker_queue_memory_limit_bytes", q...))
	assert.Equal(t, 1.0, v("broker_messages", "destination", "ID:c1:reply", "type", "temp_queue"))
	assert.Equal(t, 140.0, v("broker_queue_dispatched_total", "destination", "prices", "type", "topic"), "a topic's deliveries")
	assert.Nil(t, find(fams, "broker_messages", "destination", "prices", "type", "topic"), "a topic keeps no messages")

	assert.Equal(t, 40.0, v("broker_messages", "destination", "events", "type", "stream"))
	assert.Equal(t, 30.0, v("broker_stream_end_offset", "stream", "events", "partition", "0"))
	assert.Equal(t, 20.0, v("broker_stream_end_offset", "stream", "events", "partition", "1"))
	assert.Equal(t, 5000.0, v("broker_stream_size_bytes", "stream", "events"))
	assert.Equal(t, 25.0, v("broker_stream_group_committed_offset", "stream", "events", "partition", "0", "group", "G"))
	assert.Equal(t, 7.0, v("broker_stream_group_lag", "stream", "events", "group", "G"))
	assert.Equal(t, 12.0, v("broker_subscription_pending_messages", "destination", "prices", "subscription", "app:sub"))
	assert.Equal(t, 0.0, v("broker_metrics_series_dropped_total"), "nothing folded under the cap")
}

// Past the cap the deepest destinations keep their own series, the others are summed
// per type into _other, and every scrape adds the folded series to the dropped counter.
func TestCardinalityGuard(t *testing.T) {
	src := &fakeSource{}
	for i, depth := range []int{1, 5, 3, 4, 2} {
		src.dests = append(src.dests, queue(fmt.Sprintf("q%d", i), depth, 0))
	}
	for i := range 3 {
		src.durables = append(src.durables, durable.Stats{ClientID: "c", Name: fmt.Sprint(i), Topic: "/topic/t", Backlog: (i + 1) * 10})
	}
	h := Handler(src, Options{PerDestination: true, MaxDestinationSeries: 2})
	fams := scrape(t, h)
	var kept []string
	for _, m := range fams["broker_messages"].Metric {
		for _, l := range m.Label {
			if l.GetName() == "destination" {
				kept = append(kept, l.GetValue())
			}
		}
	}
	sort.Strings(kept)
	assert.Equal(t, []string{"_other", "q1", "q3"}, kept, "the two deepest, and _other")
	assert.Equal(t, 6.0, value(t, fams, "broker_messages", "destination", "_other", "type", "queue"), "1+3+2")
	assert.Equal(t, 3.0, value(t, fams, "broker_queue_consumers", "destination", "_other", "type", "queue"))
	assert.Equal(t, 5.0, value(t, fams, "broker_destinations", "type", "queue"), "the totals count every destination")
	assert.Equal(t, 30.0, value(t, fams, "broker_subscription_pending_messages", "destination", "t", "subscription", "c:2"))
	assert.Equal(t, 10.0, value(t, fams, "broker_subscription_pending_messages", "destination", "_other", "subscription", "_other"))

	// A queue has 9 series (no memory limit): 3 folded queues and 1 subscription.
	perScrape := 3*9 + 1.0
	assert.Equal(t, perScrape, value(t, fams, "broker_metrics_series_dropped_total"))
	fams = scrape(t, h)
	assert.Equal(t, 2*perScrape, value(t, fams, "broker_metrics_series_dropped_total"), "it counts on over scrapes")

	// perDestination false folds them all.
	fams = scrape(t, Handler(src, Options{PerDestination: false}))
	assert.Len(t, fams["broker_messages"].Metric, 1)
	assert.Equal(t, 15.0, value(t, fams, "broker_messages", "destination", "_other", "type", "queue"))
}

// A destination called _other is folded rather than clash with the sums.
func TestDestinationNamedOther(t *testing.T) {
	src := &fakeSource{dests: []management.DestinationMetrics{queue("_other", 4, 0), queue("a", 1, 0)}}
	fams := scrape(t, Handler(src, Options{PerDestination: true}))
	assert.Equal(t, 4.0, value(t, fams, "broker_messages", "destination", "_other", "type", "queue"))
	assert.Equal(t, 1.0, value(t, fams, "broker_messages", "destination", "a", "type", "queue"))
}

// The collector's own series follow Prometheus' naming conventions (promlint), and
// what Describe announces covers what Collect sends.
func TestLintAndDescribe(t *testing.T) {
	c := NewCollector(fullSource(), Options{PerDestination: true, Store: "kahadb", Security: fakeSecurity{}})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err, "the pedantic registry checks every metric against Describe")
	assert.Empty(t, problems)
}

// Handler gzips for a scraper that accepts it.
func TestHandlerGzip(t *testing.T) {
	srv := httptest.NewServer(Handler(fullSource(), Options{}))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept-Encoding", "gzip")
	tr := &http.Transport{DisableCompression: true}
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	assert.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
}

// seriesOf, which counts what a folded destination would have had, agrees with what
// destinationSeries emits, for every type.
func TestSeriesOfMatchesEmitted(t *testing.T) {
	c := NewCollector(&fakeSource{}, Options{}).(*collector)
	for _, dm := range fullSource().dests {
		n := 0
		c.destinationSeries(func(*prometheus.Desc, prometheus.ValueType, float64, ...string) { n++ }, &dm, dm.Dest, time.Now())
		assert.Equal(t, n, seriesOf(&dm), dm.Type)
	}
}

// docs/grafana-dashboard.json is valid JSON and every broker_ name its queries use is
// one the collector exports.
func TestGrafanaDashboardUsesKnownNames(t *testing.T) {
	raw, err := os.ReadFile("../../docs/grafana-dashboard.json")
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	fams := scrape(t, Handler(fullSource(), Options{Store: "kahadb", Security: fakeSecurity{}, PerDestination: true}))
	name := regexp.MustCompile(`\b(broker|go|process)_[a-z_]+\b`)
	exprs := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs++
			for _, n := range name.FindAllString(tg.Expr, -1) {
				base := n
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if b, ok := strings.CutSuffix(n, suffix); ok && fams[b] != nil {
						base = b
					}
				}
				assert.NotNil(t, fams[base], "panel %q uses %s, which is not exported", p.Title, n)
			}
		}
	}
	assert.Greater(t, exprs, 20)
}
