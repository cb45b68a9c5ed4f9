package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneLogger fails when code outside cmd logs around the logger it is given: through
// slog.Default() (whose handler, until cmd sets it, is the standard log package's
// format at a fixed level) or through the standard log package itself. Every package
// takes a *slog.Logger in its options; nil means no logging.
func TestOneLogger(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "cmd" || rel == "testdata" || strings.HasSuffix(rel, string(filepath.Separator)+"testdata") ||
				(rel != "." && strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		checked++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		slogName := ""
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			switch p {
			case "log":
				t.Errorf("%s imports the standard log package; log through the *slog.Logger in its options", rel)
			case "log/slog":
				slogName = "slog"
				if imp.Name != nil {
					slogName = imp.Name.Name
				}
			}
		}
		if slogName == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Default" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == slogName {
				t.Errorf("%s uses slog.Default(); log through the *slog.Logger in its options (nil: slog.DiscardHandler)", rel)
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, checked, 50, "too few files checked; the walk looks wrong")
}

// TestLogFormatJSON runs the broker with --log-format json over the journal and checks
// that every line it writes, from start to exit (the store's own included), is one JSON
// object at the level asked for: no line in the standard log package's format, none
// from a component that ignores --log-level; a duration is a string with its unit.
func TestLogFormatJSON(t *testing.T) {
	run := func(t *testing.T, level string) []map[string]any {
		// A fixed port: below info the broker does not log where it listens.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		dir := t.TempDir()
		path := filepath.Join(dir, "broker.yaml")
		require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf("broker:\n  dataDirectory: %s\n  adminAddress: \"\"\n"+
			"persistenceAdapter:\n  kahaDB: {journalMaxFileLength: 64kb}\n"+
			"transportConnectors:\n  - name: stomp\n    uri: stomp://%s\n", dir, addr)), 0o644))

		cmd := exec.Command(brokerBin, "serve", "--config", path, "--log-format", "json", "--log-level", level)
		var out logOutput
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		exited := make(chan struct{})
		var exitErr error
		go func() { exitErr = cmd.Wait(); close(exited) }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })

		var c *stomp.Conn
		eventually(t, 20*time.Second, "the broker accepting connections", func() bool {
			select {
			case <-exited:
				t.Fatalf("broker exited: %v\n%s", exitErr, out.String())
			default:
			}
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				return false
			}
			c, err = stomp.Connect(nc, stomp.ConnOpt.Logger(quietLogger{}))
			if err != nil {
				_ = nc.Close()
			}
			return err == nil
		})
		// Persistent messages past the 64 KiB segment size: the journal rolls a segment,
		// which it logs at debug level.
		body := make([]byte, 40<<10)
		for i := 0; i < 3; i++ {
			require.NoError(t, c.Send("/queue/logs", "text/plain", body, stomp.SendOpt.Receipt, stomp.SendOpt.Header("persistent", "true")))
		}
		sub, err := c.Subscribe("/queue/logs", stomp.AckClientIndividual)
		require.NoError(t, err)
		for i := 0; i < 3; i++ {
			m := <-sub.C
			require.NoError(t, m.Err)
			require.NoError(t, c.Ack(m))
		}
		require.NoError(t, c.Disconnect())

		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		select {
		case <-exited:
			require.NoError(t, exitErr, "exit after SIGTERM\n%s", out.String())
		case <-time.After(20 * time.Second):
			t.Fatalf("broker did not exit after SIGTERM\n%s", out.String())
		}

		var lines []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if l == "" {
				continue
			}
			var obj map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &obj), "a line that is not JSON: %q\nall:\n%s", l, out.String())
			lines = append(lines, obj)
		}
		return lines
	}

	t.Run("debug", func(t *testing.T) {
		lines := run(t, "debug")
		var msgs []string
		for _, l := range lines {
			msgs = append(msgs, fmt.Sprint(l["msg"]))
		}
		assert.Contains(t, msgs, "journal: opened", "the store logs through the broker's logger")
		assert.Contains(t, msgs, "journal: new segment", "the store's debug lines at --log-level debug")
		assert.Contains(t, msgs, "broker stopped")
		// Durations are strings with their unit ("1.5ms"), as in the text format, not
		// bare nanoseconds (issue 25).
		var durations int
		for _, l := range lines {
			for _, k := range []string{"took", "waited", "in", "timeout", "offlineFor", "keepAlive"} {
				if v, ok := l[k]; ok {
					s, isString := v.(string)
					_, err := time.ParseDuration(s)
					assert.True(t, isString && err == nil, "%s of %q is %v, not a duration with its unit", k, l["msg"], v)
					durations++
				}
			}
		}
		assert.Positive(t, durations, "journal: opened logs how long it took")
	})
	for level, allowed := range map[string][]string{"warn": {"WARN", "ERROR"}, "error": {"ERROR"}} {
		t.Run(level, func(t *testing.T) {
			for _, l := range run(t, level) {
				assert.Contains(t, allowed, l["level"], "a line below --log-level %s: %v", level, l)
			}
		})
	}
}

// logOutput collects a process's output while the test may read it.
type logOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logOutput) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logOutput) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
