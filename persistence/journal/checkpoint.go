package journal

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/activemq-go/broker/persistence"
)

// Checkpoint file constants (part of the on-disk format, see the package comment).
const (
	ckptMagic = "AMQGOIDX"
	// ckptVersion is the checkpoint layout this build writes; it reads it,
	// ckptVersionV2 (its extents' lengths converted at load; no runs: what a log held
	// in sealed segments stays in it until the next checkpoint spills it) and
	// ckptVersionV1 (converted at load: every message goes to its destination's log).
	ckptVersion    = 3
	ckptVersionV2  = 2
	ckptVersionV1  = 1
	ckptHeaderSize = 40
	ckptTrailer    = 12
	// retainedCheckpoints is how many checkpoint files are kept: if the newest is
	// damaged, the one before it still works, because segments are only deleted below
	// the oldest retained checkpoint's position.
	retainedCheckpoints = 2
)

// checkpointF is a checkpoint file on disk.
type checkpointF struct {
	version uint32 // of a loaded checkpoint (0: only its header was read)
	gen     uint64
	pos     pos // the journal position it covers: replay starts here
	path    string
	size    int64
	// runs are the paths of the run files it refers to; nil when unknown (only its
	// header was read).
	runs map[string]bool
}

func checkpointName(gen uint64) string {
	return "index-" + strconv.FormatUint(gen, 10) + ".ckpt"
}

func parseCheckpointName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, "index-")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, ".ckpt")
	if !ok || s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	gen, err := strconv.ParseUint(s, 10, 64)
	return gen, err == nil && gen > 0
}

// snapshot is a consistent copy of the index at a journal position, taken under the
// read lock and written out without it.
type snapshot struct {
	pos   pos
	dests []destSnap
}

type destSnap struct {
	name    string
	added   bool
	lastSeq uint64
	curSeg  uint32
	curMax  uint64
	addMin  uint64
	movMax  uint64
	ext     []*extent
	moved   []*extent
	keys    []uint64 // the log
	locs    []loc
	runs    []runSnap
	subs    []subSnap
}

// runSnap is what a checkpoint says of a run: its file and which entries are stored.
type runSnap struct {
	path  string
	id    uint64
	seg   uint32
	count int
	crc   uint32
	live  []uint64
}

type subSnap struct {
	info    persistence.SubInfo
	pending seqSet
}

// snapshot copies the index: extents (a bit per seq plus their tables), the logs' live
// entries (24 bytes each) and the subscriptions' pending sets (a bit a seq of their
// range, 8 bytes a seq far from it).
func (s *Store) snapshot() *snapshot {
	s.shell.Mu.RLock()
	defer s.shell.Mu.RUnlock()
	snap := &snapshot{pos: s.idx.applied, dests: make([]destSnap, 0, len(s.idx.dests))}
	for _, d := range s.idx.dests {
		ds := destSnap{name: d.name, added: d.added, lastSeq: d.lastSeq, curSeg: d.curSeg, curMax: d.curMax,
			addMin: d.curAddMin, movMax: d.curMovMax}
		ds.ext = make([]*extent, 0, len(d.ext))
		for _, e := range d.ext {
			ds.ext = append(ds.ext, e.clone())
		}
		for _, e := range d.moved {
			ds.moved = append(ds.moved, e.clone())
		}
		ds.keys, ds.locs = d.log.appendLive(make([]uint64, 0, d.log.Len()), make([]loc, 0, d.log.Len()))
		for _, r := range d.runs {
			ds.runs = append(ds.runs, runSnap{path: r.path, id: r.id, seg: r.seg, count: r.count, crc: r.crc, live: slices.Clone(r.live)})
		}
		for _, sub := range d.subs {
			ss := subSnap{info: sub.info}
			ss.pending = sub.pending.clone()
			ds.subs = append(ds.subs, ss)
		}
		snap.dests = append(snap.dests, ds)
	}
	return snap
}

