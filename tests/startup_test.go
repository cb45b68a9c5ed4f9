package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBadConfigurationStopsTheStart(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unknown adapter", "persistenceAdapter:\n  leveldb: {}\n", "persistenceAdapter.leveldb"},
		{"malformed uri", "transportConnectors:\n  - name: s\n    uri: 'stomp://127.0.0.1:notaport'\n", "transportConnectors[0].uri"},
		{"bad value", "transportConnectors:\n  - name: s\n    uri: stomp://127.0.0.1:0?maxConnections=many\n", "maxConnections"},
		{"unknown top-level key", "brokre:\n  brokerName: x\n", "brokre"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.yaml")
			require.NoError(t, os.WriteFile(path, []byte(c.yaml), 0o644))
			cmd := exec.Command(brokerBin, "serve", "--config", path)
			cmd.Dir = t.TempDir()
			done := make(chan struct{})
			var out []byte
			var err error
			go func() { out, err = cmd.CombinedOutput(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("broker with a bad configuration did not exit")
			}
			require.Error(t, err, "broker started with a bad configuration:\n%s", out)
			assert.Contains(t, string(out), c.want)
		})
	}
}

func TestEnvironmentOverridesTheFile(t *testing.T) {
	b := startBroker(t, brokerConfig{
		URIQuery: "maxConnections=1000",
		Env:      []string{"BROKER_BROKER_BROKERNAME=from-env", "BROKER_URL=amqp://celery-owns-this"},
	})
	eventually(t, 10*time.Second, "the start-up log line", func() bool { return strings.Contains(b.Log(), "broker started") })
	assert.Contains(t, b.Log(), "brokerName=from-env")
	assert.Contains(t, b.Log(), "BROKER_URL")
}

func TestMessageIDsAreUniqueAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	ids := map[string]bool{}
	for i := 0; i < 2; i++ {
		b := startBroker(t, brokerConfig{DataDir: dir})
		c := dial(t, b.Addr)
		sub, err := c.Subscribe("/queue/ids", stomp.AckAuto)
		require.NoError(t, err)
		for j := 0; j < 3; j++ {
			require.NoError(t, c.Send("/queue/ids", "", nil, stomp.SendOpt.Receipt))
			id := recv(t, sub).Header.Get("message-id")
			require.False(t, ids[id], "message-id %s reused after a restart", id)
			ids[id] = true
		}
		require.NoError(t, c.Disconnect())
		b.Stop()
	}
}
