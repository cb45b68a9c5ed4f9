package logshell

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/optparse"
)

// Defaults of the options every log-structured adapter has (KahaDB's).
const (
	// DefaultSyncInterval is the period of SyncPeriodic.
	DefaultSyncInterval = time.Second
	// DefaultCheckpointInterval is how often the adapter checkpoints if anything changed.
	DefaultCheckpointInterval = 5 * time.Second
)

// Fields points at the options every log-structured adapter has, in the adapter's own
// Options type: the names and documentation of the fields are the adapter's. (Its file
// system is the adapter's business: the shell does no I/O.)
type Fields struct {
	Dir         *string
	SegmentSize *int64 // the size at which a segment of the log rolls over
	Policy      Policy // the sync policy as set (checked, never defaulted)
	// Interval is the policy's period (SyncPeriodic).
	Interval           *time.Duration
	CheckpointInterval *time.Duration
	Logger             **slog.Logger
}

// SizeRule is the default and range of a size option, and the field's name for errors.
type SizeRule struct {
	Field             string // "MaxFileLength"
	Default, Min, Max int64
}

// OptionSpec describes an adapter's Options type T to the option rules the
// log-structured adapters share: how its configuration block is called, the names of
// its sync policies, where T holds the shared options (Fields) and what else the
// adapter checks (Check). Make it a package-level variable of the adapter.
type OptionSpec[T any] struct {
	// Block is the name of the adapter's block in the configuration ("kahaDB"): its
	// key path is persistenceAdapter.<Block>, its default directory <DataDirectory>/
	// <Block in lower case>.
	Block     string
	ErrOption error // the adapter's sentinel for an invalid option
	Policies  PolicyNames
	Segment   SizeRule
	Fields    func(o *T) Fields
	// Check, if not nil, fills in and checks the adapter's own options, after the
	// shared ones.
	Check func(o *T) error
}

// Prepare is the first step of an adapter's Open: it fails for a done ctx, else returns
// o with its defaults filled in, checked (Defaults).
func (s *OptionSpec[T]) Prepare(ctx context.Context, o T) (T, error) {
	if err := ctx.Err(); err != nil {
		return o, err
	}
	return o, s.Defaults(&o)
}

// Defaults fills in the defaults of o and checks it: Dir must not be blank, the segment
// size must be in its range and the policy known, then Check. A zero value means the
// default, and so does a negative Interval; a negative CheckpointInterval is kept (it
// disables periodic checkpoints).
func (s *OptionSpec[T]) Defaults(o *T) error {
	f := s.Fields(o)
	if strings.TrimSpace(*f.Dir) == "" {
		return fmt.Errorf("%w: Dir is empty", s.ErrOption)
	}
	if *f.SegmentSize == 0 {
		*f.SegmentSize = s.Segment.Default
	}
	if sz := *f.SegmentSize; sz < s.Segment.Min || sz > s.Segment.Max {
		return fmt.Errorf("%w: %s %d outside [%d, %d]", s.ErrOption, s.Segment.Field, sz, s.Segment.Min, s.Segment.Max)
	}
	if err := s.Policies.Check(f.Policy, s.ErrOption); err != nil {
		return err
	}
	if *f.Interval <= 0 {
		*f.Interval = DefaultSyncInterval
	}
	if *f.CheckpointInterval == 0 {
		*f.CheckpointInterval = DefaultCheckpointInterval
	}
	if *f.Logger == nil {
		*f.Logger = slog.New(slog.DiscardHandler)
	}
	if s.Check != nil {
		return s.Check(o)
	}
	return nil
}

// Parse turns the broker's persistence options into the adapter's: the directory
// defaults to <DataDirectory>/<block> ("data" without a data directory), the logger is
// p's, and keys read p.Raw (optparse.Apply); an unknown key or a bad value is a
// *setting.Error under the block's key path wrapping ErrOption. Defaults are left to
// Open.
func (s *OptionSpec[T]) Parse(p persistence.Options, keys []optparse.Key[T]) (T, error) {
	var o T
	dir := p.DataDirectory
	if dir == "" {
		dir = "data"
	}
	f := s.Fields(&o)
	*f.Dir, *f.Logger = filepath.Join(dir, strings.ToLower(s.Block)), p.Logger
	if err := optparse.Apply(&o, p.Raw, keys, optparse.SettingError("persistenceAdapter."+s.Block, s.ErrOption)); err != nil {
		var zero T
		return zero, err
	}
	return o, nil
}

// DirectoryKey is the block's "directory" key (optparse.DirectoryKey).
func (s *OptionSpec[T]) DirectoryKey() optparse.Key[T] {
	return optparse.DirectoryKey("a directory path (default <dataDirectory>/"+strings.ToLower(s.Block)+")",
		func(o *T) *string { return s.Fields(o).Dir })
}
