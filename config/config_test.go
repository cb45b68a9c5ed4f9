package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// isolateEnv unsets, for the test, every BROKER_ variable of the test process, so
// that Load (which reads os.Environ) sees only what the test sets.
func isolateEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(strings.ToUpper(name), EnvPrefix) {
			t.Setenv(name, "") // restores the old value after the test
			require.NoError(t, os.Unsetenv(name))
		}
	}
}

// newBroker is a broker section with the given keys and the others at their
// defaults.
func newBroker(name, dir string, persistent bool) Broker {
	return Broker{
		BrokerName: name, DataDirectory: dir, Persistent: persistent,
		SchedulerSupport: true, OfflineDurableSubscriberTaskSchedule: 5 * time.Minute, AllowLinkStealing: false,
		AdminAddress: DefaultAdminAddress, StatsAddress: DefaultAdminAddress, AdminGroups: Names{"admins"},
		AdvisorySupport: true, MaxPendingLogins: DefaultMaxPendingLogins,
	}
}

// defaultConnector is the connector an empty file gives.
func defaultConnector() Connector {
	return Connector{
		Name:                    "stomp",
		URI:                     "stomp://127.0.0.1:61613",
		Scheme:                  "stomp",
		Addr:                    "127.0.0.1:61613",
		MaxConnections:          1000,
		MaxFrameSize:            10485760,
		MaxFrameSizeBeforeLogin: 16384,
		MaxDataLength:           104857600,
		MaxHeaders:              1000,
		MaxHeaderLength:         10240,
		ConnectTimeout:          30 * time.Second,
		HeartBeatGrace:          1.5,
		DefaultHeartBeat:        [2]time.Duration{0, 0},
	}
}

func TestDefault(t *testing.T) {
	want := &Config{
		Broker:              newBroker("localhost", "./data", true),
		Persistence:         Persistence{Adapter: "memory", Key: "memory", Options: map[string]any{}},
		TransportConnectors: []Connector{defaultConnector()},
		SystemUsage: SystemUsage{
			MemoryUsage: 1 << 30, StoreUsage: 100 << 30, SendFailIfNoSpace: false, SendFailIfNoSpaceAfterTimeout: 0,
			MaxTransactionSize: 64 << 20, MaxTransactionsPerConnection: 64, MaxDestinations: 1_000_000, MaxSubscriptionsPerConnection: 10000, MaxDurableSubscriptions: 10000, SchedulerMemoryLimit: 32 << 20,
			MaxTemporaryDestinationsPerConnection: 1000,
		},
		DestinationPolicy: nil,
		Streams: Streams{
			Directory: filepath.Join("data", "streams"), Flush: "batch", FlushInterval: time.Second,
			SegmentBytes: 1 << 30, SegmentMs: 168 * time.Hour, IndexIntervalBytes: 4 << 10,
			Engine: StreamsEmbedded, Kafka: defaultKafkaStreams,
		},
		VirtualTopics: VirtualTopics{Enabled: true, Name: "VirtualTopic.>", Prefix: "Consumer.*."},
		Plugins: Plugins{
			AnonymousUser: "anonymous", AnonymousGroup: "anonymous", AdminGroups: []string{"admins"},
			MaxConnectionsPerUser: 100, MaxDestinationsPerUser: 10000, MaxDurableSubscriptionsPerUser: 1000,
			MaxUnackedBytesPerUser: 256 << 20,
			LoginFailureDelay:      100 * time.Millisecond, MaxLoginFailureDelay: 5 * time.Second,
			ClientIDOwnership: true,
		},
		Metrics: Metrics{PerDestination: true, MaxDestinationSeries: 1000},
	}
	assert.Equal(t, want, Default())

	// An empty file, or one with only comments or a null document, gives the same.
	for _, in := range []string{"", "# nothing here\n", "---\n", "~\n", "broker:\n", "broker: {}\n",
		"systemUsage:\n", "systemUsage: {}\n", "destinationPolicy:\n", "destinationPolicy: []\n",
		"streams:\n", "streams: {}\n", "virtualTopics:\n", "virtualTopics: {}\n", "plugins:\n", "plugins: {}\n",
		"metrics:\n", "metrics: {}\n"} {
		c, err := Parse([]byte(in), nil)
		require.NoError(t, err, "%q", in)
		assert.Equal(t, want, c, "%q", in)
	}
}

func TestDefaultsPerKey(t *testing.T) {
	// Each section falls back to its defaults independently; a null single value
	// keeps its default.
	c, err := Parse([]byte("broker:\n  brokerName: b1\n  dataDirectory:\n"), nil)
	require.NoError(t, err)
	assert.Equal(t, newBroker("b1", "./data", true), c.Broker)
	assert.Equal(t, "memory", c.Persistence.Adapter)
	assert.Equal(t, []Connector{defaultConnector()}, c.TransportConnectors)

	c, err = Parse([]byte("transportConnectors:\n  - name: s\n    uri: stomp://0.0.0.0:61613\n"), nil)
	require.NoError(t, err)
	want := defaultConnector()
	want.Name, want.URI, want.Addr = "s", "stomp://0.0.0.0:61613", "0.0.0.0:61613"
	assert.Equal(t, []Connector{want}, c.TransportConnectors)
}

