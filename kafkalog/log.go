package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/activemq-go/broker/destinations/streamlog"
	"github.com/activemq-go/broker/internal/vfs"
)

// lockFile is the name of the lock file that keeps two Logs out of one directory.
const lockFile = ".lock"

// Log is a set of topics, each a fixed number of partitions, each an append-only,
// replayable sequence of records with dense offsets. It is safe for concurrent use.
type Log struct {
	opts    Options
	lock    io.Closer
	offsets *offsetStore

	mu     sync.RWMutex
	topics map[string]*topic
	groups map[string]*Group
	closed bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// Open opens (creating if needed) the log in opts.Dir, recovering every partition (see
// the package comment), and starts the background flusher (FlushInterval) and retention
// tasks.
func Open(opts Options) (*Log, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := o.FS.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	lock, err := o.FS.Lock(filepath.Join(o.Dir, lockFile))
	if err != nil {
		return nil, fmt.Errorf("kafkalog: lock %s: %w", o.Dir, err)
	}
	l := &Log{opts: o, lock: lock, topics: map[string]*topic{}, groups: map[string]*Group{}, stop: make(chan struct{})}
	fail := func(err error) (*Log, error) {
		for _, t := range l.topics {
			t.close()
		}
		lock.Close()
		return nil, err
	}
	names, err := o.FS.List(o.Dir)
	if err != nil {
		return fail(err)
	}
	counts := map[string][]int{}
	for _, name := range names {
		if t, id, ok := parsePartitionDirName(name); ok {
			counts[t] = append(counts[t], id)
		}
	}
	start := time.Now()
	for name, ids := range counts {
		slices.Sort(ids)
		for i, id := range ids {
			if i != id {
				return fail(fmt.Errorf("%w: topic %q lacks partition %d", ErrCorrupt, name, i))
			}
		}
		t, err := openTopic(&l.opts, name, len(ids))
		if err != nil {
			return fail(err)
		}
		l.topics[name] = t
	}
	if l.offsets, err = openOffsetStore(o.FS, o.Dir); err != nil {
		return fail(err)
	}
	o.Logger.Info("kafkalog: opened", slog.String("dir", o.Dir), slog.Int("topics", len(l.topics)),
		slog.Duration("took", time.Since(start)), slog.String("flush", o.Flush.String()))
	if o.Flush == FlushInterval {
		l.every(o.FlushInterval, l.Flush)
	}
	if o.RetentionCheckInterval > 0 {
		l.every(o.RetentionCheckInterval, l.EnforceRetention)
	}
	return l, nil
}

// every runs f every d until Close, logging errors.
func (l *Log) every(d time.Duration, f func() error) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				if err := f(); err != nil && !errors.Is(err, ErrClosed) {
					l.opts.Logger.Error("kafkalog: background task failed", slog.Any("err", err))
				}
			}
		}
	}()
}

// Close stops the background tasks, fsyncs and closes every partition (writing a
// clean-shutdown checkpoint), and releases the directory. Operations after Close return
// ErrClosed; waiters in Wait return ErrClosed.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.stop)
	l.mu.Unlock()
	l.wg.Wait()
	var errs []error
	for _, t := range l.topics {
		errs = append(errs, t.close())
	}
	errs = append(errs, l.offsets.close(), l.lock.Close())
	return errors.Join(errs...)
}

// checkTopic checks the name and partition count of a topic to create.
func checkTopic(name string, n int) error {
	if !streamlog.ValidTopicName(name) {
		return fmt.Errorf("%w: %q", ErrInvalidTopic, name)
	}
	if n <= 0 {
		return fmt.Errorf("%w: %d partitions", ErrUnknownPartition, n)
	}
	return nil
}

// CreateTopic creates a topic with n partitions and the Log's settings. It returns
// ErrTopicExists (wrapped) if the topic exists, whatever its partition count; see
// CreateTopicWith to declare a topic idempotently with settings of its own.
func (l *Log) CreateTopic(name string, n int) error {
	if err := checkTopic(name, n); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if t := l.topics[name]; t != nil {
		return fmt.Errorf("%w: %q has %d partitions", ErrTopicExists, name, len(t.partitions))
	}
	return l.createTopicLocked(name, n, TopicConfig{})
}

// createTopicLocked creates the partition directories of a new topic, stores its config
// (unless zero) and opens it. The caller holds l.mu.
func (l *Log) createTopicLocked(name string, n int, c TopicConfig) error {
	for id := range n {
		if err := l.opts.FS.MkdirAll(filepath.Join(l.opts.Dir, partitionDirName(name, id)), 0o755); err != nil {
			return err
		}
	}
	if c != (TopicConfig{}) {
		if err := vfs.WriteFileAtomic(l.opts.FS, topicConfigPath(&l.opts, name), encodeTopicConfig(c)); err != nil {
			return fmt.Errorf("kafkalog: write config of topic %q: %w", name, err)
		}
	}
	if err := l.opts.FS.SyncDir(l.opts.Dir); err != nil {
		return err
	}
	t, err := openTopic(&l.opts, name, n)
	if err != nil {
		return err
	}
	l.topics[name] = t
	l.opts.Logger.Info("kafkalog: topic created", slog.String("topic", name), slog.Int("partitions", n))
	return nil
}

