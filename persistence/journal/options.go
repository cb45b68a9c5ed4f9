package journal

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/activemq-go/broker/config"
	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
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
	// Logger receives the store's events; nil means slog.Default().
	Logger *slog.Logger
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
		o.Logger = slog.Default()
	}
	return o, nil
}

// optionKey is one key of the kahaDB block.
type optionKey struct {
	name    string // as documented (the YAML spelling)
	allowed string
	set     func(o *Options, key, val string, raw any) error
}

// keyPath is the configuration path of the adapter's block, for error messages.
const keyPath = "persistenceAdapter.kahaDB"

var optionKeys = []optionKey{
	{name: "directory", allowed: "a directory path (default <dataDirectory>/kahadb)",
		set: func(o *Options, key, val string, raw any) error {
			if _, ok := raw.(string); !ok || strings.TrimSpace(val) == "" {
				return optionError(key, val, "not a directory path", "a non-empty directory path")
			}
			o.Dir = filepath.Clean(val)
			return nil
		}},
	{name: "journalMaxFileLength", allowed: "a size from 64kb to 2gb, e.g. 32mb (a number is bytes)",
		set: func(o *Options, key, val string, raw any) error {
			n, err := parseSize(val, raw)
			if err != nil || n < 64<<10 || n > MaxFileLength {
				return optionError(key, val, "not a valid journal file length", "a size from 64kb to 2gb, e.g. 32mb (a number is bytes)")
			}
			o.MaxFileLength = n
			return nil
		}},
	{name: "journalDiskSyncStrategy", allowed: "always, periodic or never",
		set: func(o *Options, key, val string, raw any) error {
			i := slices.Index(syncStrategyNames, strings.ToLower(strings.TrimSpace(val)))
			if _, ok := raw.(string); !ok || i < 0 {
				return optionError(key, val, "unknown sync strategy", "always, periodic or never")
			}
			o.SyncStrategy = SyncStrategy(i)
			return nil
		}},
	{name: "concurrentStoreAndDispatchQueues", allowed: "true or false",
		set: func(o *Options, key, val string, raw any) error {
			b, ok := config.Bool(raw)
			if !ok {
				return optionError(key, val, "not a boolean", "true or false")
			}
			o.StoreBeforeDispatch = !b
			return nil
		}},
	{name: "journalDiskSyncInterval", allowed: durationAllowed, set: durationOption(func(o *Options) *time.Duration { return &o.SyncInterval })},
	{name: "checkpointInterval", allowed: durationAllowed, set: durationOption(func(o *Options) *time.Duration { return &o.CheckpointInterval })},
	{name: "cleanupInterval", allowed: durationAllowed, set: durationOption(func(o *Options) *time.Duration { return &o.CleanupInterval })},
}

const durationAllowed = `a positive duration such as "5s" or "500ms" (a number is milliseconds), at most 24h`

func durationOption(field func(*Options) *time.Duration) func(o *Options, key, val string, raw any) error {
	return func(o *Options, key, val string, raw any) error {
		var d time.Duration
		var err error
		switch v := raw.(type) {
		case string:
			d, err = config.ParseDuration(v)
		default:
			var n int64
			n, err = config.WholeNumber(raw)
			if err == nil && n > int64(24*time.Hour/time.Millisecond) {
				err = fmt.Errorf("too long")
			}
			d = time.Duration(n) * time.Millisecond
		}
		if err != nil || d <= 0 || d > 24*time.Hour {
			return optionError(key, val, "not a valid interval", durationAllowed)
		}
		*field(o) = d
		return nil
	}
}

// parseSize reads a size given as a string ("32mb") or a number of bytes.
func parseSize(val string, raw any) (int64, error) {
	if s, ok := raw.(string); ok {
		return config.ParseSize(s)
	}
	return config.WholeNumber(raw)
}

// optionError builds the error the broker prints: a *config.Error naming the key, the
// value and what is allowed, wrapping ErrOption.
func optionError(key, val, problem, allowed string) error {
	return &config.Error{Key: keyPath + "." + key, Value: val, Problem: problem, Allowed: allowed, Err: ErrOption}
}

// ParseOptions turns the broker's persistence options into Options. Keys are matched
// case-insensitively (viper lower-cases them); an unknown key or a bad value is a
// *config.Error naming the key, the value and what is allowed, wrapping ErrOption.
// The directory defaults to <DataDirectory>/kahadb.
func ParseOptions(p persistence.Options) (Options, error) {
	o := Options{Dir: filepath.Join(p.DataDirectory, "kahadb")}
	if p.DataDirectory == "" {
		o.Dir = filepath.Join("data", "kahadb")
	}
	keys := make([]string, 0, len(p.Raw))
	for k := range p.Raw {
		keys = append(keys, k)
	}
	slices.Sort(keys) // report the same error every time
	for _, k := range keys {
		raw := p.Raw[k]
		i := slices.IndexFunc(optionKeys, func(ok optionKey) bool { return strings.EqualFold(ok.name, k) })
		if i < 0 {
			names := make([]string, len(optionKeys))
			for j, ok := range optionKeys {
				names[j] = ok.name
			}
			return Options{}, optionError(k, "", "unknown option", strings.Join(names, ", "))
		}
		val := fmt.Sprint(raw)
		switch raw.(type) {
		case string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		default:
			return Options{}, optionError(optionKeys[i].name, val, fmt.Sprintf("must be a string, a number or a boolean, not %T", raw), optionKeys[i].allowed)
		}
		if err := optionKeys[i].set(&o, optionKeys[i].name, val, raw); err != nil {
			return Options{}, err
		}
	}
	return o, nil
}
