package kafkaengine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/activemq-go/broker/destinations/streamlog"
)

// The engine stands behind the stream path as the embedded log does, and partitions
// keys as Kafka clients do.
var (
	_ streamlog.Log            = (*Engine)(nil)
	_ streamlog.KeyPartitioner = (*Engine)(nil)
)

// Engine is the stream log over a Kafka cluster. Its methods are safe for concurrent
// use.
type Engine struct {
	opts   Options
	cl     *kgo.Client // produces, fetches, and carries the admin requests
	adm    *kadm.Client
	keys   kgo.Partitioner
	ctx    context.Context // ends at Close
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool
	topics  map[string]*topicMeta // by Kafka topic name
	appends map[string][]*atomic.Int64
	groups  map[string]*groupMembers // by Kafka group id
	members map[memberKey]*member    // the live members, by the broker's names
}

// topicMeta is what the engine knows of a Kafka topic: its id and partition leaders.
type topicMeta struct {
	id      [16]byte
	leaders []int32
}

// Open connects to the cluster (it checks that a broker answers) and returns the
// Engine; Close releases it.
func Open(o Options) (*Engine, error) {
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	opts := append(o.clientOpts(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchMaxBytes(int32(min(o.MaxMessageBytes, math.MaxInt32))),
		// Metadata answers are cached this long: a topic just created, or a leader
		// that moved, shows soon.
		kgo.MetadataMinAge(250*time.Millisecond),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafkaengine: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{opts: o, cl: cl, adm: kadm.NewClient(cl), keys: kgo.StickyKeyPartitioner(nil), ctx: ctx, cancel: cancel,
		topics: map[string]*topicMeta{}, appends: map[string][]*atomic.Int64{}, groups: map[string]*groupMembers{}, members: map[memberKey]*member{}}
	pctx, pcancel := e.reqCtx()
	defer pcancel()
	if err := cl.Ping(pctx); err != nil {
		cancel()
		cl.Close()
		return nil, fmt.Errorf("kafkaengine: no Kafka broker of %s answers: %w", strings.Join(o.SeedBrokers, ","), err)
	}
	o.Logger.Info("kafka stream engine connected", slog.Any("seedBrokers", o.SeedBrokers), slog.String("topicPrefix", o.TopicPrefix))
	return e, nil
}

// Close leaves every consumer group and closes the connections. Operations after it
// return streamlog.ErrClosed.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	var ms []*member
	for _, g := range e.groups {
		ms = append(ms, g.all()...)
	}
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(m.close)
	}
	wg.Wait()
	e.cancel()
	e.cl.Close()
	return nil
}

// reqCtx is the context of one admin request.
func (e *Engine) reqCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(e.ctx, e.opts.RequestTimeout)
}

// kafkaTopic is the Kafka topic of a log topic.
func (e *Engine) kafkaTopic(topic string) string { return e.opts.TopicPrefix + topic }

// failed turns an error into ErrClosed once the engine is closed.
func (e *Engine) failed(op, topic string, partition int, err error) error {
	if e.ctx.Err() != nil {
		return streamlog.ErrClosed
	}
	if partition < 0 {
		return fmt.Errorf("kafkaengine: %s %s: %w", op, e.kafkaTopic(topic), err)
	}
	return fmt.Errorf("kafkaengine: %s %s-%d: %w", op, e.kafkaTopic(topic), partition, err)
}

// Now is the clock that stamps appended records.
func (e *Engine) Now() time.Time { return e.opts.Now() }

