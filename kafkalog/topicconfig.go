package kafkalog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"math"
	"path/filepath"
	"time"

	"github.com/activemq-go/broker/internal/vfs"
)

// topicConfigFile holds a topic's TopicConfig, in the directory of its partition 0, so
// that deleting the partition directories deletes it too. A topic without the file has
// the zero TopicConfig.
const topicConfigFile = "topic-config"

// Topic config file: "KLTC", version uint8, retention int64 (ns), retentionBytes int64,
// CRC32C of the preceding bytes (big-endian).
const topicConfigSize = 4 + 1 + 8 + 8 + 4

func encodeTopicConfig(c TopicConfig) []byte {
	b := make([]byte, 0, topicConfigSize)
	b = append(b, "KLTC"...)
	b = append(b, formatVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Retention))
	b = binary.BigEndian.AppendUint64(b, uint64(c.RetentionBytes))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeTopicConfig(b []byte) (TopicConfig, error) {
	if len(b) != topicConfigSize || string(b[:4]) != "KLTC" || b[4] != formatVersion ||
		crc32.Checksum(b[:topicConfigSize-4], castagnoli) != binary.BigEndian.Uint32(b[topicConfigSize-4:]) {
		return TopicConfig{}, fmt.Errorf("%w: bad topic config", ErrCorrupt)
	}
	return TopicConfig{
		Retention:      time.Duration(binary.BigEndian.Uint64(b[5:])),
		RetentionBytes: int64(binary.BigEndian.Uint64(b[13:])),
	}, nil
}

// topicConfigPath is where the config of topic name lives.
func topicConfigPath(o *Options, name string) string {
	return filepath.Join(o.Dir, partitionDirName(name, 0), topicConfigFile)
}

// readTopicConfig loads a topic's config; a missing file is the zero config.
func readTopicConfig(o *Options, name string) (TopicConfig, error) {
	b, err := readFile(o.FS, topicConfigPath(o, name))
	if errors.Is(err, fs.ErrNotExist) {
		return TopicConfig{}, nil
	}
	if err != nil {
		return TopicConfig{}, fmt.Errorf("kafkalog: read config of topic %q: %w", name, err)
	}
	c, err := decodeTopicConfig(b)
	if err != nil {
		return TopicConfig{}, fmt.Errorf("kafkalog: config of topic %q: %w", name, err)
	}
	return c, nil
}

// CreateTopicWith creates a topic with n partitions and its own settings, or, if the
// topic exists with n partitions, replaces its settings (so a caller may declare its
// topics on every start). The settings are stored with the topic and survive restarts.
// A topic that exists with another partition count gives ErrTopicExists (wrapped):
// partition counts cannot change.
func (l *Log) CreateTopicWith(name string, n int, c TopicConfig) error {
	if err := checkTopic(name, n); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	t := l.topics[name]
	if t == nil {
		return l.createTopicLocked(name, n, c)
	}
	if len(t.partitions) != n {
		return fmt.Errorf("%w: %q has %d partitions, not %d (partition counts cannot change)",
			ErrTopicExists, name, len(t.partitions), n)
	}
	if *t.cfg.Load() == c {
		return nil
	}
	if err := vfs.WriteFileAtomic(l.opts.FS, topicConfigPath(&l.opts, name), encodeTopicConfig(c)); err != nil {
		return fmt.Errorf("kafkalog: write config of topic %q: %w", name, err)
	}
	t.cfg.Store(&c)
	l.opts.Logger.Info("kafkalog: topic config changed", slog.String("topic", name),
		slog.Duration("retention", c.Retention), slog.Int64("retention_bytes", c.RetentionBytes))
	return nil
}

// TopicConfig returns the settings a topic was created with (see CreateTopicWith).
func (l *Log) TopicConfig(name string) (TopicConfig, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return TopicConfig{}, ErrClosed
	}
	t := l.topics[name]
	if t == nil {
		return TopicConfig{}, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	return *t.cfg.Load(), nil
}

// retentionLimits returns the partition's retention cutoff (ms; math.MinInt64 without a
// time limit) and size limit (≤ 0: none): its topic's settings, else the Log's.
func (p *partition) retentionLimits() (cutoff, maxBytes int64) {
	r, maxBytes := p.opts.Retention, p.opts.RetentionBytes
	if c := p.topicCfg.Load(); c != nil {
		if c.Retention != 0 {
			r = c.Retention
		}
		if c.RetentionBytes != 0 {
			maxBytes = c.RetentionBytes
		}
	}
	if r < 0 {
		return math.MinInt64, maxBytes
	}
	return p.opts.Now().Add(-r).UnixMilli(), maxBytes
}
