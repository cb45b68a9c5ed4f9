package metrics

import (
	"cmp"
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/internal/buildinfo"
	"github.com/activemq-go/broker/internal/histogram"
	"github.com/activemq-go/broker/security"
)

// collector is the broker's prometheus.Collector: every value is read from Source at
// Collect.
type collector struct {
	src       Source
	sec       SecurityStats
	o         Options
	buildInfo [3]string // version, go_version, commit
	dropped   atomic.Uint64
	d         descs
}

// NewCollector returns the collector of the broker's own series (broker_*), to
// register in a registry of one's own; Handler uses it.
func NewCollector(src Source, o Options) prometheus.Collector {
	if o.MaxDestinationSeries <= 0 {
		o.MaxDestinationSeries = DefaultMaxDestinationSeries
	}
	if o.ResourceTimeout <= 0 {
		o.ResourceTimeout = 2 * time.Second
	}
	c := &collector{src: src, o: o, d: newDescs()}
	if s, ok := o.Security.(*security.Service); !ok || s != nil {
		c.sec = o.Security // a nil *security.Service in the interface counts as none
	}
	bi := buildinfo.Get()
	c.buildInfo = [3]string{cmp.Or(o.Version, bi.Version), bi.GoVersion, cmp.Or(o.Commit, bi.Commit)}
	return c
}

// descs are the descriptions of every family; the labels are fixed here.
type descs struct {
	buildInfo, startTime                                  *prometheus.Desc
	connections, connsOpened, connsClosed, connsRejected  *prometheus.Desc
	authAttempts, authzDenied, hashVerifications          *prometheus.Desc
	destinations, consumers, subscriptions                *prometheus.Desc
	received, delivered, acked, redelivered               *prometheus.Desc
	deadLettered, expired, discarded, duplicates          *prometheus.Desc
	resUsed, resLimit, resAlarm                           *prometheus.Desc
	producersBlocked, sendsBlocked                        *prometheus.Desc
	storeSync, storeSyncs, sendLatency, seriesDropped     *prometheus.Desc
	messages, unacked, qConsumers, qEnqueued, qDispatched *prometheus.Desc
	qAcked, qExpired, qOldest, qMemory, qMemoryLimit      *prometheus.Desc
	subPending, streamEnd, groupCommitted, groupLag       *prometheus.Desc
	streamSize                                            *prometheus.Desc
	perDestinationFamilies                                []*prometheus.Desc
}

