package config

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseConnectorURI(t *testing.T) {
	def := newConnector()
	tests := []struct {
		uri  string
		want func(c *Connector)
	}{
		{"stomp://127.0.0.1:61613", func(c *Connector) { c.Addr = "127.0.0.1:61613" }},
		{"stomp://0.0.0.0:0", func(c *Connector) { c.Addr = "0.0.0.0:0" }},
		{"stomp://:61613", func(c *Connector) { c.Addr = ":61613" }},
		{"stomp://[::1]:61613", func(c *Connector) { c.Addr = "[::1]:61613" }},
		{"stomp://localhost:61613/", func(c *Connector) { c.Addr = "localhost:61613" }},
		{"STOMP+NIO://h:1", func(c *Connector) { c.Addr = "h:1" }},
		{"stomp+nio://0.0.0.0:61613?maximumConnections=1000&wireFormat.maxFrameSize=104857600&transport.hbGracePeriodMultiplier=1.5",
			func(c *Connector) { c.Addr, c.MaxFrameSize = "0.0.0.0:61613", 104857600 }},
		// copied from activemq.xml with the XML escape
		{"stomp://h:1?maximumConnections=7&amp;wireFormat.maxFrameSize=64mb",
			func(c *Connector) { c.Addr, c.MaxConnections, c.MaxFrameSize = "h:1", 7, 64<<20 }},
		{"stomp://h:1?maxConnections=1", func(c *Connector) { c.Addr, c.MaxConnections = "h:1", 1 }},
		{"stomp://h:1?MAXFRAMESIZE=1024", func(c *Connector) { c.Addr, c.MaxFrameSize, c.MaxFrameSizeBeforeLogin = "h:1", 1024, 1024 }},
		{"stomp://h:1?maxFrameSizeBeforeLogin=4kb", func(c *Connector) { c.Addr, c.MaxFrameSizeBeforeLogin = "h:1", 4096 }},
		{"stomp://h:1?maxFrameSize=1%20gb", func(c *Connector) { c.Addr, c.MaxFrameSize = "h:1", 1<<30 }},
		{"stomp://h:1?wireFormat.maxDataLength=1", func(c *Connector) { c.Addr, c.MaxDataLength = "h:1", 1 }},
		{"stomp://h:1?maxHeaders=5&maxHeaderLength=1kb", func(c *Connector) { c.Addr, c.MaxHeaders, c.MaxHeaderLength = "h:1", 5, 1024 }},
		{"stomp://h:1?connectTimeout=0", func(c *Connector) { c.Addr, c.ConnectTimeout = "h:1", 0 }},
		{"stomp://h:1?transport.connectAttemptTimeout=1m", func(c *Connector) { c.Addr, c.ConnectTimeout = "h:1", time.Minute }},
		{"stomp://h:1?hbGracePeriodMultiplier=3.25", func(c *Connector) { c.Addr, c.HeartBeatGrace = "h:1", 3.25 }},
		{"stomp://h:1?transport.defaultHeartBeat=5000,10s", func(c *Connector) {
			c.Addr, c.DefaultHeartBeat = "h:1", [2]time.Duration{5 * time.Second, 10 * time.Second}
		}},
		{"stomp://h:1?&maxHeaders=2&", func(c *Connector) { c.Addr, c.MaxHeaders = "h:1", 2 }},
	}
	for _, tt := range tests {
		got, err := parseConnectorURI(tt.uri)
		require.Nil(t, err, "%s: %v", tt.uri, err)
		want := def
		want.URI, want.Scheme = tt.uri, "stomp"
		tt.want(&want)
		assert.Equal(t, want, got, tt.uri)
	}
}

