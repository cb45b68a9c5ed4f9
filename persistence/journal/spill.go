package journal

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"time"
)

// spillChunk is how many entries spill moves from a log to its run per hold of the
// write lock.
const spillChunk = 4096

// runFile is a run file on disk: it lives as long as its segment. r is the run that
// was opened on it, if any (closed with it).
type runFile struct {
	path string
	size int64
	r    *run
}

// fileSize is the size of r's file.
func (r *run) fileSize() int64 { return r.hdr + int64(r.count)*runEntryLen + runTrailer }

// runDiskUsage returns the bytes of the run files.
func (s *Store) runDiskUsage() int64 {
	s.segs.mu.RLock()
	defer s.segs.mu.RUnlock()
	var n int64
	for _, rfs := range s.runFiles {
		for _, rf := range rfs {
			n += rf.size
		}
	}
	return n
}

// spillGroup is the messages of one destination's log in one sealed segment, copied
// under the read lock to be written as a run.
type spillGroup struct {
	d       *destination
	seg     uint32
	entries []runEntry
	r       *run
}

// spill moves the messages that destinations' logs hold in sealed segments (no record
// is appended to them any more; at Close, in the active one too, so a reopened store
// holds none of them in memory) to run files, at least spillMin of them per
// destination and segment: it copies them under the read lock, writes each group's run
// file (write temp, fsync, rename, fsync directory) without any lock, and then, under
// the write lock (a chunk at a time), takes out of the log those still stored at the
// same place and marks them live in the run. The caller holds ckptMu (a checkpoint follows, referring to
// the runs; until then the previous checkpoint and the journal still describe them).
func (s *Store) spill() (int, error) {
	least := s.opts.spillMin
	if least <= 0 {
		least = spillMin
	}
	s.segs.mu.RLock()
	ids := s.segs.ids()
	s.segs.mu.RUnlock()
	if len(ids) == 0 {
		return 0, nil
	}
	active := ids[len(ids)-1] // the writer's segment; every other one is sealed
	if s.closing {
		active++
	}

	var groups []*spillGroup
	s.shell.Mu.RLock()
	if s.shell.Closed {
		s.shell.Mu.RUnlock()
		return 0, nil
	}
	for _, d := range s.idx.dests {
		if d.log.Len() < least {
			continue
		}
		bySeg := map[uint32]*spillGroup{}
		d.log.After(0, func(seq uint64, l *loc) bool {
			if l.seg >= active {
				return true
			}
			g := bySeg[l.seg]
			if g == nil {
				g = &spillGroup{d: d, seg: l.seg}
				bySeg[l.seg] = g
			}
			g.entries = append(g.entries, runEntry{seq: seq, l: *l})
			return true
		})
		for _, g := range bySeg {
			if len(g.entries) >= least {
				groups = append(groups, g)
			}
		}
	}
	s.shell.Mu.RUnlock()
	if len(groups) == 0 {
		return 0, nil
	}

	start := time.Now()
	var errs []error
	written := groups[:0]
	for _, g := range groups {
		s.nextRun++
		r, err := writeRun(s.fs, s.opts.Dir, s.nextRun, g.seg, g.d.name, g.entries)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		g.r = r
		written = append(written, g)
	}
	s.segs.mu.Lock()
	for _, g := range written {
		s.runFiles[g.seg] = append(s.runFiles[g.seg], runFile{path: g.r.path, size: g.r.fileSize(), r: g.r})
	}
	s.segs.mu.Unlock()
	// No segment is deleted meanwhile (that happens under ckptMu too). The write lock
	// is taken per spillChunk entries: between chunks every message is stored in
	// exactly one of the log and the run, so readers see it once.
	moved := 0
	for _, g := range written {
		for lo := 0; lo < len(g.entries); lo += spillChunk {
			s.shell.Mu.Lock()
			if s.shell.Closed {
				s.shell.Mu.Unlock()
				break
			}
			for p := lo; p < min(lo+spillChunk, len(g.entries)); p++ {
				e := g.entries[p]
				if l, ok := g.d.log.Get(e.seq); ok && l == e.l {
					g.d.log.Remove(e.seq)
					g.r.setLive(p, e)
					moved++
				}
			}
			if g.r.n > 0 && !slices.Contains(g.d.runs, g.r) {
				g.d.runs = append(g.d.runs, g.r)
			}
			s.shell.Mu.Unlock()
		}
	}
	if moved > 0 {
		s.log.Info("journal: moved out-of-order messages to run files", slog.String("dir", s.opts.Dir),
			slog.Int("runs", len(written)), slog.Int("messages", moved), slog.Duration("took", time.Since(start)))
	}
	return moved, errors.Join(errs...)
}

