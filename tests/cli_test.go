package tests

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The command-line tools (broker send, consume, browse) against the real binary, over
// TCP, TLS and WebSocket; the management commands' tests are in cli_admin_test.go.

// cliResult is what a run of the broker binary's client command left.
type cliResult struct {
	Stdout, Stderr string
	Code           int
}

// runCLI runs the broker binary with args, stdin as its standard input, and env added
// to an environment without BROKERCTL_URL, BROKERCTL_ADMIN and their older names
// BROKER_URL and BROKER_ADMIN. A data race the race-built
// tool reports fails the test.
func runCLI(t testing.TB, stdin string, env []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, brokerBin, args...)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains([]string{"BROKERCTL_URL", "BROKERCTL_ADMIN", "BROKER_URL", "BROKER_ADMIN"}, name) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := cliResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	case err != nil:
		t.Fatalf("broker %s: %v", strings.Join(args, " "), err)
	}
	require.NotEqual(t, raceExitCode, r.Code, "broker %s reported a data race:\n%s", strings.Join(args, " "), r.Stderr)
	require.Empty(t, raceReports(r.Stderr), "broker %s", strings.Join(args, " "))
	return r
}

// cliOK runs the command and requires exit status 0; it returns standard output.
func cliOK(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	r := runCLI(t, stdin, nil, args...)
	require.Equal(t, 0, r.Code, "broker %s:\n%s", strings.Join(args, " "), r.Stderr)
	return r.Stdout
}

// cliMessage is a line of consume --json and browse --json.
type cliMessage struct {
	Destination string            `json:"destination"`
	MessageID   string            `json:"message_id"`
	Headers     map[string]string `json:"headers"`
	Body        *string           `json:"body"`
	BodyBase64  string            `json:"body_base64"`
}

func parseCLIMessages(t testing.TB, out string) []cliMessage {
	t.Helper()
	var ms []cliMessage
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var m cliMessage
		require.NoError(t, json.Unmarshal([]byte(line), &m), "%q", line)
		ms = append(ms, m)
	}
	return ms
}

// TestCLISendConsume: send (headers, persistent, a body from standard input, --count
// with receipts), browse (which leaves the messages) and consume (text and JSON, exact
// counts, --timeout) round trip over TCP.
func TestCLISendConsume(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	url := "--url=stomp://" + b.Addr

	cliOK(t, "", "send", url, "--persistent", "--header", "k=v:1", "--header", "priority=7", "/queue/cli", "hello")
	cliOK(t, "from\nstdin", "send", url, "/queue/cli")

	// browse shows both, in order, and takes nothing.
	assert.Equal(t, "hello\nfrom\nstdin\n", cliOK(t, "", "browse", url, "/queue/cli"))
	ms := parseCLIMessages(t, cliOK(t, "", "browse", url, "--json", "--limit", "1", "queue://cli"))
	require.Len(t, ms, 1)
	assert.Equal(t, "hello", *ms[0].Body)

	ms = parseCLIMessages(t, cliOK(t, "", "consume", url, "--json", "--count", "2", "/queue/cli"))
	require.Len(t, ms, 2)
	assert.Equal(t, "/queue/cli", ms[0].Destination)
	assert.NotEmpty(t, ms[0].MessageID)
	assert.Equal(t, ms[0].MessageID, ms[0].Headers["message-id"])
	assert.Equal(t, "hello", *ms[0].Body)
	assert.Equal(t, "v:1", ms[0].Headers["k"])
	assert.Equal(t, "true", ms[0].Headers["persistent"])
	assert.Equal(t, "7", ms[0].Headers["priority"])
	assert.Equal(t, "from\nstdin", *ms[1].Body, "JSON keeps a body's line breaks")
	assert.NotEqual(t, "true", ms[1].Headers["persistent"])

	// --count with receipts: every message arrives once; --count N takes exactly N off
	// the queue, in each ack mode.
	r := runCLI(t, "", nil, "send", url, "--count", "1500", "--receipt", "/queue/cli.many", "x")
	require.Equal(t, 0, r.Code, r.Stderr)
	assert.Equal(t, strings.Repeat("x\n", 1000), cliOK(t, "", "consume", url, "--count", "1000", "--progress", "0", "/queue/cli.many"))
	assert.Equal(t, "x\nx\nx\n", cliOK(t, "", "consume", url, "--count", "3", "--ack", "client-individual", "/queue/cli.many"))
	assert.Equal(t, 497, strings.Count(cliOK(t, "", "consume", url, "--timeout", "500ms", "/queue/cli.many"), "x\n"))

	// --timeout: fewer than --count is exit status 3; with no --count, the end of what
	// waits is exit status 0.
	cliOK(t, "", "send", url, "/queue/cli.t", "only")
	r = runCLI(t, "", nil, "consume", url, "--count", "2", "--timeout", "300ms", "/queue/cli.t")
	assert.Equal(t, 3, r.Code, r.Stderr)
	assert.Equal(t, "only\n", r.Stdout)
	assert.Contains(t, r.Stderr, "broker: consume /queue/cli.t: timed out after 300ms without a message: 1 of 2 messages came")
	r = runCLI(t, "", nil, "consume", url, "--timeout", "300ms", "/queue/cli.t")
	assert.Equal(t, 0, r.Code, r.Stderr)
	assert.Empty(t, r.Stdout, "the message printed before the timeout was acknowledged")

	// $BROKERCTL_URL stands for --url; a selector picks.
	env := []string{"BROKERCTL_URL=stomp://" + b.Addr}
	r = runCLI(t, "", env, "send", "--header", "n=1", "/queue/cli.sel", "one")
	require.Equal(t, 0, r.Code, r.Stderr)
	cliOK(t, "", "send", url, "--header", "n=2", "/queue/cli.sel", "two")
	r = runCLI(t, "", env, "consume", "--count", "1", "--selector", "n = 2", "/queue/cli.sel")
	require.Equal(t, 0, r.Code, r.Stderr)
	assert.Equal(t, "two\n", r.Stdout)
}

