package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/pgtest"
)

// buildJSON is `broker version --json`.
type buildJSON struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Modified  bool   `json:"modified"`
	Date      string `json:"date"`
	GoVersion string `json:"go_version"`
}

// TestVersionIsTheSameEverywhere: `broker version`, `broker --version`, the admin API's
// GET /api/broker, the broker_build_info metric and the console's footer all name the
// same build (its version, commit and Go version), and none of them says "(devel)".
func TestVersionIsTheSameEverywhere(t *testing.T) {
	out, err := exec.Command(brokerBin, "version", "--json").Output()
	require.NoError(t, err)
	var want buildJSON
	require.NoError(t, json.Unmarshal(out, &want))
	require.NotEmpty(t, want.Version)
	require.True(t, strings.HasPrefix(want.GoVersion, "go"), "go_version %q", want.GoVersion)

	line, err := exec.Command(brokerBin, "version").Output()
	require.NoError(t, err)
	flag, err := exec.Command(brokerBin, "--version").Output()
	require.NoError(t, err)
	assert.Equal(t, string(line), string(flag), "broker version and broker --version")
	assert.True(t, strings.HasPrefix(string(line), "broker "+want.Version+" "), "%q", line)
	assert.Contains(t, string(line), want.GoVersion)

	b := startBroker(t, brokerConfig{Env: []string{adminEnv}})
	base := "http://" + statsAddr(t, b)
	a := newAPI(t, base)
	var o struct {
		Version string    `json:"version"`
		Build   buildJSON `json:"build"`
	}
	a.get("/api/broker", &o)
	assert.Equal(t, want, o.Build, "GET /api/broker's build")
	assert.Equal(t, want.Version, o.Version)

	status, metrics, _ := a.call("GET", "/metrics", "")
	require.Equal(t, http.StatusOK, status)
	m := regexp.MustCompile(`(?m)^broker_build_info\{commit="([^"]*)",go_version="([^"]*)",version="([^"]*)"\} 1$`).FindSubmatch(metrics)
	require.NotNil(t, m, "broker_build_info in\n%s", metrics)
	assert.Equal(t, []string{want.Commit, want.GoVersion, want.Version}, []string{string(m[1]), string(m[2]), string(m[3])})

	status, page, _ := a.call("GET", "/", "")
	require.Equal(t, http.StatusOK, status)
	footer := regexp.MustCompile(`<footer>([^<]*)</footer>`).FindSubmatch(page)
	require.NotNil(t, footer, "the console's footer")
	assert.Contains(t, string(footer[1]), want.Version)
	for _, s := range [][]byte{line, metrics, page} {
		assert.NotContains(t, string(s), "(devel)")
	}
}

// healthGet is GET path at base without credentials: the status and the body.
func healthGet(t testing.TB, base, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestHealthEndpointsNeedNoCredentials: on an admin listener that asks every other
// request for an administrator's credentials, GET /healthz and GET /readyz answer
// without any, with nothing but their verdict.
func TestHealthEndpointsNeedNoCredentials(t *testing.T) {
	b := startSecBroker(t, secBroker{Env: []string{adminEnv}})
	base := "http://" + statsAddr(t, b)
	status, body := healthGet(t, base, "/healthz")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "ok\n", body)
	status, body = healthGet(t, base, "/readyz")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "ready\n", body)
	status, _ = healthGet(t, base, "/api/broker")
	assert.Equal(t, http.StatusUnauthorized, status, "the rest still needs credentials")
}

// earlyHealthRE finds the address where a broker that has not started yet answers
// /healthz and /readyz (cmd/broker/health.go).
var earlyHealthRE = regexp.MustCompile(`msg="admin listener answers /healthz and /readyz only until the broker starts" addr=(\S+)`)

// TestReadyzOfAStandby: in JDBC master/standby, the standby's admin address answers
// /healthz 200 and /readyz 503 saying it is a standby (and 503 to everything else);
// once the master stops and the standby takes the lock, the same address answers
// /readyz 200 and serves the API.
func TestReadyzOfAStandby(t *testing.T) {
	srv := pgtest.Shared(t)
	adapter := jdbcAdapter(t, srv, srv.CreateDB(t, "readyz"), 5*time.Second, "lockAcquireSleepInterval: 200ms")
	master := startBroker(t, brokerConfig{Adapter: adapter, Env: []string{adminEnv}})
	mstatus, _ := healthGet(t, "http://"+statsAddr(t, master), "/readyz")
	assert.Equal(t, http.StatusOK, mstatus, "the master is ready")

	standby := spawnBroker(t, brokerConfig{Adapter: adapter, Env: []string{adminEnv}})
	var addr string
	eventually(t, 10*time.Second, "the standby to find the lock held and answer /readyz", func() bool {
		if m := earlyHealthRE.FindStringSubmatch(standby.Log()); m != nil {
			addr = m[1]
		}
		return addr != "" && strings.Contains(standby.Log(), logLeaseHeldBy)
	})
	requireStandby(t, standby)
	base := "http://" + addr
	status, body := healthGet(t, base, "/healthz")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "ok\n", body)
	status, body = healthGet(t, base, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.True(t, strings.HasPrefix(body, "standby: "), "%q", body)
	status, _ = healthGet(t, base, "/api/broker")
	assert.Equal(t, http.StatusServiceUnavailable, status)

	master.Stop()
	require.NoError(t, standby.WaitListening(30*time.Second))
	// Between the health endpoints' listener and the admin listener the address is
	// closed for a moment: refused, as a load balancer would count it, not ready.
	eventually(t, 10*time.Second, "the new master ready on the same admin address", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	assert.Equal(t, addr, statsAddr(t, standby), "the admin listener took the address the health endpoints had")
	var o struct{ Name string }
	newAPI(t, base).get("/api/broker", &o)
}

// TestSystemdUnitVerifies: systemd-analyze verify accepts the repository's unit (with
// ExecStart pointing at the binary under test, since verify checks it exists), and the
// unit keeps what README promises of it.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	require.NoError(t, err, "systemd-analyze (Debian's systemd package) is needed")
	unit, err := os.ReadFile("../docs/systemd/broker.service")
	require.NoError(t, err)
	for _, want := range []string{"User=broker", "StateDirectory=broker", "WorkingDirectory=/var/lib/broker",
		"Restart=on-failure", "KillSignal=SIGTERM", "TimeoutStopSec=", "NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes",
		"ExecStart=/usr/local/bin/broker serve --config /etc/broker/activemq-style.yaml"} {
		assert.Contains(t, string(unit), want)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "broker.service")
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/broker", brokerBin)), 0o644))
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	assert.NoError(t, err, "%s", out)
	assert.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify has nothing to say of it")
}
