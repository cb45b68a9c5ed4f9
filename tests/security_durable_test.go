package tests

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Another user's offline durable subscription (issue 24, item 3). The users and the
// authorization map are those of secPluginsYAML: "user" reads /topic/USERS.>, "guest"
// reads /topic/GUEST.> only, "system" is an administrator.

// ownedClientIDError is the start of the ERROR message of a CONNECT with a client-id
// another user owns.
const ownedClientIDError = "Client: %s is owned by another user"

// secStoreBroker is the configuration of our broker with the security configuration on
// the store adapter (YAML of the persistenceAdapter block), the admin listener on;
// more are lines of the plugins: section.
func secStoreBroker(t testing.TB, adapter string, more ...string) brokerConfig {
	return brokerConfig{Adapter: adapter, DataDir: t.TempDir(), Extra: secPluginsYAML(secPasswords(), more...),
		Env: []string{adminEnv}}
}

// durableOffline connects as user with clientID, makes the durable subscription name on
// topic and disconnects; then system publishes n persistent messages on topic.
func durableOffline(t testing.TB, tg *secTarget, user, clientID, name, topic string, n int) {
	t.Helper()
	c := dialRaw(t, tg.Addr)
	f := c.connect("login", user, "passcode", tg.Pass[user], "client-id", clientID)
	require.Equal(t, "CONNECTED", f.Command, "%v", f)
	c.send(subscribeFrame("s", topic, "sub", "activemq.subscriptionName", name))
	expectReceipt(t, c, "sub")
	c.send(frame.New("DISCONNECT", "receipt", "bye"))
	expectReceipt(t, c, "bye")
	sys := tg.raw(t, "system")
	for i := range n {
		sys.send(sendFrame(topic, "m"+strconv.Itoa(i), "backlog-"+strconv.Itoa(i), "persistent", "true"))
		expectReceipt(t, sys, "m"+strconv.Itoa(i))
	}
}

// expectBacklog connects as user with clientID, attaches to the durable subscription
// name on topic and requires its n messages, in order.
func expectBacklog(t testing.TB, tg *secTarget, user, clientID, name, topic string, n int) {
	t.Helper()
	c := dialRaw(t, tg.Addr)
	f := c.connect("login", user, "passcode", tg.Pass[user], "client-id", clientID)
	require.Equal(t, "CONNECTED", f.Command, "%v", f)
	c.send(frame.New("SUBSCRIBE", "id", "s", "destination", topic, "ack", "client-individual",
		"activemq.subscriptionName", name))
	for i := range n {
		m := c.read()
		require.Equal(t, "MESSAGE", m.Command, "message %d of the backlog: %v", i, m)
		assert.Equal(t, "backlog-"+strconv.Itoa(i), string(m.Body))
	}
}

// expectClientIDRefused requires a CONNECT of user with clientID to be refused with
// the ERROR naming the owned client-id, and the connection closed.
func expectClientIDRefused(t testing.TB, tg *secTarget, user, clientID string) {
	t.Helper()
	c := dialRaw(t, tg.Addr)
	f := c.connect("login", user, "passcode", tg.Pass[user], "client-id", clientID)
	require.Equal(t, "ERROR", f.Command, "CONNECT of %s with %s's client-id %s: %v", user, "user", clientID, f)
	msg := f.Header.Get("message")
	assert.True(t, strings.HasPrefix(msg, strings.Replace(ownedClientIDError, "%s", clientID, 1)), "message %q", msg)
	assert.NotContains(t, msg, tg.Pass[user])
	c.expectClosed(10 * time.Second)
}