func newDescs() descs {
	var all []*prometheus.Desc
	n := func(name, help string, labels ...string) *prometheus.Desc {
		d := prometheus.NewDesc("broker_"+name, help, labels, nil)
		all = append(all, d)
		return d
	}
	d := descs{
		buildInfo:         n("build_info", "The broker's version, the Go version it was built with and its commit; always 1.", "version", "go_version", "commit"),
		startTime:         n("start_time_seconds", "When the broker started, in seconds since the epoch."),
		connections:       n("connections", "Client connections open now.", "protocol"),
		connsOpened:       n("connections_opened_total", "Client connections accepted (CONNECT answered) since start.", "protocol"),
		connsClosed:       n("connections_closed_total", "Client connections closed since start.", "protocol"),
		connsRejected:     n("connections_rejected_total", "Connections refused since start: auth (credentials), limit (maxConnections, a user's limit), client_id (in use), protocol (no valid CONNECT), tls (handshake failed).", "reason"),
		authAttempts:      n("auth_attempts_total", "Logins since start by result (failures include the throttled ones).", "result"),
		hashVerifications: n("password_hash_verifications_total", "bcrypt and argon2id verifications of logins since start; a failed login runs one per hash cost in use, whatever the user, and a reconnect with a passcode verified before none."),
		authzDenied:       n("authz_denied_total", "Requests the authorization map refused since start, by what they tried: send, subscribe (and browse), create.", "operation"),
		destinations:      n("destinations", "Destinations that exist now.", "type"),
		consumers:         n("consumers", "Consumers attached now, by destination type (a wildcard subscription counts once per destination it matches; active durable subscriptions count as topic).", "type"),
		subscriptions:     n("subscriptions", "Subscriptions now: durable ones active or offline, the others.", "type", "state"),
		received:          n("messages_received_total", "Messages clients sent since start.", "protocol"),
		delivered:         n("messages_delivered_total", "Messages written to consumers since start, by ack mode (auto, client).", "protocol", "ack"),
		acked:             n("messages_acknowledged_total", "Messages clients acknowledged since start (ACK in client modes, committed transactional ACKs).", "protocol"),
		redelivered:       n("messages_redelivered_total", "Deliveries since start of messages delivered before."),
		deadLettered:      n("messages_dead_lettered_total", "Messages sent to a dead-letter queue since start: nack, expired, max_redeliveries.", "reason"),
		expired:           n("messages_expired_total", "Messages that expired before they were consumed since start."),
		duplicates:        n("messages_duplicate_total", "Messages dropped by duplicate detection (a producer's retry of an accepted message) since start."),
		discarded:         n("messages_discarded_total", "Messages dropped since start: slow_consumer (a topic's pending limit), dead_letter_strategy (the strategy dropped a dead message), nack (the discard NACK policy).", "reason"),
		resUsed:           n("resource_used_bytes", "What the broker uses of a systemUsage limit: memory (messages in memory), store (the store's size), scheduler (scheduled messages in memory).", "resource"),
		resLimit:          n("resource_limit_bytes", "The systemUsage limit of a resource (absent when it has none).", "resource"),
		resAlarm:          n("resource_alarm", "1 while a resource is at its limit and producers are refused or held.", "resource"),
		producersBlocked:  n("producers_blocked", "Connections with a SEND held now by producer flow control."),
		sendsBlocked:      n("sends_blocked_total", "SENDs held by producer flow control since start."),
		storeSync:         n("store_sync_duration_seconds", "Time of each sync of the store's write path (one per group commit).", "store"),
		storeSyncs:        n("store_syncs_total", "Syncs of the store's write path since start (one per group commit; the count of store_sync_duration_seconds).", "store"),
		sendLatency:       n("send_latency_seconds", "Time from a SEND to its acceptance (its RECEIPT; for a persistent message once stored).", "persistent"),
		seriesDropped:     n("metrics_series_dropped_total", "Per-destination series folded into _other by the cardinality guard (metrics.maxDestinationSeries), summed over scrapes."),
	}
	first := len(all)
	d.messages = n("messages", "Messages on a queue not yet acknowledged (waiting and in flight), or kept by a stream.", "destination", "type")
	d.unacked = n("messages_unacked", "Messages of a queue dispatched to consumers and not yet acknowledged.", "destination", "type")
	d.qConsumers = n("queue_consumers", "Consumers of a destination.", "destination", "type")
	d.qEnqueued = n("queue_enqueued_total", "Messages sent to a destination since it was created (or the broker started).", "destination", "type")
	d.qDispatched = n("queue_dispatched_total", "Deliveries to consumers of a destination's messages since start (redeliveries included).", "destination", "type")
	d.qAcked = n("queue_acked_total", "Messages of a queue acknowledged (removed) since start.", "destination", "type")
	d.qExpired = n("queue_expired_total", "Messages of a queue that expired since start.", "destination", "type")
	d.qOldest = n("queue_oldest_message_age_seconds", "Age of the message that has waited longest on a queue (among those in memory); 0 when none waits.", "destination", "type")
	d.qMemory = n("queue_memory_bytes", "Memory a destination's messages hold.", "destination", "type")
	d.qMemoryLimit = n("queue_memory_limit_bytes", "A destination's own memory limit (absent when it has none).", "destination", "type")
	d.subPending = n("subscription_pending_messages", "Messages waiting for a durable subscription.", "destination", "subscription")
	d.streamEnd = n("stream_end_offset", "Offset the next message of a stream partition gets.", "stream", "partition")
	d.streamSize = n("stream_size_bytes", "Size of a stream's log segments, all partitions.", "stream")
	d.groupCommitted = n("stream_group_committed_offset", "Offset a consumer group reads next in a stream partition.", "stream", "partition", "group")
	d.groupLag = n("stream_group_lag", "Messages of a stream after a consumer group's positions, summed over its partitions.", "stream", "group")
	d.perDestinationFamilies = all[first:]
	return d
}

