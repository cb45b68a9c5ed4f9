package logstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/activemq-go/broker/internal/vfs"
)

// replayReadBytes is how much of the log recovery reads at a time.
const replayReadBytes = 4 << 20

// recover rebuilds the index: the checkpoint, then every record from its low-water mark
// to the end of the log, applied as the writer applied it. The log itself has already
// recovered (cut a torn tail at a batch boundary), so every record read is whole.
func (s *Store) recover(ctx context.Context) error {
	start := time.Now()
	path := filepath.Join(s.opts.Dir, checkpointFile)
	// A leftover temp file is an unfinished rewrite: the checkpoint itself is still whole.
	if err := s.fs.Remove(path + vfs.TempSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("logstore: remove unfinished checkpoint: %w", err)
	}
	c, size, err := readCheckpoint(s.fs, path)
	if err != nil {
		return fmt.Errorf("logstore: read checkpoint: %w", err)
	}
	oldest, err := s.log.OldestOffset(logTopic, 0)
	if err != nil {
		return fmt.Errorf("logstore: %w", err)
	}
	next, err := s.log.NextOffset(logTopic, 0)
	if err != nil {
		return fmt.Errorf("logstore: %w", err)
	}
	// The checkpoint is written only after the log is synced past its end, and segments
	// are deleted only below its mark; anything else is damage recovery cannot repair.
	if c.low < oldest || c.end > next {
		return fmt.Errorf("%w: the checkpoint covers offsets [%d, %d) but the log holds [%d, %d)",
			ErrCorrupt, c.low, c.end, oldest, next)
	}
	s.idx.restore(c)
	s.ckptLow = c.low
	s.ckptSize.Store(size)
	replayed := 0
	var ops []op
	for off := c.low; off < next; {
		if err := ctx.Err(); err != nil {
			return err
		}
		recs, err := s.log.Read(logTopic, 0, off, replayReadBytes)
		if err != nil {
			return fmt.Errorf("logstore: replay from offset %d: %w", off, err)
		}
		if len(recs) == 0 {
			return fmt.Errorf("%w: the log ends at offset %d, before its next offset %d", ErrCorrupt, off, next)
		}
		for _, r := range recs {
			if ops, err = decodeRecord(r.Value, ops[:0]); err != nil {
				return fmt.Errorf("logstore: record at offset %d: %w", r.Offset, err)
			}
			s.idx.applyRecord(r.Offset, ops)
			replayed++
		}
		off = recs[len(recs)-1].Offset + 1
	}
	s.idx.next = next
	s.recovery = RecoveryInfo{LowWater: c.low, NextOffset: next, ReplayedRecords: replayed, Duration: time.Since(start)}
	s.lg.Info("logstore: opened", slog.String("dir", s.opts.Dir), slog.Int64("low_water", c.low),
		slog.Int64("next_offset", next), slog.Int("replayed_records", replayed),
		slog.Int("destinations", len(s.idx.dests)), slog.Int("subscriptions", len(s.idx.subs)),
		slog.Duration("took", s.recovery.Duration), slog.String("flush", s.opts.Flush.String()))
	return nil
}
