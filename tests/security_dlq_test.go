package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Dead-letter metadata belongs to the broker (issue 24, item 1): a client cannot put
// its own original-destination or dlqDeliveryFailureCause on a message, and a retry of
// a dead-letter queue sends a message back only where its producer (JMSXUserID) may
// still write.

// dlqBroker is a broker with JMSXUserID populated, the admin listener, STOMP and
// OpenWire connectors, and users from
// JAAS files that it re-reads: admin (admins: everything), app (apps: the queues a.>)
// and bob (writers: write orders and probe). groupsFile is the groups file, for a test that
// changes them.
type dlqBroker struct {
	*brokerProc
	pass       map[string]string
	groupsFile string
	groupsAt   time.Time // the modification time setGroups gave groupsFile last
	api        *api      // the admin listener, as admin
	adminURL   string
}

// dlqGroups are the groups of dlqBroker's users.
const dlqGroups = "admins=admin\napps=app\nwriters=bob\n"

func startDLQBroker(t *testing.T) *dlqBroker {
	t.Helper()
	dir := t.TempDir()
	pass := map[string]string{"admin": "admin-" + randomHex(6), "app": "app-" + randomHex(6), "bob": "bob-" + randomHex(6)}
	usersFile, groupsFile := filepath.Join(dir, "users.properties"), filepath.Join(dir, "groups.properties")
	var users strings.Builder
	for u, p := range pass {
		fmt.Fprintf(&users, "%s=%s\n", u, p)
	}
	require.NoError(t, os.WriteFile(usersFile, []byte(users.String()), 0o600))
	require.NoError(t, os.WriteFile(groupsFile, []byte(dlqGroups), 0o600))
	plugins := fmt.Sprintf(`plugins:
  jaasProperties: {users: %q, groups: %q, reload: true}
  authorization:
    entries:
      - {queue: ">", read: [admins], write: [admins], admin: [admins]}
      - {queue: "a.>", read: [apps], write: [apps], admin: [apps]}
      - {queue: "orders", write: [writers], admin: [writers]}
      - {queue: "probe", write: [writers], admin: [writers]}
      - {topic: ">", read: [admins], write: [admins], admin: [admins]}
      - {topic: "ActiveMQ.Advisory.>", read: [apps, writers], write: [apps, writers], admin: [apps, writers]}
`, usersFile, groupsFile)
	b := startSecBroker(t, secBroker{Plugins: plugins, Env: []string{adminEnv},
		Connectors: []string{"stomp", "stomp://127.0.0.1:0", "openwire", "tcp://127.0.0.1:0"}})
	a := newAPI(t, "http://"+statsAddr(t, b))
	a.user, a.pass = "admin", pass["admin"]
	return &dlqBroker{brokerProc: b, pass: pass, groupsFile: groupsFile, groupsAt: time.Now(), api: a, adminURL: cliAdminURL(t, b, "admin", pass["admin"])}
}

// dial connects user over STOMP.
func (b *dlqBroker) dial(t *testing.T, user string) *stomp.Conn {
	return dial(t, b.Addr, stomp.ConnOpt.Login(user, b.pass[user]))
}

// moveResult is the answer of POST /api/queues/{name}/move.
type moveResult struct {
	Moved   int `json:"moved"`
	Refused []struct {
		ID     string `json:"id"`
		Reason string `json:"reason"`
	} `json:"refused"`
}

// retry retries ActiveMQ.DLQ through the admin API.
func (b *dlqBroker) retry(t *testing.T) moveResult {
	t.Helper()
	var r moveResult
	b.api.expect(http.StatusOK, "POST", "/api/queues/ActiveMQ.DLQ/move", `{"to":"original"}`, &r)
	return r
}

// deadLetters waits until ActiveMQ.DLQ holds n messages and returns them.
func (b *dlqBroker) deadLetters(t *testing.T, n int) []apiMessage {
	t.Helper()
	eventually(t, 10*time.Second, fmt.Sprintf("%d messages in ActiveMQ.DLQ", n), func() bool {
		return b.api.messagesOf("/queue/ActiveMQ.DLQ") == int64(n)
	})
	dead, _ := b.api.browseAll("ActiveMQ.DLQ", 100)
	require.Len(t, dead, n)
	return dead
}