// TestSecurityClientIDOwnedWhileOffline: user makes a durable subscription under
// client-id app-x and goes offline with a backlog; guest, who may not read its topic,
// connecting with app-x is refused, also after a restart of the broker (kahaDB, bbolt),
// so it can neither replace the subscription nor read it. An administrator frees the
// client-id through the admin API (logged); guest may then connect with it, and still
// not replace user's subscription, which comes back with its whole backlog.
func TestSecurityClientIDOwnedWhileOffline(t *testing.T) {
	for _, a := range durableAdapters[:2] { // kahaDB and bbolt
		t.Run(a.name, func(t *testing.T) {
			bc := secStoreBroker(t, a.store(t))
			b := startBroker(t, bc)
			tg := oursTarget(b)
			topic := "/topic/USERS.owned." + runID()
			durableOffline(t, tg, "user", "app-x", "feed", topic, 3)
			expectClientIDRefused(t, tg, "guest", "app-x")

			b.Stop()
			b = startBroker(t, bc)
			tg = oursTarget(b)
			expectClientIDRefused(t, tg, "guest", "app-x")
			tg.raw(t, "guest") // guest itself is let in, with no client-id or another
			c := dialRaw(t, tg.Addr)
			require.Equal(t, "CONNECTED", c.connect("login", "guest", "passcode", tg.Pass["guest"], "client-id", "app-g").Command)

			a := newAPI(t, "http://"+statsAddr(t, b))
			a.user, a.pass = "system", tg.Pass["system"]
			var owners []struct {
				ClientID string `json:"client_id"`
				User     string `json:"user"`
			}
			a.get("/api/client-ids", &owners)
			require.Len(t, owners, 1, "%+v", owners)
			assert.Equal(t, "app-x", owners[0].ClientID)
			assert.Equal(t, "user", owners[0].User)
			guestAPI := newAPI(t, a.base)
			guestAPI.user, guestAPI.pass = "guest", tg.Pass["guest"]
			guestAPI.expect(http.StatusForbidden, "DELETE", "/api/client-ids/app-x", "", nil)
			a.expect(http.StatusNoContent, "DELETE", "/api/client-ids/app-x", "", nil)
			a.expect(http.StatusNotFound, "DELETE", "/api/client-ids/app-x", "", nil)
			assert.Regexp(t, `op=free-client-id by=system@\S+ dest=app-x .*owner=user`, b.Log(), "freeing is logged")

			g := dialRaw(t, tg.Addr)
			f := g.connect("login", "guest", "passcode", tg.Pass["guest"], "client-id", "app-x")
			require.Equal(t, "CONNECTED", f.Command, "guest with the freed client-id: %v", f)
			g.send(subscribeFrame("s", "/topic/GUEST.mine", "r", "activemq.subscriptionName", "feed"))
			expectError(t, g, "User guest is not authorized to read from: topic://"+strings.TrimPrefix(topic, "/topic/"), "r")
			g.send(frame.New("DISCONNECT", "receipt", "bye"))
			expectReceipt(t, g, "bye")

			expectBacklog(t, tg, "user", "app-x", "feed", topic, 3)
		})
	}
}

// TestSecurityDurableReplaceNeedsRead: with client-id ownership off, guest connects
// with user's client-id while user is offline; its SUBSCRIBE with the name of user's
// durable subscription on a topic guest may read, which would replace that
// subscription and drop its backlog, is refused as UNSUBSCRIBE of it is (read on its
// topic); user comes back to its whole backlog.
func TestSecurityDurableReplaceNeedsRead(t *testing.T) {
	b := startBroker(t, secStoreBroker(t, "memory: {}", "clientIdOwnership: false"))
	tg := oursTarget(b)
	topic := "/topic/USERS.replace." + runID()
	durableOffline(t, tg, "user", "app-y", "feed", topic, 3)

	g := dialRaw(t, tg.Addr)
	f := g.connect("login", "guest", "passcode", tg.Pass["guest"], "client-id", "app-y")
	require.Equal(t, "CONNECTED", f.Command, "ownership off: %v", f)
	g.send(subscribeFrame("s", "/topic/GUEST.replace", "r", "activemq.subscriptionName", "feed"))
	expectError(t, g, "User guest is not authorized to read from: topic://"+strings.TrimPrefix(topic, "/topic/"), "r")
	g.send(subscribeFrame("s2", "/topic/GUEST.replace", "r2", "activemq.subscriptionName", "feed", "selector", "x = 1"))
	expectError(t, g, "User guest is not authorized to read from: topic://"+strings.TrimPrefix(topic, "/topic/"), "r2")
	g.send(frame.New("DISCONNECT", "receipt", "bye"))
	expectReceipt(t, g, "bye")

	expectBacklog(t, tg, "user", "app-y", "feed", topic, 3)
}

// TestOpenWireClientIDOwned: ActiveMQ's Java client can do what a STOMP client does
// against another user's offline durable subscription, and is refused the same way:
// with ownership on, guest's connection with user's client-id throws
// InvalidClientIDException; with it off, guest's durable subscriber of the same name
// on its own topic, which would replace user's, is refused for want of read on
// user's topic. user comes back to its whole backlog either way.
func TestOpenWireClientIDOwned(t *testing.T) {
	for _, tt := range []struct {
		name, plugins      string
		connect, subscribe string
	}{
		{"ownership", "", "javax.jms.InvalidClientIDException: " + strings.Replace(ownedClientIDError, "%s", "ow-app", 1), ""},
		{"no-ownership", "clientIdOwnership: false", "ok", "JMSSecurityException: User guest is not authorized to read from: topic://USERS.ow"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pw := secPasswords()
			b := startSecBroker(t, secBroker{
				Connectors: []string{"stomp", "stomp://127.0.0.1:0", "openwire", "tcp://127.0.0.1:0"},
				Plugins:    secPluginsYAML(pw, tt.plugins),
			})
			tg := oursTarget(b)
			durableOffline(t, tg, "user", "ow-app", "sub", "/topic/USERS.ow", 3)
			r := runOW(t, "tcp://"+b.connectorAddr("openwire"), "durable-take", "user=guest", "password="+pw["guest"],
				"client=ow-app", "dest=GUEST.ow")
			assert.True(t, strings.HasPrefix(r.get("connect"), tt.connect), "connect=%s", r.get("connect"))
			if tt.subscribe != "" {
				assert.Equal(t, tt.subscribe, r.get("subscribe"))
			}
			expectBacklog(t, tg, "user", "ow-app", "sub", "/topic/USERS.ow", 3)
		})
	}
}