// TestCLIDurable: consume --durable --client-id keeps what is published while it is
// not running.
func TestCLIDurable(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	url := "--url=stomp://" + b.Addr
	sub := []string{"consume", url, "--durable", "audit", "--client-id", "cli-tool", "--timeout", "300ms", "/topic/cli.events"}
	r := runCLI(t, "", nil, sub...)
	require.Equal(t, 0, r.Code, r.Stderr)
	cliOK(t, "", "send", url, "--persistent", "/topic/cli.events", "while away")
	assert.Equal(t, "while away\n", cliOK(t, "", append(sub, "--count", "1")...))
}

// TestCLIRefused: a refused login and a refused SEND (without a receipt, whose ERROR
// go-stomp's client would drop) exit with status 1 and the broker's message, and never
// show the password.
func TestCLIRefused(t *testing.T) {
	b := startSecBroker(t, secBroker{})
	pw := secPasswords()
	as := func(user, pass string) string { return "--url=stomp://" + user + ":" + pass + "@" + b.Addr }

	r := runCLI(t, "", nil, "send", as("user", "wrong-"+pw["user"]), "/queue/USERS.cli", "x")
	assert.Equal(t, 1, r.Code)
	assert.Contains(t, r.Stderr, "broker: send /queue/USERS.cli: connect stomp://user:xxxxx@"+b.Addr+": broker refused: User name [user] or password is invalid.")
	assert.NotContains(t, r.Stderr, pw["user"])

	r = runCLI(t, "", nil, "send", as("user", pw["user"]), "/queue/cli.denied", "x")
	assert.Equal(t, 1, r.Code)
	assert.Equal(t, "broker: send /queue/cli.denied: broker refused: User user is not authorized to write to: queue://cli.denied\n", r.Stderr)

	r = runCLI(t, "", nil, "send", as("user", pw["user"]), "--persistent", "--count", "3", "/queue/cli.denied", "x")
	assert.Equal(t, 1, r.Code)
	assert.Contains(t, r.Stderr, "broker refused: User user is not authorized to write to: queue://cli.denied (0 of 3 receipted)")

	r = runCLI(t, "", nil, "consume", as("user", pw["user"]), "--count", "1", "/queue/cli.denied")
	assert.Equal(t, 1, r.Code)
	assert.Contains(t, r.Stderr, "User user is not authorized to read from: queue://cli.denied")

	cliOK(t, "", "send", as("user", pw["user"]), "/queue/USERS.cli", "allowed")
	assert.Equal(t, "allowed\n", cliOK(t, "", "consume", as("user", pw["user"]), "--count", "1", "/queue/USERS.cli"))
}

