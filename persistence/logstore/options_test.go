package logstore_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/setting"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/logstore"
)

func TestParseOptions(t *testing.T) {
	o, err := logstore.ParseOptions(persistence.Options{DataDirectory: "/var/amq"})
	require.NoError(t, err)
	require.Equal(t, logstore.Options{Dir: "/var/amq/kafkalog"}, o, "defaults are left to Open")

	o, err = logstore.ParseOptions(persistence.Options{DataDirectory: "/var/amq", Raw: map[string]any{
		"directory":          "./data/kafkalog",
		"flush":              "Interval",
		"flushinterval":      "250ms",
		"segmentbytes":       "16mb",
		"CheckpointInterval": 10000, // a number is milliseconds; keys match case-insensitively
	}})
	require.NoError(t, err)
	require.Equal(t, logstore.Options{Dir: "data/kafkalog", Flush: logstore.FlushInterval,
		FlushInterval: 250 * time.Millisecond, SegmentBytes: 16 << 20, CheckpointInterval: 10 * time.Second}, o)

	o, err = logstore.ParseOptions(persistence.Options{Raw: map[string]any{"segmentbytes": 1048576.0, "flush": "os"}})
	require.NoError(t, err)
	require.EqualValues(t, 1<<20, o.SegmentBytes, "a number is bytes")
	require.Equal(t, logstore.FlushOS, o.Flush)
	require.Equal(t, filepath.Join("data", "kafkalog"), o.Dir)
	require.Equal(t, "os", o.Flush.String())

	o, err = logstore.ParseOptions(persistence.Options{Raw: map[string]any{"concurrentstoreanddispatchqueues": false}})
	require.NoError(t, err)
	require.True(t, o.StoreBeforeDispatch)
	o, err = logstore.ParseOptions(persistence.Options{Raw: map[string]any{"concurrentStoreAndDispatchQueues": "true"}})
	require.NoError(t, err)
	require.False(t, o.StoreBeforeDispatch, "ActiveMQ's default: dispatch while storing")
}

func TestParseOptionsErrors(t *testing.T) {
	cases := []struct {
		key   string
		value any
		want  []string // in the message
	}{
		{"flush", "sometimes", []string{"persistenceAdapter.kafkaLog.flush", `"sometimes"`, "batch, interval or os"}},
		{"flush", 1, []string{"persistenceAdapter.kafkaLog.flush"}},
		{"segmentBytes", "32 parsecs", []string{"persistenceAdapter.kafkaLog.segmentBytes", `"32 parsecs"`, "64kb to 1gb"}},
		{"segmentBytes", "1kb", []string{"segmentBytes", `"1kb"`}},
		{"segmentBytes", "2gb", []string{"segmentBytes", `"2gb"`}},
		{"segmentBytes", -5, []string{"segmentBytes", `"-5"`}},
		{"checkpointInterval", "soon", []string{"persistenceAdapter.kafkaLog.checkpointInterval", `"soon"`, "positive duration"}},
		{"checkpointInterval", "-1s", []string{"checkpointInterval"}},
		{"flushInterval", "48h", []string{"flushInterval", `"48h"`}},
		{"directory", "  ", []string{"persistenceAdapter.kafkaLog.directory"}},
		{"directory", map[string]any{"a": 1}, []string{"directory", "must be a string, a number or a boolean"}},
		{"concurrentStoreAndDispatchQueues", "sometimes", []string{"persistenceAdapter.kafkaLog.concurrentStoreAndDispatchQueues", `"sometimes"`, "true or false"}},
		{"flushInterval", true, []string{"flushInterval", "positive duration"}},
		{"retention", "7d", []string{"persistenceAdapter.kafkaLog.retention", "unknown option", "directory, flush, flushInterval, segmentBytes, checkpointInterval"}},
	}
	for _, c := range cases {
		_, err := logstore.ParseOptions(persistence.Options{Raw: map[string]any{c.key: c.value}})
		require.Error(t, err, "%s=%v", c.key, c.value)
		require.ErrorIs(t, err, logstore.ErrOption)
		var ce *setting.Error
		require.True(t, errors.As(err, &ce), "%T is a *setting.Error", err)
		for _, w := range c.want {
			require.Contains(t, err.Error(), w)
		}
	}
}
