package tests

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"

	ow "github.com/activemq-go/broker/internal/openwire"
)

// Before login, a client may make the broker hold no more than a small frame, and only
// so many connections may wait to log in; a failed login tells nothing of whether the
// user exists.

// preLoginLimit is the documented default of a connector's maxFrameSizeBeforeLogin.
const preLoginLimit = 16 << 10

// preauthUsers are users of each password form, all with the passcode "pw": plain
// text, a bcrypt hash and an argon2id hash.
func preauthUsers(t testing.TB) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	require.NoError(t, err)
	salt := []byte("sixteen byte slt")
	b64 := base64.RawStdEncoding.EncodeToString
	argon := fmt.Sprintf("$argon2id$v=19$m=64,t=1,p=1$%s$%s", b64(salt), b64(argon2.IDKey([]byte("pw"), salt, 1, 64, 1, 32)))
	return fmt.Sprintf(`plugins:
  simpleAuthentication:
    users:
      - {username: plain, password: pw, groups: [admins]}
      - {username: hashed, passwordHash: %q, groups: [admins]}
      - {username: argon, passwordHash: %q, groups: [admins]}
`, h, argon)
}

// startPreauthBroker starts a broker with preauthUsers, the admin listener, the
// broker: keys given and the connectors (name, uri pairs).
func startPreauthBroker(t testing.TB, brokerKeys string, connectors ...string) *brokerProc {
	t.Helper()
	dataDir := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "broker:\n  brokerName: e2e\n  dataDirectory: %s\n  adminAddress: 127.0.0.1:0\n%s", dataDir, brokerKeys)
	b.WriteString("persistenceAdapter:\n  memory: {}\ntransportConnectors:\n")
	for i := 0; i+1 < len(connectors); i += 2 {
		fmt.Fprintf(&b, "  - name: %s\n    uri: %q\n", connectors[i], connectors[i+1])
	}
	b.WriteString(preauthUsers(t))
	p := startBrokerFile(t, writeFile(t, b.String()), dataDir)
	for i := 0; i+1 < len(connectors); i += 2 {
		p.connectorAddr(connectors[i])
	}
	return p
}

var hashVerificationsRE = regexp.MustCompile(`(?m)^broker_password_hash_verifications_total (\d+)$`)

// hashVerifications reads the broker's count of password hash verifications from
// /metrics.
func hashVerifications(t testing.TB, a *api) int {
	t.Helper()
	status, body, _ := a.call("GET", "/metrics", "")
	require.Equal(t, http.StatusOK, status, "%s", body)
	m := hashVerificationsRE.FindSubmatch(body)
	require.NotNil(t, m, "no broker_password_hash_verifications_total in /metrics")
	n, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	return n
}

// TestFailedLoginsAlike: a wrong passcode for a user with a plain-text password, a
// bcrypt hash or an argon2id hash, and an unknown user, each get the same ERROR (but
// for the login it names) and cost the broker the same work: one verification of each
// hash kind in use, counted by /metrics. Before, an unknown user cost one bcrypt
// verification and a plain-text user's wrong passcode none: its answer came sooner.
// The same over OpenWire.
func TestFailedLoginsAlike(t *testing.T) {
	b := startPreauthBroker(t, "", "stomp", "stomp://127.0.0.1:0", "openwire", "tcp://127.0.0.1:0")
	a := newAPI(t, "http://"+statsAddr(t, b))
	a.user, a.pass = "plain", "pw"
	logins := []string{"nobody", "plain", "hashed", "argon"}

	var answers []string
	work := map[string]int{}
	for _, login := range logins {
		before := hashVerifications(t, a)
		c := dialRawFrom(t, b.Addr, nextLoopback())
		c.send(connectFrame(ptr(login), ptr("wrong")))
		f := c.read()
		require.Equal(t, "ERROR", f.Command, "%v", f)
		c.expectClosed(10 * time.Second)
		work[login] = hashVerifications(t, a) - before
		f.Header.Del("content-length") // the login's length
		answers = append(answers, strings.ReplaceAll(fmt.Sprintf("%v %q", f.Header, f.Body), "["+login+"]", "[LOGIN]"))
	}
	for i := range logins {
		assert.Equal(t, answers[0], answers[i], "the ERROR of %s differs from %s's", logins[i], logins[0])
	}
	assert.Equal(t, map[string]int{"nobody": 2, "plain": 2, "hashed": 2, "argon": 2}, work,
		"hash verifications per failed login: one bcrypt and one argon2id for each")

	answers = answers[:0]
	for _, login := range logins {
		before := hashVerifications(t, a)
		c := dialOWRaw(t, b.connectorAddr("openwire"))
		c.handshake(0)
		resp := c.request(&ow.ConnectionInfo{ConnectionID: &ow.ConnectionID{Value: "ID:" + login}, UserName: login, Password: "wrong"})
		er, ok := resp.(*ow.ExceptionResponse)
		require.True(t, ok, "ConnectionInfo of %s answered with %#v", login, resp)
		work[login] = hashVerifications(t, a) - before
		answers = append(answers, strings.ReplaceAll(er.Exception.Class+": "+er.Exception.Message, "["+login+"]", "[LOGIN]"))
	}
	for i := range logins {
		assert.Equal(t, answers[0], answers[i], "OpenWire: the exception of %s differs from %s's", logins[i], logins[0])
	}
	assert.Equal(t, map[string]int{"nobody": 2, "plain": 2, "hashed": 2, "argon": 2}, work, "OpenWire")
}

