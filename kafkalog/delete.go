package kafkalog

import (
	"errors"
	"fmt"
	"log/slog"
)

// DeleteBefore deletes the oldest sealed segments of a partition whose records all lie
// below offset, and returns how many it deleted. It is retention driven by the caller
// rather than by time or size: a user that knows it will never read below offset again
// (a store whose low-water mark passed it, a consumer group that committed past it) gives
// the disk back. Whole segments go, oldest first and only as a prefix; the active segment
// is never deleted, so OldestOffset moves to the base of the first segment kept, which
// is at most offset. Offsets at or after offset stay readable.
func (l *Log) DeleteBefore(topic string, partition int, offset int64) (deleted int, err error) {
	p, err := l.partition(topic, partition)
	if err != nil {
		return 0, err
	}
	return p.deleteBefore(offset)
}

// deleteBefore removes the prefix of sealed segments that end at or below offset.
func (p *partition) deleteBefore(offset int64) (int, error) {
	p.syncMu.Lock() // no sync may be running on a segment being removed
	defer p.syncMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, ErrClosed
	}
	n := 0
	// A sealed segment's records are [base, next base); the active one is never a
	// candidate, whatever offset says.
	for n < len(p.segs)-1 && p.segs[n+1].base <= offset {
		n++
	}
	if n == 0 {
		return 0, nil
	}
	doomed := p.segs[:n]
	// Readers hold mu too, so none is inside a segment being removed; dropping them from
	// the list first keeps a failed removal from leaving a half-removed segment visible.
	p.segs = append([]*segment(nil), p.segs[n:]...)
	var errs []error
	for _, s := range doomed {
		errs = append(errs, s.remove())
	}
	errs = append(errs, p.fs.SyncDir(p.dir))
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("kafkalog: delete before %d in %s: %w", offset, p.name(), err)
	}
	p.opts.Logger.Info("kafkalog: deleted segments below offset", slog.String("partition", p.name()),
		slog.Int("segments", n), slog.Int64("before", offset), slog.Int64("oldest_offset", p.segs[0].base))
	return n, nil
}
