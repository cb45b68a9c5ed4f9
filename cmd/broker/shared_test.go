package main

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/config"
)

func TestDefaultNodeID(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	pid := host + "-pid" + strconv.Itoa(os.Getpid())
	for _, c := range []struct {
		uris []string
		want string
	}{
		{[]string{"stomp://0.0.0.0:61613"}, host + ":61613"},
		{[]string{"stomp://127.0.0.1:0", "ws://0.0.0.0:61614"}, pid},
		{nil, pid},
	} {
		cfg := &config.Config{}
		for _, u := range c.uris {
			cfg.TransportConnectors = append(cfg.TransportConnectors, config.Connector{URI: u})
		}
		require.Equal(t, c.want, defaultNodeID(cfg), "%v", c.uris)
	}
}

// TestOpenSharedOnlyInSharedMode: another adapter, or jdbc in masterSlave mode, opens no
// node; a bad shared-mode option is reported before any connection is tried.
func TestOpenSharedOnlyInSharedMode(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	open := func(adapter string, opts map[string]any) error {
		cfg := &config.Config{Persistence: config.Persistence{Adapter: adapter, Options: opts}}
		n, err := openShared(context.Background(), cfg, log)
		require.Nil(t, n)
		return err
	}
	require.NoError(t, open("memory", map[string]any{}))
	require.NoError(t, open("jdbc", map[string]any{"url": "postgres://127.0.0.1:1/x"}))
	err := open("jdbc", map[string]any{"url": "postgres://127.0.0.1:1/x", "mode": "shared", "leaseTimeout": "2s", "heartbeatPeriod": "5s"})
	require.ErrorContains(t, err, "persistenceAdapter.jdbc.heartbeatPeriod")
	require.ErrorContains(t, err, "must be below leaseTimeout")
}
