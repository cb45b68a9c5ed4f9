package openwire

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// javaJars are the 5.17 client and what it needs, as Debian's activemq package installs them.
var javaJars = []string{
	"activemq-client.jar", "activemq-openwire-legacy.jar", "geronimo-jms_1.1_spec.jar", "hawtbuf.jar",
	"slf4j-api.jar", "geronimo-j2ee-management-1.1-spec.jar",
}

// javaClasspath returns the classpath of the real ActiveMQ client. A machine without java
// or the jars fails the test: CI installs them (openjdk-17-jdk-headless, activemq).
func javaClasspath(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatalf("java is not installed (apt-get install openjdk-17-jdk-headless): %v", err)
	}
	var cp []string
	for _, j := range javaJars {
		p := filepath.Join("/usr/share/java", j)
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing (apt-get install activemq): %v", p, err)
		}
		cp = append(cp, p)
	}
	return strings.Join(cp, ":")
}

// runJava runs a single-file Java program from testdata with the client on the classpath.
func runJava(ctx context.Context, t testing.TB, program string, args ...string) *exec.Cmd {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("testdata", program))
	require.NoError(t, err)
	return exec.CommandContext(ctx, "java", append([]string{"-cp", javaClasspath(t), src}, args...)...)
}

// normalize makes a command comparable across implementations: fields the version or
// the stack-trace option leave off the wire are cleared, and message bodies and properties
// are decoded and re-encoded (deflate output and map order differ between Java and Go).
func normalize(t testing.TB, c Command, cfg testConfig) Command {
	t.Helper()
	trim := func(x *Throwable) *Throwable {
		if x == nil || cfg.st {
			return x
		}
		return &Throwable{Class: x.Class, Message: x.Message}
	}
	var msg func(m *Message)
	msg = func(m *Message) {
		if m == nil {
			return
		}
		if cfg.version < 10 {
			m.JMSXGroupFirstForConsumer = false
			if m.MessageID != nil {
				m.MessageID.TextView = ""
			}
		}
		body, err := m.Body()
		require.NoError(t, err)
		if m.Type == TypeMapMessage {
			mb, err := m.MapBody()
			require.NoError(t, err)
			body, err = appendPrimitiveMap(nil, mb)
			require.NoError(t, err)
		}
		m.Content = body
		props, err := m.Properties()
		require.NoError(t, err)
		require.NoError(t, m.SetProperties(props))
	}
	switch v := c.(type) {
	case *ConnectionInfo:
		if cfg.version < 8 {
			v.ClientIP = ""
		}
	case *ConnectionControl:
		if cfg.version < 8 {
			v.Token = nil
		}
	case *ConsumerInfo:
		if cfg.version < 10 {
			v.ClientID = ""
		}
	case *MessagePull:
		if cfg.version < 10 && v.MessageID != nil {
			v.MessageID.TextView = ""
		}
	case *MessageAck:
		v.PoisonCause = trim(v.PoisonCause)
		if cfg.version < 7 {
			v.PoisonCause = nil
		}
	case *ConnectionError:
		v.Exception = trim(v.Exception)
	case *ExceptionResponse:
		v.Exception = trim(v.Exception)
	case *MessageDispatch:
		msg(v.Message)
	case *Message:
		msg(v)
	}
	return c
}

// stringForms prints what Interop.java's writeStrings prints, with the Go types.
func stringForms() []string {
	text := msgID(7)
	text.TextView = "custom-7"
	uid := make([]byte, 28)
	for i := range uid {
		uid[i] = byte(i * 37)
	}
	arjuna := &XATransactionID{FormatID: 131077, GlobalTransactionID: uid, BranchQualifier: uid[:20]}
	return []string{
		connID().String(), sessID().String(), consID().String(), prodID().String(), msgID(7).String(),
		text.String(), localTx().String(), xaTx().String(), arjuna.String(), BrokerID{Value: "ID:broker-1"}.String(),
		queue().String(), topic().String(), tempQueue().String(), tempTopic().String(),
		Destination{Type: TypeQueue, Name: "a,b"}.String(),
	}
}

func encodeAll(t testing.TB, cfg testConfig, cmds []Command) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, cfg.format())
	for _, c := range cmds {
		require.NoError(t, w.Write(c), "%T", c)
	}
	return buf.Bytes()
}

// checkDecodes decodes every command of corpus from r and compares it with the expected one.
func checkDecodes(t *testing.T, cfg testConfig, r io.Reader) {
	t.Helper()
	rd := NewReader(r, cfg.format())
	for i, want := range corpus() {
		got, err := rd.Read()
		require.NoError(t, err, "command %d (%T)", i, want)
		assert.Equal(t, normalize(t, want, cfg), normalize(t, got, cfg), "command %d", i)
	}
	_, err := rd.Read()
	assert.ErrorIs(t, err, io.EOF)
}

// TestJavaInterop checks both directions against ActiveMQ's OpenWireFormat, for versions
// 12, 10, 9, 7 and 6, tight and loose, cache on and off, stack traces on and off: Go decodes
// the frames Java marshalled to the values Java was given, and Java decodes the frames Go
// wrote to the same objects (dumped field by field) as its own frames.
func TestJavaInterop(t *testing.T) {
	dir := t.TempDir()
	var names []string
	for _, cfg := range testConfigs() {
		names = append(names, cfg.String())
		require.NoError(t, os.WriteFile(filepath.Join(dir, "go-"+cfg.String()+".bin"), encodeAll(t, cfg, corpus()), 0o644))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := runJava(ctx, t, "Interop.java", append([]string{dir}, names...)...).CombinedOutput()
	require.NoError(t, err, "Interop.java: %s", out)

	t.Run("String forms", func(t *testing.T) {
		javaStrings, err := os.ReadFile(filepath.Join(dir, "strings.txt"))
		require.NoError(t, err)
		assert.Equal(t, strings.Split(strings.TrimSuffix(string(javaStrings), "\n"), "\n"), stringForms())
	})
	for _, cfg := range testConfigs() {
		t.Run(cfg.String(), func(t *testing.T) {
			javaBytes, err := os.ReadFile(filepath.Join(dir, "java-"+cfg.String()+".bin"))
			require.NoError(t, err)
			checkDecodes(t, cfg, bytes.NewReader(javaBytes))

			dump, err := os.ReadFile(filepath.Join(dir, "dump-"+cfg.String()+".txt"))
			require.NoError(t, err)
			javaView, goView := map[string]string{}, map[string]string{}
			sc := bufio.NewScanner(bytes.NewReader(dump))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				key, line, _ := strings.Cut(sc.Text(), " ")
				if strings.HasPrefix(key, "J") {
					javaView[key[1:]] = line
				} else {
					goView[key[1:]] = line
				}
			}
			require.NoError(t, sc.Err())
			require.Len(t, javaView, len(corpus()))
			assert.Equal(t, javaView, goView, "ActiveMQ's view of Go's frames differs from its view of its own")
		})
	}
}
