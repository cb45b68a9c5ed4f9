package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/batchrec"
)

// checkpointFile is the name of the checkpoint, inside Options.Dir.
const checkpointFile = "checkpoint"

// checkpointMagic and checkpointVersion open a checkpoint file (see the package comment).
const (
	checkpointMagic   = "LGSTCKPT"
	checkpointVersion = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkpoint is what recovery needs besides the log after the low-water mark: the
// destinations an Add ever reached with their LastSeq, and the durable subscriptions
// with the offset of the record that registered each.
//
// Why this is enough: every stored message lives in a record at or after low, so replay
// from low rebuilds every message, and every ack, purge and subscription change that
// touches one of them. What replay cannot see is the state before low that records after
// it depend on: which subscriptions a topic message was resolved against, and LastSeq of
// messages that are gone. LastSeq only grows, so the value at end (which is at or after
// low) serves. For subscriptions, replay starts with those whose registering record
// (regOff) lies before low, and lets the records after low register the others: a
// subscription registered before low and unchanged until end was registered all along;
// one that was removed, or moved to another topic, between low and end released
// whatever it held, so whether replay attributes messages before its removal to it
// changes nothing of the final state (the release deletes or keeps exactly the same
// messages), and the removing record is replayed as a no-op.
type checkpoint struct {
	low   int64 // every stored message lives at or after this offset
	end   int64 // the log offset the destinations and subscriptions below describe
	dests []destCheckpoint
	subs  []subCheckpoint
}

type destCheckpoint struct {
	name    string
	lastSeq uint64
}

type subCheckpoint struct {
	info   persistence.SubInfo
	regOff int64
}

// snapshot captures the checkpoint of the index. The caller holds the Store's lock.
func (x *index) snapshot() checkpoint {
	c := checkpoint{low: x.lowWater(), end: x.next}
	for _, d := range x.dests {
		if d.added {
			c.dests = append(c.dests, destCheckpoint{d.name, d.lastSeq})
		}
	}
	for _, s := range x.subs {
		c.subs = append(c.subs, subCheckpoint{s.info, s.regOff})
	}
	return c
}

// restore loads c into an empty index, before the log after c.low is replayed onto it.
func (x *index) restore(c checkpoint) {
	for _, dc := range c.dests {
		d := x.destination(dc.name)
		d.added, d.lastSeq = true, dc.lastSeq
	}
	for _, sc := range c.subs {
		if sc.regOff < c.low { // the others are registered again by their replayed AddSub
			x.register(sc.info, sc.regOff)
		}
	}
	x.next = c.low
}

func (c *checkpoint) encode() []byte {
	b := append([]byte(checkpointMagic), checkpointVersion)
	b = binary.AppendUvarint(b, uint64(c.low))
	b = binary.AppendUvarint(b, uint64(c.end))
	b = binary.AppendUvarint(b, uint64(len(c.dests)))
	for _, d := range c.dests {
		b = batchrec.AppendStr(b, d.name)
		b = binary.AppendUvarint(b, d.lastSeq)
	}
	b = binary.AppendUvarint(b, uint64(len(c.subs)))
	for _, s := range c.subs {
		b = batchrec.AppendStr(batchrec.AppendStr(b, s.info.Key.ClientID), s.info.Key.Name)
		b = batchrec.AppendStr(batchrec.AppendStr(b, s.info.Dest), s.info.Selector)
		b = binary.AppendVarint(b, s.info.Created)
		b = binary.AppendUvarint(b, uint64(s.regOff))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeCheckpoint(b []byte) (checkpoint, error) {
	var c checkpoint
	head := len(checkpointMagic) + 1
	if len(b) < head+4 || string(b[:len(checkpointMagic)]) != checkpointMagic {
		return c, fmt.Errorf("%w: not a checkpoint file", ErrCorrupt)
	}
	if v := b[len(checkpointMagic)]; v != checkpointVersion {
		return c, fmt.Errorf("%w: checkpoint format version %d, want %d", ErrCorrupt, v, checkpointVersion)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return c, fmt.Errorf("%w: checkpoint checksum mismatch", ErrCorrupt)
	}
	r := reader{b: body, off: head}
	c.low, c.end = int64(r.uvarint()), int64(r.uvarint())
	c.dests = make([]destCheckpoint, r.count(2))
	for i := range c.dests {
		c.dests[i] = destCheckpoint{r.str(), r.uvarint()}
	}
	c.subs = make([]subCheckpoint, r.count(6))
	for i := range c.subs {
		s := &c.subs[i]
		s.info.Key = persistence.SubKey{ClientID: r.str(), Name: r.str()}
		s.info.Dest, s.info.Selector = r.str(), r.str()
		s.info.Created = r.varint()
		s.regOff = int64(r.uvarint())
	}
	if r.err == nil && r.off != len(body) {
		r.fail("trailing bytes")
	}
	if r.err == nil && (c.low < 0 || c.end < c.low) {
		r.fail(fmt.Sprintf("low-water mark %d after end %d", c.low, c.end))
	}
	if r.err != nil {
		return checkpoint{}, fmt.Errorf("checkpoint: %w", r.err)
	}
	return c, nil
}

// readCheckpoint reads the checkpoint file; a missing one is the empty checkpoint of a
// new store.
func readCheckpoint(fsys vfs.FS, path string) (checkpoint, int64, error) {
	f, err := fsys.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return checkpoint{}, 0, nil
	}
	if err != nil {
		return checkpoint{}, 0, err
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		return checkpoint{}, 0, err
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return checkpoint{}, 0, err
	}
	c, err := decodeCheckpoint(b)
	return c, n, err
}

// checkpoint syncs the log, writes a new checkpoint if the low-water mark moved since
// the last one, then deletes the log segments wholly below the checkpointed mark. While
// the mark stays put the checkpoint on disk stays valid (replay from it sees every later
// change), so an idle or pinned store rewrites nothing.
func (s *Store) checkpoint() error {
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	s.shell.Mu.RLock()
	if s.shell.Closed {
		s.shell.Mu.RUnlock()
		return persistence.ErrClosed
	}
	moved := s.idx.lowWater() != s.ckptLow
	var c checkpoint
	if moved {
		c = s.idx.snapshot()
	}
	s.shell.Mu.RUnlock()
	if err := s.shell.Failure(); err != nil {
		return err
	}
	// The checkpoint describes the log up to c.end: that much must be durable before it
	// is, or a power cut could leave a checkpoint past the end of the log, and records
	// appended after recovery at offsets below the mark would be skipped. The log is
	// synced also when the mark stays, which bounds what FlushOS may lose to a
	// checkpoint interval (a sync with nothing to sync costs nothing).
	if err := s.log.Flush(); err != nil {
		return s.shell.Fail(fmt.Errorf("flush before checkpoint: %w", err))
	}
	if moved {
		data := c.encode()
		if err := vfs.WriteFileAtomic(s.fs, filepath.Join(s.opts.Dir, checkpointFile), data); err != nil {
			return fmt.Errorf("logstore: write checkpoint: %w", err)
		}
		s.ckptLow = c.low
		s.ckptSize.Store(int64(len(data)))
	}
	// Scans hold delMu while they read, from before they pick their offsets: every offset
	// they pick is then at or after the checkpointed mark, or the deletion waits.
	s.delMu.Lock()
	n, err := s.log.DeleteBefore(logTopic, 0, s.ckptLow)
	s.delMu.Unlock()
	if err != nil {
		return fmt.Errorf("logstore: delete segments below offset %d: %w", s.ckptLow, err)
	}
	if n > 0 {
		s.lg.Debug("logstore: deleted acknowledged segments", slog.String("dir", s.opts.Dir),
			slog.Int("segments", n), slog.Int64("low_water", s.ckptLow))
	}
	return nil
}
