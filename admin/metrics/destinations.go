package metrics

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/durable"
	"github.com/prometheus/client_golang/prometheus"
)

// Other is the destination (stream, subscription) label of the series that sum what
// the cardinality guard folded.
const Other = "_other"

// destTypes are the destination types, in the order their series are sent.
var destTypes = []string{management.TypeQueue, management.TypeTempQueue, management.TypeTopic, management.TypeTempTopic, management.TypeStream}

// emitFunc sends one series (or counts it, for a destination being folded).
type emitFunc func(d *prometheus.Desc, vt prometheus.ValueType, v float64, labels ...string)

// collectDestinations sends the per-type totals (broker_destinations, broker_consumers),
// the per-destination series of the kept destinations and durable subscriptions, and
// the _other sums of the rest, and counts the folded series.
func (c *collector) collectDestinations(ch chan<- prometheus.Metric, dests []management.DestinationMetrics, durables []durable.Stats, durableActive int64) {
	count := map[string]int{}
	consumers := map[string]int{}
	for i := range dests {
		count[dests[i].Type]++
		consumers[dests[i].Type] += dests[i].Consumers
	}
	consumers[management.TypeTopic] += int(durableActive)
	for _, t := range destTypes {
		ch <- prometheus.MustNewConstMetric(c.d.destinations, prometheus.GaugeValue, float64(count[t]), t)
		ch <- prometheus.MustNewConstMetric(c.d.consumers, prometheus.GaugeValue, float64(consumers[t]), t)
	}

	send := func(d *prometheus.Desc, vt prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, vt, v, labels...)
	}
	var folded int

	keep := c.o.MaxDestinationSeries
	if !c.o.PerDestination {
		keep = 0
	}
	now := time.Now()
	order := make([]*management.DestinationMetrics, len(dests))
	for i := range dests {
		order[i] = &dests[i]
	}
	if len(order) > keep && keep > 0 {
		slices.SortFunc(order, func(a, b *management.DestinationMetrics) int {
			return cmp.Or(cmp.Compare(depth(b), depth(a)), cmp.Compare(b.Enqueued, a.Enqueued),
				strings.Compare(a.Type, b.Type), strings.Compare(a.Dest, b.Dest))
		})
	}
	others := map[string]*otherSums{}
	for i, dm := range order {
		if i < keep && dm.Dest != Other { // a destination called _other is folded: its series would clash
			c.destinationSeries(send, dm, dm.Dest, now)
			continue
		}
		folded += seriesOf(dm)
		o := others[dm.Type]
		if o == nil {
			o = &otherSums{}
			others[dm.Type] = o
		}
		o.add(dm, now)
	}
	for _, t := range destTypes {
		if o := others[t]; o != nil {
			c.otherSeries(send, t, o)
		}
	}

	if len(durables) > keep && keep > 0 {
		slices.SortFunc(durables, func(a, b durable.Stats) int {
			return cmp.Or(cmp.Compare(b.Backlog, a.Backlog), strings.Compare(a.ClientID, b.ClientID), strings.Compare(a.Name, b.Name))
		})
	}
	var pendingOther int64
	for i, d := range durables {
		if i >= keep {
			pendingOther += int64(d.Backlog)
			folded++
			continue
		}
		send(c.d.subPending, prometheus.GaugeValue, float64(d.Backlog), bareName(d.Topic), d.ClientID+":"+d.Name)
	}
	if len(durables) > keep {
		send(c.d.subPending, prometheus.GaugeValue, float64(pendingOther), Other, Other)
	}

	c.dropped.Add(uint64(folded))
	send(c.d.seriesDropped, prometheus.CounterValue, float64(c.dropped.Load()))
}

// seriesOf is the number of series destinationSeries emits for dm.
func seriesOf(dm *management.DestinationMetrics) int {
	n := 4 // consumers, enqueued, dispatched, memory
	switch dm.Type {
	case management.TypeQueue, management.TypeTempQueue:
		n += 5 // messages, unacked, acked, expired, oldest
	case management.TypeStream:
		n += 2 + len(dm.Partitions) + len(dm.Groups) // messages, size, end offsets, lags
		for _, g := range dm.Groups {
			n += len(g.Partitions) // committed offsets
		}
	}
	if dm.MemoryLimit > 0 {
		n++
	}
	return n
}

// depth is what ranks destinations for the cardinality guard: the messages they hold.
func depth(dm *management.DestinationMetrics) int64 {
	if dm.Type == management.TypeStream {
		return dm.Stored
	}
	return int64(dm.Pending) + int64(dm.InFlight)
}

