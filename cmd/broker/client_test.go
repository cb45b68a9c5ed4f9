package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCLI runs the broker command with args and returns its stdout, stderr and exit
// status.
func runCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		fmt.Fprintln(&errOut, "broker:", err)
	}
	return out.String(), errOut.String(), exitCode(err)
}

// closedPort is a URL where nothing listens: a command that gets past its usage checks
// fails to connect there (exit status 1), so status 2 shows the check refused first.
const closedPort = "stomp://127.0.0.1:1"

// TestClientUsageErrors: bad flags and arguments exit with status 2 and say what is
// wrong, before anything is attempted.
func TestClientUsageErrors(t *testing.T) {
	t.Setenv(envStompURL, "")
	t.Setenv(envAdminURL, "")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"send"}, "accepts between 1 and 2 arg(s)"},
		{[]string{"send", "--url", closedPort, "/queue/x", "a", "b"}, "accepts between 1 and 2 arg(s)"},
		{[]string{"send", "--url", closedPort, "orders", "x"}, `destination "orders": write /queue/NAME or /topic/NAME`},
		{[]string{"send", "--url", closedPort, "--count", "0", "/queue/x", "x"}, "--count 0: send at least 1"},
		{[]string{"send", "--url", closedPort, "--header", "novalue", "/queue/x", "x"}, `--header "novalue": write name=value`},
		{[]string{"send", "--url", closedPort, "--header", "=v", "/queue/x", "x"}, "write name=value"},
		{[]string{"send", "--url", closedPort, "--header", "receipt=1", "/queue/x", "x"}, "the command sets receipt itself"},
		{[]string{"send", "--url", closedPort, "--count", "x", "/queue/x", "x"}, `invalid argument "x" for "--count"`},
		{[]string{"send", "--nope", "/queue/x"}, "unknown flag: --nope"},
		{[]string{"send", "--url", "tcp://h:61616", "/queue/x", "x"}, `scheme "tcp"`},
		{[]string{"send", "--url", closedPort, "--ca-file", "ca.pem", "/queue/x", "x"}, "need a stomp+ssl:// or wss:// URL"},
		{[]string{"send", "--url", "stomp+ssl://127.0.0.1:1", "--ca-file", "/nonexistent/ca.pem", "/queue/x", "x"}, "--ca-file: open /nonexistent/ca.pem"},
		{[]string{"send", "--url", "stomp+ssl://127.0.0.1:1", "--cert-file", "c.pem", "/queue/x", "x"}, "--cert-file and --key-file go together"},
		{[]string{"consume", "--url", closedPort}, "accepts 1 arg(s), received 0"},
		{[]string{"consume", "--url", closedPort, "--ack", "manual", "/queue/x"}, `--ack "manual": auto, client or client-individual`},
		{[]string{"consume", "--url", closedPort, "--count", "-1", "/queue/x"}, "--count -1"},
		{[]string{"consume", "--url", closedPort, "--timeout", "-1s", "/queue/x"}, "--timeout -1s"},
		{[]string{"consume", "--url", closedPort, "--durable", "d", "/topic/x"}, "--durable d needs --client-id"},
		{[]string{"consume", "--url", closedPort, "--durable", "d", "--client-id", "c", "/queue/x"}, "/queue/x is not a topic"},
		{[]string{"consume", "--url", closedPort, "--header", "ack=auto", "/queue/x"}, "the command sets ack itself"},
		{[]string{"browse", "--url", closedPort, "/topic/x"}, "only a queue can be browsed"},
		{[]string{"browse", "--url", closedPort, "--limit", "-2", "/queue/x"}, "--limit -2"},
		{[]string{"list", "extra"}, `unknown command "extra" for "broker list"`},
		{[]string{"list", "--type", "exchange"}, `--type "exchange": queue, topic or stream`},
		{[]string{"list", "--admin", "ftp://h"}, `--admin "ftp://h": write http://host:port`},
		{[]string{"list", "--admin", "http://u:hunter2@/x"}, "no host"},
		{[]string{"purge", "/topic/x"}, "purge /topic/x: only a queue can be purged"},
		{[]string{"purge", "/temp-queue/x"}, `destination "/temp-queue/x"`},
		{[]string{"move", "/queue/DLQ"}, "--to is required"},
		{[]string{"move", "/queue/a", "--to", "a"}, "--to is the same queue"},
		{[]string{"move", "/queue/a", "--to", "x://y"}, `--to "x://y"`},
		{[]string{"move", "/queue/a", "--to", "b", "--limit", "-1"}, "--limit -1"},
		{[]string{"move", "/topic/a", "--to", "b"}, "only a queue can be moved"},
		{[]string{"stat", "a", "b"}, "accepts at most 1 arg(s)"},
		{[]string{"nosuchcommand"}, `unknown command "nosuchcommand" for "broker"`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, stderr, code := runCLI(t, "", tt.args...)
			assert.Equal(t, exitUsage, code, stderr)
			assert.Contains(t, stderr, tt.want)
			assert.NotContains(t, stderr, "hunter2")
		})
	}
}