// TestPreLoginFrameLimit: until its CONNECT succeeds, a STOMP client (TCP or
// WebSocket) may send a frame of maxFrameSizeBeforeLogin bytes at most: a bigger
// one gets an ERROR naming the limit as soon as the limit is passed, and the
// connection is closed, with one log line however many there are. A CONNECT with a
// long passcode still fits, and once logged in a client sends frames of the
// connector's maxFrameSize. Before, a CONNECT could be 10 MiB, held in memory while it
// arrived. The connect timeout is a minute, so no deadline closes these connections.
func TestPreLoginFrameLimit(t *testing.T) {
	b := startPreauthBroker(t, "",
		"stomp", "stomp://127.0.0.1:0?connectTimeout=60000",
		"ws", "ws://127.0.0.1:0?connectTimeout=60000",
		"small", "stomp://127.0.0.1:0?connectTimeout=60000&maxFrameSizeBeforeLogin=2kb")
	head := "CONNECT\naccept-version:1.2\nhost:localhost\nlogin:plain\npasscode:pw\n\n"
	tooBig := func(limit int) string {
		// No NUL: the frame goes on. Nothing else is sent, so the broker answers
		// having read no more than this: the limit, its read buffer (16 KiB, which
		// it fills before looking) and 1 KiB.
		return head + strings.Repeat("x", limit-len(head)+16<<10+1024)
	}
	refused := func(c *rawConn, limit int) {
		t.Helper()
		f, err := c.readWithin(10 * time.Second)
		require.NoError(t, err, "no ERROR for a frame over maxFrameSizeBeforeLogin %d", limit)
		require.Equal(t, "ERROR", f.Command, "%v", f)
		assert.Contains(t, f.Header.Get("message"), fmt.Sprintf("maxFrameSizeBeforeLogin %d", limit))
		c.expectClosed(10 * time.Second)
	}

	c := dialRaw(t, b.Addr)
	c.sendRaw(tooBig(preLoginLimit))
	refused(c, preLoginLimit)

	// A frame that says it is 9 MiB is refused before its body comes.
	c = dialRaw(t, b.Addr)
	c.sendRaw("CONNECT\naccept-version:1.2\nlogin:plain\npasscode:pw\ncontent-length:9437184\n\n")
	refused(c, preLoginLimit)

	ws := dialWS(t, "ws://"+b.connectorAddr("ws")+"/", "v12.stomp", nil)
	ws.message(t, tooBig(preLoginLimit))
	refused(ws.raw, preLoginLimit)

	c = dialRaw(t, b.connectorAddr("small"))
	c.sendRaw(tooBig(2048))
	refused(c, 2048)

	// A CONNECT with an 8 KiB passcode (a token) fits: it is answered as a login.
	c = dialRawFrom(t, b.Addr, nextLoopback())
	c.send(connectFrame(ptr("plain"), ptr(strings.Repeat("t", 8<<10))))
	f := c.read()
	require.Equal(t, "ERROR", f.Command, "%v", f)
	assert.Equal(t, "User name [plain] or password is invalid.", f.Header.Get("message"))

	// Logged in, a client sends 1 MiB frames, over TCP and WebSocket.
	big := strings.Repeat("b", 1<<20)
	c = dialRaw(t, b.Addr)
	require.Equal(t, "CONNECTED", c.connect("login", "plain", "passcode", "pw").Command)
	c.send(sendFrame("/queue/preauth.big", "r1", big))
	expectReceipt(t, c, "r1")
	ws = dialWS(t, "ws://"+b.connectorAddr("ws")+"/", "v12.stomp", nil)
	require.Equal(t, "CONNECTED", ws.raw.connect("login", "plain", "passcode", "pw").Command)
	ws.raw.send(sendFrame("/queue/preauth.big", "r2", big))
	expectReceipt(t, ws.raw, "r2")

	// One line per connector in a minute, however many frames are refused.
	assert.Equal(t, 3, logCount(b, "frame refused before login"), "log:\n%s", b.Log())
	assert.Equal(t, 1, logLines(b, "frame refused before login", "connector=stomp "), "log:\n%s", b.Log())
	require.False(t, b.Exited())
}