func TestKeysAreCaseInsensitive(t *testing.T) {
	in := `
BROKER:
  BrokerName: b1
  PERSISTENT: "false"
PersistenceAdapter:
  KAHADB: {Directory: /x}
TransportConnectors:
  - NAME: s
    URI: STOMP://127.0.0.1:1
`
	c, err := Parse([]byte(in), nil)
	require.NoError(t, err)
	assert.Equal(t, newBroker("b1", "./data", false), c.Broker)
	assert.Equal(t, "stomp", c.TransportConnectors[0].Scheme)
	assert.Equal(t, "memory", c.Persistence.Adapter) // persistent: false
}

func TestPersistenceAdapters(t *testing.T) {
	tests := []struct {
		yaml    string
		adapter string
		key     string
		options map[string]any
	}{
		{"persistenceAdapter: {memory: {}}", "memory", "memory", map[string]any{}},
		{"persistenceAdapter: {memory: }", "memory", "memory", map[string]any{}},
		{"persistenceAdapter:\n  kahaDB:\n    directory: /d\n    journalMaxFileLength: 32mb\n", "kahadb", "kahaDB",
			map[string]any{"directory": "/d", "journalmaxfilelength": "32mb"}},
		{"persistenceAdapter: {KahaDb: {}}", "kahadb", "kahaDB", map[string]any{}},
		{"persistenceAdapter: {bbolt: {path: x.db, noSync: false}}", "bbolt", "bbolt",
			map[string]any{"path": "x.db", "nosync": false}},
		{"persistenceAdapter: {jdbc: {url: 'postgres://h/db', pool: {max: 4}}}", "jdbc", "jdbc",
			map[string]any{"url": "postgres://h/db", "pool": map[string]any{"max": 4}}},
		{"persistenceAdapter: {kafkalog: {segmentBytes: 1gb, a.b: 1}}", "kafkalog", "kafkaLog",
			map[string]any{"segmentbytes": "1gb", "a.b": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), nil)
			require.NoError(t, err)
			assert.Equal(t, Persistence{Adapter: tt.adapter, Key: tt.key, Options: tt.options}, c.Persistence)
		})
	}
}

func TestNotPersistentForcesMemory(t *testing.T) {
	for _, in := range []string{
		"broker: {persistent: false}\npersistenceAdapter: {kahaDB: {directory: /d}}\n",
		"broker: {persistent: false}\npersistenceAdapter: {jdbc: {url: x}}\n",
		"broker: {persistent: \"false\"}\n",
	} {
		c, err := Parse([]byte(in), nil)
		require.NoError(t, err, in)
		assert.False(t, c.Broker.Persistent)
		assert.Equal(t, Persistence{Adapter: "memory", Key: "memory", Options: map[string]any{}}, c.Persistence, in)
	}
	// The memory adapter's own options survive.
	c, err := Parse([]byte("broker: {persistent: false}\npersistenceAdapter: {memory: {limit: 1}}\n"), nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"limit": 1}, c.Persistence.Options)

	// Forcing memory does not skip checking the adapter section.
	_, err = Parse([]byte("broker: {persistent: false}\npersistenceAdapter: {kahaDb2: {}}\n"), nil)
	assertConfigError(t, err, "persistenceAdapter.kahaDb2", "memory, kahaDB, bbolt, jdbc, kafkaLog")
}

func TestDataDirectoryStaysRelative(t *testing.T) {
	c, err := Parse([]byte("broker: {dataDirectory: var/data}\n"), nil)
	require.NoError(t, err)
	assert.Equal(t, "var/data", c.Broker.DataDirectory)
}

func TestLoad(t *testing.T) {
	isolateEnv(t)
	path := filepath.Join(t.TempDir(), "activemq-style.yaml")
	require.NoError(t, os.WriteFile(path, []byte("broker:\n  brokerName: from-file\n"), 0o600))
	c, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, path, c.Source)
	assert.Equal(t, "from-file", c.Broker.BrokerName)
}

func TestLoadUsesProcessEnvironment(t *testing.T) {
	isolateEnv(t)
	path := filepath.Join(t.TempDir(), "b.yaml")
	require.NoError(t, os.WriteFile(path, []byte("broker:\n  dataDirectory: ${CONFIG_TEST_DIR}\n"), 0o600))
	t.Setenv("CONFIG_TEST_DIR", "/srv/x")
	t.Setenv("BROKER_BROKER_BROKERNAME", "from-env")
	c, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, "/srv/x", c.Broker.DataDirectory)
	assert.Equal(t, "from-env", c.Broker.BrokerName)
}

