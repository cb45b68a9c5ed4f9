package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/config"
)

func parseConfig(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), nil)
	require.NoError(t, err)
	return cfg
}

// TestConnectTimeoutZeroIsNoLimit: connectTimeout=0, documented as no limit, reaches the
// session as no limit (a negative ConnectTimeout), not as its 30s default.
func TestConnectTimeoutZeroIsNoLimit(t *testing.T) {
	cfg := parseConfig(t, "transportConnectors:\n  - {name: a, uri: \"stomp://127.0.0.1:0?connectTimeout=0\"}\n"+
		"  - {name: b, uri: \"stomp://127.0.0.1:0?connectTimeout=2s\"}\n  - {name: c, uri: \"stomp://127.0.0.1:0\"}\n")
	conns, err := connectors(cfg, slog.Default())
	require.NoError(t, err)
	require.Len(t, conns, 3)
	assert.Negative(t, conns[0].Session.ConnectTimeout)
	assert.Equal(t, 2*time.Second, conns[1].Session.ConnectTimeout)
	assert.Equal(t, 30*time.Second, conns[2].Session.ConnectTimeout)
}
