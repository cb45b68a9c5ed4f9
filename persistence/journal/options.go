package journal

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/activemq-go/broker/internal/setting"
	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/optparse"
)

// SyncStrategy says when the journal is fsynced (KahaDB's journalDiskSyncStrategy).
type SyncStrategy uint8

const (
	// SyncAlways fsyncs every group of batches that holds a Commit(Sync) before that
	// Commit returns. Nothing acknowledged with Sync is lost by a power cut.
	SyncAlways SyncStrategy = iota
	// SyncPeriodic fsyncs every SyncInterval if anything was written (and when a segment
	// is rolled over). Commit(Sync) returns once the batch is written. A power cut loses
	// at most the last SyncInterval of commits (a process crash loses nothing: the data
	// is in the OS page cache).
	SyncPeriodic
	// SyncNever does not fsync on the commit path. The journal is still fsynced when a
	// segment is rolled over, before every checkpoint (a checkpoint must never describe
	// data that is not on disk) and at Close, so a power cut loses at most the commits
	// since the last checkpoint (CheckpointInterval) or roll-over. A process crash loses
	// nothing.
	SyncNever
)

var syncStrategyNames = []string{SyncAlways: "always", SyncPeriodic: "periodic", SyncNever: "never"}

// String returns the configuration name of the strategy.
func (s SyncStrategy) String() string {
	if int(s) < len(syncStrategyNames) {
		return syncStrategyNames[s]
	}
	return "SyncStrategy(" + strconv.Itoa(int(s)) + ")"
}

// Defaults, as KahaDB's.
const (
	DefaultMaxFileLength      = 32 << 20
	DefaultSyncInterval       = time.Second
	DefaultCheckpointInterval = 5 * time.Second
	DefaultCleanupInterval    = 30 * time.Second
	// DefaultCompactLiveRatio: a sealed segment with less than this fraction of its bytes
	// still live is rewritten by the compactor.
	DefaultCompactLiveRatio = 0.25
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

// withDefaults fills in the defaults and checks the ranges.
func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, fmt.Errorf("%w: Dir is empty", ErrOption)
	}
	if o.FS == nil {
		o.FS = vfs.OS
	}
	if o.MaxFileLength == 0 {
		o.MaxFileLength = DefaultMaxFileLength
	}
	if o.MaxFileLength < MinFileLength || o.MaxFileLength > MaxFileLength {
		return o, fmt.Errorf("%w: MaxFileLength %d outside [%d, %d]", ErrOption, o.MaxFileLength, MinFileLength, MaxFileLength)
	}
	if o.SyncStrategy > SyncNever {
		return o, fmt.Errorf("%w: unknown SyncStrategy %d", ErrOption, o.SyncStrategy)
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = DefaultSyncInterval
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = DefaultCheckpointInterval
	}
	if o.CleanupInterval == 0 {
		o.CleanupInterval = DefaultCleanupInterval
	}
	if o.CompactLiveRatio == 0 {
		o.CompactLiveRatio = DefaultCompactLiveRatio
	}
	if o.CompactLiveRatio >= 1 {
		return o, fmt.Errorf("%w: CompactLiveRatio %v must be below 1", ErrOption, o.CompactLiveRatio)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// keyPath is the configuration path of the adapter's block, for error messages.
const keyPath = "persistenceAdapter.kahaDB"

// optionKeys are the keys of the kahaDB block.
var optionKeys = []optparse.Key[Options]{
	{Name: "directory", Allowed: "a directory path (default <dataDirectory>/kahadb)",
		Set: func(o *Options, raw any) string {
			s, ok := raw.(string)
			if !ok || strings.TrimSpace(s) == "" {
				return "not a directory path"
			}
			o.Dir = filepath.Clean(s)
			return ""
		}},
	{Name: "journalMaxFileLength", Allowed: "a size from 64kb to 2gb, e.g. 32mb (a number is bytes)",
		Set: func(o *Options, raw any) string {
			n, err := optparse.Size(raw)
			if err != nil || n < 64<<10 || n > MaxFileLength {
				return "not a valid journal file length"
			}
			o.MaxFileLength = n
			return ""
		}},
	{Name: "journalDiskSyncStrategy", Allowed: "always, periodic or never",
		Set: func(o *Options, raw any) string {
			s, ok := raw.(string)
			i := slices.Index(syncStrategyNames, strings.ToLower(strings.TrimSpace(s)))
			if !ok || i < 0 {
				return "unknown sync strategy"
			}
			o.SyncStrategy = SyncStrategy(i)
			return ""
		}},
	{Name: "concurrentStoreAndDispatchQueues", Allowed: "true or false",
		Set: func(o *Options, raw any) string {
			b, ok := setting.Bool(raw)
			if !ok {
				return "not a boolean"
			}
			o.StoreBeforeDispatch = !b
			return ""
		}},
	{Name: "journalDiskSyncInterval", Allowed: durationAllowed, Set: durationOption(func(o *Options) *time.Duration { return &o.SyncInterval })},
	{Name: "checkpointInterval", Allowed: durationAllowed, Set: durationOption(func(o *Options) *time.Duration { return &o.CheckpointInterval })},
	{Name: "cleanupInterval", Allowed: durationAllowed, Set: durationOption(func(o *Options) *time.Duration { return &o.CleanupInterval })},
}

const durationAllowed = `a positive duration such as "5s" or "500ms" (a number is milliseconds), at most 24h`

// durationOption reads a duration given as a string ("5s") or a number of milliseconds.
func durationOption(field func(*Options) *time.Duration) func(o *Options, raw any) string {
	return func(o *Options, raw any) string {
		d, problem := optparse.Duration(raw)
		if problem != "" {
			return "not a valid interval"
		}
		*field(o) = d
		return ""
	}
}

// optionError builds the error the broker prints: a *setting.Error naming the key, the
// value and what is allowed, wrapping ErrOption.
func optionError(key, val, problem, allowed string) error {
	return &setting.Error{Key: keyPath + "." + key, Value: val, Problem: problem, Allowed: allowed, Err: ErrOption}
}

// ParseOptions turns the broker's persistence options into Options. Keys are matched
// case-insensitively (viper lower-cases them); an unknown key or a bad value is a
// *setting.Error naming the key, the value and what is allowed, wrapping ErrOption.
// The directory defaults to <DataDirectory>/kahadb.
func ParseOptions(p persistence.Options) (Options, error) {
	o := Options{Dir: filepath.Join(p.DataDirectory, "kahadb"), Logger: p.Logger}
	if p.DataDirectory == "" {
		o.Dir = filepath.Join("data", "kahadb")
	}
	if err := optparse.Apply(&o, p.Raw, optionKeys, optionError); err != nil {
		return Options{}, err
	}
	return o, nil
}
