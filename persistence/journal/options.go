package journal

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell"
	"github.com/activemq-go/broker/persistence/internal/optparse"
)

// SyncStrategy says when the journal is fsynced (KahaDB's journalDiskSyncStrategy).
type SyncStrategy uint8

// The strategies are the shell's policies (logshell.Policy).
const (
	// SyncAlways fsyncs every group of batches that holds a Commit(Sync) before that
	// Commit returns. Nothing acknowledged with Sync is lost by a power cut.
	SyncAlways = SyncStrategy(logshell.SyncEach)
	// SyncPeriodic fsyncs every SyncInterval if anything was written (and when a segment
	// is rolled over). Commit(Sync) returns once the batch is written. A power cut loses
	// at most the last SyncInterval of commits (a process crash loses nothing: the data
	// is in the OS page cache).
	SyncPeriodic = SyncStrategy(logshell.SyncPeriodic)
	// SyncNever does not fsync on the commit path. The journal is still fsynced when a
	// segment is rolled over, before every checkpoint (a checkpoint must never describe
	// data that is not on disk) and at Close, so a power cut loses at most the commits
	// since the last checkpoint (CheckpointInterval) or roll-over. A process crash loses
	// nothing.
	SyncNever = SyncStrategy(logshell.SyncNever)
)

// syncNames are the strategies' names in the kahaDB block.
var syncNames = logshell.PolicyNames{Type: "SyncStrategy", Names: [3]string{"always", "periodic", "never"},
	Unknown: "unknown sync strategy"}

// String returns the configuration name of the strategy.
func (s SyncStrategy) String() string { return syncNames.String(logshell.Policy(s)) }

// Defaults, as KahaDB's.
const (
	DefaultMaxFileLength      = 32 << 20
	DefaultSyncInterval       = logshell.DefaultSyncInterval
	DefaultCheckpointInterval = logshell.DefaultCheckpointInterval
	DefaultCleanupInterval    = 30 * time.Second
	// DefaultCompactLiveRatio: a sealed segment with less than this fraction of its bytes
	// still live is rewritten by the compactor.
	DefaultCompactLiveRatio = 0.25
	// DefaultAsyncSyncDelay bounds how long an Async commit (an acknowledgement nobody
	// waits for, a dispatch mark) stays unsynced under SyncAlways when no Commit(Sync)
	// comes to carry it.
	DefaultAsyncSyncDelay = 5 * time.Millisecond
	// MinFileLength is the smallest MaxFileLength Open accepts (tests use tiny segments;
	// the configuration file allows from 64kb).
	MinFileLength = 4 << 10
	// MaxFileLength is the largest MaxFileLength: offsets inside a segment are 32 bits.
	MaxFileLength = 2 << 30
)

// Options configures Open. The zero value of every field but Dir means its default.
type Options struct {
	// Dir is the directory of the journal's files; it is created if missing.
	Dir string
	// FS is the file system; nil means vfs.OS.
	FS vfs.FS
	// MaxFileLength is the size at which a segment is rolled over (journalMaxFileLength).
	MaxFileLength int64
	// SyncStrategy and SyncInterval: see SyncStrategy.
	SyncStrategy SyncStrategy
	SyncInterval time.Duration
	// AsyncSyncDelay (SyncAlways): Async commits ride the next group that holds a
	// Commit(Sync); when none comes within AsyncSyncDelay of the first one, the journal
	// is fsynced on its own. Zero means DefaultAsyncSyncDelay; negative leaves them to
	// the next Commit(Sync), checkpoint, roll-over or Close. A crash of the process
	// loses nothing written either way; a power cut may lose this much of them.
	AsyncSyncDelay time.Duration
	// CheckpointInterval is how often the index is checkpointed if anything changed;
	// negative disables periodic checkpoints (Close still writes one).
	CheckpointInterval time.Duration
	// CleanupInterval is how often dead segments are deleted and mostly-dead ones
	// compacted; negative disables it (a checkpoint still deletes dead segments).
	CleanupInterval time.Duration
	// CompactLiveRatio: see DefaultCompactLiveRatio; negative disables compaction.
	CompactLiveRatio float64
	// StoreBeforeDispatch turns off concurrent store and dispatch (KahaDB's
	// concurrentStoreAndDispatchQueues: false): batches cannot be withdrawn, so the
	// broker dispatches a persistent queue message only after its write.
	StoreBeforeDispatch bool
	// Logger receives the store's events; nil discards them.
	Logger *slog.Logger

	// spillMin overrides spillMin (tests spill the smallest logs to run files).
	spillMin int
}

