package logstore

import (
	"log/slog"
	"time"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell"
	"github.com/activemq-go/broker/persistence/internal/optparse"
)

// FlushPolicy says when the log is fsynced, and so what a power cut may lose. A crash of
// the broker process alone loses nothing under any policy: appended data is in the
// operating system's page cache.
type FlushPolicy uint8

// The policies are the shell's (logshell.Policy).
const (
	// FlushBatch fsyncs once per group of batches that holds a Commit(Sync), before that
	// Commit returns; groups of Async commits only are not synced. Nothing acknowledged
	// with Sync is lost by a power cut. The default.
	FlushBatch = FlushPolicy(logshell.SyncEach)
	// FlushInterval fsyncs every FlushInterval if anything was appended; Commit(Sync)
	// returns once the batch is written. A power cut loses at most the last interval.
	FlushInterval = FlushPolicy(logshell.SyncPeriodic)
	// FlushOS never fsyncs on the commit path (Kafka's default): the log is fsynced when
	// a segment rolls, at every checkpoint (CheckpointInterval) and at Close. A power cut
	// loses at most the commits since the last of these.
	FlushOS = FlushPolicy(logshell.SyncNever)
)

// flushNames are the policies' names in the kafkaLog block.
var flushNames = logshell.PolicyNames{Type: "FlushPolicy", Names: [3]string{"batch", "interval", "os"},
	Unknown: "unknown flush policy"}

// String returns the configuration name of the policy.
func (p FlushPolicy) String() string { return flushNames.String(logshell.Policy(p)) }

// Defaults and limits.
const (
	// DefaultSegmentBytes is the size at which the log rolls to a new segment. Space is
	// given back a whole segment at a time, so it is also how much acknowledged data
	// may stay on disk.
	DefaultSegmentBytes       = 64 << 20
	DefaultFlushInterval      = logshell.DefaultSyncInterval
	DefaultCheckpointInterval = logshell.DefaultCheckpointInterval
	// MinSegmentBytes and MaxSegmentBytes bound SegmentBytes (the configuration file
	// allows from 64kb; tests use tiny segments).
	MinSegmentBytes = 4 << 10
	MaxSegmentBytes = 1 << 30
)

// Options configures Open. The zero value of every field but Dir means its default.
type Options struct {
	// Dir is the store's directory, created if missing: the log lives in Dir/log, the
	// checkpoint in Dir/checkpoint.
	Dir string
	// FS is the file system; nil means vfs.OS.
	FS vfs.FS
	// Flush and FlushInterval: see FlushPolicy.
	Flush         FlushPolicy
	FlushInterval time.Duration
	// SegmentBytes is the log's segment size (default 64 MiB).
	SegmentBytes int64
	// CheckpointInterval is how often the low-water mark is checkpointed, and the
	// segments below it deleted, when it moved; negative disables periodic checkpoints
	// (Close still writes one).
	CheckpointInterval time.Duration
	// StoreBeforeDispatch turns off concurrent store and dispatch (ActiveMQ's
	// concurrentStoreAndDispatchQueues: false): batches cannot be withdrawn, so the
	// broker dispatches a persistent queue message only after its write.
	StoreBeforeDispatch bool
	// Logger receives the store's events; nil discards them.
	Logger *slog.Logger
}

// options is how the shell's option rules read the kafkaLog block and Options.
var options = logshell.OptionSpec[Options]{
	Block: "kafkaLog", ErrOption: ErrOption, Policies: flushNames,
	Segment: logshell.SizeRule{Field: "SegmentBytes", Default: DefaultSegmentBytes, Min: MinSegmentBytes, Max: MaxSegmentBytes},
	Fields:  (*Options).fields, Check: (*Options).check,
}

// fields points the shell's option rules at the options it knows.
func (o *Options) fields() logshell.Fields {
	return logshell.Fields{Dir: &o.Dir, SegmentSize: &o.SegmentBytes, Policy: logshell.Policy(o.Flush),
		Interval: &o.FlushInterval, CheckpointInterval: &o.CheckpointInterval, Logger: &o.Logger}
}

// check fills in the one option that is not the shell's, the file system.
func (o *Options) check() error {
	if o.FS == nil {
		o.FS = vfs.OS
	}
	return nil
}

// optionKeys are the keys of the kafkaLog block.
var optionKeys = []optparse.Key[Options]{
	options.DirectoryKey(),
	logshell.PolicyKey("flush", &flushNames, func(o *Options, p logshell.Policy) { o.Flush = FlushPolicy(p) }),
	optparse.DurationKey("flushInterval", func(o *Options) *time.Duration { return &o.FlushInterval }, ""),
	optparse.SizeKey("segmentBytes", "a size from 64kb to 1gb, e.g. 64mb (a number is bytes)", 64<<10, MaxSegmentBytes,
		"not a valid segment size", func(o *Options) *int64 { return &o.SegmentBytes }),
	optparse.DurationKey("checkpointInterval", func(o *Options) *time.Duration { return &o.CheckpointInterval }, ""),
	optparse.StoreBeforeDispatchKey(func(o *Options) *bool { return &o.StoreBeforeDispatch }),
}

// ParseOptions turns the broker's persistence options into Options. Keys are matched
// case-insensitively (viper lower-cases them); values may be strings (as they are when
// set from the environment) or YAML scalars. An unknown key or a bad value is a
// *setting.Error naming the key, the value and what is allowed, wrapping ErrOption. The
// directory defaults to <DataDirectory>/kafkalog.
func ParseOptions(p persistence.Options) (Options, error) { return options.Parse(p, optionKeys) }