// TestClientConnectFailure: a broker that cannot be reached is a failure (status 1)
// that names what failed.
func TestClientConnectFailure(t *testing.T) {
	_, stderr, code := runCLI(t, "", "send", "--url", "stomp://u:hunter2@127.0.0.1:1", "/queue/x", "body")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "send /queue/x: connect stomp://u:xxxxx@127.0.0.1:1: dial tcp 127.0.0.1:1")
	assert.NotContains(t, stderr, "hunter2")
}

func TestStompDestination(t *testing.T) {
	for in, want := range map[string]string{
		"/queue/a":          "/queue/a",
		"/topic/a.b":        "/topic/a.b",
		"/temp-queue/x":     "/temp-queue/x",
		"/queue/a,/topic/c": "/queue/a,/topic/c",
		"queue://orders":    "/queue/orders",
		"topic://prices":    "/topic/prices",
	} {
		got, err := stompDestination(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for _, in := range []string{"", "/", "orders", "queue://", "http://x", "/queues/orders", "/queue/a,/b/c"} {
		_, err := stompDestination(in)
		assert.Equal(t, exitUsage, exitCode(err), in)
	}
}

func TestParseHeaders(t *testing.T) {
	h, err := parseHeaders("header", []string{"a=1", "b=x=y", "a=2", "empty="}, "receipt")
	require.NoError(t, err)
	require.Equal(t, 4, h.Len())
	assert.Equal(t, []string{"1", "2"}, h.GetAll("a"))
	assert.Equal(t, "x=y", h.Get("b"))
	v, ok := h.Contains("empty")
	assert.True(t, ok)
	assert.Empty(t, v)
}

// TestStompFlagsTarget: $BROKER_URL applies when --url is not given; the TLS flags
// build the client's TLS configuration.
func TestStompFlagsTarget(t *testing.T) {
	t.Setenv(envStompURL, "stomp://env:pw@mq:1234")
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var o stompFlags
	o.register(fs)
	require.NoError(t, fs.Parse(nil))
	u, opts, err := o.target(fs)
	require.NoError(t, err)
	assert.Equal(t, "stomp://env:xxxxx@mq:1234", u.String())
	assert.Nil(t, opts.TLS)

	t.Setenv(envStompURL, "")
	u, _, err = o.target(fs)
	require.NoError(t, err)
	assert.Equal(t, defaultStompURL, u.String())

	ca, cert, key := writeTestCert(t)
	fs = pflag.NewFlagSet("t", pflag.ContinueOnError)
	o = stompFlags{}
	o.register(fs)
	require.NoError(t, fs.Parse([]string{"--url", "wss://mq/ws", "--ca-file", ca, "--cert-file", cert, "--key-file", key}))
	u, opts, err = o.target(fs)
	require.NoError(t, err)
	assert.True(t, u.TLS())
	require.NotNil(t, opts.TLS)
	assert.NotNil(t, opts.TLS.RootCAs)
	assert.Len(t, opts.TLS.Certificates, 1)
	assert.False(t, opts.TLS.InsecureSkipVerify)

	// A file without a PEM certificate is refused.
	require.NoError(t, fs.Set("ca-file", key))
	_, _, err = o.target(fs)
	assert.Equal(t, exitUsage, exitCode(err))
	assert.ErrorContains(t, err, "no PEM certificate")
}

// writeTestCert writes a self-signed certificate and its key as PEM files and returns
// the paths of the certificate (twice: as a CA and as the client's) and the key.
func writeTestCert(t *testing.T) (ca, cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	dir := t.TempDir()
	cert = filepath.Join(dir, "cert.pem")
	key = filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600))
	return cert, cert, key
}