// TestSecurityForgedDeadLetterHeaders is the attack: app, which may write only
// the queues a.>, sends a message with its own original-destination:/queue/secret and
// dlqDeliveryFailureCause, already expired; it expires into ActiveMQ.DLQ, and the
// administrator retries the DLQ through the API and the CLI. The dead-letter copy names
// the true origin and the broker's cause, and the retry takes it back to /queue/a.x,
// never into /queue/secret. An administrator's copies stay.
func TestSecurityForgedDeadLetterHeaders(t *testing.T) {
	b := startDLQBroker(t)
	app := b.dial(t, "app")
	forged := []func(*frame.Frame) error{
		stomp.SendOpt.Header("original-destination", "/queue/secret"),
		stomp.SendOpt.Header("dlqDeliveryFailureCause", "forged by app"),
		stomp.SendOpt.Header("persistent", "true"),
		stomp.SendOpt.Header("expires", "1"),
		stomp.SendOpt.Receipt,
	}
	require.NoError(t, app.Send("/queue/a.x", "text/plain", []byte("api"), forged...))
	// A consumer makes the broker find the message expired.
	sub, err := app.Subscribe("/queue/a.x", stomp.AckAuto)
	require.NoError(t, err)

	dead := b.deadLetters(t, 1)
	assert.Equal(t, "/queue/a.x", dead[0].Headers["original-destination"], "the dead-letter copy names where the message was sent")
	cause := dead[0].Headers["dlqDeliveryFailureCause"]
	assert.Contains(t, cause, "Message Expired", "the broker's own cause")
	assert.NotContains(t, cause, "forged")

	r := b.retry(t)
	assert.Equal(t, 1, r.Moved, "%+v", r)
	m := recv(t, sub)
	assert.Equal(t, "api", string(m.Body), "the retried message is back on /queue/a.x")
	b.noSecret(t)

	// The same through the CLI, with a message that dies by NACK this time.
	unsubscribe(t, sub)
	nack, err := app.Subscribe("/queue/a.x", stomp.AckClientIndividual)
	require.NoError(t, err)
	require.NoError(t, app.Send("/queue/a.x", "text/plain", []byte("cli"), forged[0], forged[1], forged[2], forged[4]))
	require.NoError(t, app.Nack(recv(t, nack)))
	dead = b.deadLetters(t, 1)
	assert.Equal(t, "/queue/a.x", dead[0].Headers["original-destination"])
	assert.Equal(t, "poison ack (NACK)", dead[0].Headers["dlqDeliveryFailureCause"])
	unsubscribe(t, nack)
	assert.Equal(t, "moved 1 message from /queue/ActiveMQ.DLQ to their original destinations\n",
		cliOK(t, "", "move", "--admin="+b.adminURL, "ActiveMQ.DLQ", "--to", "original"))
	again, err := app.Subscribe("/queue/a.x", stomp.AckAuto)
	require.NoError(t, err)
	assert.Equal(t, "cli", string(recv(t, again).Body))
	b.noSecret(t)

	// An administrator's SEND keeps them: broker migrate moves ActiveMQ's dead letters
	// so, and they are retried from here.
	require.NoError(t, b.dial(t, "admin").Send("/queue/ActiveMQ.DLQ", "text/plain", []byte("migrated"),
		stomp.SendOpt.Header("original-destination", "/queue/a.x"), stomp.SendOpt.Header("dlqDeliveryFailureCause", "from ActiveMQ"),
		stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Receipt))
	dead = b.deadLetters(t, 1)
	assert.Equal(t, "/queue/a.x", dead[0].Headers["original-destination"])
	assert.Equal(t, "from ActiveMQ", dead[0].Headers["dlqDeliveryFailureCause"])
	assert.Equal(t, 1, b.retry(t).Moved)
	assert.Equal(t, "migrated", string(recv(t, again).Body))
}

// noSecret checks that nothing reached /queue/secret: the queue was never made.
func (b *dlqBroker) noSecret(t *testing.T) {
	t.Helper()
	d, ok := b.api.dest("/queue/secret")
	assert.False(t, ok, "a retry made /queue/secret: %+v", d)
}

// setGroups writes the groups file and waits until a login of bob sees it: bob may
// write /queue/probe exactly when he is in writers.
func (b *dlqBroker) setGroups(t *testing.T, groups string, bobWrites bool) {
	t.Helper()
	require.NoError(t, os.WriteFile(b.groupsFile, []byte(groups), 0o600))
	// The file's time moves on as it would a moment later (a check by modification
	// time must see it).
	b.groupsAt = b.groupsAt.Add(2 * time.Second)
	require.NoError(t, os.Chtimes(b.groupsFile, b.groupsAt, b.groupsAt))
	eventually(t, 10*time.Second, fmt.Sprintf("the groups file re-read (bob may write: %v)", bobWrites), func() bool {
		c, err := stomp.Dial("tcp", b.Addr, stomp.ConnOpt.Login("bob", b.pass["bob"]), stomp.ConnOpt.Logger(quietLogger{}))
		if err != nil {
			return false
		}
		defer c.MustDisconnect()
		return (c.Send("/queue/probe", "text/plain", []byte("probe"), stomp.SendOpt.Receipt) == nil) == bobWrites
	})
}

