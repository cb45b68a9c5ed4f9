package stomp

import (
	"bytes"
	"context"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/persistence/memstore"
	"github.com/activemq-go/broker/security"
)

// FuzzConnectCredentials drives a session through CONNECT frames whose login and
// passcode headers are anything at all (long, NUL, CR, LF, colons, escapes, UTF-8):
// the broker answers CONNECTED for the right credentials only, an ERROR otherwise,
// never echoes the passcode, and never panics.
func FuzzConnectCredentials(f *testing.F) {
	for _, seed := range [][2]string{
		{"app", "secret"}, {"app", "wrong"}, {"", ""}, {"app", ""},
		{"a\x00b", "x"}, {"app\r", "secret\r"}, {"ünï", "çødé"}, {"app\\c", "s\\n"},
		{string(bytes.Repeat([]byte("L"), 5000)), "p"}, {"${X}", "${Y}"},
	} {
		f.Add(seed[0], seed[1], true)
		f.Add(seed[0], seed[1], false)
	}
	sec, err := security.New(security.Config{
		Users:           []security.User{{Name: "app", Password: "secret", Groups: []string{"users"}}},
		FailureDelay:    time.Microsecond,
		MaxFailureDelay: time.Microsecond,
	}, nil)
	if err != nil {
		f.Fatal(err)
	}
	b, err := broker.New(context.Background(), broker.Options{Name: "t", Store: memstore.New(), Security: sec})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = b.Close() })
	f.Fuzz(func(t *testing.T, login, passcode string, v12 bool) {
		version := "1.2"
		if !v12 {
			version = "1.0"
		}
		var in bytes.Buffer
		in.WriteString("CONNECT\naccept-version:" + version + "\nhost:x\nlogin:" + login + "\npasscode:" + passcode + "\n\n\x00")
		out := runSession(t, b, in.Bytes())
		wellFormed := !bytes.ContainsAny([]byte(login+passcode), "\x00\r\n:\\")
		switch {
		case bytes.HasPrefix(out, []byte("CONNECTED\n")):
			if login != "app" || passcode != "secret" {
				// Only a header the frame codec reads differently (an escape in
				// 1.2) may log in with different bytes; it must still be the
				// right credentials once decoded.
				if wellFormed {
					t.Fatalf("CONNECTED for login %q passcode %q", login, passcode)
				}
			}
		case bytes.HasPrefix(out, []byte("ERROR\n")):
			if login == "app" && passcode == "secret" {
				t.Fatalf("the right credentials were refused: %q", out)
			}
			// What is left once the expected text and the frame's fixed parts are
			// taken out must not hold the passcode.
			rest := bytes.ReplaceAll(out, []byte(security.FailureMessage(login)), nil)
			rest = fixedParts.ReplaceAll(rest, nil)
			if len(passcode) >= 4 && wellFormed && !strings.Contains(security.FailureMessage(login), passcode) && bytes.Contains(rest, []byte(passcode)) {
				t.Fatalf("the ERROR echoes the passcode: %q", out)
			}
		default:
			t.Fatalf("no CONNECTED or ERROR frame: %q", out)
		}
	})
}

// fixedParts are the ERROR frame's parts that do not come from the client.
var fixedParts = regexp.MustCompile(`(?m)^(ERROR|content-type:text/plain|content-length:[0-9]+|message:)$`)

// runSession serves one connection that writes in and reads until the session ends
// or answers; it returns what the session wrote.
func runSession(t *testing.T, b *broker.Broker, in []byte) []byte {
	server, client := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(ctx, server, b, Config{})
	}()
	go func() { _, _ = client.Write(in) }()
	var out bytes.Buffer
	buf := make([]byte, 4096)
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		n, err := client.Read(buf)
		out.Write(buf[:n])
		if i := bytes.IndexByte(out.Bytes(), 0); i >= 0 {
			break
		}
		if err != nil {
			if err != io.EOF {
				t.Fatalf("reading the answer: %v (so far %q)", err, out.Bytes())
			}
			break
		}
	}
	_ = client.Close()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end")
	}
	return out.Bytes()
}
