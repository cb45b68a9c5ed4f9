package tests

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The security expectations run against ActiveMQ 5.17 with the configuration of its
// example activemq-security.xml, and against our broker with the same users, groups
// and authorization entries in the plugins: section of activemq-style.yaml. A case is a
// func of the test and a secTarget; it passes on ActiveMQ first, so what it asserts is
// ActiveMQ's behaviour.

// secUser is a user of the security configuration.
type secUser struct {
	Name   string
	Groups []string
}

// secUsers are the users of ActiveMQ's example activemq-security.xml.
var secUsers = []secUser{
	{"system", []string{"users", "admins"}},
	{"user", []string{"users"}},
	{"guest", []string{"guests"}},
}

// secEntry is one authorization entry; an empty right is granted to no group.
type secEntry struct {
	Kind, Pattern      string // "queue" or "topic"
	Read, Write, Admin []string
}

func groups(g ...string) []string { return g }

// secEntries are the authorization entries of ActiveMQ's example activemq-security.xml,
// plus TEST.Q, which guests may read and write but not create.
var secEntries = []secEntry{
	{"queue", ">", groups("admins"), groups("admins"), groups("admins")},
	{"queue", "USERS.>", groups("users"), groups("users"), groups("users")},
	{"queue", "GUEST.>", groups("guests"), groups("guests", "users"), groups("guests", "users")},
	{"queue", "TEST.Q", groups("guests"), groups("guests"), nil},
	{"topic", ">", groups("admins"), groups("admins"), groups("admins")},
	{"topic", "USERS.>", groups("users"), groups("users"), groups("users")},
	{"topic", "GUEST.>", groups("guests"), groups("guests", "users"), groups("guests", "users")},
	{"topic", "ActiveMQ.Advisory.>", groups("guests", "users"), groups("guests", "users"), groups("guests", "users")},
}