// Topics lists the log topics kept in Kafka: the topics carrying the prefix, without it.
func (e *Engine) Topics() []string {
	ctx, cancel := e.reqCtx()
	defer cancel()
	tds, err := e.adm.ListTopics(ctx)
	if err != nil {
		e.opts.Logger.Warn("kafka topics not listed", slog.Any("err", err))
		return nil
	}
	var names []string
	for _, td := range tds {
		if name, ok := strings.CutPrefix(td.Topic, e.opts.TopicPrefix); ok && !td.IsInternal && td.Err == nil && name != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// meta returns what the engine knows of a topic, asking the cluster when it knows
// nothing or refresh is set; nil, nil if the topic does not exist.
func (e *Engine) meta(ktopic string, refresh bool) (*topicMeta, error) {
	e.mu.Lock()
	m := e.topics[ktopic]
	e.mu.Unlock()
	if m != nil && !refresh {
		return m, nil
	}
	ctx, cancel := e.reqCtx()
	defer cancel()
	md, err := e.adm.Metadata(ctx, ktopic)
	if err != nil {
		return nil, err
	}
	td, ok := md.Topics[ktopic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return nil, nil
	}
	if td.Err != nil {
		return nil, td.Err
	}
	m = &topicMeta{id: td.ID, leaders: make([]int32, len(td.Partitions))}
	for p, pd := range td.Partitions {
		if int(p) < len(m.leaders) {
			m.leaders[p] = pd.Leader
		}
	}
	e.mu.Lock()
	e.topics[ktopic] = m
	if len(e.appends[ktopic]) != len(m.leaders) {
		cs := make([]*atomic.Int64, len(m.leaders))
		for i := range cs {
			cs[i] = new(atomic.Int64)
		}
		e.appends[ktopic] = cs
	}
	e.mu.Unlock()
	return m, nil
}

// partitionMeta is meta of a partition's topic, with errors for a topic or a
// partition that does not exist.
func (e *Engine) partitionMeta(op, topic string, partition int, refresh bool) (*topicMeta, error) {
	kt := e.kafkaTopic(topic)
	m, err := e.meta(kt, refresh)
	switch {
	case err != nil:
		return nil, e.failed(op, topic, partition, err)
	case m == nil:
		return nil, fmt.Errorf("%w: %q", streamlog.ErrUnknownTopic, kt)
	case partition < 0 || partition >= len(m.leaders):
		return nil, fmt.Errorf("%w: %s-%d", streamlog.ErrUnknownPartition, kt, partition)
	}
	return m, nil
}

// Partitions is the partition count of a topic; for one that does not exist yet, the
// count CreateTopicWith will give it if Options.Partitions sets one, else 0.
func (e *Engine) Partitions(topic string) int {
	m, err := e.meta(e.kafkaTopic(topic), false)
	if err != nil {
		e.opts.Logger.Warn("kafka topic metadata not read", slog.String("topic", e.kafkaTopic(topic)), slog.Any("err", err))
		return 0
	}
	if m == nil {
		return e.opts.Partitions
	}
	return len(m.leaders)
}

// topicConfigs are the Kafka topic configs that carry c: a negative limit is none
// (-1), zero the cluster's default. A segment is rolled at the latest after the
// retention time, so that records are deleted within about twice the retention.
// max.message.bytes lets in the batches the engine produces.
func (e *Engine) topicConfigs(c streamlog.TopicConfig) map[string]*string {
	cfg := map[string]*string{}
	set := func(k string, v int64) {
		s := strconv.FormatInt(v, 10)
		cfg[k] = &s
	}
	set("max.message.bytes", int64(e.opts.MaxMessageBytes))
	switch {
	case c.Retention < 0:
		set("retention.ms", -1)
	case c.Retention > 0:
		ms := max(c.Retention.Milliseconds(), 1)
		set("retention.ms", ms)
		set("segment.ms", ms)
	}
	switch {
	case c.RetentionBytes < 0:
		set("retention.bytes", -1)
	case c.RetentionBytes > 0:
		set("retention.bytes", c.RetentionBytes)
	}
	return cfg
}

// CreateTopicWith creates the Kafka topic of a stream with n partitions (or
// Options.Partitions) and the retention of c, or, if it exists with n partitions,
// sets its retention to c. A topic with another partition count gives
// streamlog.ErrTopicExists (wrapped).
func (e *Engine) CreateTopicWith(name string, n int, c streamlog.TopicConfig) error {
	if e.ctx.Err() != nil {
		return streamlog.ErrClosed
	}
	kt := e.kafkaTopic(name)
	m, err := e.meta(kt, true)
	if err != nil {
		return e.failed("describe topic", name, -1, err)
	}
	if m == nil && e.opts.Partitions > 0 {
		n = e.opts.Partitions
	}
	cfg := e.topicConfigs(c)
	ctx, cancel := e.reqCtx()
	defer cancel()
	if m != nil {
		if len(m.leaders) != n {
			return fmt.Errorf("%w: Kafka topic %q has %d partitions, not %d", streamlog.ErrTopicExists, kt, len(m.leaders), n)
		}
		var alter []kadm.AlterConfig
		for k, v := range cfg {
			alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: v})
		}
		rs, err := e.adm.AlterTopicConfigs(ctx, alter, kt)
		if err == nil {
			for _, r := range rs {
				err = errors.Join(err, r.Err)
			}
		}
		if err != nil {
			return e.failed("set retention of", name, -1, err)
		}
		return nil
	}
	r, err := e.adm.CreateTopic(ctx, int32(n), int16(e.opts.ReplicationFactor), cfg, kt)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return e.failed("create topic", name, -1, err)
	}
	if err == nil && r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
		return e.failed("create topic", name, -1, r.Err)
	}
	// Wait until every partition has a leader, so that the first Append and Read go.
	for {
		m, err := e.meta(kt, true)
		if err == nil && m != nil && !slices.Contains(m.leaders, -1) && len(m.leaders) > 0 {
			e.opts.Logger.Info("kafka stream topic created", slog.String("topic", kt), slog.Int("partitions", len(m.leaders)))
			return nil
		}
		select {
		case <-ctx.Done():
			return e.failed("create topic", name, -1, fmt.Errorf("no leader for every partition: %w", ctx.Err()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// PartitionForKey is the partition Kafka's default partitioner gives a record with
// key (murmur2, as Java producers compute it).
func (e *Engine) PartitionForKey(topic string, key []byte, partitions int) int {
	return e.keys.ForTopic(e.kafkaTopic(topic)).Partition(&kgo.Record{Key: key}, partitions)
}

// Append produces recs to a partition and returns the offset of the first, once
// every record is acknowledged by all in-sync replicas.
func (e *Engine) Append(topic string, partition int, recs []streamlog.Record) (int64, error) {
	if len(recs) == 0 {
		return 0, streamlog.ErrEmptyBatch
	}
	kt := e.kafkaTopic(topic)
	now := e.opts.Now()
	krs := make([]*kgo.Record, len(recs))
	for i := range recs {
		r := &recs[i]
		kr := &kgo.Record{Topic: kt, Partition: int32(partition), Key: r.Key, Value: r.Value, Timestamp: now}
		if r.Timestamp != 0 {
			kr.Timestamp = time.UnixMilli(r.Timestamp)
		}
		if len(r.Headers) > 0 {
			kr.Headers = make([]kgo.RecordHeader, len(r.Headers))
			for j, h := range r.Headers {
				kr.Headers[j] = kgo.RecordHeader{Key: h[0], Value: []byte(h[1])}
			}
		}
		krs[i] = kr
	}
	if err := e.cl.ProduceSync(e.ctx, krs...).FirstErr(); err != nil {
		return 0, e.failed("produce to", topic, partition, err)
	}
	e.mu.Lock()
	cs := e.appends[kt]
	e.mu.Unlock()
	if partition < len(cs) {
		cs[partition].Add(1)
	}
	return krs[0].Offset, nil
}

// listed runs one ListOffsets kind for a topic and returns the partition's offset.
func (e *Engine) listed(topic string, partition int, op string,
	list func(ctx context.Context, topics ...string) (kadm.ListedOffsets, error)) (int64, error) {
	if e.ctx.Err() != nil {
		return 0, streamlog.ErrClosed
	}
	ctx, cancel := e.reqCtx()
	defer cancel()
	kt := e.kafkaTopic(topic)
	los, err := list(ctx, kt)
	if err != nil {
		return 0, e.failed(op, topic, partition, err)
	}
	lo, ok := los.Lookup(kt, int32(partition))
	if !ok {
		if m, _ := e.meta(kt, false); m == nil {
			return 0, fmt.Errorf("%w: %q", streamlog.ErrUnknownTopic, kt)
		}
		return 0, fmt.Errorf("%w: %s-%d", streamlog.ErrUnknownPartition, kt, partition)
	}
	if lo.Err != nil {
		return 0, e.failed(op, topic, partition, lo.Err)
	}
	return lo.Offset, nil
}

// HighWatermark is Kafka's high watermark of the partition: records below it are on
// every in-sync replica and readable.
func (e *Engine) HighWatermark(topic string, partition int) (int64, error) {
	return e.listed(topic, partition, "list end offset of", e.adm.ListEndOffsets)
}

// NextOffset is the high watermark too: Kafka gives no reader the offsets of records
// not yet on every in-sync replica.
func (e *Engine) NextOffset(topic string, partition int) (int64, error) {
	return e.HighWatermark(topic, partition)
}

// OldestOffset is the partition's log start offset (retention deleted what is below).
func (e *Engine) OldestOffset(topic string, partition int) (int64, error) {
	return e.listed(topic, partition, "list start offset of", e.adm.ListStartOffsets)
}

// OffsetForTime is the offset of the first record whose timestamp is at least ms, or
// the high watermark if there is none.
func (e *Engine) OffsetForTime(topic string, partition int, ms int64) (int64, error) {
	off, err := e.listed(topic, partition, "list offset by time of", func(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
		return e.adm.ListOffsetsAfterMilli(ctx, ms, topics...)
	})
	if err == nil && off < 0 {
		return e.HighWatermark(topic, partition)
	}
	return off, err
}

// Stats has the appends made through this engine since Open, and the partition's
// size on its leader as Kafka reports it (DescribeLogDirs; 0 if it does not).
// Segment files and fsyncs are Kafka's own business and stay 0.
func (e *Engine) Stats(topic string, partition int) (streamlog.PartitionStats, error) {
	kt := e.kafkaTopic(topic)
	m, err := e.partitionMeta("describe", topic, partition, false)
	if err != nil {
		return streamlog.PartitionStats{}, err
	}
	var st streamlog.PartitionStats
	e.mu.Lock()
	if cs := e.appends[kt]; partition < len(cs) {
		st.Appends = cs[partition].Load()
	}
	e.mu.Unlock()
	ctx, cancel := e.reqCtx()
	defer cancel()
	dirs, err := e.adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{kt: {int32(partition): {}}})
	if err == nil {
		if ds, ok := dirs[m.leaders[partition]]; ok {
			for _, d := range ds {
				if p, ok := d.Topics.Lookup(kt, int32(partition)); ok {
					st.Bytes += p.Size
				}
			}
		}
	}
	return st, nil
}
