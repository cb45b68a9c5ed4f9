package kafkalog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/activemq-go/broker/internal/vfs"
)

// offsetsFile holds the committed offsets of every consumer group.
const offsetsFile = "consumer-offsets.dat"

// offsetKey names one committed offset.
type offsetKey struct {
	group, topic string
	partition    int
}

// offsetStore keeps committed offsets in memory and in offsetsFile, rewritten whole
// (temp file, fsync, rename, directory fsync) on every commit. Concurrent commits share
// one rewrite: a committer that finds a newer snapshot already written returns at once.
type offsetStore struct {
	fs   vfs.FS
	path string

	mu      sync.Mutex
	m       map[offsetKey]int64
	version uint64 // bumped by every change

	writeMu   sync.Mutex
	persisted uint64 // version last written
}

func openOffsetStore(fsys vfs.FS, dir string) (*offsetStore, error) {
	s := &offsetStore{fs: fsys, path: filepath.Join(dir, offsetsFile), m: map[offsetKey]int64{}}
	// A leftover temp file is an unfinished rewrite: the old file is still whole.
	if err := fsys.Remove(s.path + vfs.TempSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	b, err := readFile(fsys, s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if s.m, err = decodeOffsets(b); err != nil {
		return nil, fmt.Errorf("kafkalog: %s: %w", s.path, err)
	}
	return s, nil
}

// Offsets file: "KLOF", version uint8, count uint32, then per entry group (uint16 length
// + bytes), topic (same), partition uint32, offset int64; then the CRC32C of everything
// before it. Big-endian.
func encodeOffsets(m map[offsetKey]int64) []byte {
	keys := make([]offsetKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b offsetKey) int {
		if c := strings.Compare(a.group, b.group); c != 0 {
			return c
		}
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return a.partition - b.partition
	})
	b := append([]byte("KLOF"), formatVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(keys)))
	for _, k := range keys {
		b = binary.BigEndian.AppendUint16(b, uint16(len(k.group)))
		b = append(b, k.group...)
		b = binary.BigEndian.AppendUint16(b, uint16(len(k.topic)))
		b = append(b, k.topic...)
		b = binary.BigEndian.AppendUint32(b, uint32(k.partition))
		b = binary.BigEndian.AppendUint64(b, uint64(m[k]))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeOffsets(b []byte) (map[offsetKey]int64, error) {
	bad := fmt.Errorf("%w: bad consumer offsets file", ErrCorrupt)
	if len(b) < 13 || string(b[:4]) != "KLOF" || b[4] != formatVersion {
		return nil, bad
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, bad
	}
	n := binary.BigEndian.Uint32(body[5:])
	p := body[9:]
	if uint64(n) > uint64(len(p)/16) {
		return nil, bad
	}
	m := make(map[offsetKey]int64, n)
	str := func() (string, bool) {
		if len(p) < 2 || int(binary.BigEndian.Uint16(p)) > len(p)-2 {
			return "", false
		}
		l := int(binary.BigEndian.Uint16(p))
		s := string(p[2 : 2+l])
		p = p[2+l:]
		return s, true
	}
	for range n {
		g, ok1 := str()
		t, ok2 := str()
		if !ok1 || !ok2 || len(p) < 12 {
			return nil, bad
		}
		m[offsetKey{g, t, int(binary.BigEndian.Uint32(p))}] = int64(binary.BigEndian.Uint64(p[4:]))
		p = p[12:]
	}
	if len(p) != 0 {
		return nil, bad
	}
	return m, nil
}

// commit records offset durably.
func (s *offsetStore) commit(k offsetKey, offset int64) error {
	return s.commitMany([]offsetKey{k}, []int64{offset})
}

// commitMany records offsets durably, all in one rewrite.
func (s *offsetStore) commitMany(ks []offsetKey, offsets []int64) error {
	s.mu.Lock()
	for i, k := range ks {
		s.m[k] = offsets[i]
	}
	s.version++
	mine := s.version
	s.mu.Unlock()

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.persisted >= mine {
		return nil // a later snapshot with our change is already on disk
	}
	s.mu.Lock()
	data, v := encodeOffsets(s.m), s.version
	s.mu.Unlock()
	if err := vfs.WriteFileAtomic(s.fs, s.path, data); err != nil {
		return fmt.Errorf("kafkalog: commit offsets: %w", err)
	}
	s.persisted = v
	return nil
}

func (s *offsetStore) committed(k offsetKey) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	off, ok := s.m[k]
	return off, ok
}

// groups lists, sorted, the groups with a committed offset in topic.
func (s *offsetStore) groups(topic string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.m {
		if k.topic == topic && !slices.Contains(out, k.group) {
			out = append(out, k.group)
		}
	}
	slices.Sort(out)
	return out
}

func (s *offsetStore) close() error { return nil }

// ofTopic lists the committed offsets of every group in topic, by group then partition.
func (s *offsetStore) ofTopic(topic string) []GroupOffset {
	s.mu.Lock()
	var out []GroupOffset
	for k, off := range s.m {
		if k.topic == topic {
			out = append(out, GroupOffset{Group: k.group, Topic: k.topic, Partition: k.partition, Offset: off})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b GroupOffset) int {
		if c := strings.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		return a.Partition - b.Partition
	})
	return out
}

// maxNameLen bounds group names, which the offsets file stores with a 16-bit length.
const maxNameLen = math.MaxUint16

// Commit durably records offset (by convention the next offset the group will read) as
// the group's position in a partition. It returns once the offsets file is rewritten and
// fsynced; concurrent commits share one rewrite.
func (l *Log) Commit(group, topic string, partition int, offset int64) error {
	if group == "" || len(group) > maxNameLen {
		return fmt.Errorf("kafkalog: invalid group name of %d bytes", len(group))
	}
	if _, err := l.partition(topic, partition); err != nil {
		return err
	}
	return l.offsets.commit(offsetKey{group, topic, partition}, offset)
}

// CommitOffsets is Commit for several positions at once (Kafka's OffsetCommit request
// carries many partitions): one rewrite of the offsets file records them all, so a
// caller that gathers commits pays one fsync per round rather than one per partition.
// Nothing is recorded if any position names an invalid group or an unknown partition.
func (l *Log) CommitOffsets(offs []GroupOffset) error {
	if len(offs) == 0 {
		return nil
	}
	ks := make([]offsetKey, len(offs))
	vs := make([]int64, len(offs))
	for i, o := range offs {
		if o.Group == "" || len(o.Group) > maxNameLen {
			return fmt.Errorf("kafkalog: invalid group name of %d bytes", len(o.Group))
		}
		if _, err := l.partition(o.Topic, o.Partition); err != nil {
			return err
		}
		ks[i], vs[i] = offsetKey{o.Group, o.Topic, o.Partition}, o.Offset
	}
	return l.offsets.commitMany(ks, vs)
}

// GroupOffsets lists the committed offset of every consumer group in every partition of
// topic, by group then partition (Kafka's kafka-consumer-groups --describe, for lag).
func (l *Log) GroupOffsets(topic string) []GroupOffset { return l.offsets.ofTopic(topic) }

// CommittedGroups lists, sorted, the consumer groups that committed an offset in some
// partition of topic (Kafka's ListGroups narrowed to one topic).
func (l *Log) CommittedGroups(topic string) []string { return l.offsets.groups(topic) }

// Committed returns the group's committed offset in a partition, and false if it never
// committed one.
func (l *Log) Committed(group, topic string, partition int) (int64, bool, error) {
	if _, err := l.partition(topic, partition); err != nil {
		return 0, false, err
	}
	off, ok := l.offsets.committed(offsetKey{group, topic, partition})
	return off, ok, nil
}