// secPasswords are the users' passwords, new for each run of the test binary.
var secPasswords = sync.OnceValue(func() map[string]string {
	pw := map[string]string{}
	for _, u := range secUsers {
		pw[u.Name] = u.Name + "-" + randomHex(8)
	}
	return pw
})

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// activeMQSecurityXML is the activemq.xml of the ActiveMQ side: non-persistent, no JMX,
// JMSXUserID set from the authenticated user, simpleAuthenticationPlugin with secUsers,
// authorizationPlugin with secEntries, STOMP on loopback.
func activeMQSecurityXML(pw map[string]string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<beans xmlns="http://www.springframework.org/schema/beans"
       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
       xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans.xsd
                           http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="e2e-security"
          persistent="false" useJmx="false"
          populateJMSXUserID="true" useAuthenticatedPrincipalForJMSXUserID="true">
    <plugins>
      <simpleAuthenticationPlugin>
        <users>
`)
	for _, u := range secUsers {
		fmt.Fprintf(&b, "          <authenticationUser username=%q password=%q groups=%q/>\n", u.Name, pw[u.Name], strings.Join(u.Groups, ","))
	}
	b.WriteString(`        </users>
      </simpleAuthenticationPlugin>
      <authorizationPlugin>
        <map>
          <authorizationMap>
            <authorizationEntries>
`)
	for _, e := range secEntries {
		fmt.Fprintf(&b, "              <authorizationEntry %s=%q", e.Kind, e.Pattern)
		for _, r := range []struct {
			name   string
			groups []string
		}{{"read", e.Read}, {"write", e.Write}, {"admin", e.Admin}} {
			if len(r.groups) > 0 {
				fmt.Fprintf(&b, " %s=%q", r.name, strings.Join(r.groups, ","))
			}
		}
		b.WriteString("/>\n")
	}
	b.WriteString(`            </authorizationEntries>
          </authorizationMap>
        </map>
      </authorizationPlugin>
    </plugins>
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:` + amqStompPort + `"/>
    </transportConnectors>
  </broker>
</beans>
`)
	return b.String()
}

// yamlGroups is a group list as activemq-style.yaml writes it: one group bare, more
// as a flow sequence.
func yamlGroups(g []string) string {
	if len(g) == 1 {
		return g[0]
	}
	return "[" + strings.Join(g, ", ") + "]"
}

// secPluginsYAML is the plugins: section of our broker equivalent to
// activeMQSecurityXML, with more keys of the section (one YAML line each, e.g.
// "maxConnectionsPerUser: 2") added at its end.
func secPluginsYAML(pw map[string]string, more ...string) string {
	var b strings.Builder
	b.WriteString("plugins:\n  simpleAuthentication:\n    users:\n")
	for _, u := range secUsers {
		fmt.Fprintf(&b, "      - {username: %s, password: %q, groups: %s}\n", u.Name, pw[u.Name], yamlGroups(u.Groups))
	}
	b.WriteString("  authorization:\n    entries:\n")
	for _, e := range secEntries {
		fmt.Fprintf(&b, "      - {%s: %q", e.Kind, e.Pattern)
		for _, r := range []struct {
			name   string
			groups []string
		}{{"read", e.Read}, {"write", e.Write}, {"admin", e.Admin}} {
			if len(r.groups) > 0 {
				fmt.Fprintf(&b, ", %s: %s", r.name, yamlGroups(r.groups))
			}
		}
		b.WriteString("}\n")
	}
	for _, m := range more {
		b.WriteString("  " + m + "\n")
	}
	return b.String()
}

// secBrokerKeys are the broker: keys of the security configuration.
var secBrokerKeys = []string{"populateJMSXUserID: true", "useAuthenticatedPrincipalForJMSXUserID: true"}

// secTarget is a broker under test with the security configuration.
type secTarget struct {
	Name   string
	Addr   string            // STOMP
	Pass   map[string]string // user -> password
	output func() string     // the broker's log, for failure messages
	// fresh starts another broker of the same kind and configuration, in the state
	// a broker starts in.
	fresh func(t *testing.T) *secTarget

	// used holds the destinations cases may have created on this broker; it lives as
	// long as the broker (the shared ActiveMQ outlives a test with -count=2).
	used *sync.Map
}

// amqUsed is secTarget.used of each shared ActiveMQ.
var amqUsed sync.Map // *activeMQ -> *sync.Map

// use records that the case may have created the destination.
func (tg *secTarget) use(dest string) { tg.used.Store(dest, true) }

// pristine returns a target on which dest does not exist yet: tg itself if no case
// used dest on it before, else a fresh broker.
func (tg *secTarget) pristine(t *testing.T, dest string) *secTarget {
	t.Helper()
	if _, usedBefore := tg.used.LoadOrStore(dest, true); !usedBefore {
		return tg
	}
	t.Logf("%s exists on the %s broker already: the case runs on a fresh one", dest, tg.Name)
	f := tg.fresh(t)
	f.use(dest)
	return f
}

// raw connects a raw STOMP 1.2 client as user and requires CONNECTED.
func (tg *secTarget) raw(t testing.TB, user string) *rawConn {
	t.Helper()
	c := dialRaw(t, tg.Addr)
	f := c.connect("login", user, "passcode", tg.Pass[user])
	require.Equal(t, "CONNECTED", f.Command, "CONNECT as %s: %v", user, f)
	return c
}

// dial connects a go-stomp client as user.
func (tg *secTarget) dial(t testing.TB, user string) *stomp.Conn {
	t.Helper()
	return dial(t, tg.Addr, stomp.ConnOpt.Login(user, tg.Pass[user]))
}

// runID makes destination names of one run of a case its own on a shared broker.
func runID() string { return strconv.FormatInt(time.Now().UnixNano(), 36) }

// expectError reads the next frame of c and requires an ERROR with the message and, if
// receipt is not empty, the receipt-id.
func expectError(t testing.TB, c *rawConn, message, receipt string) *frame.Frame {
	t.Helper()
	f := c.read()
	require.Equal(t, "ERROR", f.Command, "%v", f)
	assert.Equal(t, message, f.Header.Get("message"))
	if receipt != "" {
		assert.Equal(t, receipt, f.Header.Get("receipt-id"), "%v", f)
	}
	return f
}

// expectReceipt reads the next frame of c and requires the RECEIPT of receipt.
func expectReceipt(t testing.TB, c *rawConn, receipt string) {
	t.Helper()
	f := c.read()
	require.Equal(t, "RECEIPT", f.Command, "%v", f)
	require.Equal(t, receipt, f.Header.Get("receipt-id"))
}

// readReceiptAndMessage reads two frames of c, a RECEIPT of receipt and a MESSAGE, in
// either order (a broker may dispatch before it acknowledges the SUBSCRIBE), and
// returns the MESSAGE.
func readReceiptAndMessage(t testing.TB, c *rawConn, receipt string) *frame.Frame {
	t.Helper()
	var msg *frame.Frame
	gotReceipt := false
	for range 2 {
		f := c.read()
		switch {
		case f.Command == "RECEIPT" && f.Header.Get("receipt-id") == receipt && !gotReceipt:
			gotReceipt = true
		case f.Command == "MESSAGE" && msg == nil:
			msg = f
		default:
			t.Fatalf("expected the RECEIPT %q and a MESSAGE, got %v", receipt, f)
		}
	}
	return msg
}

func sendFrame(dest, receipt, body string, headers ...string) *frame.Frame {
	f := frame.New("SEND", append([]string{"destination", dest, "receipt", receipt, "content-type", "text/plain"}, headers...)...)
	f.Body = []byte(body)
	return f
}

func subscribeFrame(id, dest, receipt string, headers ...string) *frame.Frame {
	return frame.New("SUBSCRIBE", append([]string{"id", id, "destination", dest, "ack", "auto", "receipt", receipt}, headers...)...)
}

// invalidLogin is ActiveMQ's ERROR message of a failed CONNECT; login "" is no login
// header.
func invalidLogin(login string) string {
	if login == "" {
		login = "null"
	}
	return "User name [" + login + "] or password is invalid."
}

// expectLoginRefused reads the answer to a failed CONNECT: the invalid-credentials
// ERROR, which does not show the passcode, and then the end of the connection.
func expectLoginRefused(t testing.TB, c *rawConn, login, passcode string) {
	t.Helper()
	f := c.read()
	require.Equal(t, "ERROR", f.Command, "%v", f)
	assert.Equal(t, invalidLogin(login), f.Header.Get("message"))
	if passcode != "" {
		for i := range f.Header.Len() {
			k, v := f.Header.GetAt(i)
			assert.NotContains(t, v, passcode, "the ERROR's %s header shows the passcode", k)
		}
		assert.NotContains(t, string(f.Body), passcode, "the ERROR's body shows the passcode")
	}
	c.expectClosed(10 * time.Second)
}

// secCase is one expectation, run against each target.
type secCase struct {
	name string
	run  func(t *testing.T, tg *secTarget)
}

var secCases = []secCase{
	{"BadPasscode", func(t *testing.T, tg *secTarget) {
		pass := "wrong-" + randomHex(6)
		c := dialRaw(t, tg.Addr)
		c.send(frame.New("CONNECT", "accept-version", "1.2", "host", "localhost", "login", "user", "passcode", pass))
		expectLoginRefused(t, c, "user", pass)
	}},
	{"UnknownUser", func(t *testing.T, tg *secTarget) {
		pass := tg.Pass["user"]
		c := dialRaw(t, tg.Addr)
		c.send(frame.New("CONNECT", "accept-version", "1.2", "host", "localhost", "login", "nobody", "passcode", pass))
		expectLoginRefused(t, c, "nobody", pass)
	}},
	{"NoLogin", func(t *testing.T, tg *secTarget) {
		c := dialRaw(t, tg.Addr)
		c.send(frame.New("CONNECT", "accept-version", "1.2", "host", "localhost"))
		expectLoginRefused(t, c, "", "")
	}},
	{"DeniedSendAndSubscribeKeepTheConnection", func(t *testing.T, tg *secTarget) {
		c := tg.raw(t, "user")
		c.send(sendFrame("/queue/FOO", "r1", "denied"))
		expectError(t, c, "User user is not authorized to write to: queue://FOO", "r1")
		c.send(subscribeFrame("s1", "/queue/FOO", "r2"))
		expectError(t, c, "User user is not authorized to read from: queue://FOO", "r2")

		// The connection still works: a destination the user may write and read.
		dest := "/queue/USERS.a-" + runID()
		c.send(sendFrame(dest, "r3", "allowed"))
		expectReceipt(t, c, "r3")
		c.send(subscribeFrame("s2", dest, "r4"))
		m := readReceiptAndMessage(t, c, "r4")
		assert.Equal(t, "allowed", string(m.Body))
	}},
	{"GuestMayNotCreate", func(t *testing.T, tg *secTarget) {
		tg = tg.pristine(t, "TEST.Q")
		const denied = "User guest is not authorized to create: queue://TEST.Q"
		g := tg.raw(t, "guest")
		g.send(sendFrame("/queue/TEST.Q", "r1", "denied"))
		expectError(t, g, denied, "r1")
		g.send(subscribeFrame("g1", "/queue/TEST.Q", "r2"))
		expectError(t, g, denied, "r2")

		// system (admins, by ">") creates it; then guest may read and write it.
		sys := tg.dial(t, "system")
		require.NoError(t, sys.Send("/queue/TEST.Q", "text/plain", []byte("from system"), stomp.SendOpt.Receipt))
		g.send(subscribeFrame("g2", "/queue/TEST.Q", "r3"))
		m := readReceiptAndMessage(t, g, "r3")
		assert.Equal(t, "from system", string(m.Body))
		g.send(sendFrame("/queue/TEST.Q", "r4", "from guest"))
		m = readReceiptAndMessage(t, g, "r4")
		assert.Equal(t, "from guest", string(m.Body))
	}},
	{"CompositeSendWithOneDeniedDeliversNothing", func(t *testing.T, tg *secTarget) {
		allowed := "/queue/USERS.c1-" + runID()
		consumer := tg.dial(t, "user")
		sub, err := consumer.Subscribe(allowed, stomp.AckAuto)
		require.NoError(t, err)

		c := tg.raw(t, "user")
		c.send(sendFrame(allowed+",/queue/FOO", "r1", "composite"))
		f := c.read()
		require.Equal(t, "ERROR", f.Command, "%v", f)
		assert.Equal(t, "r1", f.Header.Get("receipt-id"))
		msg := f.Header.Get("message")
		assert.True(t, strings.HasPrefix(msg, "User user is not authorized to write to:"), msg)
		assert.Contains(t, msg, "FOO")

		// A later marker on the allowed queue is the first message there: the
		// composite SEND put nothing on it.
		c.send(sendFrame(allowed, "r2", "marker"))
		expectReceipt(t, c, "r2")
		receive(t, sub, "marker")
	}},
	{"UsersWildcardMatchesItsPrefix", func(t *testing.T, tg *secTarget) {
		// USERS.> matches USERS itself (zero or more elements).
		roundTrip(t, tg.dial(t, "user"), "/queue/USERS", "to USERS")
	}},
	{"RightsAreTheUnionOfEntries", func(t *testing.T, tg *secTarget) {
		// TEST.Q's own entry grants only guests; system reads and writes it by ">".
		tg.use("TEST.Q")
		roundTrip(t, tg.dial(t, "system"), "/queue/TEST.Q", "system by >")
	}},
	{"JMSXUserIDIsTheAuthenticatedUser", func(t *testing.T, tg *secTarget) {
		dest := "/queue/USERS.jmsx-" + runID()
		sys := tg.dial(t, "system")
		sub, err := sys.Subscribe(dest, stomp.AckAuto)
		require.NoError(t, err)
		require.NoError(t, sys.Send(dest, "text/plain", []byte("forged"), stomp.SendOpt.Header("JMSXUserID", "evil"), stomp.SendOpt.Receipt))
		require.NoError(t, tg.dial(t, "user").Send(dest, "text/plain", []byte("plain"), stomp.SendOpt.Receipt))
		for _, want := range []struct{ body, user string }{{"forged", "system"}, {"plain", "user"}} {
			select {
			case m := <-sub.C:
				require.NoError(t, m.Err)
				assert.Equal(t, want.body, string(m.Body))
				assert.Equal(t, want.user, m.Header.Get("JMSXUserID"), "JMSXUserID of %q", want.body)
			case <-time.After(10 * time.Second):
				t.Fatalf("no MESSAGE %q", want.body)
			}
		}
	}},
	{"DeniedSendReachesNoConsumer", func(t *testing.T, tg *secTarget) {
		sys := tg.dial(t, "system")
		sub, err := sys.Subscribe("/queue/FOO", stomp.AckAuto)
		require.NoError(t, err)
		c := tg.raw(t, "user")
		c.send(sendFrame("/queue/FOO", "r1", "denied"))
		expectError(t, c, "User user is not authorized to write to: queue://FOO", "r1")
		require.NoError(t, sys.Send("/queue/FOO", "text/plain", []byte("legitimate"), stomp.SendOpt.Receipt))
		receive(t, sub, "legitimate")
	}},
}

// TestSecurityExpectations runs the security cases against ActiveMQ 5.17 (Debian's
// package, started by the test) and against our broker with the equivalent
// configuration.
func TestSecurityExpectations(t *testing.T) {
	pw := secPasswords()
	xml := activeMQSecurityXML(pw)
	startAMQ := func(t *testing.T, shared bool) *secTarget {
		tg := &secTarget{Name: "activemq", Pass: pw, used: &sync.Map{}}
		if shared {
			a := sharedActiveMQ(t, xml)
			used, _ := amqUsed.LoadOrStore(a, tg.used)
			tg.Addr, tg.output, tg.used = a.StompAddr, a.Output, used.(*sync.Map)
		} else {
			tg.Addr, tg.output = startActiveMQ(t, xml), func() string { return "(in the log above)" }
		}
		return tg
	}
	startOurs := func(t *testing.T) *secTarget {
		b := startBrokerKeys(t, brokerConfig{Extra: secPluginsYAML(pw)}, secBrokerKeys...)
		return &secTarget{Name: "ours", Addr: b.Addr, Pass: pw, output: b.Log, used: &sync.Map{}}
	}
	targets := []struct {
		name  string
		start func(t *testing.T) *secTarget
		fresh func(t *testing.T) *secTarget
	}{
		{"activemq", func(t *testing.T) *secTarget { return startAMQ(t, true) }, func(t *testing.T) *secTarget { return startAMQ(t, false) }},
		{"ours", startOurs, startOurs},
	}
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) {
			tg := target.start(t)
			tg.fresh = target.fresh
			for _, c := range secCases {
				t.Run(c.name, func(t *testing.T) {
					t.Cleanup(func() {
						if t.Failed() {
							t.Logf("%s broker output:\n%s", tg.Name, tg.output())
						}
					})
					c.run(t, tg)
				})
			}
		})
	}
}