func TestLoadErrors(t *testing.T) {
	isolateEnv(t)
	dir := t.TempDir()
	_, err := Load(filepath.Join(dir, "missing.yaml"))
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), "missing.yaml")

	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("broker:\n  brokerName: a\n persistent: [\n"), 0o600))
	_, err = Load(bad)
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Problem, "invalid YAML")
	assert.Contains(t, ce.Problem, "line 2")
}

func TestTestdataExamples(t *testing.T) {
	isolateEnv(t)
	t.Setenv("DB_PASSWORD", "s3cret-from-env")

	files, err := filepath.Glob("testdata/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c, err := Load(f)
			require.NoError(t, err)
			assert.Equal(t, f, c.Source)
		})
	}
}

func TestMigratedActiveMQExample(t *testing.T) {
	isolateEnv(t)
	t.Setenv("ACTIVEMQ_BROKER_NAME", "migrated")
	c, err := Load("testdata/migrated-activemq.yaml")
	require.NoError(t, err)
	assert.Equal(t, "migrated", c.Broker.BrokerName)
	assert.Equal(t, "./data", c.Broker.DataDirectory)
	assert.Equal(t, "kahadb", c.Persistence.Adapter)
	assert.Equal(t, "./data/kahadb", c.Persistence.Options["directory"])
	assert.Equal(t, "32mb", c.Persistence.Options["journalmaxfilelength"])
	require.Len(t, c.TransportConnectors, 1)
	conn := c.TransportConnectors[0]
	assert.Equal(t, "stomp", conn.Scheme)
	assert.Equal(t, "0.0.0.0:61613", conn.Addr)
	assert.Equal(t, 1000, conn.MaxConnections)
	assert.Equal(t, int64(104857600), conn.MaxFrameSize)
	assert.Equal(t, 1.5, conn.HeartBeatGrace)
	assert.Equal(t, "stomp+nio://0.0.0.0:61613?maximumConnections=1000&wireFormat.maxFrameSize=104857600&transport.hbGracePeriodMultiplier=1.5", conn.URI)
}

func TestAllOptionsExample(t *testing.T) {
	isolateEnv(t)
	c, err := Load("testdata/all-options.yaml")
	require.NoError(t, err)
	assert.Equal(t, Persistence{Adapter: "bbolt", Key: "bbolt", Options: map[string]any{"path": "./data/broker.db"}}, c.Persistence)
	require.Len(t, c.TransportConnectors, 2)
	a, b := c.TransportConnectors[0], c.TransportConnectors[1]
	assert.Equal(t, Connector{
		Name: "stomp", URI: a.URI, Scheme: "stomp", Addr: "0.0.0.0:61613",
		MaxConnections: 500, MaxFrameSize: 64 << 20, MaxFrameSizeBeforeLogin: DefaultMaxFrameSizeBeforeLogin, MaxDataLength: 32 << 20, MaxHeaders: 100,
		MaxHeaderLength: 8 << 10, ConnectTimeout: 5 * time.Second, HeartBeatGrace: 2,
		DefaultHeartBeat: [2]time.Duration{5 * time.Second, 0},
	}, a)
	assert.Equal(t, Connector{
		Name: "stomp-local", URI: b.URI, Scheme: "stomp", Addr: "127.0.0.1:0",
		MaxConnections: 10, MaxFrameSize: 1 << 20, MaxFrameSizeBeforeLogin: DefaultMaxFrameSizeBeforeLogin, MaxDataLength: DefaultMaxDataLength, MaxHeaders: 50,
		MaxHeaderLength: 4096, ConnectTimeout: 2 * time.Second, HeartBeatGrace: 1,
	}, b)
}

func TestJDBCExampleKeepsPasswordForAdapter(t *testing.T) {
	isolateEnv(t)
	t.Setenv("DB_PASSWORD", "p#ss: w'o\"rd")
	c, err := Load("testdata/jdbc.yaml")
	require.NoError(t, err)
	assert.Equal(t, "jdbc", c.Persistence.Adapter)
	assert.Equal(t, "p#ss: w'o\"rd", c.Persistence.Options["password"])
	assert.Equal(t, true, c.Persistence.Options["createtablesonstartup"])
	assert.Equal(t, 300000, c.Persistence.Options["cleanupperiod"])
}

// assertConfigError checks that err is a *Error with the given key and an
// Allowed containing allowed.
func assertConfigError(t *testing.T, err error, key, allowed string) *Error {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("want *config.Error for %s, got %T %v", key, err, err)
	}
	assert.Equal(t, key, ce.Key, "key of %q", err.Error())
	assert.Contains(t, ce.Allowed, allowed, "allowed of %q", err.Error())
	return ce
}