// TestPreLoginFrameLimitOpenWire: an OpenWire client's commands before its
// ConnectionInfo is accepted (WireFormatInfo, ConnectionInfo) are held to
// maxFrameSizeBeforeLogin: a frame that says it is 9 MiB closes the connection at
// once, before or after the WireFormatInfo exchange; after login the connector's
// wireFormat.maxFrameSize applies. Before, the broker waited for the 9 MiB.
func TestPreLoginFrameLimitOpenWire(t *testing.T) {
	b := startPreauthBroker(t, "", "stomp", "stomp://127.0.0.1:0",
		"openwire", "tcp://127.0.0.1:0?transport.connectAttemptTimeout=60000")
	addr := b.connectorAddr("openwire")
	frameOf := func(size int) []byte {
		buf := binary.BigEndian.AppendUint32(nil, uint32(size))
		return append(buf, make([]byte, 1024)...)
	}

	c := dialOWRaw(t, addr)
	_, ok := c.read().(*ow.WireFormatInfo)
	require.True(t, ok)
	_, err := c.nc.Write(frameOf(9 << 20))
	require.NoError(t, err)
	c.expectClosed(10 * time.Second)

	c = dialOWRaw(t, addr)
	c.handshake(0)
	_, err = c.nc.Write(frameOf(9 << 20))
	require.NoError(t, err)
	assert.Equal(t, []string{"java.io.IOException: Frame size of 9437184 larger than max allowed 16384 before login (maxFrameSizeBeforeLogin)"},
		connectionErrors(c.expectClosed(10*time.Second)))

	// Logged in, a 1 MiB message goes through.
	c = dialOWRaw(t, addr)
	c.handshake(0)
	resp := c.request(&ow.ConnectionInfo{ConnectionID: &ow.ConnectionID{Value: "ID:raw"}, ClientID: "raw", UserName: "plain", Password: "pw"})
	require.IsType(t, &ow.Response{}, resp, "ConnectionInfo answered with %#v", resp)
	c.sendText("preauth.ow", strings.Repeat("m", 1<<20))

	assert.Equal(t, 1, logCount(b, "frame refused before login"), "one line a minute:\n%s", b.Log())
	require.False(t, b.Exited())
}

// TestMaxPendingLogins: with broker.maxPendingLogins 2, a third connection that has
// not logged in while two others have not either gets an ERROR naming the limit (an
// OpenWire one is closed), with one log line; once one of the two logs in, a new
// connection is let in and logs in.
func TestMaxPendingLogins(t *testing.T) {
	b := startPreauthBroker(t, "  maxPendingLogins: 2\n",
		"stomp", "stomp://127.0.0.1:0?connectTimeout=60000", "openwire", "tcp://127.0.0.1:0")
	first, second := dialRaw(t, b.Addr), dialRaw(t, b.Addr)
	first.sendRaw("\n") // a heart-beat: connected, not logged in
	second.sendRaw("\n")

	third := dialRaw(t, b.Addr)
	f := third.read()
	require.Equal(t, "ERROR", f.Command, "%v", f)
	assert.Equal(t, "too many connections waiting to log in (broker.maxPendingLogins 2); try again later", f.Header.Get("message"))
	third.expectClosed(10 * time.Second)

	owc := dialOWRaw(t, b.connectorAddr("openwire"))
	assert.Empty(t, connectionErrors(owc.expectClosed(10*time.Second)), "an OpenWire client is closed without a word")

	require.Equal(t, "CONNECTED", first.connect("login", "plain", "passcode", "pw").Command)
	fourth := dialRaw(t, b.Addr)
	require.Equal(t, "CONNECTED", fourth.connect("login", "plain", "passcode", "pw").Command)
	assert.Equal(t, 1, logCount(b, "connection refused: too many connections waiting to log in"), "log:\n%s", b.Log())
}

// logLines counts the broker's log lines that contain every one of subs.
func logLines(b *brokerProc, subs ...string) int {
	n := 0
	for _, line := range strings.Split(b.Log(), "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			n++
		}
	}
	return n
}