// removeRunFiles closes and deletes the run files of the segments ids (deleted with
// them). The caller holds segs.mu for writing.
func (s *Store) removeRunFiles(ids []uint32) error {
	var errs []error
	for _, id := range ids {
		for _, rf := range s.runFiles[id] {
			if rf.r != nil && rf.r.f != nil {
				errs = append(errs, rf.r.f.Close())
				rf.r.f = nil
			}
			if err := s.fs.Remove(rf.path); err != nil && !isNotExist(err) {
				errs = append(errs, err)
			}
		}
		delete(s.runFiles, id)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("journal: remove run files: %w", err)
	}
	return nil
}

// removeOrphanRuns deletes the run files no retained checkpoint refers to (written
// for a checkpoint that was then not written, or whose runs emptied since): the
// index's runs are all in the newest checkpoint, which the caller just wrote. Nothing
// is deleted while a retained checkpoint's runs are unknown (the older one found at
// Open; it is replaced by the next checkpoint but one). The caller holds ckptMu.
func (s *Store) removeOrphanRuns() error {
	keep := map[string]bool{}
	for _, c := range s.ckpts {
		if c.runs == nil {
			return nil
		}
		for p := range c.runs {
			keep[p] = true
		}
	}
	s.segs.mu.Lock()
	defer s.segs.mu.Unlock()
	var errs []error
	removed := 0
	for seg, rfs := range s.runFiles {
		kept := rfs[:0]
		for _, rf := range rfs {
			if keep[rf.path] {
				kept = append(kept, rf)
				continue
			}
			if rf.r != nil && rf.r.f != nil {
				errs = append(errs, rf.r.f.Close())
				rf.r.f = nil
			}
			if err := s.fs.Remove(rf.path); err != nil && !isNotExist(err) {
				errs = append(errs, err)
			}
			removed++
		}
		if len(kept) == 0 {
			delete(s.runFiles, seg)
		} else {
			s.runFiles[seg] = kept
		}
	}
	if removed > 0 {
		s.log.Debug("journal: removed run files no checkpoint refers to", slog.String("dir", s.opts.Dir), slog.Int("count", removed))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("journal: remove run files: %w", err)
	}
	return nil
}

// closeRunFiles closes every open run file (at Close).
func (s *Store) closeRunFiles() error {
	s.segs.mu.Lock()
	defer s.segs.mu.Unlock()
	var errs []error
	for _, rfs := range s.runFiles {
		for _, rf := range rfs {
			if rf.r != nil && rf.r.f != nil {
				errs = append(errs, rf.r.f.Close())
				rf.r.f = nil
			}
		}
	}
	return errors.Join(errs...)
}

// registerRunFiles records, at Open, the run files found in the directory (names)
// with the runs the loaded index opened: each is deleted with its segment; one whose
// segment is gone, or a temporary file left by a crash, is deleted now.
func (s *Store) registerRunFiles(names []string, segExists map[uint32]bool) error {
	opened := map[string]*run{}
	for _, d := range s.idx.dests {
		for _, r := range d.runs {
			opened[r.path] = r
		}
	}
	var errs []error
	for _, name := range names {
		path := filepath.Join(s.opts.Dir, name)
		seg, id, ok := parseRunName(name)
		if !ok {
			continue
		}
		s.nextRun = max(s.nextRun, id)
		if !segExists[seg] {
			if r := opened[path]; r != nil && r.f != nil {
				errs = append(errs, r.f.Close())
				r.f = nil
			}
			if err := s.fs.Remove(path); err != nil && !isNotExist(err) {
				errs = append(errs, err)
			}
			continue
		}
		rf := runFile{path: path, r: opened[path]}
		if rf.r != nil {
			rf.size = rf.r.fileSize()
		} else if f, err := s.fs.Open(path); err == nil {
			rf.size, _ = f.Size() // an orphan: its size only counts for DiskUsage
			errs = append(errs, f.Close())
		}
		s.runFiles[seg] = append(s.runFiles[seg], rf)
	}
	return errors.Join(errs...)
}
