package config

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The example file's systemUsage, streams, virtualTopics and broker keys; its
// destinationPolicy is TestPolicyExample's.
func TestSectionsExample(t *testing.T) {
	isolateEnv(t)
	c, err := Load("testdata/destination-policy.yaml")
	require.NoError(t, err)
	assert.Equal(t, Broker{
		BrokerName: "b1", DataDirectory: "/var/lib/broker", Persistent: true,
		SchedulerSupport: false, OfflineDurableSubscriberTaskSchedule: time.Minute, AllowLinkStealing: true,
		AdminAddress: DefaultAdminAddress, StatsAddress: DefaultAdminAddress, AdminGroups: Names{"admins"},
		AdvisorySupport: true, MaxPendingLogins: DefaultMaxPendingLogins,
	}, c.Broker)
	assert.Equal(t, SystemUsage{
		MemoryUsage: 512 << 20, StoreUsage: 20 << 30, SendFailIfNoSpace: false, SendFailIfNoSpaceAfterTimeout: 3 * time.Second,
		MaxTransactionSize: 64 << 20, MaxTransactionsPerConnection: 16, MaxDestinations: 500, MaxSubscriptionsPerConnection: 100, MaxDurableSubscriptions: 50, SchedulerMemoryLimit: 8 << 20, MaxTemporaryDestinationsPerConnection: 1000,
	}, c.SystemUsage)
	assert.Equal(t, Streams{
		Directory: "/srv/streams", Flush: "interval", FlushInterval: 250 * time.Millisecond,
		SegmentBytes: 256 << 20, SegmentMs: 24 * time.Hour, IndexIntervalBytes: 8 << 10,
		Engine: StreamsEmbedded, Kafka: defaultKafkaStreams,
	}, c.Streams)
	assert.Equal(t, VirtualTopics{Enabled: false, Name: "VT.>", Prefix: "VirtualTopicConsumers.*."}, c.VirtualTopics)
}

func TestSectionsDefaultsPerKey(t *testing.T) {
	c, err := Parse([]byte(`systemUsage: {memoryUsage: 64mb}
streams: {flush: OS, segmentBytes: 1048576}
virtualTopics: {prefix: "VirtualTopicConsumers.*."}
broker: {allowLinkStealing: "true"}
`), nil)
	require.NoError(t, err)
	assert.Equal(t, SystemUsage{MemoryUsage: 64 << 20, StoreUsage: 100 << 30, MaxTransactionSize: 64 << 20,
		MaxTransactionsPerConnection: 64, MaxDestinations: 1_000_000, MaxSubscriptionsPerConnection: 10000, MaxDurableSubscriptions: 10000, SchedulerMemoryLimit: 32 << 20, MaxTemporaryDestinationsPerConnection: 1000}, c.SystemUsage)
	assert.Equal(t, "os", c.Streams.Flush, "read case-insensitively")
	assert.Equal(t, int64(1<<20), c.Streams.SegmentBytes)
	assert.Equal(t, 168*time.Hour, c.Streams.SegmentMs)
	assert.Equal(t, VirtualTopics{Enabled: true, Name: "VirtualTopic.>", Prefix: "VirtualTopicConsumers.*."}, c.VirtualTopics)
	assert.True(t, c.Broker.AllowLinkStealing)
	assert.True(t, c.Broker.SchedulerSupport)
}

// The metrics section: defaults, the file's values, and the environment's.
func TestMetricsSection(t *testing.T) {
	c, err := Parse([]byte("metrics: {maxDestinationSeries: 50}\n"), nil)
	require.NoError(t, err)
	assert.Equal(t, Metrics{PerDestination: true, MaxDestinationSeries: 50}, c.Metrics)

	c, err = Parse([]byte("metrics:\n  perDestination: false\n"), nil)
	require.NoError(t, err)
	assert.Equal(t, Metrics{PerDestination: false, MaxDestinationSeries: 1000}, c.Metrics)

	c, err = Parse(nil, []string{"BROKER_METRICS_MAXDESTINATIONSERIES=7", "BROKER_METRICS_PERDESTINATION=false"})
	require.NoError(t, err)
	assert.Equal(t, Metrics{PerDestination: false, MaxDestinationSeries: 7}, c.Metrics)
}

