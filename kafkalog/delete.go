package kafkalog

import (
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
	// A sealed segment's records are [base, next base); the active one is never a
	// candidate, whatever offset says.
	doomed, oldest, err := p.detach(func(segs []*segment) int {
		n := 0
		for n < len(segs)-1 && segs[n+1].base <= offset {
			n++
		}
		return n
	})
	if err != nil || len(doomed) == 0 {
		return 0, err
	}
	n := len(doomed)
	if err := p.removeSegments(doomed); err != nil {
		return n, fmt.Errorf("kafkalog: delete before %d in %s: %w", offset, p.name(), err)
	}
	p.opts.Logger.Info("kafkalog: deleted segments below offset", slog.String("partition", p.name()),
		slog.Int("segments", n), slog.Int64("before", offset), slog.Int64("oldest_offset", oldest))
	return n, nil
}