// Topics returns the names of the topics, sorted.
func (l *Log) Topics() []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	names := make([]string, 0, len(l.topics))
	for name := range l.topics {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Partitions returns the number of partitions of a topic, 0 if it does not exist.
func (l *Log) Partitions(topic string) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if t := l.topics[topic]; t != nil {
		return len(t.partitions)
	}
	return 0
}

// partition finds a partition.
func (l *Log) partition(topicName string, id int) (*partition, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, ErrClosed
	}
	t := l.topics[topicName]
	if t == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, topicName)
	}
	return t.partition(id)
}

// Append appends recs to a partition as one batch and returns the offset given to the
// first record (the others follow densely). Records' Offset fields are ignored; a zero
// Timestamp is set to the current time. When Append returns the batch is as durable as
// the flush policy makes it (with FlushBatch: fsynced). After a write or sync error the
// partition returns ErrPartitionFailed until the Log is reopened.
func (l *Log) Append(topic string, partition int, recs []Record) (int64, error) {
	p, err := l.partition(topic, partition)
	if err != nil {
		return 0, err
	}
	return p.append(recs)
}

// Read returns records of a partition from offset on, whole batches at a time, while
// their encoded size stays within maxBytes — but at least one batch when any record at or
// after offset is visible. It returns no records (and no error) at the high watermark,
// and ErrOffsetOutOfRange below OldestOffset or above NextOffset. Returned records own
// their memory.
func (l *Log) Read(topic string, partition int, offset int64, maxBytes int) ([]Record, error) {
	p, err := l.partition(topic, partition)
	if err != nil {
		return nil, err
	}
	return p.read(offset, maxBytes)
}

// OffsetForTime returns the offset of the first visible record whose timestamp (ms) is
// at least ts, or HighWatermark if there is none.
func (l *Log) OffsetForTime(topic string, partition int, ts int64) (int64, error) {
	p, err := l.partition(topic, partition)
	if err != nil {
		return 0, err
	}
	return p.offsetForTime(ts)
}

// Wait blocks until a record at offset or later is visible to Read (offset <
// HighWatermark), ctx is done, or the Log is closed.
func (l *Log) Wait(ctx context.Context, topic string, partition int, offset int64) error {
	p, err := l.partition(topic, partition)
	if err != nil {
		return err
	}
	return p.wait(ctx, offset)
}

// HighWatermark returns the offset below which records are visible to readers: with
// FlushBatch the end of what is fsynced, else NextOffset.
func (l *Log) HighWatermark(topic string, partition int) (int64, error) {
	p, err := l.partition(topic, partition)
	if err != nil {
		return 0, err
	}
	_, hw, _ := p.bounds()
	return hw, nil
}

// NextOffset returns the offset the next appended record will get.
func (l *Log) NextOffset(topic string, partition int) (int64, error) {
	p, err := l.partition(topic, partition)
	if err != nil {
		return 0, err
	}
	_, _, next := p.bounds()
	return next, nil
}

// OldestOffset returns the oldest offset retention has kept (NextOffset when the
// partition is empty).
func (l *Log) OldestOffset(topic string, partition int) (int64, error) {
	p, err := l.partition(topic, partition)
	if err != nil {
		return 0, err
	}
	oldest, _, _ := p.bounds()
	return oldest, nil
}

// Now returns the time by the Log's clock (Options.Now): what Append stamps records
// without a Timestamp with, and what retention and segment age go by.
func (l *Log) Now() time.Time { return l.opts.Now() }

// Stats returns counters of a partition.
func (l *Log) Stats(topic string, partition int) (PartitionStats, error) {
	p, err := l.partition(topic, partition)
	if err != nil {
		return PartitionStats{}, err
	}
	return p.stats(), nil
}

// Flush fsyncs every partition's unsynced appends (run every FlushInterval with that
// policy; callable with any policy).
func (l *Log) Flush() error {
	var errs []error
	for _, p := range l.allPartitions() {
		errs = append(errs, p.flush())
	}
	return errors.Join(errs...)
}

// allPartitions lists every partition (nil after Close).
func (l *Log) allPartitions() []*partition {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil
	}
	var ps []*partition
	for _, t := range l.topics {
		ps = append(ps, t.partitions...)
	}
	return ps
}
