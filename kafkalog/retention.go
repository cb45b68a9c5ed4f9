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
	doomed, oldest, err := p.detach(func(segs []*segment) int {
		var total int64
		for _, s := range segs {
			total += s.size
		}
		n := 0 // segments to delete
		for n < len(segs)-1 {
			s := segs[n]
			byTime := cutoff != math.MinInt64 && s.maxTs < cutoff
			bySize := limit > 0 && total > limit
			if !byTime && !bySize {
				break
			}
			total -= s.size
			n++
		}
		return n
	})
	if err != nil || len(doomed) == 0 {
		return nil // closed: nothing to do
	}
	if err := p.removeSegments(doomed); err != nil {
		return fmt.Errorf("kafkalog: retention of %s: %w", p.name(), err)
	}
	p.opts.Logger.Info("kafkalog: retention deleted segments", slog.String("partition", p.name()),
		slog.Int("segments", len(doomed)), slog.Int64("oldest_offset", oldest))
	return nil
}

// detach drops from the partition the oldest sealed segments, as many as count says
// (never the active one), and returns them for removeSegments, with the oldest offset
// kept. Readers hold mu too, so once it is released none is inside a detached segment,
// and none finds one again; a failed removal cannot leave a half-removed segment
// visible. ErrClosed once the partition is closed.
func (p *partition) detach(count func(segs []*segment) int) ([]*segment, int64, error) {
	p.syncMu.Lock() // no fsync may be running on a segment being detached
	defer p.syncMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, 0, ErrClosed
	}
	n := min(count(p.segs), len(p.segs)-1)
	if n <= 0 {
		return nil, p.segs[0].base, nil
	}
	doomed := p.segs[:n:n]
	p.segs = append([]*segment(nil), p.segs[n:]...)
	return doomed, p.segs[0].base, nil
}

// removeSegments closes and deletes detached segments, then syncs the directory,
// without the partition's locks: the disk may take its time.
func (p *partition) removeSegments(doomed []*segment) error {
	var errs []error
	for _, s := range doomed {
		errs = append(errs, s.remove())
	}
	errs = append(errs, p.fs.SyncDir(p.dir))
	return errors.Join(errs...)
}
