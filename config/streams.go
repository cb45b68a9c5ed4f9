package config

import (
	"path/filepath"
	"strings"
	"time"
)

// streamsSection is streams as written.
type streamsSection struct {
	Directory          string        `mapstructure:"directory"`
	Flush              string        `mapstructure:"flush"`
	FlushInterval      time.Duration `mapstructure:"flushInterval"`
	SegmentBytes       byteSize      `mapstructure:"segmentBytes"`
	SegmentMs          time.Duration `mapstructure:"segmentMs"`
	IndexIntervalBytes byteSize      `mapstructure:"indexIntervalBytes"`
}

// buildStreams validates the streams section (defaults are viper's) and
// resolves its directory against the data directory.
func (c *checker) buildStreams(s streamsSection, dataDirectory string) (Streams, *Error) {
	const path = "streams"
	key := func(k string) string { return joinKey(path, k) }
	flush, err := c.oneOf(key("flush"), s.Flush, FlushBatch, FlushInterval, FlushOS)
	if err != nil {
		return Streams{}, err
	}
	if err := c.positive(key("flushInterval"), s.FlushInterval); err != nil {
		return Streams{}, err
	}
	if err := c.sizeAtLeast(key("segmentBytes"), int64(s.SegmentBytes), 1); err != nil {
		return Streams{}, err
	}
	if err := c.positive(key("segmentMs"), s.SegmentMs); err != nil {
		return Streams{}, err
	}
	if err := c.sizeAtLeast(key("indexIntervalBytes"), int64(s.IndexIntervalBytes), 1); err != nil {
		return Streams{}, err
	}
	dir := s.Directory
	if strings.TrimSpace(dir) == "" {
		dir = filepath.Join(dataDirectory, "streams")
	}
	return Streams{
		Directory:          dir,
		Flush:              flush,
		FlushInterval:      s.FlushInterval,
		SegmentBytes:       int64(s.SegmentBytes),
		SegmentMs:          s.SegmentMs,
		IndexIntervalBytes: int64(s.IndexIntervalBytes),
	}, nil
}