// pinned returns the segments the snapshot refers to.
func (snap *snapshot) pinned() map[uint32]bool {
	m := make(map[uint32]bool)
	for i := range snap.dests {
		for _, e := range slices.Concat(snap.dests[i].ext, snap.dests[i].moved) {
			if e.n > 0 {
				m[e.seg] = true
			}
		}
		for _, r := range snap.dests[i].runs {
			m[r.seg] = true
		}
		last := uint32(0)
		for _, l := range snap.dests[i].locs {
			if l.seg != last {
				m[l.seg], last = true, l.seg
			}
		}
	}
	return m
}

// checkpoint writes the index to a new checkpoint file (write temp, fsync, rename, fsync
// directory), drops checkpoint files beyond the retained ones, and deletes the segments
// nothing refers to any more. With barrier, it first makes the journal durable up to the
// snapshot's position (a checkpoint must never describe records that are not on disk);
// Close passes false because the writer has synced everything already. Nothing is
// written when nothing was applied since the last checkpoint.
func (s *Store) checkpoint(barrier bool) error {
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	spilled, err := s.spill()
	if err != nil { // what was not spilled stays in the logs; the checkpoint goes on
		s.log.Warn("journal: cannot write a run file", slog.String("dir", s.opts.Dir), slog.Any("err", err))
	}
	snap := s.snapshot()
	if n := len(s.ckpts); n > 0 && s.ckpts[n-1].pos == snap.pos && s.ckpts[n-1].version == ckptVersion && spilled == 0 {
		return nil // nothing changed (an older version's checkpoint is rewritten)
	}
	if barrier {
		if err := s.shell.Barrier(); err != nil {
			return err
		}
	}
	s.nextGen++
	c, err := writeCheckpoint(s.fs, s.opts.Dir, s.nextGen, snap)
	if err != nil {
		return err
	}
	c.version = ckptVersion
	s.ckpts = append(s.ckpts, c)
	for len(s.ckpts) > retainedCheckpoints {
		if err := s.fs.Remove(s.ckpts[0].path); err != nil && !isNotExist(err) {
			s.log.Warn("journal: cannot remove an old checkpoint", slog.String("file", s.ckpts[0].path), slog.Any("err", err))
		}
		s.ckpts = s.ckpts[1:]
	}
	return errors.Join(s.deleteDead(snap), s.removeOrphanRuns())
}

// deleteDead deletes the segments below the oldest retained checkpoint's position that
// neither the newest checkpoint nor the index refers to. Below that position no record
// is ever replayed, so what such a segment holds (adds, acks, anything) is needed by
// no future recovery; see the package comment for why this never resurrects a message.
// The caller holds ckptMu.
func (s *Store) deleteDead(snap *snapshot) error {
	limit := s.ckpts[0].pos.seg
	for _, c := range s.ckpts {
		limit = min(limit, c.pos.seg)
	}
	pinned := snap.pinned()
	s.segs.mu.Lock()
	defer s.segs.mu.Unlock()
	s.shell.Mu.Lock()
	var dead []uint32
	for _, id := range s.segs.ids() {
		if id >= limit {
			break
		}
		if st := s.idx.live[id]; pinned[id] || (st != nil && st.msgs > 0) {
			continue
		}
		dead = append(dead, id)
		delete(s.idx.live, id)
	}
	s.shell.Mu.Unlock()
	if len(dead) == 0 {
		return nil
	}
	err := errors.Join(s.segs.remove(dead), s.removeRunFiles(dead))
	s.log.Info("journal: deleted dead segments", slog.String("dir", s.opts.Dir), slog.Int("count", len(dead)),
		slog.String("first", segmentName(dead[0])), slog.String("last", segmentName(dead[len(dead)-1])))
	if err != nil {
		return fmt.Errorf("journal: delete segments: %w", err)
	}
	return nil
}