// Describe sends the descriptions of every family the collector may export.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	v := []*prometheus.Desc{
		c.d.buildInfo, c.d.startTime, c.d.connections, c.d.connsOpened, c.d.connsClosed, c.d.connsRejected,
		c.d.authAttempts, c.d.authzDenied, c.d.hashVerifications, c.d.destinations, c.d.consumers, c.d.subscriptions,
		c.d.received, c.d.delivered, c.d.acked, c.d.redelivered, c.d.deadLettered, c.d.expired, c.d.discarded, c.d.duplicates,
		c.d.resUsed, c.d.resLimit, c.d.resAlarm, c.d.producersBlocked, c.d.sendsBlocked,
		c.d.storeSync, c.d.storeSyncs, c.d.sendLatency, c.d.seriesDropped,
	}
	for _, d := range append(v, c.d.perDestinationFamilies...) {
		ch <- d
	}
}

// Collect reads the broker and sends every series.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	cs := c.src.Counters()
	gauge(c.d.buildInfo, 1, c.buildInfo[:]...)
	gauge(c.d.startTime, float64(cs.Started.UnixNano())/1e9)
	for p := range management.NumProtocols {
		proto := p.String()
		gauge(c.d.connections, float64(cs.Connections[p]), proto)
		counter(c.d.connsOpened, float64(cs.Opened[p]), proto)
		counter(c.d.connsClosed, float64(cs.Closed[p]), proto)
		counter(c.d.received, float64(cs.Received[p]), proto)
		counter(c.d.delivered, float64(cs.Delivered[p][management.DeliveredAuto]), proto, "auto")
		counter(c.d.delivered, float64(cs.Delivered[p][management.DeliveredClient]), proto, "client")
		counter(c.d.acked, float64(cs.Acknowledged[p]), proto)
	}
	for r := range management.NumRejectReasons {
		counter(c.d.connsRejected, float64(cs.Rejected[r]), r.String())
	}
	if c.sec != nil {
		st := c.sec.Stats()
		counter(c.d.authAttempts, float64(st.LoginsOK), "success")
		counter(c.d.authAttempts, float64(st.LoginsFailed), "failure")
		counter(c.d.hashVerifications, float64(st.HashVerifications))
	}
	for o := range management.NumOperations {
		counter(c.d.authzDenied, float64(cs.Denied[o]), o.String())
	}
	counter(c.d.redelivered, float64(cs.Redelivered))
	counter(c.d.expired, float64(cs.Expired))
	counter(c.d.duplicates, float64(cs.Duplicates))
	for r := range destinations.NumDeadLetterReasons {
		counter(c.d.deadLettered, float64(cs.DeadLettered[r]), r.String())
	}
	for r := range destinations.NumDiscardReasons {
		counter(c.d.discarded, float64(cs.Discarded[r]), r.String())
	}
	gauge(c.d.producersBlocked, float64(cs.ProducersBlocked))
	counter(c.d.sendsBlocked, float64(cs.SendsBlocked))
	ch <- constHistogram(c.d.sendLatency, cs.SendLatency[0], "false")
	ch <- constHistogram(c.d.sendLatency, cs.SendLatency[1], "true")
	if cs.StoreSyncs {
		ch <- constHistogram(c.d.storeSync, cs.StoreSync, c.o.Store)
		counter(c.d.storeSyncs, float64(cs.StoreSync.Count), c.o.Store)
	}

	ctx, cancel := context.WithTimeout(context.Background(), c.o.ResourceTimeout)
	for _, r := range c.src.Resources(ctx) {
		gauge(c.d.resUsed, float64(r.Used), r.Resource)
		if r.Limit > 0 {
			gauge(c.d.resLimit, float64(r.Limit), r.Resource)
		}
		alarm := 0.0
		if r.Alarm {
			alarm = 1
		}
		gauge(c.d.resAlarm, alarm, r.Resource)
	}
	cancel()

	subs := c.src.Subscriptions()
	gauge(c.d.subscriptions, float64(subs.DurableActive), "durable", "active")
	gauge(c.d.subscriptions, float64(subs.DurableOffline), "durable", "offline")
	gauge(c.d.subscriptions, float64(subs.NonDurable), "non_durable", "active")

	dests := c.src.DestinationMetrics()
	durables := c.src.DurableSubscriptions()
	c.collectDestinations(ch, dests, durables, subs.DurableActive)
}

// constHistogram turns a broker histogram snapshot into a Prometheus histogram.
func constHistogram(d *prometheus.Desc, s histogram.Snapshot, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(s.Bounds))
	for i, b := range s.Bounds {
		buckets[b.Seconds()] = s.Cumulative[i]
	}
	return prometheus.MustNewConstHistogram(d, s.Count, s.Sum.Seconds(), buckets, labels...)
}
