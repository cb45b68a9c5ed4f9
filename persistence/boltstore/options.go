package boltstore

import (
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/activemq-go/broker/internal/setting"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/optparse"
)

// SyncStrategy says whether a commit waits for the disk (the bbolt block's
// syncStrategy key, after KahaDB's journalDiskSyncStrategy).
type SyncStrategy uint8

const (
	// SyncAlways lets bbolt fdatasync every commit: a Commit that returned nil survives
	// a power cut. The default.
	SyncAlways SyncStrategy = iota
	// SyncNever sets bbolt's NoSync: commits are written to the OS but never synced
	// (Close still syncs). A process crash loses nothing, but a power cut or kernel
	// crash can lose recent commits and, worse, corrupt the file, because bbolt's meta
	// page may reach the disk before the pages it points to. For tests and throwaway
	// data only.
	SyncNever
)

var syncStrategyNames = []string{SyncAlways: "always", SyncNever: "never"}

// String returns the configuration name of the strategy.
func (s SyncStrategy) String() string {
	if int(s) < len(syncStrategyNames) {
		return syncStrategyNames[s]
	}
	return "SyncStrategy(" + strconv.Itoa(int(s)) + ")"
}

// Defaults.
const (
	// DefaultFileName is the database file below the broker's dataDirectory.
	DefaultFileName = "broker.db"
	// DefaultLockTimeout is how long Open waits for another process to release the file.
	DefaultLockTimeout = 10 * time.Second
	// MaxInitialMmapSize bounds the initialMmapSize option.
	MaxInitialMmapSize = 64 << 30
)

// DefaultInitialMmapSize is the initial mmap size on 64-bit systems other than
// Windows: 1 GiB of address space, not of disk (the file still grows with its data).
// On Windows bbolt grows the file itself to the mapping's size, and a 32-bit process
// cannot spare the address space, so there the default is no initial mapping.
var DefaultInitialMmapSize int64 = defaultInitialMmapSize()

func defaultInitialMmapSize() int64 {
	if runtime.GOOS == "windows" || strconv.IntSize == 32 {
		return -1
	}
	return 1 << 30
}

// Options configures Open. The zero value of every field but Path means its default.
type Options struct {
	// Path is the database file; its directory is created if missing.
	Path string
	// SyncStrategy: see SyncStrategy. The default is SyncAlways.
	SyncStrategy SyncStrategy
	// InitialMmapSize is bbolt's InitialMmapSize in bytes: 0 means
	// DefaultInitialMmapSize, a negative value none (bbolt then remaps as the file
	// grows, and a remap waits for every open read transaction).
	InitialMmapSize int64
	// FreelistType is bbolt's freelist type; "" means bolt.FreelistMapType.
	FreelistType bolt.FreelistType
	// FreelistSync writes bbolt's freelist with every commit (bbolt's default). false,
	// the adapter's default, sets NoFreelistSync: commits are cheaper, and Open (and a
	// rolled back write, which the adapter avoids) rebuilds the freelist by walking the
	// live pages.
	FreelistSync bool
	// LockTimeout is how long Open waits for another process holding the file; 0 means
	// DefaultLockTimeout.
	LockTimeout time.Duration
	// AsyncCommitDelay: while only Async commits are queued (acknowledgements nobody
	// waits for, dispatch marks), the writer waits up to this long (from the first) for
	// a Commit(Sync) and takes them all into its transaction: they ride the next synced
	// one instead of costing a commit and its syncs of their own. Zero or negative (the
	// default) commits them at once. It pays with concurrentStoreAndDispatchQueues
	// false; with concurrent dispatch it can cost more than it saves: a writer kept
	// busy by the acknowledgements' own commits leaves consumers time to withdraw the
	// writes of messages they got (see docs/benchmarks.md, issue 26).
	AsyncCommitDelay time.Duration
	// StoreBeforeDispatch turns off concurrent store and dispatch
	// (concurrentStoreAndDispatchQueues: false): a queued batch cannot be withdrawn, so
	// the broker dispatches a persistent queue message only after its commit.
	StoreBeforeDispatch bool
	// Logger receives the store's events; nil discards them.
	Logger *slog.Logger
}