// options is how the shell's option rules read the kahaDB block and Options.
var options = logshell.OptionSpec[Options]{
	Block: "kahaDB", ErrOption: ErrOption, Policies: syncNames,
	Segment: logshell.SizeRule{Field: "MaxFileLength", Default: DefaultMaxFileLength, Min: MinFileLength, Max: MaxFileLength},
	Fields:  (*Options).fields, Check: (*Options).check,
}

// fields points the shell's option rules at the options it knows.
func (o *Options) fields() logshell.Fields {
	return logshell.Fields{Dir: &o.Dir, SegmentSize: &o.MaxFileLength, Policy: logshell.Policy(o.SyncStrategy),
		Interval: &o.SyncInterval, CheckpointInterval: &o.CheckpointInterval, Logger: &o.Logger}
}

// check fills in the defaults of the journal's own options and checks them.
func (o *Options) check() error {
	if o.FS == nil {
		o.FS = vfs.OS
	}
	if o.AsyncSyncDelay == 0 {
		o.AsyncSyncDelay = DefaultAsyncSyncDelay
	}
	if o.CleanupInterval == 0 {
		o.CleanupInterval = DefaultCleanupInterval
	}
	if o.CompactLiveRatio == 0 {
		o.CompactLiveRatio = DefaultCompactLiveRatio
	}
	if o.CompactLiveRatio >= 1 {
		return fmt.Errorf("%w: CompactLiveRatio %v must be below 1", ErrOption, o.CompactLiveRatio)
	}
	return nil
}

// optionKeys are the keys of the kahaDB block.
var optionKeys = []optparse.Key[Options]{
	options.DirectoryKey(),
	optparse.SizeKey("journalMaxFileLength", "a size from 64kb to 2gb, e.g. 32mb (a number is bytes)", 64<<10, MaxFileLength,
		"not a valid journal file length", func(o *Options) *int64 { return &o.MaxFileLength }),
	logshell.PolicyKey("journalDiskSyncStrategy", &syncNames, func(o *Options, p logshell.Policy) { o.SyncStrategy = SyncStrategy(p) }),
	optparse.StoreBeforeDispatchKey(func(o *Options) *bool { return &o.StoreBeforeDispatch }),
	durationKey("journalDiskSyncInterval", func(o *Options) *time.Duration { return &o.SyncInterval }),
	durationKey("journalAsyncSyncDelay", func(o *Options) *time.Duration { return &o.AsyncSyncDelay }),
	durationKey("checkpointInterval", func(o *Options) *time.Duration { return &o.CheckpointInterval }),
	durationKey("cleanupInterval", func(o *Options) *time.Duration { return &o.CleanupInterval }),
}

// durationKey reads a duration given as a string ("5s") or a number of milliseconds.
func durationKey(name string, field func(*Options) *time.Duration) optparse.Key[Options] {
	return optparse.DurationKey(name, field, "not a valid interval")
}

// ParseOptions turns the broker's persistence options into Options. Keys are matched
// case-insensitively (viper lower-cases them); an unknown key or a bad value is a
// *setting.Error naming the key, the value and what is allowed, wrapping ErrOption.
// The directory defaults to <DataDirectory>/kahadb.
func ParseOptions(p persistence.Options) (Options, error) { return options.Parse(p, optionKeys) }
