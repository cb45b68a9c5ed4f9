package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAdminListenerKeys: broker.adminAddress defaults to loopback 8161 and "" turns the
// listener off; broker.statsAddress, its older name, still sets it; broker.adminGroups
// wins over plugins.adminGroups, the older place, which still works alone. Wrong
// values name their key (the Host names, HTTPS's certificate and client CAs too).
func TestAdminListenerKeys(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		env        []string
		addr       string
		groups     []string
	}{
		{"defaults", "", nil, "127.0.0.1:8161", []string{"admins"}},
		{"off", "broker:\n  adminAddress: \"\"\n", nil, "", []string{"admins"}},
		{"adminAddress", "broker:\n  adminAddress: 0.0.0.0:9000\n", nil, "0.0.0.0:9000", []string{"admins"}},
		{"statsAddress alone", "broker:\n  statsAddress: 127.0.0.1:0\n", nil, "127.0.0.1:0", []string{"admins"}},
		{"statsAddress from the environment", "", []string{"BROKER_BROKER_STATSADDRESS=127.0.0.1:0"}, "127.0.0.1:0", []string{"admins"}},
		{"adminAddress from the environment, empty", "", []string{"BROKER_BROKER_ADMINADDRESS="}, "", []string{"admins"}},
		{"both the same", "broker:\n  adminAddress: :8161\n  statsAddress: :8161\n", nil, ":8161", []string{"admins"}},
		{"plugins.adminGroups alone", "plugins:\n  adminGroups: ops\n", nil, "127.0.0.1:8161", []string{"ops"}},
		{"broker.adminGroups wins", "broker:\n  adminGroups: [ops, admins]\nplugins:\n  adminGroups: other\n", nil, "127.0.0.1:8161", []string{"ops", "admins"}},
		{"broker.adminGroups from the environment", "", []string{"BROKER_BROKER_ADMINGROUPS=a,b"}, "127.0.0.1:8161", []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.yaml), tc.env)
			require.NoError(t, err)
			assert.Equal(t, tc.addr, cfg.Broker.AdminAddress)
			assert.Equal(t, tc.addr, cfg.Broker.StatsAddress)
			assert.Equal(t, tc.groups, []string(cfg.Broker.AdminGroups))
			assert.Equal(t, tc.groups, cfg.Plugins.AdminGroups)
		})
	}
	for _, tc := range []struct{ name, yaml, key, problem string }{
		{"conflicting names", "broker:\n  adminAddress: 127.0.0.1:1\n  statsAddress: 127.0.0.1:2\n", "broker.statsAddress", ""},
		{"bad address", "broker:\n  adminAddress: localhost\n", "broker.adminAddress", ""},
		{"bad port", "broker:\n  statsAddress: 127.0.0.1:http\n", "broker.statsAddress", ""},
		{"no groups", "broker:\n  adminGroups: []\n", "broker.adminGroups", ""},
		{"host with a port", "broker:\n  adminAllowedHosts: broker.example:8161\n", "broker.adminAllowedHosts", "has a port"},
		{"host with a scheme", "broker:\n  adminAllowedHosts: [\"http://broker.example\"]\n", "broker.adminAllowedHosts", "not a host name"},
		{"allowedHosts on stomp", "transportConnectors:\n  - {name: s, uri: \"stomp://h:1?allowedHosts=a.example\"}\n", "transportConnectors[0].uri", "WebSocket connectors only"},
		{"allowedHosts empty", "transportConnectors:\n  - {name: w, uri: \"ws://h:1?allowedHosts=,\"}\n", "transportConnectors[0].uri", "no host name"},
		{"adminTLS without a certificate", "broker:\n  adminTLS: true\n", "broker.adminTLS", "certificate of the sslContext section"},
		{"adminClientAuth unknown", "broker:\n  adminClientAuth: always\n", "broker.adminClientAuth", "unknown value"},
		{"adminClientAuth without TLS", "broker:\n  adminClientAuth: need\n", "broker.adminClientAuth", "without TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), nil)
			var ce *Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.key, ce.Key)
			assert.Contains(t, ce.Problem, tc.problem)
		})
	}
}

// TestAdminEdgeKeys: broker.monitorGroups and broker.adminAllowedHosts are lists of
// names (none by default), as a ws connector's allowedHosts option; no HTTPS by
// default (TestAdminListenerKeys has their wrong values).
func TestAdminEdgeKeys(t *testing.T) {
	cfg, err := Parse([]byte("broker:\n  monitorGroups: [monitors, ops]\n  adminAllowedHosts: \"broker.example, *.corp.example\"\n"+
		"transportConnectors:\n  - {name: ws, uri: \"ws://0.0.0.0:61614?allowedHosts=mq.example,*.mq.example\"}\n"), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"monitors", "ops"}, []string(cfg.Broker.MonitorGroups))
	assert.Equal(t, []string{"broker.example", "*.corp.example"}, []string(cfg.Broker.AdminAllowedHosts))
	assert.Equal(t, []string{"mq.example", "*.mq.example"}, cfg.TransportConnectors[0].AllowedHosts)
	assert.Nil(t, cfg.AdminTLSConfig())
	def := Default()
	assert.Empty(t, def.Broker.MonitorGroups)
	assert.Empty(t, def.Broker.AdminAllowedHosts)
	assert.False(t, def.Broker.AdminTLS)
}
