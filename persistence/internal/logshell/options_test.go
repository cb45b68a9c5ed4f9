package logshell

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/setting"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/optparse"
)

// testOptions is an adapter's Options as the spec sees them, with one option of its own.
type testOptions struct {
	Dir        string
	Size       int64
	Policy     Policy
	Every      time.Duration
	Checkpoint time.Duration
	Logger     *slog.Logger
	Own        int
}

var errTestOption = errors.New("test: invalid option")

var testSpec = OptionSpec[testOptions]{
	Block: "testLog", ErrOption: errTestOption,
	Policies: PolicyNames{Type: "TestPolicy", Names: [3]string{"each", "tick", "none"}, Unknown: "unknown test policy"},
	Segment:  SizeRule{Field: "Size", Default: 1 << 20, Min: 1 << 10, Max: 1 << 30},
	Fields: func(o *testOptions) Fields {
		return Fields{Dir: &o.Dir, SegmentSize: &o.Size, Policy: o.Policy, Interval: &o.Every,
			CheckpointInterval: &o.Checkpoint, Logger: &o.Logger}
	},
	Check: func(o *testOptions) error {
		if o.Own < 0 {
			return errTestOption
		}
		if o.Own == 0 {
			o.Own = 7
		}
		return nil
	},
}

func TestOptionDefaults(t *testing.T) {
	o, err := testSpec.Prepare(t.Context(), testOptions{Dir: "d", Every: -time.Second})
	require.NoError(t, err)
	require.EqualValues(t, 1<<20, o.Size)
	require.Equal(t, DefaultSyncInterval, o.Every, "a negative interval means the default")
	require.Equal(t, DefaultCheckpointInterval, o.Checkpoint)
	require.NotNil(t, o.Logger)
	require.Equal(t, 7, o.Own, "Check runs after the shared rules")

	o, err = testSpec.Prepare(t.Context(), testOptions{Dir: "d", Checkpoint: -1, Size: 1 << 10, Policy: SyncNever})
	require.NoError(t, err)
	require.Equal(t, time.Duration(-1), o.Checkpoint, "a negative checkpoint interval disables checkpoints")
	require.EqualValues(t, 1<<10, o.Size)

	for name, bad := range map[string]testOptions{
		"blank Dir":      {Dir: " \t"},
		"small segment":  {Dir: "d", Size: 1<<10 - 1},
		"large segment":  {Dir: "d", Size: 1<<30 + 1},
		"unknown policy": {Dir: "d", Policy: SyncNever + 1},
		"own rule":       {Dir: "d", Own: -1},
	} {
		_, err := testSpec.Prepare(t.Context(), bad)
		require.ErrorIs(t, err, errTestOption, name)
	}
	_, err = testSpec.Prepare(t.Context(), testOptions{Dir: "d", Size: 5})
	require.ErrorContains(t, err, "Size 5 outside [1024, 1073741824]")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = testSpec.Prepare(ctx, testOptions{Dir: "d"})
	require.ErrorIs(t, err, context.Canceled)
}

func TestOptionParse(t *testing.T) {
	keys := []optparse.Key[testOptions]{
		testSpec.DirectoryKey(),
		PolicyKey("policy", &testSpec.Policies, func(o *testOptions, p Policy) { o.Policy = p }),
	}
	o, err := testSpec.Parse(persistence.Options{DataDirectory: "/var/amq"}, keys)
	require.NoError(t, err)
	require.Equal(t, testOptions{Dir: filepath.Join("/var/amq", "testlog")}, o, "defaults are left to Prepare")
	o, err = testSpec.Parse(persistence.Options{Raw: map[string]any{"Policy": " Tick ", "directory": "x/../y"}}, keys)
	require.NoError(t, err)
	require.Equal(t, testOptions{Dir: "y", Policy: SyncPeriodic}, o)

	_, err = testSpec.Parse(persistence.Options{Raw: map[string]any{"policy": "sometimes"}}, keys)
	var se *setting.Error
	require.ErrorAs(t, err, &se)
	require.ErrorIs(t, err, errTestOption)
	require.Equal(t, "persistenceAdapter.testLog.policy", se.Key)
	require.Equal(t, "each, tick or none", se.Allowed)
	_, err = testSpec.Parse(persistence.Options{Raw: map[string]any{"directory": ""}}, keys)
	require.ErrorContains(t, err, "<dataDirectory>/testlog")
}