func TestParseConnectorURITransports(t *testing.T) {
	tests := []struct {
		uri            string
		tls, webSocket bool
		auth           tls.ClientAuthType
	}{
		{"stomp://h:1", false, false, tls.NoClientCert},
		{"stomp+ssl://h:1", true, false, tls.NoClientCert},
		{"STOMP+NIO+SSL://h:1", true, false, tls.NoClientCert},
		{"ws://h:1", false, true, tls.NoClientCert},
		{"wss://h:1/", true, true, tls.NoClientCert},
		{"stomp+ssl://h:1?transport.needClientAuth=true", true, false, tls.RequireAndVerifyClientCert},
		{"stomp+ssl://h:1?needClientAuth=false", true, false, tls.NoClientCert},
		{"wss://h:1?wantClientAuth=true", true, true, tls.VerifyClientCertIfGiven},
		// need wins over want, in either order, as in ActiveMQ
		{"stomp+ssl://h:1?needClientAuth=true&wantClientAuth=true", true, false, tls.RequireAndVerifyClientCert},
		{"stomp+ssl://h:1?transport.wantClientAuth=true&transport.needClientAuth=true", true, false, tls.RequireAndVerifyClientCert},
	}
	for _, tt := range tests {
		got, err := parseConnectorURI(tt.uri)
		require.Nil(t, err, "%s: %v", tt.uri, err)
		assert.Equal(t, "stomp", got.Scheme, tt.uri)
		assert.Equal(t, "h:1", got.Addr, tt.uri)
		assert.Equal(t, tt.tls, got.TLS, tt.uri)
		assert.Equal(t, tt.webSocket, got.WebSocket, tt.uri)
		assert.Equal(t, tt.auth, got.ClientAuth, tt.uri)
	}
}

// TestParseOpenWireConnectors: ActiveMQ's OpenWire schemes make OpenWire connectors,
// with ActiveMQ's OpenWire defaults and its URI options.
func TestParseOpenWireConnectors(t *testing.T) {
	for _, tt := range []struct {
		uri string
		tls bool
	}{{"tcp://h:1", false}, {"nio://h:1", false}, {"ssl://h:1", true}, {"nio+ssl://h:1", true}} {
		got, err := parseConnectorURI(tt.uri)
		require.Nil(t, err, "%s: %v", tt.uri, err)
		assert.True(t, got.OpenWire, tt.uri)
		assert.Equal(t, "openwire", got.Scheme, tt.uri)
		assert.Equal(t, tt.tls, got.TLS, tt.uri)
		assert.Equal(t, int64(DefaultOpenWireMaxFrameSize), got.MaxFrameSize, tt.uri)
		assert.Equal(t, DefaultMaxInactivityDuration, got.MaxInactivityDuration, tt.uri)
		assert.Equal(t, DefaultMaxInactivityDurationInitialDelay, got.MaxInactivityInitialDelay, tt.uri)
	}
	got, err := parseConnectorURI("tcp://0.0.0.0:61616?maximumConnections=50&wireFormat.maxFrameSize=1048576" +
		"&wireFormat.maxInactivityDuration=5000&wireFormat.maxInactivityDurationInitalDelay=2000")
	require.Nil(t, err)
	assert.Equal(t, 50, got.MaxConnections)
	assert.Equal(t, int64(1<<20), got.MaxFrameSize)
	assert.Equal(t, 5*time.Second, got.MaxInactivityDuration)
	assert.Equal(t, 2*time.Second, got.MaxInactivityInitialDelay)
}

func TestSuggestOption(t *testing.T) {
	assert.Equal(t, "wireFormat.maxFrameSize", suggestOption("transport.maxFrameSize"))
	assert.Equal(t, "transport.hbGracePeriodMultiplier", suggestOption("wireFormat.hbGracePeriodMultiplier"))
	assert.Equal(t, "", suggestOption("trace"))
}

func TestMaxPendingLogins(t *testing.T) {
	c, err := Parse([]byte("broker: {maxPendingLogins: 7}\n"), nil)
	require.NoError(t, err)
	assert.Equal(t, 7, c.Broker.MaxPendingLogins)
	_, err = Parse([]byte("broker: {maxPendingLogins: 0}\n"), nil)
	require.ErrorContains(t, err, "broker.maxPendingLogins")
	require.ErrorContains(t, err, "an integer from 1 to")
}
