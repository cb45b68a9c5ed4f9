package main

import (
	"fmt"
	"log/slog"

	"github.com/activemq-go/broker/config"
	"github.com/activemq-go/broker/kafkalog"
)

// openStreams opens the log behind stream destinations (the streams section), or
// returns nil when no destinationPolicy entry has type: stream.
func openStreams(cfg *config.Config, log *slog.Logger) (*kafkalog.Log, error) {
	if !hasStreams(cfg.DestinationPolicy) {
		return nil, nil
	}
	s := cfg.Streams
	flush, err := flushPolicy(s.Flush)
	if err != nil {
		return nil, err
	}
	// A batch must hold the largest message a connector accepts.
	maxBatch := kafkalog.DefaultMaxBatchBytes
	for _, c := range cfg.TransportConnectors {
		maxBatch = max(maxBatch, int(min(c.MaxFrameSize, c.MaxDataLength))+1<<20)
	}
	l, err := kafkalog.Open(kafkalog.Options{
		Dir:                s.Directory,
		Flush:              flush,
		FlushInterval:      s.FlushInterval,
		SegmentBytes:       s.SegmentBytes,
		SegmentAge:         s.SegmentMs,
		IndexIntervalBytes: int(s.IndexIntervalBytes),
		MaxBatchBytes:      maxBatch,
		Logger:             log,
	})
	if err != nil {
		return nil, fmt.Errorf("streams (directory %s): %w", s.Directory, err)
	}
	return l, nil
}

// flushPolicy maps streams.flush onto kafkalog's policies.
func flushPolicy(s string) (kafkalog.FlushPolicy, error) {
	switch s {
	case config.FlushBatch:
		return kafkalog.FlushBatch, nil
	case config.FlushInterval:
		return kafkalog.FlushInterval, nil
	case config.FlushOS:
		return kafkalog.FlushOS, nil
	}
	return 0, fmt.Errorf("streams.flush %q: use %s, %s or %s", s, config.FlushBatch, config.FlushInterval, config.FlushOS)
}