// withDefaults fills in the defaults and checks the ranges.
func (o Options) withDefaults() (Options, error) {
	if strings.TrimSpace(o.Path) == "" {
		return o, fmt.Errorf("%w: Path is empty", ErrOption)
	}
	if o.SyncStrategy > SyncNever {
		return o, fmt.Errorf("%w: unknown SyncStrategy %d", ErrOption, o.SyncStrategy)
	}
	if o.InitialMmapSize == 0 {
		o.InitialMmapSize = DefaultInitialMmapSize
	}
	if o.InitialMmapSize > MaxInitialMmapSize || o.InitialMmapSize > math.MaxInt {
		return o, fmt.Errorf("%w: InitialMmapSize %d above %d", ErrOption, o.InitialMmapSize, int64(MaxInitialMmapSize))
	}
	switch o.FreelistType {
	case "":
		o.FreelistType = bolt.FreelistMapType
	case bolt.FreelistMapType, bolt.FreelistArrayType:
	default:
		return o, fmt.Errorf("%w: unknown FreelistType %q", ErrOption, o.FreelistType)
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.LockTimeout < 0 {
		return o, fmt.Errorf("%w: negative LockTimeout %v", ErrOption, o.LockTimeout)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// boltOptions returns what bbolt.Open gets. The choices are explained in the package
// comment.
func (o Options) boltOptions() *bolt.Options {
	return &bolt.Options{
		Timeout:         o.LockTimeout,
		NoGrowSync:      false,
		NoFreelistSync:  !o.FreelistSync,
		FreelistType:    o.FreelistType,
		InitialMmapSize: int(max(o.InitialMmapSize, 0)),
		NoSync:          o.SyncStrategy == SyncNever,
	}
}

const (
	sizeAllowed = `a size from 0 to 64gb, e.g. "1gb" (a number is bytes; 0 means none)`
	boolAllowed = "true or false"
)

// optionKeys are the keys of the bbolt block.
var optionKeys = []optparse.Key[Options]{
	{Name: "path", Allowed: "a file path (default <dataDirectory>/" + DefaultFileName + ")",
		Set: func(o *Options, raw any) string {
			s, ok := raw.(string)
			if !ok || strings.TrimSpace(s) == "" {
				return "not a file path"
			}
			o.Path = filepath.Clean(s)
			return ""
		}},
	{Name: "syncStrategy", Allowed: "always or never",
		Set: func(o *Options, raw any) string {
			s, _ := raw.(string)
			i := slices.Index(syncStrategyNames, strings.ToLower(strings.TrimSpace(s)))
			if i < 0 {
				return "unknown sync strategy"
			}
			o.SyncStrategy = SyncStrategy(i)
			return ""
		}},
	{Name: "initialMmapSize", Allowed: sizeAllowed,
		Set: func(o *Options, raw any) string {
			n, err := optparse.Size(raw)
			if err != nil || n > MaxInitialMmapSize {
				return "not a valid mmap size"
			}
			o.InitialMmapSize = n
			if n == 0 {
				o.InitialMmapSize = -1
			}
			return ""
		}},
	{Name: "freelistType", Allowed: "map or array",
		Set: func(o *Options, raw any) string {
			s, _ := raw.(string)
			switch t := bolt.FreelistType(strings.ToLower(strings.TrimSpace(s))); t {
			case bolt.FreelistMapType, bolt.FreelistArrayType:
				o.FreelistType = t
				return ""
			}
			return "unknown freelist type"
		}},
	{Name: "freelistSync", Allowed: boolAllowed,
		Set: func(o *Options, raw any) string {
			b, ok := setting.Bool(raw)
			if !ok {
				return "not a boolean"
			}
			o.FreelistSync = b
			return ""
		}},
	{Name: "concurrentStoreAndDispatchQueues", Allowed: boolAllowed,
		Set: func(o *Options, raw any) string {
			b, ok := setting.Bool(raw)
			if !ok {
				return "not a boolean"
			}
			o.StoreBeforeDispatch = !b
			return ""
		}},
	optparse.DurationKey("lockTimeout", func(o *Options) *time.Duration { return &o.LockTimeout }, ""),
	optparse.DurationKey("asyncCommitDelay", func(o *Options) *time.Duration { return &o.AsyncCommitDelay }, ""),
}

// ParseOptions turns the broker's persistence options into Options. Keys are matched
// case-insensitively (viper lower-cases them); values may be strings (as they are when
// set from the environment) or YAML scalars. An unknown key or a bad value is an
// *OptionError naming the key, the value and what is allowed. Path defaults to
// <DataDirectory>/broker.db; a relative path is used as written (relative to the
// working directory), as the broker's dataDirectory is.
func ParseOptions(p persistence.Options) (Options, error) {
	dir := p.DataDirectory
	if dir == "" {
		dir = "data"
	}
	o := Options{Path: filepath.Join(dir, DefaultFileName), Logger: p.Logger}
	err := optparse.Apply(&o, p.Raw, optionKeys, func(key, val, problem, allowed string) error {
		return &OptionError{Key: keyPath + "." + key, Value: val, Problem: problem, Allowed: allowed}
	})
	if err != nil {
		return Options{}, err
	}
	return o, nil
}
