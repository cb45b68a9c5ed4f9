package tests

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMetricsEndpoint: the real binary serves Prometheus metrics on the admin listener,
// behind the admin users' credentials, and its counters follow real STOMP traffic.
func TestMetricsEndpoint(t *testing.T) {
	pw := secPasswords()
	b := startSecBroker(t, secBroker{Env: []string{adminEnv}})
	a := newAPI(t, "http://"+statsAddr(t, b))

	status, _, h := a.call("GET", "/metrics", "")
	require.Equal(t, http.StatusUnauthorized, status)
	assert.True(t, strings.HasPrefix(h.Get("WWW-Authenticate"), "Basic "))

	c := oursTarget(b).dial(t, "system")
	sendN(t, c, "/queue/metrics.e2e", "m", 7)

	a.user, a.pass = "system", pw["system"]
	var body string
	eventually(t, 10*time.Second, "the sends counted", func() bool {
		status, b, _ := a.call("GET", "/metrics", "")
		require.Equal(t, http.StatusOK, status)
		body = string(b)
		return strings.Contains(body, `broker_messages{destination="metrics.e2e",type="queue"} 7`)
	})
	for _, name := range []string{
		"broker_build_info", "broker_connections", "broker_messages_received_total",
		"broker_auth_attempts_total", "broker_resource_used_bytes", "broker_resource_limit_bytes",
		"broker_send_latency_seconds_bucket", "go_goroutines", "process_resident_memory_bytes",
	} {
		re := regexp.MustCompile(`(?m)^` + name + `[ {]`)
		assert.True(t, re.MatchString(body), "no sample of %s in /metrics", name)
	}
}
