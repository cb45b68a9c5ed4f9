package config

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const oneConnector = "transportConnectors:\n  - name: stomp\n    uri: stomp://0.0.0.0:61613\n"

func TestEnvOverrides(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		env   []string
		check func(t *testing.T, c *Config)
	}{
		{"broker keys absent from the file", "", []string{
			"BROKER_BROKER_BROKERNAME=b1", "BROKER_BROKER_DATADIRECTORY=/x", "BROKER_BROKER_PERSISTENT=false",
		}, func(t *testing.T, c *Config) {
			assert.Equal(t, newBroker("b1", "/x", false), c.Broker)
		}},
		{"broker key present in the file", "broker: {brokerName: file}\n", []string{"BROKER_BROKER_BROKERNAME=env"},
			func(t *testing.T, c *Config) { assert.Equal(t, "env", c.Broker.BrokerName) }},
		{"names are case-insensitive", "", []string{"broker_Broker_brokerName=lower"},
			func(t *testing.T, c *Config) { assert.Equal(t, "lower", c.Broker.BrokerName) }},
		{"persistent accepts strconv booleans", "", []string{"BROKER_BROKER_PERSISTENT=0"},
			func(t *testing.T, c *Config) {
				assert.Equal(t, "memory", c.Persistence.Adapter)
				assert.False(t, c.Broker.Persistent)
			}},
		{"list element of the file", oneConnector, []string{"BROKER_TRANSPORTCONNECTORS_0_URI=stomp://127.0.0.1:0?maxFrameSize=1mb"},
			func(t *testing.T, c *Config) {
				require.Len(t, c.TransportConnectors, 1)
				assert.Equal(t, "stomp", c.TransportConnectors[0].Name)
				assert.Equal(t, "127.0.0.1:0", c.TransportConnectors[0].Addr)
				assert.Equal(t, int64(1<<20), c.TransportConnectors[0].MaxFrameSize)
			}},
		{"list element of the default list", "", []string{"BROKER_TRANSPORTCONNECTORS_0_URI=stomp://127.0.0.1:0"},
			func(t *testing.T, c *Config) {
				require.Len(t, c.TransportConnectors, 1)
				assert.Equal(t, "stomp", c.TransportConnectors[0].Name)
				assert.Equal(t, "127.0.0.1:0", c.TransportConnectors[0].Addr)
			}},
		{"index equal to the length appends", oneConnector, []string{
			"BROKER_TRANSPORTCONNECTORS_1_URI=stomp://127.0.0.1:61614", "BROKER_TRANSPORTCONNECTORS_1_NAME=second",
		}, func(t *testing.T, c *Config) {
			require.Len(t, c.TransportConnectors, 2)
			assert.Equal(t, "second", c.TransportConnectors[1].Name)
			assert.Equal(t, "127.0.0.1:61614", c.TransportConnectors[1].Addr)
		}},
		{"indexes are ordered as numbers", oneConnector, func() []string {
			var env []string
			for i := 10; i >= 1; i-- {
				env = append(env, "BROKER_TRANSPORTCONNECTORS_"+itoa(i)+"_NAME=c"+itoa(i),
					"BROKER_TRANSPORTCONNECTORS_"+itoa(i)+"_URI=stomp://127.0.0.1:"+itoa(61613+i))
			}
			return env
		}(), func(t *testing.T, c *Config) {
			require.Len(t, c.TransportConnectors, 11)
			assert.Equal(t, "c10", c.TransportConnectors[10].Name)
			assert.Equal(t, "127.0.0.1:61623", c.TransportConnectors[10].Addr)
		}},
		{"adapter option in the file", "persistenceAdapter: {kahaDB: {journalMaxFileLength: 32mb}}\n",
			[]string{"BROKER_PERSISTENCEADAPTER_KAHADB_JOURNALMAXFILELENGTH=64mb"},
			func(t *testing.T, c *Config) {
				assert.Equal(t, map[string]any{"journalmaxfilelength": "64mb"}, c.Persistence.Options)
			}},
		{"adapter option created", "persistenceAdapter: {memory: {}}\n", []string{"BROKER_PERSISTENCEADAPTER_MEMORY_X=1"},
			func(t *testing.T, c *Config) {
				assert.Equal(t, Persistence{Adapter: "memory", Key: "memory", Options: map[string]any{"x": "1"}}, c.Persistence)
			}},
		{"adapter option of a null block", "persistenceAdapter:\n  memory:\n", []string{"BROKER_PERSISTENCEADAPTER_MEMORY_X=1"},
			func(t *testing.T, c *Config) { assert.Equal(t, map[string]any{"x": "1"}, c.Persistence.Options) }},
		{"adapter chosen by the environment", "", []string{"BROKER_PERSISTENCEADAPTER_KAHADB_DIRECTORY=/d"},
			func(t *testing.T, c *Config) {
				assert.Equal(t, Persistence{Adapter: "kahadb", Key: "kahaDB", Options: map[string]any{"directory": "/d"}}, c.Persistence)
			}},
		{"nested adapter option created", "persistenceAdapter: {jdbc: {}}\n", []string{"BROKER_PERSISTENCEADAPTER_JDBC_POOL_MAX=4"},
			func(t *testing.T, c *Config) {
				assert.Equal(t, map[string]any{"pool": map[string]any{"max": "4"}}, c.Persistence.Options)
			}},
		{"adapter option list element", "persistenceAdapter: {jdbc: {hosts: [a, b]}}\n", []string{"BROKER_PERSISTENCEADAPTER_JDBC_HOSTS_1=c"},
			func(t *testing.T, c *Config) {
				assert.Equal(t, map[string]any{"hosts": []any{"a", "c"}}, c.Persistence.Options)
			}},
		{"variables named by placeholders are not overrides", "broker: {brokerName: '${BROKER_NAME}'}\n", []string{"BROKER_NAME=b7"},
			func(t *testing.T, c *Config) { assert.Equal(t, "b7", c.Broker.BrokerName) }},
		{"other variables are ignored", "", []string{"PATH=/bin", "BROKERX=1", "BROKER=1", "HOME=/root"},
			func(t *testing.T, c *Config) { assert.Equal(t, Default(), c) }},
		{"first of repeated entries wins", "", []string{"BROKER_BROKER_BROKERNAME=first", "BROKER_BROKER_BROKERNAME=second"},
			func(t *testing.T, c *Config) { assert.Equal(t, "first", c.Broker.BrokerName) }},
		{"connect timeout through the uri", oneConnector, []string{"BROKER_TRANSPORTCONNECTORS_0_URI=stomp://h:1?connectTimeout=5s"},
			func(t *testing.T, c *Config) { assert.Equal(t, 5*time.Second, c.TransportConnectors[0].ConnectTimeout) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), tt.env)
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func TestEnvErrors(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		env     string
		key     string
		problem string
		allowed string
	}{
		{"unknown broker key", "", "BROKER_BROKER_NAME=x", "BROKER_BROKER_NAME", `no key "name" in broker`, brokerKeys},
		{"section, not a value", "", "BROKER_BROKER=x", "BROKER_BROKER", "broker is a section", "BROKER_BROKER_BROKERNAME"},
		{"list, not a value", "", "BROKER_TRANSPORTCONNECTORS=x", "BROKER_TRANSPORTCONNECTORS", "transportConnectors is a section", ""},
		{"list element, not a value", "", "BROKER_TRANSPORTCONNECTORS_0=x", "BROKER_TRANSPORTCONNECTORS_0", "transportConnectors[0] is a section", ""},
		{"index beyond the end", oneConnector, "BROKER_TRANSPORTCONNECTORS_2_URI=stomp://h:1", "BROKER_TRANSPORTCONNECTORS_2_URI",
			"index 2 is beyond the end of transportConnectors, which has 1 element(s)", "0 to 1 (1 appends an element)"},
		{"index not a number", oneConnector, "BROKER_TRANSPORTCONNECTORS_FIRST_URI=stomp://h:1", "BROKER_TRANSPORTCONNECTORS_FIRST_URI",
			`"first" is not a list index`, "0 to 1"},
		{"index with a leading zero", oneConnector, "BROKER_TRANSPORTCONNECTORS_00_URI=stomp://h:1", "BROKER_TRANSPORTCONNECTORS_00_URI",
			"not a list index", ""},
		{"unknown connector key", oneConnector, "BROKER_TRANSPORTCONNECTORS_0_TRACE=true", "BROKER_TRANSPORTCONNECTORS_0_TRACE",
			`no key "trace" in transportConnectors[0]`, "name, uri"},
		{"key below a value", "", "BROKER_BROKER_BROKERNAME_X=1", "BROKER_BROKER_BROKERNAME_X", "broker.brokerName is a single value", ""},
		{"unknown adapter", "", "BROKER_PERSISTENCEADAPTER_LEVELDB_X=1", "BROKER_PERSISTENCEADAPTER_LEVELDB_X", `no persistence adapter "leveldb"`, adapterList},
		{"adapter block, not an option", "", "BROKER_PERSISTENCEADAPTER_MEMORY=x", "BROKER_PERSISTENCEADAPTER_MEMORY", "adapter's block", ""},
		{"option below a scalar option", "persistenceAdapter: {jdbc: {password: x}}\n", "BROKER_PERSISTENCEADAPTER_JDBC_PASSWORD_X=" + secret,
			"BROKER_PERSISTENCEADAPTER_JDBC_PASSWORD_X", "is a string in the file, not a mapping", ""},
		{"mapping option set as a value", "persistenceAdapter: {jdbc: {pool: {max: 1}}}\n", "BROKER_PERSISTENCEADAPTER_JDBC_POOL=x",
			"BROKER_PERSISTENCEADAPTER_JDBC_POOL", "persistenceAdapter.jdbc.pool is a mapping", ""},
		{"empty segment", "", "BROKER_BROKER__BROKERNAME=x", "BROKER_BROKER__BROKERNAME", "malformed variable name", "BROKER_BROKER_BROKERNAME"},
		{"prefix only", "", "BROKER_=x", "BROKER_", "malformed variable name", ""},
		{"broker is a string in the file", "broker: b1\n", "BROKER_BROKER_BROKERNAME=x", "BROKER_BROKER_BROKERNAME", "broker is a string in the file", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), []string{tt.env})
			ce := assertConfigError(t, err, tt.key, tt.allowed)
			assert.Contains(t, ce.Problem, tt.problem)
			assert.NotContains(t, err.Error(), secret)
		})
	}
}

