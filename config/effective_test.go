package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEffectiveMasksSecretsAndLoadsAgain: the effective configuration has every key in
// its canonical spelling with the defaults filled in, no secret in it, and parses to
// the same configuration (but for the masked secrets).
func TestEffectiveMasksSecretsAndLoadsAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broker.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
broker: {brokername: eff}
persistenceAdapter:
  jdbc: {url: "postgres://db/broker", user: app, password: "${DB_PW}"}
plugins:
  simpleAuthentication:
    users:
      - {username: app, password: "${APP_PW}", groups: [users]}
`), 0o600))
	t.Setenv("DB_PW", "db-secret-1")
	t.Setenv("APP_PW", "app-secret-2")
	cfg, err := Load(path)
	require.NoError(t, err)
	out, err := LoadEffective(path)
	require.NoError(t, err)
	s := string(out)
	assert.NotContains(t, s, "db-secret-1")
	assert.NotContains(t, s, "app-secret-2")
	assert.Contains(t, s, "brokerName: eff")
	assert.Contains(t, s, "password: '"+Masked+"'")
	assert.Contains(t, s, "schedulerSupport: true", "defaults are filled in")
	again, err := Parse(out, nil)
	require.NoError(t, err)
	assert.Equal(t, cfg.Broker, again.Broker)
	assert.Equal(t, cfg.TransportConnectors, again.TransportConnectors)
}
