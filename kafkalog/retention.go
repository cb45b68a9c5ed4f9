package kafkalog

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
)

// EnforceRetention deletes, in every partition, the oldest sealed segments whose newest
// record is older than the retention, then the oldest sealed segments while the
// partition is larger than the size limit: the topic's TopicConfig where it sets them,
// else Options.Retention and Options.RetentionBytes. Whole segments go at a time, oldest
// first, never the active one; OldestOffset moves to the first segment kept. It runs
// every RetentionCheckInterval in the background.
func (l *Log) EnforceRetention() error {
	var errs []error
	for _, p := range l.allPartitions() {
		errs = append(errs, p.enforceRetention())
	}
	return errors.Join(errs...)
}

// enforceRetention applies the retention limits to one partition.
func (p *partition) enforceRetention() error {
	cutoff, limit := p.retentionLimits()
	p.syncMu.Lock() // no sync may be running on a segment being removed
	defer p.syncMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	var total int64
	for _, s := range p.segs {
		total += s.size
	}
	n := 0 // segments to delete
	for n < len(p.segs)-1 {
		s := p.segs[n]
		byTime := cutoff != math.MinInt64 && s.maxTs < cutoff
		bySize := limit > 0 && total > limit
		if !byTime && !bySize {
			break
		}
		total -= s.size
		n++
	}
	if n == 0 {
		return nil
	}
	doomed := p.segs[:n]
	// Drop them from the list first: readers never see a half-removed segment.
	p.segs = append([]*segment(nil), p.segs[n:]...)
	var errs []error
	for _, s := range doomed {
		errs = append(errs, s.remove())
	}
	errs = append(errs, p.fs.SyncDir(p.dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kafkalog: retention of %s: %w", p.name(), err)
	}
	p.opts.Logger.Info("kafkalog: retention deleted segments", slog.String("partition", p.name()),
		slog.Int("segments", n), slog.Int64("oldest_offset", p.segs[0].base))
	return nil
}
