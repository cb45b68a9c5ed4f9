package kafkalog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/activemq-go/broker/internal/vfs"
)

// checkpointFile is the name of a partition's recovery checkpoint.
const checkpointFile = "recovery-checkpoint"

// checkpoint is a partition's recovery checkpoint: every segment before the one holding
// offset point is durable and whole; clean says the log was closed cleanly at point (then
// nothing needs re-validation and the indexes are trusted).
type checkpoint struct {
	point int64
	clean bool
}

// Checkpoint file: "KLRP", version uint8, flags uint8 (bit 0 clean), point int64,
// CRC32C of the preceding bytes (big-endian).
const checkpointSize = 4 + 1 + 1 + 8 + 4

func (c checkpoint) encode() []byte {
	b := make([]byte, 0, checkpointSize)
	b = append(b, "KLRP"...)
	var flags byte
	if c.clean {
		flags = 1
	}
	b = append(b, formatVersion, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(c.point))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeCheckpoint(b []byte) (checkpoint, error) {
	if len(b) != checkpointSize || string(b[:4]) != "KLRP" || b[4] != formatVersion ||
		crc32.Checksum(b[:checkpointSize-4], castagnoli) != binary.BigEndian.Uint32(b[checkpointSize-4:]) {
		return checkpoint{}, fmt.Errorf("%w: bad recovery checkpoint", ErrCorrupt)
	}
	return checkpoint{point: int64(binary.BigEndian.Uint64(b[6:])), clean: b[5]&1 != 0}, nil
}

func writeCheckpoint(fsys vfs.FS, dir string, c checkpoint) error {
	return vfs.WriteFileAtomic(fsys, filepath.Join(dir, checkpointFile), c.encode())
}

// readFile returns a whole file's contents.
func readFile(fsys vfs.FS, path string) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

// openPartition opens (creating if empty) the partition in dir and recovers it:
//
//  1. leftover temp files and index files without a log are removed;
//  2. after a clean shutdown the indexes are trusted and only the active segment's tail
//     (from its last index entry) is checked;
//  3. otherwise every segment from the one holding the checkpoint's recovery point on is
//     re-validated batch by batch (CRC, framing, dense offsets), its indexes rebuilt and a
//     torn tail truncated; if a segment loses bytes, all later segments are deleted;
//  4. any segment whose index files are missing or fail a sanity check is rebuilt too.
func openPartition(o *Options, topic string, id int, dir string) (*partition, error) {
	p := &partition{opts: o, fs: o.FS, topic: topic, id: id, dir: dir}
	log := o.Logger.With(slog.String("partition", p.name()))
	names, err := o.FS.List(dir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	orphans := map[string]int64{}
	removed := false
	for _, name := range names {
		if strings.HasSuffix(name, vfs.TempSuffix) {
			if err := o.FS.Remove(filepath.Join(dir, name)); err != nil {
				return nil, err
			}
			removed = true
			continue
		}
		base, suffix, ok := parseSegmentName(name)
		switch {
		case !ok:
		case suffix == logSuffix:
			bases = append(bases, base)
		case suffix == indexSuffix || suffix == timeIndexSuffix:
			orphans[name] = base
		}
	}
	for name, base := range orphans {
		if !slices.Contains(bases, base) {
			if err := o.FS.Remove(filepath.Join(dir, name)); err != nil {
				return nil, err
			}
			removed = true
		}
	}
	slices.Sort(bases)

	cp := checkpoint{}
	if b, err := readFile(o.FS, filepath.Join(dir, checkpointFile)); err == nil {
		if cp, err = decodeCheckpoint(b); err != nil {
			log.Warn("kafkalog: recovery checkpoint unreadable, re-validating every segment", slog.Any("err", err))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}

	if len(bases) == 0 {
		s, err := createSegment(o.FS, dir, 0, o.IndexIntervalBytes)
		if err != nil {
			return nil, err
		}
		p.segs = []*segment{s}
		removed = true
	}
	for i, base := range bases {
		last := i == len(bases)-1
		nextBase := int64(-1)
		if !last {
			nextBase = bases[i+1]
		}
		s, rebuild, err := openSegment(o.FS, dir, base, nextBase, o.IndexIntervalBytes)
		if err != nil {
			p.closeSegments()
			return nil, err
		}
		p.segs = append(p.segs, s)
		if len(p.segs) > 1 && s.base != p.segs[len(p.segs)-2].next {
			p.closeSegments()
			return nil, fmt.Errorf("%w: %s: segment %d does not follow offset %d", ErrCorrupt,
				p.name(), s.base, p.segs[len(p.segs)-2].next)
		}
		recover := rebuild || !cp.clean && (last || nextBase > cp.point)
		if !recover && last {
			ok, err := s.loadTail(o.MaxBatchBytes)
			if err != nil {
				p.closeSegments()
				return nil, err
			}
			recover = !ok || s.next != cp.point
		} else if !recover {
			s.next = nextBase
			if e, ok := s.tidx.last(); ok {
				s.maxTs, s.maxTsOff = e.ts, s.base+int64(e.rel)
			}
		}
		if !recover {
			continue
		}
		cut, err := s.rebuild(o.MaxBatchBytes)
		if err != nil {
			p.closeSegments()
			return nil, err
		}
		if cut > 0 {
			log.Warn("kafkalog: truncated torn or corrupt tail", slog.Int64("segment", base),
				slog.Int64("bytes", cut), slog.Int64("next_offset", s.next))
		} else if rebuild {
			log.Info("kafkalog: rebuilt segment index", slog.Int64("segment", base))
		}
		if !last && (cut > 0 || s.next != nextBase) {
			// Later segments follow a gap: they cannot be trusted.
			for _, b := range bases[i+1:] {
				later := &segment{fs: o.FS, prefix: segmentPrefix(dir, b)}
				if err := later.remove(); err != nil {
					p.closeSegments()
					return nil, err
				}
				log.Warn("kafkalog: deleted segment after truncation", slog.Int64("segment", b))
			}
			removed = true
			break
		}
	}
	if removed {
		if err := o.FS.SyncDir(dir); err != nil {
			p.closeSegments()
			return nil, err
		}
	}
	act := p.active()
	// What recovery read may still be only in the page cache (after a process crash):
	// make it durable before it counts as synced.
	if err := act.log.Sync(); err != nil {
		p.closeSegments()
		return nil, err
	}
	p.next, p.synced, p.hw = act.next, act.next, act.next
	return p, nil
}

func (p *partition) closeSegments() {
	for _, s := range p.segs {
		s.close()
	}
	p.segs = nil
}
