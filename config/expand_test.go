package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExpand(t *testing.T) {
	env := newEnviron([]string{"HOST=db.example.com", "PORT=5432", "EMPTY=", "activemq.data=/var/amq", "A=${B}"})
	tests := []struct {
		in, want string
	}{
		{"plain", "plain"},
		{"${HOST}", "db.example.com"},
		{"${HOST}:${PORT}", "db.example.com:5432"},
		{"pre-${HOST}-post", "pre-db.example.com-post"},
		{"${EMPTY}", ""},
		{"${EMPTY:-dflt}", "dflt"},
		{"${UNSET_X:-dflt}", "dflt"},
		{"${UNSET_X:-}", ""},
		{"${HOST:-dflt}", "db.example.com"},
		{"${UNSET_X:-a:-b}", "a:-b"},
		{"${activemq.data}/kahadb", "/var/amq/kahadb"},
		{"$HOST", "$HOST"},
		{"$", "$"},
		{"cost: $5", "cost: $5"},
		{"$$", "$$"},
		{"$${HOST}", "${HOST}"},
		{"$$${HOST}", "$${HOST}"}, // "$", then the escape "$${", then "HOST}"
		{"${A}", "${B}"},          // not expanded again
	}
	for _, tt := range tests {
		got, _, err := expand(tt.in, env, map[string]bool{})
		require.Nil(t, err, "%q", tt.in)
		assert.Equal(t, tt.want, got, "%q", tt.in)
	}
}

func TestExpandErrors(t *testing.T) {
	env := newEnviron(nil)
	tests := []struct {
		in, text, problem string
	}{
		{"${UNSET_X}", "${UNSET_X}", "UNSET_X is not set"},
		{"a ${UNSET_X} b", "${UNSET_X}", "UNSET_X is not set"},
		{"${UNSET_X", "${UNSET_X", "unterminated"},
		{"${}", "${}", "malformed"},
		{"${1X}", "${1X}", "malformed"},
		{"${A B}", "${A B}", "malformed"},
		{"${A-b}", "${A-b}", "malformed"},
		{"${A:=b}", "${A:=b}", "malformed"},
	}
	for _, tt := range tests {
		_, _, err := expand(tt.in, env, map[string]bool{})
		require.NotNil(t, err, "%q", tt.in)
		assert.Equal(t, tt.text, err.text, "%q", tt.in)
		assert.Contains(t, err.problem, tt.problem, "%q", tt.in)
	}
}

func TestPlaceholdersInFile(t *testing.T) {
	in := `
# ${NOT_EXPANDED_IN_COMMENTS}
broker:
  brokerName: ${NAME}
  dataDirectory: ${DATA:-./data}/broker
  persistent: ${PERSISTENT}
persistenceAdapter:
  ${ADAPTER:-kahaDB}:
    password: ${PW}
    quoted: "${PORT}"
    port: ${PORT}
    empty: ${EMPTY:-}
    dollar: $5 and $${LITERAL}
transportConnectors:
  - name: stomp
    uri: stomp://${HOST:-0.0.0.0}:${PORT_STOMP:-61613}?maxFrameSize=${FRAME:-1mb}
`
	c, err := Parse([]byte(in), []string{
		"NAME=b1", "PERSISTENT=true", "PW=p#ss: w'o\"rd", "PORT=5432", "ADAPTER=jdbc",
	})
	require.NoError(t, err)
	assert.Equal(t, newBroker("b1", "./data/broker", true), c.Broker)
	assert.Equal(t, "jdbc", c.Persistence.Adapter)
	assert.Equal(t, map[string]any{
		"password": "p#ss: w'o\"rd", // still one value: expanded after parsing
		"quoted":   "5432",          // quoted stays a string
		"port":     5432,            // plain is typed from its expansion
		"empty":    "",              // an empty expansion is "", not null
		"dollar":   "$5 and ${LITERAL}",
	}, c.Persistence.Options)
	assert.Equal(t, "0.0.0.0:61613", c.TransportConnectors[0].Addr)
	assert.Equal(t, int64(1<<20), c.TransportConnectors[0].MaxFrameSize)
	assert.Equal(t, "stomp://0.0.0.0:61613?maxFrameSize=1mb", c.TransportConnectors[0].URI)

	// A placeholder that makes a boolean false reaches persistent.
	c, err = Parse([]byte("broker:\n  persistent: ${P}\npersistenceAdapter: {kahaDB: {}}\n"), []string{"P=false"})
	require.NoError(t, err)
	assert.False(t, c.Broker.Persistent)
	assert.Equal(t, "memory", c.Persistence.Adapter)

	// Quoted in flow style, it works too; unquoted, the error says to quote it.
	c, err = Parse([]byte("broker: {persistent: '${P}'}\n"), []string{"P=false"})
	require.NoError(t, err)
	assert.False(t, c.Broker.Persistent)
	_, err = Parse([]byte("broker: {persistent: ${P}}\n"), []string{"P=false"})
	ce := assertConfigError(t, err, "", "")
	assert.Contains(t, ce.Problem, "quote them")

	// An expansion cannot inject structure.
	_, err = Parse([]byte("broker: ${B}\n"), []string{"B={brokerName: x}"})
	assertConfigError(t, err, "broker", "brokerName")
}