func TestStreamsDirectoryFollowsDataDirectory(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		env  []string
		want string
	}{
		{"", nil, filepath.Join("data", "streams")},
		{"broker: {dataDirectory: /var/lib/broker}\n", nil, filepath.Join("/var/lib/broker", "streams")},
		{"broker: {dataDirectory: var}\n", nil, filepath.Join("var", "streams")},
		{"", []string{"BROKER_BROKER_DATADIRECTORY=/d"}, filepath.Join("/d", "streams")},
		{"streams: {directory: ''}\n", nil, filepath.Join("data", "streams")},
		{"streams: {directory: rel/s}\n", nil, "rel/s"},
		{"", []string{"BROKER_STREAMS_DIRECTORY=/s"}, "/s"},
	} {
		c, err := Parse([]byte(tt.yaml), tt.env)
		require.NoError(t, err, tt.yaml)
		assert.Equal(t, tt.want, c.Streams.Directory, "%q %v", tt.yaml, tt.env)
	}
}

func TestSectionErrors(t *testing.T) {
	const flushAllowed = "batch, interval, os"
	runErrorCases(t, []errorCase{
		// broker
		{"task schedule 0", "broker: {offlineDurableSubscriberTaskSchedule: 0}\n", "broker.offlineDurableSubscriberTaskSchedule", "more than 0", "milliseconds", "0"},
		{"schedulerSupport not a boolean", "broker: {schedulerSupport: sometimes}\n", "broker.schedulerSupport", "not a boolean", "true, false", "sometimes"},

		// systemUsage
		{"unknown systemUsage key", "systemUsage: {tempUsage: 50gb}\n", "systemUsage.tempUsage", "unknown key",
			"memoryUsage, storeUsage, sendFailIfNoSpace, sendFailIfNoSpaceAfterTimeout", ""},
		{"systemUsage not a mapping", "systemUsage: 1gb\n", "systemUsage", "must be a mapping", "memoryUsage", "1gb"},
		{"memoryUsage below 1mb", "systemUsage: {memoryUsage: 512kb}\n", "systemUsage.memoryUsage", "524288 bytes is too small", "at least 1048576", "512kb"},
		{"memoryUsage 0", "systemUsage: {memoryUsage: 0}\n", "systemUsage.memoryUsage", "too small", "at least 1048576", "0"},
		{"memoryUsage negative", "systemUsage: {memoryUsage: -1}\n", "systemUsage.memoryUsage", "must not be negative", "kb, mb", "-1"},
		{"memoryUsage percent", "systemUsage: {memoryUsage: 70%}\n", "systemUsage.memoryUsage", "not a size", "kb, mb", "70%"},
		{"storeUsage negative", "systemUsage: {storeUsage: -100gb}\n", "systemUsage.storeUsage", "not a size", "kb, mb", "-100gb"},
		{"storeUsage below 1mb", "systemUsage: {storeUsage: 1kb}\n", "systemUsage.storeUsage", "too small", "at least 1048576", "1kb"},
		{"negative send timeout", "systemUsage: {sendFailIfNoSpaceAfterTimeout: -1}\n", "systemUsage.sendFailIfNoSpaceAfterTimeout", "must not be negative", "no waiting", "-1"},
		{"key as written", "SystemUsage: {MemoryUsage: 1}\n", "SystemUsage.MemoryUsage", "too small", "", "1"},
		{"maxTransactionsPerConnection 0", "systemUsage: {maxTransactionsPerConnection: 0}\n", "systemUsage.maxTransactionsPerConnection", "out of range", "from 1 to", "0"},
		{"maxSubscriptionsPerConnection 0", "systemUsage: {maxSubscriptionsPerConnection: 0}\n", "systemUsage.maxSubscriptionsPerConnection", "out of range", "from 1 to", "0"},
		{"maxDurableSubscriptions 0", "systemUsage: {maxDurableSubscriptions: 0}\n", "systemUsage.maxDurableSubscriptions", "out of range", "from 1 to", "0"},
		{"maxTemporaryDestinationsPerConnection 0", "systemUsage: {maxTemporaryDestinationsPerConnection: 0}\n", "systemUsage.maxTemporaryDestinationsPerConnection", "out of range", "from 1 to", "0"},
		{"maxDestinations negative", "systemUsage: {maxDestinations: -1}\n", "systemUsage.maxDestinations", "out of range", "from 1 to", "-1"},
		{"maxDestinations not a number", "systemUsage: {maxDestinations: many}\n", "systemUsage.maxDestinations", "", "", "many"},
		{"schedulerMemoryLimit below 64kb", "systemUsage: {schedulerMemoryLimit: 1kb}\n", "systemUsage.schedulerMemoryLimit", "too small", "at least 65536", "1kb"},

		// streams
		{"unknown flush", "streams: {flush: always}\n", "streams.flush", "unknown value", flushAllowed, "always"},
		{"empty flush", "streams: {flush: ''}\n", "streams.flush", "unknown value", flushAllowed, ""},
		{"flushInterval 0", "streams: {flushInterval: 0}\n", "streams.flushInterval", "more than 0", "", "0"},
		{"segmentBytes 0", "streams: {segmentBytes: 0}\n", "streams.segmentBytes", "too small", "at least 1 bytes", "0"},
		{"segmentBytes negative", "streams: {segmentBytes: -1gb}\n", "streams.segmentBytes", "not a size", "", "-1gb"},
		{"segmentMs negative", "streams: {segmentMs: -1h}\n", "streams.segmentMs", "more than 0", "", "-1h"},
		{"indexIntervalBytes 0", "streams: {indexIntervalBytes: 0}\n", "streams.indexIntervalBytes", "too small", "", "0"},
		{"unknown streams key", "streams: {retention: 1h}\n", "streams.retention", "unknown key", "directory, flush, flushInterval", ""},

		// virtualTopics
		{"prefix without *", "virtualTopics: {prefix: Consumer.}\n", "virtualTopics.prefix", `exactly one "*" element`, "Consumer.*.", "Consumer."},
		{"prefix with two *", "virtualTopics: {prefix: C.*.*.}\n", "virtualTopics.prefix", `exactly one "*"`, "", "C.*.*."},
		{"prefix * inside an element", "virtualTopics: {prefix: Consumer*.}\n", "virtualTopics.prefix", `exactly one "*"`, "", "Consumer*."},
		{"prefix with >", "virtualTopics: {prefix: C.*.>}\n", "virtualTopics.prefix", "no other wildcard", "", "C.*.>"},
		{"empty prefix", "virtualTopics: {prefix: ''}\n", "virtualTopics.prefix", `exactly one "*"`, "", ""},
		{"empty name", "virtualTopics: {name: ''}\n", "virtualTopics.name", "must not be empty", "wildcards", ""},
		{"name > not last", "virtualTopics: {name: VT.>.x}\n", "virtualTopics.name", `">" may only`, "wildcards", "VT.>.x"},
		{"unknown virtualTopics key", "virtualTopics: {selectorAware: true}\n", "virtualTopics.selectorAware", "unknown key", "enabled, name, prefix", ""},

		// metrics
		{"maxDestinationSeries 0", "metrics: {maxDestinationSeries: 0}\n", "metrics.maxDestinationSeries", "out of range", "at least 1", "0"},
		{"maxDestinationSeries negative", "metrics: {maxDestinationSeries: -5}\n", "metrics.maxDestinationSeries", "out of range", "_other", "-5"},
		{"unknown metrics key", "metrics: {per_destination: true}\n", "metrics.per_destination", "unknown key", "perDestination, maxDestinationSeries", ""},
	})
}