func TestEnvSetTwice(t *testing.T) {
	_, err := Parse(nil, []string{"BROKER_BROKER_BROKERNAME=a", "broker_broker_brokername=b"})
	ce := assertConfigError(t, err, "broker_broker_brokername", "")
	assert.Contains(t, ce.Problem, "also set by BROKER_BROKER_BROKERNAME")
}

func TestEnvValuesAreValidated(t *testing.T) {
	tests := []struct {
		env     string
		key     string
		problem string
		allowed string
	}{
		{"BROKER_BROKER_PERSISTENT=perhaps", "broker.persistent", "not a boolean (set by environment variable BROKER_BROKER_PERSISTENT)", "true, false"},
		{"BROKER_BROKER_BROKERNAME=", "broker.brokerName", "must not be empty (set by environment variable BROKER_BROKER_BROKERNAME)", ""},
		{"BROKER_TRANSPORTCONNECTORS_0_URI=amqp://h:1", "transportConnectors[0].uri", "(set by environment variable BROKER_TRANSPORTCONNECTORS_0_URI)", "stomp, stomp+nio"},
		{"BROKER_TRANSPORTCONNECTORS_1_URI=stomp://h:2", "transportConnectors[1].name", "missing connector name (set by environment variable BROKER_TRANSPORTCONNECTORS_1_URI)", ""},
		{"BROKER_PERSISTENCEADAPTER_KAHADB_DIRECTORY=/d", "persistenceAdapter", "found 2: memory, kahaDB", adapterList},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			_, err := Parse([]byte("persistenceAdapter: {memory: {}}\n"+oneConnector), []string{tt.env})
			ce := assertConfigError(t, err, tt.key, tt.allowed)
			assert.Contains(t, ce.Problem, tt.problem)
		})
	}
}

