package journal_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/setting"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/journal"
)

func TestParseOptions(t *testing.T) {
	o, err := journal.ParseOptions(persistence.Options{DataDirectory: "/var/amq"})
	require.NoError(t, err)
	require.Equal(t, journal.Options{Dir: "/var/amq/kahadb"}, o, "defaults are left to Open")

	o, err = journal.ParseOptions(persistence.Options{DataDirectory: "/var/amq", Raw: map[string]any{
		"directory":                        "./data/kahadb",
		"journalmaxfilelength":             "64mb",
		"journaldisksyncstrategy":          "Periodic",
		"journaldisksyncinterval":          "250ms",
		"checkpointinterval":               10000, // a number is milliseconds
		"CleanupInterval":                  "1m",  // keys are matched case-insensitively
		"concurrentstoreanddispatchqueues": false,
	}})
	require.NoError(t, err)
	require.Equal(t, journal.Options{
		Dir: "data/kahadb", MaxFileLength: 64 << 20, SyncStrategy: journal.SyncPeriodic,
		SyncInterval: 250 * time.Millisecond, CheckpointInterval: 10 * time.Second, CleanupInterval: time.Minute,
		StoreBeforeDispatch: true,
	}, o)

	o, err = journal.ParseOptions(persistence.Options{Raw: map[string]any{"concurrentStoreAndDispatchQueues": "true"}})
	require.NoError(t, err)
	require.False(t, o.StoreBeforeDispatch, "ActiveMQ's default: dispatch while storing")

	o, err = journal.ParseOptions(persistence.Options{Raw: map[string]any{"journalmaxfilelength": 1048576.0, "journaldisksyncstrategy": "never"}})
	require.NoError(t, err)
	require.EqualValues(t, 1<<20, o.MaxFileLength, "a number is bytes")
	require.Equal(t, journal.SyncNever, o.SyncStrategy)
	require.Equal(t, filepath.Join("data", "kahadb"), o.Dir)
}

func TestParseOptionsErrors(t *testing.T) {
	cases := []struct {
		key   string
		value any
		want  []string // in the message
	}{
		{"journalDiskSyncStrategy", "sometimes", []string{"persistenceAdapter.kahaDB.journalDiskSyncStrategy", `"sometimes"`, "always, periodic or never"}},
		{"journalMaxFileLength", "32 parsecs", []string{"persistenceAdapter.kahaDB.journalMaxFileLength", `"32 parsecs"`, "64kb to 2gb"}},
		{"journalMaxFileLength", "1kb", []string{"journalMaxFileLength", `"1kb"`}},
		{"journalMaxFileLength", "4gb", []string{"journalMaxFileLength", `"4gb"`}},
		{"journalMaxFileLength", -5, []string{"journalMaxFileLength", `"-5"`}},
		{"journalMaxFileLength", 1.5, []string{"journalMaxFileLength"}},
		{"checkpointInterval", "soon", []string{"persistenceAdapter.kahaDB.checkpointInterval", `"soon"`, "positive duration"}},
		{"cleanupInterval", "0s", []string{"cleanupInterval", `"0s"`}},
		{"cleanupInterval", 0, []string{"cleanupInterval"}},
		{"journalDiskSyncInterval", "-1s", []string{"journalDiskSyncInterval"}},
		{"journalDiskSyncInterval", true, []string{"journalDiskSyncInterval", "positive duration"}},
		{"journalDiskSyncInterval", []int{1}, []string{"journalDiskSyncInterval", "a string, a number or a boolean"}},
		{"concurrentStoreAndDispatchQueues", "sometimes", []string{"persistenceAdapter.kahaDB.concurrentStoreAndDispatchQueues", `"sometimes"`, "true or false"}},
		{"directory", 5, []string{"directory"}},
		{"directory", "", []string{"directory"}},
		{"indexCacheSize", 10000, []string{"persistenceAdapter.kahaDB.indexCacheSize", "unknown option", "journalMaxFileLength"}},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			_, err := journal.ParseOptions(persistence.Options{Raw: map[string]any{c.key: c.value}})
			require.Error(t, err)
			require.ErrorIs(t, err, journal.ErrOption)
			var cerr *setting.Error
			require.True(t, errors.As(err, &cerr), "a *setting.Error, as the broker prints them")
			for _, w := range c.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
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
