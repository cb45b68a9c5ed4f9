package kafkalog

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/internal/vfs"
)

// FlushPolicy says when appended data is fsynced, and so what a power cut may lose.
type FlushPolicy uint8

const (
	// FlushOS never fsyncs on the append path (Kafka's default): the operating system
	// writes dirty pages back when it likes (on Linux typically within 30 s,
	// vm.dirty_expire_centisecs). Segments are fsynced when they roll and on Close.
	// Loss window after a power cut or kernel crash: whatever the OS had not written back,
	// in practice up to ~30 s of appends. A crash of the process alone loses nothing.
	FlushOS FlushPolicy = iota
	// FlushBatch fsyncs before Append returns. Concurrent appenders to one partition share
	// fsyncs (group commit): an appender that arrives while a sync is running waits for
	// the next one, which covers everything written meanwhile. Readers see a record only
	// once it is synced. Loss window: none for appends that returned without error.
	FlushBatch
	// FlushInterval fsyncs every partition with unsynced data every Options.FlushInterval
	// (Kafka's log.flush.interval.ms). Loss window: up to FlushInterval of appends (plus
	// the time one flush takes) after a power cut; nothing after a process crash.
	FlushInterval
)

// String returns "os", "batch" or "interval".
func (p FlushPolicy) String() string {
	switch p {
	case FlushOS:
		return "os"
	case FlushBatch:
		return "batch"
	case FlushInterval:
		return "interval"
	}
	return fmt.Sprintf("FlushPolicy(%d)", uint8(p))
}

// Defaults, as Kafka's.
const (
	DefaultSegmentBytes           = 1 << 30
	DefaultSegmentAge             = 7 * 24 * time.Hour
	DefaultIndexIntervalBytes     = 4096
	DefaultRetention              = 7 * 24 * time.Hour
	DefaultRetentionCheckInterval = 5 * time.Minute
	DefaultFlushInterval          = time.Second
	DefaultMaxBatchBytes          = 16 << 20

	// maxSegmentBytes keeps positions within the index's uint32.
	maxSegmentBytes = 1<<31 - 1
)

// Options configure a Log. The zero value of every field but Dir means its default.
type Options struct {
	// FS is the file system; nil means vfs.OS.
	FS vfs.FS
	// Dir is the log directory, created if missing. Required.
	Dir string
	// SegmentBytes rolls the active segment when a batch would take it past this size
	// (default 1 GiB, at most 2 GiB - 1). A batch larger than it gets a segment of its own.
	SegmentBytes int64
	// SegmentAge rolls the active segment when its first batch was appended this long ago
	// (default 7 days; negative disables).
	SegmentAge time.Duration
	// IndexIntervalBytes is the number of log bytes between two sparse index entries
	// (default 4096).
	IndexIntervalBytes int
	// Flush is the flush policy (default FlushOS); see FlushPolicy for loss windows.
	Flush FlushPolicy
	// FlushInterval is the period of FlushInterval (default 1 s).
	FlushInterval time.Duration
	// Retention deletes whole sealed segments whose newest record is older than this
	// (default 7 days; negative keeps segments forever).
	Retention time.Duration
	// RetentionBytes deletes the oldest sealed segments of a partition while the partition
	// is larger than this (0 or negative: no size limit).
	RetentionBytes int64
	// RetentionCheckInterval is how often retention runs in the background (default
	// 5 min; negative: never, call EnforceRetention yourself).
	RetentionCheckInterval time.Duration
	// MaxBatchBytes bounds an encoded batch (default 16 MiB). Read rejects larger frames
	// as corrupt before allocating them.
	MaxBatchBytes int
	// Now is the clock for timestamps, segment age and retention (default time.Now).
	Now func() time.Time
	// Logger receives one line per operator-relevant event (recovery, truncation,
	// retention); nil discards them.
	Logger *slog.Logger
}

// withDefaults returns o with defaults filled in, or an error.
func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, fmt.Errorf("%w: Dir is required", ErrInvalidOptions)
	}
	if o.FS == nil {
		o.FS = vfs.OS
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.SegmentBytes < 0 || o.SegmentBytes > maxSegmentBytes {
		return o, fmt.Errorf("%w: SegmentBytes %d out of range", ErrInvalidOptions, o.SegmentBytes)
	}
	if o.SegmentAge == 0 {
		o.SegmentAge = DefaultSegmentAge
	}
	if o.IndexIntervalBytes <= 0 {
		o.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if o.Flush > FlushInterval {
		return o, fmt.Errorf("%w: unknown flush policy %d", ErrInvalidOptions, o.Flush)
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.RetentionCheckInterval == 0 {
		o.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	if o.MaxBatchBytes <= 0 {
		o.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}