func TestExitCode(t *testing.T) {
	assert.Equal(t, exitOK, exitCode(nil))
	assert.Equal(t, exitFailed, exitCode(errors.New("x")))
	assert.Equal(t, exitUsage, exitCode(fmt.Errorf("wrapped: %w", usagef("bad"))))
	assert.Equal(t, exitTimedOut, exitCode(fmt.Errorf("consume: %w", errTimedOut)))
	assert.Equal(t, exitInterrupted, exitCode(fmt.Errorf("send: %w", context.Canceled)))
	assert.Equal(t, exitInterrupted, exitCode(fmt.Errorf("send: %w", errInterrupted)))
}

// TestConsumeSubscription: in the client modes consume asks for no more than --count
// messages at a time; auto and an explicit --prefetch are left alone.
func TestConsumeSubscription(t *testing.T) {
	for _, tt := range []struct {
		o    consumeOptions
		want int
	}{
		{consumeOptions{ack: ackClientIndividual, count: 5}, 5},
		{consumeOptions{ack: ackClient, count: 5000}, defaultConsumePrefetch},
		{consumeOptions{ack: ackClientIndividual}, 0},
		{consumeOptions{ack: ackAuto, count: 5}, 0},
		{consumeOptions{ack: ackClientIndividual, count: 5, prefetch: 50}, 50},
	} {
		assert.Equal(t, tt.want, tt.o.subscription("/queue/x", nil).Prefetch, "%+v", tt.o)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 12345: "12,345",
		1234567: "1,234,567", -1234: "-1,234"} {
		assert.Equal(t, want, thousands(n))
	}
	assert.Equal(t, "8,000", rate(16000, 2*time.Second))
	assert.Equal(t, "0", rate(5, 0))
}

// TestProgressLines: without a terminal, progress is a line per interval with the
// count, the total and the rate since the previous line, none while the count stands
// still, and a last line with the average when any was written.
func TestProgressLines(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(progressOptions{out: &buf, interval: time.Hour, bar: true}, "sent", 50000)
	start := p.start
	p.line(start.Add(time.Second)) // nothing yet
	assert.Empty(t, buf.String())
	p.Add(12000)
	p.line(start.Add(2 * time.Second))
	p.line(start.Add(3 * time.Second)) // unchanged
	p.Add(8000)
	p.line(start.Add(4 * time.Second))
	assert.Equal(t, "sent 12,000 of 50,000 (6,000/s)\nsent 20,000 of 50,000 (4,000/s)\n", buf.String())
	p.Done()
	assert.Regexp(t, `\nsent 20,000 in [0-9.]+m?s \([0-9,]+/s\)\n$`, buf.String())
	p.Done() // once only
	assert.Equal(t, 3, strings.Count(buf.String(), "\n"))

	// Unknown total; nothing at all when the work ends before the first line.
	buf.Reset()
	p = newProgress(progressOptions{out: &buf, interval: time.Hour}, "received", 0)
	p.Add(3)
	p.line(p.start.Add(time.Second))
	assert.Equal(t, "received 3 (3/s)\n", buf.String())
	buf.Reset()
	p = newProgress(progressOptions{out: &buf, interval: time.Hour}, "received", 10)
	p.Add(10)
	p.Done()
	assert.Empty(t, buf.String())
	assert.Equal(t, int64(10), p.Count())

	// Interval 0: no progress.
	p = newProgress(progressOptions{out: &buf}, "sent", 10)
	p.Add(1)
	p.Done()
	assert.Empty(t, buf.String())
}