// destinationSeries emits one destination's series under name.
func (c *collector) destinationSeries(emit emitFunc, dm *management.DestinationMetrics, name string, now time.Time) {
	g, ctr := prometheus.GaugeValue, prometheus.CounterValue
	t := dm.Type
	switch t {
	case management.TypeQueue, management.TypeTempQueue:
		emit(c.d.messages, g, float64(depth(dm)), name, t)
		emit(c.d.unacked, g, float64(dm.InFlight), name, t)
		emit(c.d.qDispatched, ctr, float64(dm.Dispatched), name, t)
		emit(c.d.qAcked, ctr, float64(dm.Dequeued), name, t)
		emit(c.d.qExpired, ctr, float64(dm.Expired), name, t)
		emit(c.d.qOldest, g, age(dm.OldestTimestamp, now), name, t)
	case management.TypeStream:
		emit(c.d.messages, g, float64(dm.Stored), name, t)
		emit(c.d.qDispatched, ctr, float64(dm.Dequeued), name, t)
		var size int64
		for _, p := range dm.Partitions {
			emit(c.d.streamEnd, g, float64(p.Next), name, strconv.Itoa(p.Partition))
			size += p.Bytes
		}
		emit(c.d.streamSize, g, float64(size), name)
		for _, gr := range dm.Groups {
			var lag int64
			for _, p := range gr.Partitions {
				if p.HasPosition {
					emit(c.d.groupCommitted, g, float64(p.Position), name, strconv.Itoa(p.Partition), gr.Group)
				}
				lag += p.Lag
			}
			emit(c.d.groupLag, g, float64(lag), name, gr.Group)
		}
	default: // topics: Dequeued counts what was delivered to subscribers
		emit(c.d.qDispatched, ctr, float64(dm.Dequeued), name, t)
	}
	emit(c.d.qConsumers, g, float64(dm.Consumers), name, t)
	emit(c.d.qEnqueued, ctr, float64(dm.Enqueued), name, t)
	emit(c.d.qMemory, g, float64(dm.MemoryBytes), name, t)
	if dm.MemoryLimit > 0 {
		emit(c.d.qMemoryLimit, g, float64(dm.MemoryLimit), name, t)
	}
}

// age is how old a message with timestamp ts (ms since the epoch; 0: none) is.
func age(ts int64, now time.Time) float64 {
	if ts == 0 {
		return 0
	}
	return max(now.Sub(time.UnixMilli(ts)).Seconds(), 0)
}

// otherSums are the folded destinations of one type, summed (the oldest message's age
// is the greatest).
type otherSums struct {
	messages, unacked, consumers, enqueued, dispatched, acked, expired, memory int64
	oldest                                                                     float64
	lag                                                                        int64
	lagged                                                                     bool
}

func (o *otherSums) add(dm *management.DestinationMetrics, now time.Time) {
	o.messages += depth(dm)
	o.unacked += int64(dm.InFlight)
	o.consumers += int64(dm.Consumers)
	o.enqueued += dm.Enqueued
	o.acked += dm.Dequeued
	o.expired += dm.Expired
	o.memory += dm.MemoryBytes
	o.oldest = max(o.oldest, age(dm.OldestTimestamp, now))
	if dm.Type == management.TypeQueue || dm.Type == management.TypeTempQueue {
		o.dispatched += dm.Dispatched
	} else {
		o.dispatched += dm.Dequeued
	}
	for _, gr := range dm.Groups {
		o.lagged = true
		for _, p := range gr.Partitions {
			o.lag += p.Lag
		}
	}
}

// otherSeries emits the _other series of type t: those of a destination of that type,
// with sums, and a stream's group lag summed into stream="_other", group="_other".
func (c *collector) otherSeries(emit emitFunc, t string, o *otherSums) {
	g, ctr := prometheus.GaugeValue, prometheus.CounterValue
	switch t {
	case management.TypeQueue, management.TypeTempQueue:
		emit(c.d.messages, g, float64(o.messages), Other, t)
		emit(c.d.unacked, g, float64(o.unacked), Other, t)
		emit(c.d.qAcked, ctr, float64(o.acked), Other, t)
		emit(c.d.qExpired, ctr, float64(o.expired), Other, t)
		emit(c.d.qOldest, g, o.oldest, Other, t)
	case management.TypeStream:
		emit(c.d.messages, g, float64(o.messages), Other, t)
		if o.lagged {
			emit(c.d.groupLag, g, float64(o.lag), Other, Other)
		}
	}
	emit(c.d.qDispatched, ctr, float64(o.dispatched), Other, t)
	emit(c.d.qConsumers, g, float64(o.consumers), Other, t)
	emit(c.d.qEnqueued, ctr, float64(o.enqueued), Other, t)
	emit(c.d.qMemory, g, float64(o.memory), Other, t)
}

// bareName is a destination's name without its /queue/ or /topic/ prefix (the type
// label says which).
func bareName(client string) string {
	for _, p := range []string{"/queue/", "/topic/", "/temp-queue/", "/temp-topic/"} {
		if rest, ok := strings.CutPrefix(client, p); ok {
			return rest
		}
	}
	return client
}