// errorCase is one row of a table of Parse errors: the file, then the *Error's
// key, a substring of its Problem and of its Allowed, and its Value when not "".
type errorCase struct {
	name    string
	yaml    string
	key     string
	problem string
	allowed string
	value   string
}

// runErrorCases parses each case's file and checks its *Error; no error may show
// the test secret.
func runErrorCases(t *testing.T, cases []errorCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), nil)
			ce := assertConfigError(t, err, tt.key, tt.allowed)
			assert.Contains(t, ce.Problem, tt.problem)
			if tt.value != "" {
				assert.Equal(t, tt.value, ce.Value)
			}
			assert.NotContains(t, err.Error(), secret)
		})
	}
}

func TestSectionEnvValueErrors(t *testing.T) {
	_, err := Parse(nil, []string{"BROKER_SYSTEMUSAGE_MEMORYUSAGE=10kb"})
	ce := assertConfigError(t, err, "systemUsage.memoryUsage", "at least 1048576")
	assert.Contains(t, ce.Problem, "(set by environment variable BROKER_SYSTEMUSAGE_MEMORYUSAGE)")
	assert.Equal(t, "10kb", ce.Value)

	_, err = Parse(nil, []string{"BROKER_STREAMS_FLUSH=sometimes"})
	ce = assertConfigError(t, err, "streams.flush", "batch, interval, os")
	assert.Contains(t, ce.Problem, "(set by environment variable BROKER_STREAMS_FLUSH)")
}