// TestCLIWebSocket: send and consume over ws://, with a body of several WebSocket
// frames' worth and one that is not UTF-8 (which the broker sends as a binary message).
func TestCLIWebSocket(t *testing.T) {
	p := startConnectors(t, "", "stomp", "stomp://127.0.0.1:0", "ws", "ws://127.0.0.1:0")
	url := "--url=ws://" + p.connectorAddr("ws") + "/stomp"
	big := strings.Repeat("0123456789abcdef", 8192) // 128 KiB
	binary := string([]byte{0xff, 0x00, 0xfe, 'x', 0x80})
	cliOK(t, big, "send", url, "--persistent", "/queue/cli.ws")
	cliOK(t, binary, "send", url, "/queue/cli.ws")
	ms := parseCLIMessages(t, cliOK(t, "", "consume", url, "--json", "--count", "2", "/queue/cli.ws"))
	require.Len(t, ms, 2)
	require.NotNil(t, ms[0].Body)
	assert.Equal(t, big, *ms[0].Body)
	assert.Nil(t, ms[1].Body)
	raw, err := base64.StdEncoding.DecodeString(ms[1].BodyBase64)
	require.NoError(t, err)
	assert.Equal(t, binary, string(raw))

	// Across transports: sent over WebSocket, browsed over TCP.
	cliOK(t, "", "send", url, "/queue/cli.cross", "crossed")
	assert.Equal(t, "crossed\n", cliOK(t, "", "browse", "--url=stomp://"+p.connectorAddr("stomp"), "/queue/cli.cross"))
}

// TestCLITLS: stomp+ssl:// and wss:// with the test CA (--ca-file); without it the
// broker's certificate is refused.
func TestCLITLS(t *testing.T) {
	pki := newTestPKI(t)
	p := startConnectors(t, pki.sslContextYAML(false),
		"stomp", "stomp://127.0.0.1:0", "stomp+ssl", "stomp+ssl://127.0.0.1:0", "wss", "wss://127.0.0.1:0")
	ssl := "--url=stomp+ssl://" + p.connectorAddr("stomp+ssl")
	wss := "--url=wss://" + p.connectorAddr("wss") + "/"
	ca := "--ca-file=" + pki.CAFile

	cliOK(t, "", "send", ssl, ca, "--persistent", "/queue/cli.tls", "over tls")
	cliOK(t, "", "send", wss, ca, "/queue/cli.tls", "over wss")
	assert.Equal(t, "over tls\nover wss\n", cliOK(t, "", "consume", wss, ca, "--count", "2", "/queue/cli.tls"))

	r := runCLI(t, "", nil, "send", ssl, "/queue/cli.tls", "x")
	assert.Equal(t, 1, r.Code)
	assert.Contains(t, r.Stderr, "broker: send /queue/cli.tls: connect stomp+ssl://"+p.connectorAddr("stomp+ssl")+": tls: failed to verify certificate")
	r = runCLI(t, "", nil, "send", ssl, "--insecure-skip-verify", "/queue/cli.tls", "unverified")
	assert.Equal(t, 0, r.Code, r.Stderr)

	// migrate's source over TLS: --from-ca-file.
	from := "--from=stomp+ssl://" + p.connectorAddr("stomp+ssl")
	target := startBroker(t, brokerConfig{})
	to := "--to=stomp://" + target.Addr
	r = runCLI(t, "", nil, "migrate", from, to, "--queue", "cli.tls", "--idle", "300ms", "--progress", "0")
	assert.Equal(t, 1, r.Code)
	assert.Contains(t, r.Stderr, "tls: failed to verify certificate")
	r = runCLI(t, "", nil, "migrate", from, to, "--to-ca-file="+pki.CAFile, "--queue", "cli.tls")
	assert.Equal(t, 2, r.Code, "a --to-... TLS flag with a plain --to URL is a usage error")
	assert.Contains(t, r.Stderr, "--to-ca-file, --to-cert-file, --to-key-file and --to-insecure-skip-verify need a stomp+ssl:// or wss:// URL")
	cliOK(t, "", "migrate", from, "--from-ca-file="+pki.CAFile, to, "--queue", "cli.tls", "--idle", "300ms", "--progress", "0")
	assert.Equal(t, "unverified\n", cliOK(t, "", "consume", "--url=stomp://"+target.Addr, "--count", "1", "/queue/cli.tls"))
}
