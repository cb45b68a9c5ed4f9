package kafkaengine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/activemq-go/broker/destinations/streamlog"
)

// waitStep is how long one Fetch of Wait is held by the Kafka broker.
const waitStep = 500 * time.Millisecond

// fetchTries bounds the retries of a Fetch after the partition's leader moved.
const fetchTries = 5

var decompressor = kgo.DefaultDecompressor()

// Read returns records of a partition from offset on, at least one batch if any
// record at or after offset is readable, about maxBytes at most. At the high watermark
// it returns none; below the log start offset or past the high watermark it returns
// streamlog.ErrOffsetOutOfRange.
func (e *Engine) Read(topic string, partition int, offset int64, maxBytes int) ([]streamlog.Record, error) {
	ctx, cancel := e.reqCtx()
	defer cancel()
	fp, err := e.fetch(ctx, topic, partition, offset, maxBytes, 0)
	if err != nil {
		return nil, err
	}
	recs := make([]streamlog.Record, len(fp.Records))
	for i, kr := range fp.Records {
		r := &recs[i]
		r.Offset, r.Timestamp, r.Key, r.Value = kr.Offset, kr.Timestamp.UnixMilli(), kr.Key, kr.Value
		if len(kr.Headers) > 0 {
			r.Headers = make([][2]string, len(kr.Headers))
			for j, h := range kr.Headers {
				r.Headers[j] = [2]string{h.Key, string(h.Value)}
			}
		}
	}
	return recs, nil
}

// Wait returns once the partition has a record at offset (its high watermark is past
// it), or ctx ends, or the engine closes (streamlog.ErrClosed).
func (e *Engine) Wait(ctx context.Context, topic string, partition int, offset int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(e.ctx, cancel)
	defer stop()
	for {
		fctx, fcancel := context.WithTimeout(ctx, e.opts.RequestTimeout+waitStep)
		fp, err := e.fetch(fctx, topic, partition, offset, 1, waitStep)
		fcancel()
		switch {
		case e.ctx.Err() != nil:
			return streamlog.ErrClosed
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, streamlog.ErrOffsetOutOfRange):
			return nil // the reader finds out with Read
		case err != nil:
			e.opts.Logger.Debug("kafka wait fetch failed", "topic", e.kafkaTopic(topic), "partition", partition, "err", err)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(waitStep):
			}
		case fp.HighWatermark > offset:
			return nil
		}
	}
}

// fetch sends one Fetch for a partition at offset to its leader, held up to wait for
// a first byte, and decodes the records; it follows a moved leader.
func (e *Engine) fetch(ctx context.Context, topic string, partition int, offset int64, maxBytes int, wait time.Duration) (kgo.FetchPartition, error) {
	kt := e.kafkaTopic(topic)
	refresh := false
	var last error
	for try := range fetchTries {
		if e.ctx.Err() != nil {
			return kgo.FetchPartition{}, streamlog.ErrClosed
		}
		if refresh {
			// Metadata answers are cached a moment (MetadataMinAge): give the new
			// leader time to show.
			select {
			case <-ctx.Done():
				return kgo.FetchPartition{}, e.failed("read", topic, partition, ctx.Err())
			case <-time.After(time.Duration(50<<try) * time.Millisecond):
			}
		}
		m, err := e.partitionMeta("read", topic, partition, refresh)
		if err != nil {
			return kgo.FetchPartition{}, err
		}
		fp, err := e.fetchFrom(ctx, m, kt, partition, offset, maxBytes, wait)
		switch {
		case err == nil:
			return fp, nil
		case errors.Is(err, kerr.OffsetOutOfRange):
			return fp, fmt.Errorf("%w: %s-%d offset %d", streamlog.ErrOffsetOutOfRange, kt, partition, offset)
		case ctx.Err() != nil:
			return fp, e.failed("read", topic, partition, ctx.Err())
		case errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.LeaderNotAvailable),
			errors.Is(err, kerr.FencedLeaderEpoch), errors.Is(err, kerr.UnknownLeaderEpoch),
			errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID),
			errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.RequestTimedOut):
			refresh, last = true, err
		default:
			// A connection error: the leader may be gone; look again.
			if !kerr.IsRetriable(err) && errors.As(err, new(*kerr.Error)) {
				return fp, e.failed("read", topic, partition, err)
			}
			refresh, last = true, err
		}
	}
	return kgo.FetchPartition{}, e.failed("read", topic, partition, last)
}

// fetchFrom is one Fetch request to the partition's leader.
func (e *Engine) fetchFrom(ctx context.Context, m *topicMeta, kt string, partition int, offset int64, maxBytes int, wait time.Duration) (kgo.FetchPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(wait.Milliseconds())
	req.MinBytes = 1
	req.MaxBytes = int32(max(maxBytes, 1))
	req.SessionEpoch = -1 // no fetch session
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = kt, m.id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = int32(partition)
	rp.FetchOffset = offset
	rp.LogStartOffset = -1
	rp.CurrentLeaderEpoch = -1
	rp.PartitionMaxBytes = req.MaxBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := e.cl.Broker(int(m.leaders[partition])).Request(ctx, req)
	if err != nil {
		return kgo.FetchPartition{}, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return kgo.FetchPartition{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kgo.FetchPartition{}, fmt.Errorf("fetch response of %d topics for one partition", len(resp.Topics))
	}
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: offset, Topic: kt, Partition: int32(partition)},
		&resp.Topics[0].Partitions[0], decompressor, nil)
	return fp, fp.Err
}
