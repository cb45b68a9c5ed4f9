package journal_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
	"github.com/activemq-go/broker/persistence/journal"
)

func TestParseOptions(t *testing.T) {
	shelltest.RequireDefaults(t, journal.ParseOptions, "kahadb", func(dir string) journal.Options { return journal.Options{Dir: dir} })

	o, err := journal.ParseOptions(persistence.Options{DataDirectory: "/var/amq", Raw: map[string]any{
		"directory":                        "./data/kahadb",
		"journalmaxfilelength":             "64mb",
		"journaldisksyncstrategy":          "Periodic",
		"journaldisksyncinterval":          "250ms",
		"journalAsyncSyncDelay":            "2ms",
		"checkpointinterval":               10000, // a number is milliseconds
		"CleanupInterval":                  "1m",  // keys are matched case-insensitively
		"concurrentstoreanddispatchqueues": false,
	}})
	require.NoError(t, err)
	require.Equal(t, journal.Options{
		Dir: "data/kahadb", MaxFileLength: 64 << 20, SyncStrategy: journal.SyncPeriodic,
		SyncInterval: 250 * time.Millisecond, AsyncSyncDelay: 2 * time.Millisecond, CheckpointInterval: 10 * time.Second, CleanupInterval: time.Minute,
		StoreBeforeDispatch: true,
	}, o)

	o, err = journal.ParseOptions(persistence.Options{Raw: map[string]any{"concurrentStoreAndDispatchQueues": "true"}})
	require.NoError(t, err)
	require.False(t, o.StoreBeforeDispatch, "ActiveMQ's default: dispatch while storing")

	o, err = journal.ParseOptions(persistence.Options{Raw: map[string]any{"journalmaxfilelength": 1048576.0, "journaldisksyncstrategy": "never"}})
	require.NoError(t, err)
	require.EqualValues(t, 1<<20, o.MaxFileLength, "a number is bytes")
	require.Equal(t, journal.SyncNever, o.SyncStrategy)
}

func TestParseOptionsErrors(t *testing.T) {
	cases := []shelltest.OptionError{
		{Key: "journalDiskSyncStrategy", Value: "sometimes", Want: []string{"persistenceAdapter.kahaDB.journalDiskSyncStrategy", `"sometimes"`, "always, periodic or never"}},
		{Key: "journalMaxFileLength", Value: "32 parsecs", Want: []string{"persistenceAdapter.kahaDB.journalMaxFileLength", `"32 parsecs"`, "64kb to 2gb"}},
		{Key: "journalMaxFileLength", Value: "1kb", Want: []string{"journalMaxFileLength", `"1kb"`}},
		{Key: "journalMaxFileLength", Value: "4gb", Want: []string{"journalMaxFileLength", `"4gb"`}},
		{Key: "journalMaxFileLength", Value: -5, Want: []string{"journalMaxFileLength", `"-5"`}},
		{Key: "journalMaxFileLength", Value: 1.5, Want: []string{"journalMaxFileLength"}},
		{Key: "checkpointInterval", Value: "soon", Want: []string{"persistenceAdapter.kahaDB.checkpointInterval", `"soon"`, "positive duration"}},
		{Key: "cleanupInterval", Value: "0s", Want: []string{"cleanupInterval", `"0s"`}},
		{Key: "cleanupInterval", Value: 0, Want: []string{"cleanupInterval"}},
		{Key: "journalDiskSyncInterval", Value: "-1s", Want: []string{"journalDiskSyncInterval"}},
		{Key: "journalAsyncSyncDelay", Value: "-1ms", Want: []string{"journalAsyncSyncDelay"}},
		{Key: "journalDiskSyncInterval", Value: true, Want: []string{"journalDiskSyncInterval", "positive duration"}},
		{Key: "journalDiskSyncInterval", Value: []int{1}, Want: []string{"journalDiskSyncInterval", "a string, a number or a boolean"}},
		{Key: "concurrentStoreAndDispatchQueues", Value: "sometimes", Want: []string{"persistenceAdapter.kahaDB.concurrentStoreAndDispatchQueues", `"sometimes"`, "true or false"}},
		{Key: "directory", Value: 5, Want: []string{"directory"}},
		{Key: "directory", Value: "", Want: []string{"directory"}},
		{Key: "indexCacheSize", Value: 10000, Want: []string{"persistenceAdapter.kahaDB.indexCacheSize", "unknown option", "journalMaxFileLength"}},
	}
	shelltest.RequireOptionErrors(t, func(raw map[string]any) error {
		_, err := journal.ParseOptions(persistence.Options{Raw: raw})
		return err
	}, journal.ErrOption, cases)
}

func TestOpenByName(t *testing.T) {
	require.Contains(t, persistence.Adapters(), "kahadb")
	dir := t.TempDir()
	s, err := persistence.Open(t.Context(), "kahadb", persistence.Options{DataDirectory: dir})
	require.NoError(t, err)
	require.IsType(t, &journal.Store{}, s)
	_, err = s.Recover(t.Context())
	require.NoError(t, err)
	require.DirExists(t, filepath.Join(dir, "kahadb"))
	_, err = persistence.Open(t.Context(), "kahadb", persistence.Options{DataDirectory: dir})
	require.ErrorIs(t, err, journal.ErrLocked, "one store per directory")
	require.NoError(t, s.Close())

	_, err = persistence.Open(t.Context(), "kahadb", persistence.Options{DataDirectory: dir, Raw: map[string]any{"bogus": 1}})
	require.ErrorIs(t, err, journal.ErrOption)

	_, err = journal.Open(t.Context(), journal.Options{Dir: dir, MaxFileLength: 100})
	require.ErrorIs(t, err, journal.ErrOption)
}
