package tests

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/admin"
)

// The management commands (broker list, stat, purge, move) against the real binary's
// admin API (broker.adminAddress), with messages sent and received by the real
// command-line tools and a go-stomp client.

// cliAdminEnv has the broker listen for the admin API on a free loopback port.
const cliAdminEnv = "BROKER_BROKER_ADMINADDRESS=127.0.0.1:0"

// cliAdminRE matches the log line of the admin listener (or of the stats listener it
// replaced, which served only /stats).
var cliAdminRE = regexp.MustCompile(`msg="(?:admin|stats) listening" addr=(\S+)`)

// cliAdminURL waits for the broker's admin listener and returns its URL, with user:pass
// when user is not empty.
func cliAdminURL(t testing.TB, b *brokerProc, user, pass string) string {
	t.Helper()
	var addr string
	eventually(t, 10*time.Second, "the admin listener's log line", func() bool {
		if m := cliAdminRE.FindStringSubmatch(b.Log()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	if user != "" {
		return "http://" + user + ":" + pass + "@" + addr
	}
	return "http://" + addr
}

// TestCLIAdmin: list, stat, move (to a queue, as a copy, and a dead-letter queue back
// to where its messages came from) and purge, each checked through the STOMP tools.
func TestCLIAdmin(t *testing.T) {
	b := startBroker(t, brokerConfig{Env: []string{cliAdminEnv}})
	url := "--url=stomp://" + b.Addr
	adm := "--admin=" + cliAdminURL(t, b, "", "")

	cliOK(t, "", "send", url, "--count", "5", "--persistent", "/queue/adm.a", "x")
	cliOK(t, "", "send", url, "/topic/adm.t", "to nobody")

	out := cliOK(t, "", "list", adm)
	assert.Regexp(t, `^NAME +TYPE +MESSAGES +CONSUMERS +ENQUEUED +DEQUEUED\n`, out)
	assert.Regexp(t, `(?m)^/queue/adm\.a +queue +5 +0 +5 +0$`, out)
	assert.Regexp(t, `(?m)^/topic/adm\.t +topic `, out)
	var dests []admin.Destination
	require.NoError(t, json.Unmarshal([]byte(cliOK(t, "", "list", adm, "--type", "queue", "--json")), &dests))
	var found bool
	for _, d := range dests {
		assert.Equal(t, "queue", d.Type, d.Name)
		if d.Name == "/queue/adm.a" {
			found = true
			assert.Equal(t, int64(5), d.Messages)
		}
	}
	assert.True(t, found, "%+v", dests)

	assert.Regexp(t, `(?m)^name +e2e$`, cliOK(t, "", "stat", adm))
	assert.Regexp(t, `(?m)^messages +5$`, cliOK(t, "", "stat", adm, "/queue/adm.a"))
	var st admin.Destination
	require.NoError(t, json.Unmarshal([]byte(cliOK(t, "", "stat", adm, "--json", "adm.a")), &st))
	assert.Equal(t, int64(5), st.Messages)

	assert.Equal(t, "moved 2 messages from /queue/adm.a to /queue/adm.b\n", cliOK(t, "", "move", adm, "/queue/adm.a", "--to", "/queue/adm.b", "--limit", "2"))
	assert.Equal(t, "x\nx\n", cliOK(t, "", "consume", url, "--count", "2", "--timeout", "10s", "/queue/adm.b"))
	assert.Equal(t, "copied 3 messages from /queue/adm.a to /queue/adm.c\n", cliOK(t, "", "move", adm, "adm.a", "--to", "adm.c", "--copy"))
	assert.Equal(t, "x\nx\nx\n", cliOK(t, "", "browse", url, "/queue/adm.a"))
	assert.Equal(t, "x\nx\nx\n", cliOK(t, "", "browse", url, "/queue/adm.c"))

	assert.Equal(t, "purged 3 messages from /queue/adm.a\n", cliOK(t, "", "purge", adm, "/queue/adm.a"))
	assert.Empty(t, cliOK(t, "", "browse", url, "/queue/adm.a"))

	// A message NACKed goes to ActiveMQ.DLQ; move --to original retries it.
	cliOK(t, "", "send", url, "--persistent", "/queue/adm.work", "poison")
	c := dial(t, b.Addr)
	sub, err := c.Subscribe("/queue/adm.work", stomp.AckClientIndividual)
	require.NoError(t, err)
	select {
	case m := <-sub.C:
		require.NoError(t, m.Err)
		require.NoError(t, c.Nack(m))
	case <-time.After(10 * time.Second):
		t.Fatal("no message on /queue/adm.work")
	}
	unsubscribe(t, sub)
	eventually(t, 10*time.Second, "the message in ActiveMQ.DLQ", func() bool {
		return runCLI(t, "", nil, "browse", url, "/queue/ActiveMQ.DLQ").Stdout == "poison\n"
	})
	assert.Equal(t, "moved 1 message from /queue/ActiveMQ.DLQ to their original destinations\n",
		cliOK(t, "", "move", adm, "ActiveMQ.DLQ", "--to", "original"))
	assert.Equal(t, "poison\n", cliOK(t, "", "consume", url, "--count", "1", "--timeout", "10s", "/queue/adm.work"))
	assert.Empty(t, cliOK(t, "", "browse", url, "/queue/ActiveMQ.DLQ"))

	r := runCLI(t, "", nil, "stat", adm, "/queue/adm.nope")
	assert.Equal(t, 1, r.Code)
	assert.Contains(t, r.Stderr, "broker: stat /queue/adm.nope: no such destination")
	r = runCLI(t, "", nil, "move", adm, "/queue/adm.nope", "--to", "/queue/adm.b")
	assert.Equal(t, 1, r.Code)
	assert.Contains(t, r.Stderr, "broker: move /queue/adm.nope: ")
}

// TestCLIAdminAuth: with authentication configured the management commands need a user
// of an admin group: none is HTTP 401, another user 403, both exit status 1 with the
// status in the message and no password.
func TestCLIAdminAuth(t *testing.T) {
	pw := secPasswords()
	b := startSecBroker(t, secBroker{Env: []string{cliAdminEnv}})

	r := runCLI(t, "", nil, "list", "--admin="+cliAdminURL(t, b, "", ""))
	assert.Equal(t, 1, r.Code)
	assert.Contains(t, r.Stderr, "broker: list: HTTP 401 Unauthorized")

	r = runCLI(t, "", nil, "stat", "--admin="+cliAdminURL(t, b, "user", pw["user"]))
	assert.Equal(t, 1, r.Code)
	assert.Contains(t, r.Stderr, "broker: stat: HTTP 403 Forbidden")
	assert.NotContains(t, r.Stderr, pw["user"])

	r = runCLI(t, "", []string{"BROKERCTL_ADMIN=" + cliAdminURL(t, b, "system", pw["system"])}, "list")
	assert.Equal(t, 0, r.Code, r.Stderr)
	assert.True(t, strings.HasPrefix(r.Stdout, "NAME "), r.Stdout)
}
