package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigCheck: `broker config check FILE` validates without starting anything: exit
// 0 and "valid" for the shipped file; exit 1 with serve's own message for a misspelt
// key (with its did-you-mean), a misspelt connector option, an unset ${VAR} and an
// unreadable TLS file; --effective prints every key with the defaults filled in and
// secrets masked, and that output is itself a valid configuration.
func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, yaml string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(yaml), 0o600))
		return p
	}
	shipped, err := filepath.Abs("../activemq-style.yaml")
	require.NoError(t, err)
	r := runCLI(t, "", nil, "config", "check", shipped)
	assert.Equal(t, 0, r.Code, r.Stderr)
	assert.Equal(t, shipped+": valid\n", r.Stdout)

	for _, c := range []struct{ name, yaml, want string }{
		{"key", "broker:\n  brokerNme: x\n", "broker.brokerNme: unknown key (did you mean brokerName?)"},
		{"option", "transportConnectors:\n  - {name: s, uri: \"stomp://127.0.0.1:0?maxFrameSise=10\"}\n",
			`unknown option "maxFrameSise" (did you mean maxFrameSize?)`},
		{"var", "plugins:\n  simpleAuthentication:\n    users:\n      - {username: a, password: \"${OPS_CHECK_UNSET_PW}\"}\n",
			"environment variable OPS_CHECK_UNSET_PW is not set"},
		{"tls", "sslContext: {certFile: /nonexistent/cert.pem, keyFile: /nonexistent/key.pem}\n" +
			"transportConnectors:\n  - {name: s, uri: \"stomp+ssl://127.0.0.1:0\"}\n", "sslContext.certFile: cannot read the file"},
	} {
		r := runCLI(t, "", nil, "config", "check", write(c.name+".yaml", c.yaml))
		assert.Equal(t, 1, r.Code, "%s: %s", c.name, r.Stderr)
		assert.Contains(t, r.Stderr, c.want, c.name)
		assert.Empty(t, r.Stdout, c.name)
	}

	secret := write("secret.yaml", "persistenceAdapter:\n  memory: {}\nplugins:\n  simpleAuthentication:\n    users:\n"+
		"      - {username: app, password: \"${OPS_CHECK_PW}\", groups: [users]}\n")
	r = runCLI(t, "", []string{"OPS_CHECK_PW=never-printed-42"}, "config", "check", "--effective", secret)
	require.Equal(t, 0, r.Code, r.Stderr)
	assert.NotContains(t, r.Stdout, "never-printed-42")
	assert.Contains(t, r.Stdout, "password: '********'")
	assert.Contains(t, r.Stdout, "brokerName: localhost", "the defaults are filled in")
	again := write("effective.yaml", r.Stdout)
	r = runCLI(t, "", nil, "config", "check", again)
	assert.Equal(t, 0, r.Code, r.Stderr)
}

// TestCLIMessages: the client commands' rough edges an operator meets first: a misspelt
// flag gets a did-you-mean; `broker passwd secret` is a usage error (2); --admin pointed
// at a STOMP port says so; a destination with an unknown prefix is refused with the forms
// that are accepted, by the CLI (2) and by the broker on the wire (ERROR); browse says
// when it stopped at the broker's page of messages; the CLI's variables BROKERCTL_URL
// and BROKERCTL_ADMIN are read, and serve does not warn of them.
func TestCLIMessages(t *testing.T) {
	r := runCLI(t, "", nil, "send", "--persistant", "/queue/x", "y")
	assert.Equal(t, 2, r.Code)
	assert.Contains(t, r.Stderr, "unknown flag: --persistant (did you mean --persistent?)")

	r = runCLI(t, "", nil, "passwd", "hunter2")
	assert.Equal(t, 2, r.Code)
	assert.NotContains(t, r.Stderr, "hunter2")

	b := startBroker(t, brokerConfig{Env: []string{"BROKERCTL_URL=stomp://nowhere:1", "BROKERCTL_ADMIN=http://nowhere:1"}})
	assert.NotContains(t, b.Log(), "BROKERCTL", "serve leaves the client commands' variables alone")

	r = runCLI(t, "", nil, "list", "--admin", "http://"+b.Addr)
	assert.Equal(t, 1, r.Code)
	assert.Contains(t, r.Stderr, "that is not an HTTP server (a STOMP or OpenWire port?): --admin wants the admin listener's http://host:port")

	r = runCLI(t, "", nil, "send", "--url", "stomp://"+b.Addr, "/queues/orders", "x")
	assert.Equal(t, 2, r.Code)
	assert.Contains(t, r.Stderr, `unknown prefix; a destination is /queue/NAME, /topic/NAME`)
	c := dialRaw(t, b.Addr)
	require.Equal(t, "CONNECTED", c.connect().Command)
	c.send(frame.New("SEND", "destination", "/queues/orders", "receipt", "r1"))
	e := c.read()
	assert.Equal(t, "ERROR", e.Command)
	assert.Contains(t, e.Header.Get("message"), "unknown prefix; a destination is /queue/NAME")
	assert.Equal(t, "r1", e.Header.Get("receipt-id"))

	const page = 400 // ActiveMQ's maxBrowsePageSize, the broker's
	env := []string{"BROKERCTL_URL=stomp://" + b.Addr}
	r = runCLI(t, "", env, "send", "--count", fmt.Sprint(page+5), "--progress", "0", "/queue/ops.browse", "m")
	require.Equal(t, 0, r.Code, r.Stderr)
	r = runCLI(t, "", env, "browse", "/queue/ops.browse")
	require.Equal(t, 0, r.Code, r.Stderr)
	assert.Equal(t, strings.Repeat("m\n", page), r.Stdout, "one page")
	assert.Contains(t, r.Stderr, fmt.Sprintf("stopped at %d messages, the most a broker shows a browser", page))
	r = runCLI(t, "", env, "browse", "--limit", "3", "/queue/ops.browse")
	require.Equal(t, 0, r.Code, r.Stderr)
	assert.NotContains(t, r.Stderr, "stopped at", "a --limit the user gave needs no notice")
}
