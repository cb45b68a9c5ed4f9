package logstore

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

// FlushPolicy says when the log is fsynced, and so what a power cut may lose. A crash of
// the broker process alone loses nothing under any policy: appended data is in the
// operating system's page cache.
type FlushPolicy uint8

const (
	// FlushBatch fsyncs once per group of batches that holds a Commit(Sync), before that
	// Commit returns; groups of Async commits only are not synced. Nothing acknowledged
	// with Sync is lost by a power cut. The default.
	FlushBatch FlushPolicy = iota
	// FlushInterval fsyncs every FlushInterval if anything was appended; Commit(Sync)
	// returns once the batch is written. A power cut loses at most the last interval.
	FlushInterval
	// FlushOS never fsyncs on the commit path (Kafka's default): the log is fsynced when
	// a segment rolls, at every checkpoint (CheckpointInterval) and at Close. A power cut
	// loses at most the commits since the last of these.
	FlushOS
)

var flushNames = []string{FlushBatch: "batch", FlushInterval: "interval", FlushOS: "os"}

// String returns the configuration name of the policy.
func (p FlushPolicy) String() string {
	if int(p) < len(flushNames) {
		return flushNames[p]
	}
	return "FlushPolicy(" + strconv.Itoa(int(p)) + ")"
}

// Defaults and limits.
const (
	// DefaultSegmentBytes is the size at which the log rolls to a new segment. Space is
	// given back a whole segment at a time, so it is also how much acknowledged data
	// may stay on disk.
	DefaultSegmentBytes       = 64 << 20
	DefaultFlushInterval      = time.Second
	DefaultCheckpointInterval = 5 * time.Second
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
	// Logger receives the store's events; nil means slog.Default().
	Logger *slog.Logger
}

// withDefaults fills in the defaults and checks the ranges.
func (o Options) withDefaults() (Options, error) {
	if strings.TrimSpace(o.Dir) == "" {
		return o, fmt.Errorf("%w: Dir is empty", ErrOption)
	}
	if o.FS == nil {
		o.FS = vfs.OS
	}
	if o.Flush > FlushOS {
		return o, fmt.Errorf("%w: unknown FlushPolicy %d", ErrOption, o.Flush)
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.SegmentBytes < MinSegmentBytes || o.SegmentBytes > MaxSegmentBytes {
		return o, fmt.Errorf("%w: SegmentBytes %d outside [%d, %d]", ErrOption, o.SegmentBytes, MinSegmentBytes, MaxSegmentBytes)
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = DefaultCheckpointInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// keyPath is the configuration path of the adapter's block, for error messages.
const keyPath = "persistenceAdapter.kafkaLog"

// optionKey is one key of the kafkaLog block.
type optionKey struct {
	name    string // as documented (the YAML spelling)
	allowed string
	set     func(o *Options, raw any) (problem string)
}

const (
	durationAllowed = `a positive duration such as "5s" or "500ms" (a number is milliseconds), at most 24h`
	sizeAllowed     = "a size from 64kb to 1gb, e.g. 64mb (a number is bytes)"
)

var optionKeys = []optionKey{
	{name: "directory", allowed: "a directory path (default <dataDirectory>/kafkalog)",
		set: func(o *Options, raw any) string {
			s, ok := raw.(string)
			if !ok || strings.TrimSpace(s) == "" {
				return "not a directory path"
			}
			o.Dir = filepath.Clean(s)
			return ""
		}},
	{name: "flush", allowed: "batch, interval or os",
		set: func(o *Options, raw any) string {
			s, _ := raw.(string)
			i := slices.Index(flushNames, strings.ToLower(strings.TrimSpace(s)))
			if i < 0 {
				return "unknown flush policy"
			}
			o.Flush = FlushPolicy(i)
			return ""
		}},
	{name: "flushInterval", allowed: durationAllowed, set: durationOption(func(o *Options) *time.Duration { return &o.FlushInterval })},
	{name: "segmentBytes", allowed: sizeAllowed,
		set: func(o *Options, raw any) string {
			var n int64
			var err error
			if s, ok := raw.(string); ok {
				n, err = config.ParseSize(s)
			} else {
				n, err = config.WholeNumber(raw)
			}
			if err != nil || n < 64<<10 || n > MaxSegmentBytes {
				return "not a valid segment size"
			}
			o.SegmentBytes = n
			return ""
		}},
	{name: "checkpointInterval", allowed: durationAllowed, set: durationOption(func(o *Options) *time.Duration { return &o.CheckpointInterval })},
}

// durationOption reads a duration given as a string ("5s") or a number of milliseconds.
func durationOption(field func(*Options) *time.Duration) func(o *Options, raw any) string {
	return func(o *Options, raw any) string {
		var d time.Duration
		if s, ok := raw.(string); ok {
			var err error
			if d, err = config.ParseDuration(s); err != nil {
				return "not a duration"
			}
		} else {
			ms, err := config.WholeNumber(raw)
			if err != nil || ms > int64(24*time.Hour/time.Millisecond) {
				return "not a valid duration"
			}
			d = time.Duration(ms) * time.Millisecond
		}
		if d <= 0 || d > 24*time.Hour {
			return "duration out of range"
		}
		*field(o) = d
		return ""
	}
}

// optionError builds the error the broker prints: a *config.Error naming the key, the
// value and what is allowed, wrapping ErrOption.
func optionError(key, val, problem, allowed string) error {
	return &config.Error{Key: keyPath + "." + key, Value: val, Problem: problem, Allowed: allowed, Err: ErrOption}
}

// ParseOptions turns the broker's persistence options into Options. Keys are matched
// case-insensitively (viper lower-cases them); values may be strings (as they are when
// set from the environment) or YAML scalars. An unknown key or a bad value is a
// *config.Error naming the key, the value and what is allowed, wrapping ErrOption. The
// directory defaults to <DataDirectory>/kafkalog.
func ParseOptions(p persistence.Options) (Options, error) {
	dir := p.DataDirectory
	if dir == "" {
		dir = "data"
	}
	o := Options{Dir: filepath.Join(dir, "kafkalog")}
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
		key := optionKeys[i]
		var problem string
		switch raw.(type) {
		case string, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
			problem = key.set(&o, raw)
		default:
			problem = fmt.Sprintf("must be a string or a number, not %T", raw)
		}
		if problem != "" {
			return Options{}, optionError(key.name, fmt.Sprint(raw), problem, key.allowed)
		}
	}
	return o, nil
}
