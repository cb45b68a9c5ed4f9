package logstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
	"github.com/activemq-go/broker/persistence/logstore"
)

func TestParseOptions(t *testing.T) {
	shelltest.RequireDefaults(t, logstore.ParseOptions, "kafkalog", func(dir string) logstore.Options { return logstore.Options{Dir: dir} })

	o, err := logstore.ParseOptions(persistence.Options{DataDirectory: "/var/amq", Raw: map[string]any{
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
	require.Equal(t, "os", o.Flush.String())

	o, err = logstore.ParseOptions(persistence.Options{Raw: map[string]any{"concurrentstoreanddispatchqueues": false}})
	require.NoError(t, err)
	require.True(t, o.StoreBeforeDispatch)
	o, err = logstore.ParseOptions(persistence.Options{Raw: map[string]any{"concurrentStoreAndDispatchQueues": "true"}})
	require.NoError(t, err)
	require.False(t, o.StoreBeforeDispatch, "ActiveMQ's default: dispatch while storing")
}

func TestParseOptionsErrors(t *testing.T) {
	cases := []shelltest.OptionError{
		{Key: "flush", Value: "sometimes", Want: []string{"persistenceAdapter.kafkaLog.flush", `"sometimes"`, "batch, interval or os"}},
		{Key: "flush", Value: 1, Want: []string{"persistenceAdapter.kafkaLog.flush"}},
		{Key: "segmentBytes", Value: "32 parsecs", Want: []string{"persistenceAdapter.kafkaLog.segmentBytes", `"32 parsecs"`, "64kb to 1gb"}},
		{Key: "segmentBytes", Value: "1kb", Want: []string{"segmentBytes", `"1kb"`}},
		{Key: "segmentBytes", Value: "2gb", Want: []string{"segmentBytes", `"2gb"`}},
		{Key: "segmentBytes", Value: -5, Want: []string{"segmentBytes", `"-5"`}},
		{Key: "checkpointInterval", Value: "soon", Want: []string{"persistenceAdapter.kafkaLog.checkpointInterval", `"soon"`, "positive duration"}},
		{Key: "checkpointInterval", Value: "-1s", Want: []string{"checkpointInterval"}},
		{Key: "flushInterval", Value: "48h", Want: []string{"flushInterval", `"48h"`}},
		{Key: "directory", Value: "  ", Want: []string{"persistenceAdapter.kafkaLog.directory"}},
		{Key: "directory", Value: map[string]any{"a": 1}, Want: []string{"directory", "must be a string, a number or a boolean"}},
		{Key: "concurrentStoreAndDispatchQueues", Value: "sometimes", Want: []string{"persistenceAdapter.kafkaLog.concurrentStoreAndDispatchQueues", `"sometimes"`, "true or false"}},
		{Key: "flushInterval", Value: true, Want: []string{"flushInterval", "positive duration"}},
		{Key: "retention", Value: "7d", Want: []string{"persistenceAdapter.kafkaLog.retention", "unknown option", "directory, flush, flushInterval, segmentBytes, checkpointInterval"}},
	}
	shelltest.RequireOptionErrors(t, func(raw map[string]any) error {
		_, err := logstore.ParseOptions(persistence.Options{Raw: raw})
		return err
	}, logstore.ErrOption, cases)
}
