package tests

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeAdvisoryMap is the plugins: section docs/security.md (README's security section
// in full) gives operators
// to keep advisories to administrators (its YAML block that names
// ActiveMQ.Advisory.TempQueue), with users admin (group admins) and app (group
// users) whose passwords $ADMIN_PASSWORD and $APP_PASSWORD give.
func readmeAdvisoryMap(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("../docs/security.md")
	require.NoError(t, err)
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		if strings.Contains(m[1], "ActiveMQ.Advisory.TempQueue") {
			require.True(t, strings.HasPrefix(m[1], "plugins:\n"), "docs/security.md's advisory example is not a plugins: section:\n%s", m[1])
			return strings.Replace(m[1], "plugins:\n", `plugins:
  simpleAuthentication:
    users:
      - {username: admin, password: "${ADMIN_PASSWORD}", groups: [admins]}
      - {username: app, password: "${APP_PASSWORD}", groups: [users]}
`, 1)
		}
	}
	t.Fatal("docs/security.md has no authorization example for the advisory topics (a yaml block naming ActiveMQ.Advisory.TempQueue)")
	return ""
}

// TestAdvisoryAuthorizationExample runs README's example map that keeps advisories
// to administrators: a user of group users may not subscribe to
// ActiveMQ.Advisory.Connection (which would tell it every connection's user and
// address) and hears only the temporary-destination advisories through a wildcard,
// an administrator hears the user's connection; ActiveMQ's Java client, which
// watches ActiveMQ.Advisory.TempQueue and .TempTopic, connects and uses a temporary
// queue as that user, and without those two entries it cannot connect.
func TestAdvisoryAuthorizationExample(t *testing.T) {
	plugins := readmeAdvisoryMap(t)
	const appPW, adminPW = "app-secret", "admin-secret"
	env := []string{"APP_PASSWORD=" + appPW, "ADMIN_PASSWORD=" + adminPW}
	conns := []string{"stomp", "stomp://127.0.0.1:0", "openwire", "tcp://127.0.0.1:0"}
	b := startSecBroker(t, secBroker{Connectors: conns, Plugins: plugins, Env: env})

	app := dialRaw(t, b.Addr)
	require.Equal(t, "CONNECTED", app.connect("login", "app", "passcode", appPW, "client-id", "app-client").Command)
	app.send(subscribeFrame("conn", "/topic/ActiveMQ.Advisory.Connection", "r-conn"))
	expectError(t, app, "User app is not authorized to read from: topic://ActiveMQ.Advisory.Connection", "r-conn")
	for _, dest := range []string{"/topic/ActiveMQ.Advisory.TempQueue", "/topic/ActiveMQ.Advisory.TempTopic"} {
		app.send(subscribeFrame(dest, dest, "r-"+dest))
		expectReceipt(t, app, "r-"+dest)
	}
	wild := subscribeReceipted(t, app, "wild", "/topic/ActiveMQ.Advisory.>")
	assert.Empty(t, wild)

	admin := dialRaw(t, b.Addr)
	require.Equal(t, "CONNECTED", admin.connect("login", "admin", "passcode", adminPW).Command)
	replay := subscribeReceipted(t, admin, "conn", "/topic/ActiveMQ.Advisory.Connection")
	for len(replay) < 2 { // the replay of the two open connections may follow the RECEIPT
		replay = append(replay, admin.read())
	}
	var users []string
	for _, f := range replay {
		a := parseAdvisory(t, f)
		users = append(users, a.String("userName")+"/"+a.String("clientId"))
	}
	assert.Contains(t, users, "app/app-client", "the administrator hears the open connections")

	// The Java client as app: its advisory watch is allowed; it sends, receives and
	// makes a temporary queue. The wildcard subscriber heard nothing beyond the
	// temporary destinations meanwhile.
	url := "tcp://" + b.connectorAddr("openwire")
	r := runOW(t, url, "secure", "user=app", "password="+appPW, "allowed=APP."+owName(t, "q"), "denied=SECRET")
	assert.Equal(t, "ok", r.get("connect"))
	assert.Equal(t, "allowed/app", r.get("received"))
	assert.Equal(t, "JMSSecurityException: User app is not authorized to write to: queue://SECRET", r.get("denied"))
	assert.Equal(t, "ok", r.get("temp"))
	app.send(sendFrame("/queue/APP.fence", "fence", "fence"))
	for _, f := range untilReceipt(t, app, "fence") {
		if f.Header.Get("subscription") == "wild" {
			assert.Regexp(t, `^/topic/ActiveMQ\.Advisory\.Temp(Queue|Topic)$`, f.Header.Get("destination"))
		}
	}

	// Without the two entries, the Java client's advisory watch is refused and so is
	// its connection.
	var kept []string
	for _, l := range strings.Split(plugins, "\n") {
		if !strings.Contains(l, "ActiveMQ.Advisory.Temp") {
			kept = append(kept, l)
		}
	}
	b2 := startSecBroker(t, secBroker{Connectors: conns, Plugins: strings.Join(kept, "\n"), Env: env})
	r = runOW(t, "tcp://"+b2.connectorAddr("openwire"), "secure", "user=app", "password="+appPW, "allowed=APP."+owName(t, "q"))
	assert.Contains(t, r.get("connect"), "User app is not authorized to read from: topic://ActiveMQ.Advisory.TempQueue")
}
