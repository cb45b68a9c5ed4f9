package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/config"
)

func TestNewLogger(t *testing.T) {
	var buf bytes.Buffer
	log, err := newLogger(&buf, "info", "json")
	require.NoError(t, err)
	log.Debug("hidden")
	log.Info("shown", "k", 1)
	var line map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line), buf.String())
	assert.Equal(t, "shown", line["msg"])

	buf.Reset()
	log, err = newLogger(&buf, "warn", "text")
	require.NoError(t, err)
	log.Info("hidden")
	log.Warn("shown", "k", 1)
	assert.Contains(t, buf.String(), "level=WARN msg=shown k=1")
	assert.NotContains(t, buf.String(), "hidden")

	_, err = newLogger(&buf, "info", "xml")
	assert.ErrorContains(t, err, "--log-format")
	_, err = newLogger(&buf, "loud", "text")
	assert.ErrorContains(t, err, "--log-level")
}

// TestStoreLogsThroughTheBrokerLogger opens each file-based adapter as serve does and
// checks that its lines reach serve's logger, at its level and in its format, and
// nothing else's.
func TestStoreLogsThroughTheBrokerLogger(t *testing.T) {
	for _, tt := range []struct{ adapter, opened string }{
		{"kahaDB", "journal: opened"},
		{"bbolt", "boltstore: opened"},
		{"kafkaLog", "kafkalog: opened"},
	} {
		t.Run(tt.adapter, func(t *testing.T) {
			yaml := fmt.Sprintf("broker:\n  dataDirectory: %s\npersistenceAdapter:\n  %s: {}\n", t.TempDir(), tt.adapter)
			cfg, err := config.Parse([]byte(yaml), nil)
			require.NoError(t, err)
			for _, level := range []string{"info", "warn"} {
				var buf bytes.Buffer
				log, err := newLogger(&buf, level, "json")
				require.NoError(t, err)
				store, err := openStore(context.Background(), cfg, log)
				require.NoError(t, err)
				_, err = store.Recover(context.Background())
				require.NoError(t, err)
				require.NoError(t, store.Close())

				var msgs []string
				for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
					if l == "" {
						continue
					}
					var line map[string]any
					require.NoError(t, json.Unmarshal([]byte(l), &line), "not a JSON line: %q", l)
					msgs = append(msgs, fmt.Sprint(line["msg"]))
				}
				if level == "info" {
					assert.Contains(t, msgs, tt.opened, "the adapter logs through the broker's logger")
				} else {
					assert.NotContains(t, msgs, tt.opened, "the adapter honours the broker's level")
				}
			}
		})
	}
}

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