// TestSecurityRetryChecksProducer: bob, in writers, may write /queue/orders and sends
// two messages there; a consumer NACKs them into ActiveMQ.DLQ. Then the administrator
// takes bob out of writers (the groups file, re-read). A retry leaves bob's messages in
// the DLQ and says why, per message, through the API, the CLI and the console, while a message of
// another producer in the same DLQ goes back. Once bob may write again, the retry
// moves them.
func TestSecurityRetryChecksProducer(t *testing.T) {
	b := startDLQBroker(t)
	bob := b.dial(t, "bob")
	for _, body := range []string{"bob-1", "bob-2"} {
		require.NoError(t, bob.Send("/queue/orders", "text/plain", []byte(body), stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Receipt))
	}
	app := b.dial(t, "app")
	require.NoError(t, app.Send("/queue/a.y", "text/plain", []byte("app-1"), stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Receipt))
	admin := b.dial(t, "admin")
	for _, q := range []string{"/queue/orders", "/queue/a.y"} {
		sub, err := admin.Subscribe(q, stomp.AckClientIndividual)
		require.NoError(t, err)
		n := 1
		if q == "/queue/orders" {
			n = 2
		}
		for range n {
			require.NoError(t, admin.Nack(recv(t, sub)))
		}
		require.NoError(t, sub.Unsubscribe())
	}
	dead := b.deadLetters(t, 3)
	for _, m := range dead {
		assert.NotEmpty(t, m.Headers["JMSXUserID"], "populateJMSXUserID names the producer: %v", m.Headers)
	}

	b.setGroups(t, "admins=admin\napps=app\nwriters=\n", false) // bob leaves writers

	r := b.retry(t)
	assert.Equal(t, 1, r.Moved, "app's message goes back: %+v", r)
	require.Len(t, r.Refused, 2, "%+v", r)
	for _, f := range r.Refused {
		assert.NotEmpty(t, f.ID)
		assert.Contains(t, f.Reason, "bob")
		assert.Contains(t, f.Reason, "/queue/orders")
	}
	assert.Len(t, b.deadLetters(t, 2), 2, "bob's messages stay in the DLQ")
	assert.EqualValues(t, 0, b.api.messagesOf("/queue/orders"))
	assert.EqualValues(t, 1, b.api.messagesOf("/queue/a.y"))

	res := runCLI(t, "", nil, "move", "--admin="+b.adminURL, "ActiveMQ.DLQ", "--to", "original")
	assert.Equal(t, 1, res.Code, "some messages were not moved: %s", res.Stderr)
	assert.Equal(t, "moved 0 messages from /queue/ActiveMQ.DLQ to their original destinations\n", res.Stdout)
	assert.Equal(t, 2, strings.Count(res.Stderr, "not moved: "), "one line per message: %s", res.Stderr)
	assert.Contains(t, res.Stderr, "its producer bob (JMSXUserID) may not write to /queue/orders")
	assert.Contains(t, res.Stderr, "2 messages not moved")
	var st struct {
		Messages int64 `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(cliOK(t, "", "stat", "--admin="+b.adminURL, "--json", "ActiveMQ.DLQ")), &st))
	assert.EqualValues(t, 2, st.Messages)

	// The console's Retry of one of them says why it stays.
	tb := consoleLogin(t, b.api.base, "admin", b.pass["admin"])
	tb.Open(b.api.base + "/queues/ActiveMQ.DLQ")
	tb.Submit("table.messages form.retry button")
	assert.Contains(t, tb.Text("#flash"), "was not moved: its producer bob (JMSXUserID) may not write to /queue/orders")
	assert.Len(t, b.deadLetters(t, 2), 2)

	// bob may write orders again: the retry moves his messages.
	b.setGroups(t, dlqGroups, true)
	assert.Equal(t, 2, b.retry(t).Moved)
	assert.EqualValues(t, 2, b.api.messagesOf("/queue/orders"))
	assert.EqualValues(t, 0, b.api.messagesOf("/queue/ActiveMQ.DLQ"))
}

// TestSecurityForgedDeadLetterOpenWire: ActiveMQ's Java client, as app, sets the
// originalDestination field and the original-destination and dlqDeliveryFailureCause
// properties of a message to /queue/a.ow; none of it reaches its consumer, its
// dead-letter copy (a NACK) names /queue/a.ow and the broker's cause, and a retry takes it
// back there, not to /queue/secret.
func TestSecurityForgedDeadLetterOpenWire(t *testing.T) {
	b := startDLQBroker(t)
	r := runOW(t, "tcp://"+b.connectorAddr("openwire"), "forge-dead-letter", "user=app", "password="+b.pass["app"], "dest=a.ow", "forged=secret")
	require.Equal(t, "ok", r.get("sent"))
	app := b.dial(t, "app")
	sub, err := app.Subscribe("/queue/a.ow", stomp.AckClientIndividual)
	require.NoError(t, err)
	m := recv(t, sub)
	assert.Equal(t, "forged", string(m.Body))
	for _, h := range []string{"original-destination", "dlqDeliveryFailureCause"} {
		_, ok := m.Header.Contains(h)
		assert.False(t, ok, "%s reached the consumer: %v", h, m.Header)
	}
	require.NoError(t, app.Nack(m))
	dead := b.deadLetters(t, 1)
	assert.Equal(t, "/queue/a.ow", dead[0].Headers["original-destination"])
	assert.Equal(t, "poison ack (NACK)", dead[0].Headers["dlqDeliveryFailureCause"])
	assert.Equal(t, 1, b.retry(t).Moved)
	assert.Equal(t, "forged", string(recv(t, sub).Body))
	b.noSecret(t)
}