func TestEnvPasswordNeverShown(t *testing.T) {
	// A jdbc password set from the environment reaches the adapter ...
	c, err := Parse([]byte("persistenceAdapter: {jdbc: {url: 'postgres://h/db'}}\n"),
		[]string{"BROKER_PERSISTENCEADAPTER_JDBC_PASSWORD=" + secret})
	require.NoError(t, err)
	assert.Equal(t, secret, c.Persistence.Options["password"])

	// ... and never an error.
	for _, env := range []string{
		"BROKER_PERSISTENCEADAPTER_LEVELDB_PASSWORD=" + secret,
		"BROKER_TRANSPORTCONNECTORS_0_URI=stomp://u:" + secret + "@h:1",
	} {
		_, err := Parse([]byte("persistenceAdapter: {memory: {}}\n"), []string{env})
		require.Error(t, err, env)
		assert.NotContains(t, err.Error(), secret, env)
	}
}

func TestLessSegs(t *testing.T) {
	assert.True(t, lessSegs([]string{"a", "2"}, []string{"a", "10"}))
	assert.False(t, lessSegs([]string{"a", "10"}, []string{"a", "2"}))
	assert.True(t, lessSegs([]string{"a"}, []string{"a", "b"}))
	assert.True(t, lessSegs([]string{"a", "b"}, []string{"b"}))
	assert.False(t, lessSegs([]string{"a"}, []string{"a"}))
}

func itoa(i int) string { return strconv.Itoa(i) }

// BROKER_ variables whose first key is no section of the file belong to other programs
// (Celery's BROKER_URL): they are ignored and reported, not fatal.
func TestEnvForeignVariablesIgnored(t *testing.T) {
	c, err := Parse([]byte("persistenceAdapter: {memory: {}}\n"),
		[]string{"BROKER_URL=amqp://guest:pw@h//", "BROKER_BROKER_BROKERNAME=b7"})
	require.NoError(t, err)
	assert.Equal(t, "b7", c.Broker.BrokerName)
	assert.Equal(t, []string{"BROKER_URL"}, c.IgnoredEnv)
}
