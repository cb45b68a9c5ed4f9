// Package tests holds the black-box end-to-end tests: they build the real broker binary,
// start it on 127.0.0.1:0 with a configuration written for the test, and drive it with
// real STOMP clients over real sockets (go-stomp, raw frames, and stomp.py).
//
// The binary is built with the race detector (set E2E_RACE=0 for a plain build, e.g. to
// time the suite without it), and a data race that any broker process reports fails the
// test that started the process, with the report in the failure output.
package tests

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/pgtest"
	"github.com/activemq-go/broker/internal/race"
	"github.com/activemq-go/broker/internal/stompcodec"
)

var brokerBin string

// raceBuild: the broker binary is built with -race (unless E2E_RACE=0).
var raceBuild = os.Getenv("E2E_RACE") != "0"

// raceScaled returns d, longer when the broker or the tests run under the race
// detector: for the deadlines that bound a wait.
func raceScaled(d time.Duration) time.Duration {
	if raceBuild || race.Enabled {
		return d * race.Factor
	}
	return d
}

// plainBin is the broker built without -race, for the tests that measure the broker's
// memory (which the race detector multiplies); built on first use (plainBrokerBin).
var plainBin struct {
	once sync.Once
	path string
	err  error
}

// plainBrokerBin returns the path of the broker built without -race.
func plainBrokerBin(t testing.TB) string {
	t.Helper()
	if !raceBuild {
		return brokerBin
	}
	plainBin.once.Do(func() {
		plainBin.path = filepath.Join(filepath.Dir(brokerBin), "broker-plain")
		out, err := exec.Command("go", "build", "-o", plainBin.path, "../cmd/broker").CombinedOutput()
		if err != nil {
			plainBin.err = fmt.Errorf("building the broker without -race: %w\n%s", err, out)
		}
	})
	require.NoError(t, plainBin.err)
	return plainBin.path
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "broker-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	brokerBin = filepath.Join(dir, "broker")
	args := []string{"build", "-o", brokerBin}
	if raceBuild {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "../cmd/broker")...)
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the broker:", err)
		os.Exit(2)
	}
	// Every race-built program the tests start (brokers, the CLI, the load tool) would
	// sleep a second before it exits (GORACE atexit_sleep_ms, 1000 by default): over the
	// hundreds of brokers stopped here that is minutes. Races are still reported, and
	// still fail the test (checkRaces), as they happen.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	if err := os.Setenv("GORACE", gorace); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// pgtest.Run: the PostgreSQL server of pgtest.Shared (the jdbc tests') is started on
	// first use and stopped, with its data, when the tests end.
	code := pgtest.Run(m)
	runExitHooks()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// exitHooks are run by TestMain when the tests end: what tests share and start on first
// use (sharedActiveMQ) registers its stop here.
var exitHooks struct {
	sync.Mutex
	fns []func()
}

// onExit registers f to run when the tests end.
func onExit(f func()) {
	exitHooks.Lock()
	defer exitHooks.Unlock()
	exitHooks.fns = append(exitHooks.fns, f)
}

func runExitHooks() {
	exitHooks.Lock()
	defer exitHooks.Unlock()
	for _, f := range exitHooks.fns {
		f()
	}
}

// brokerProc is one running broker process.
type brokerProc struct {
	t       testing.TB
	cmd     *exec.Cmd
	Addr    string
	DataDir string
	Config  string

	mu     sync.Mutex
	log    strings.Builder
	exited chan struct{}
	err    error
	addrCh chan string // the address of the "listening" line
	owCh   chan string // the address of an OpenWire connector's "listening" line
	owAddr string
}

// OpenWireAddr waits up to 30 s for the broker's OpenWire connector's "listening" line
// and returns its address.
func (p *brokerProc) OpenWireAddr() string {
	p.t.Helper()
	if p.owAddr != "" {
		return p.owAddr
	}
	select {
	case p.owAddr = <-p.owCh:
		return p.owAddr
	case <-p.exited:
		p.t.Fatalf("broker exited before listening: %v\n%s", p.err, p.Log())
	case <-time.After(30 * time.Second):
		p.t.Fatalf("no OpenWire connector listening within 30 s\n%s", p.Log())
	}
	return ""
}

// brokerConfig is what a test may change in the generated configuration.
type brokerConfig struct {
	URIQuery string // appended to stomp://127.0.0.1:0?
	Adapter  string // YAML of the persistenceAdapter block; default "memory: {}"
	DataDir  string // default a fresh temp dir
	Extra    string // more YAML appended at the end
	Env      []string
	// Plain runs the broker built without -race: only for a test that measures the
	// broker's memory use.
	Plain bool
}

var listenRE = regexp.MustCompile(`msg=listening connector=\S+ addr=(\S+) transport=(?:tcp|tls|ws|wss)\b`)

// openWireListenRE finds the address of an OpenWire connector in the log.
var openWireListenRE = regexp.MustCompile(`msg=listening connector=\S+ addr=(\S+) transport=openwire`)

// startBroker runs the real binary and waits until it listens. The broker is stopped with
// SIGTERM at the end of the test, which must make it exit 0.
func startBroker(t testing.TB, bc brokerConfig) *brokerProc {
	t.Helper()
	path := writeBrokerConfig(t, &bc)
	bin := brokerBin
	if bc.Plain {
		bin = plainBrokerBin(t)
	}
	p := spawnBrokerBin(t, bin, path, bc.DataDir, bc.Env...)
	if err := p.WaitListening(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeBrokerConfig writes the configuration file for bc, filling in its defaults, and
// returns its path.
func writeBrokerConfig(t testing.TB, bc *brokerConfig) string {
	t.Helper()
	if bc.DataDir == "" {
		bc.DataDir = t.TempDir()
	}
	if bc.Adapter == "" {
		bc.Adapter = "memory: {}"
	}
	uri := "stomp://127.0.0.1:0"
	if bc.URIQuery != "" {
		uri += "?" + bc.URIQuery
	}
	cfg := fmt.Sprintf("broker:\n  brokerName: e2e\n  dataDirectory: %s\npersistenceAdapter:\n  %s\ntransportConnectors:\n  - name: stomp\n    uri: %s\n%s",
		bc.DataDir, bc.Adapter, uri, bc.Extra)
	path := filepath.Join(t.TempDir(), "broker.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

func startBrokerFile(t testing.TB, path, dataDir string, env ...string) *brokerProc {
	t.Helper()
	p := spawnBrokerFile(t, path, dataDir, env...)
	if err := p.WaitListening(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	return p
}

// spawnBroker runs the real binary without waiting for it to listen: for a broker that
// waits as a standby for the store lock. It is stopped with SIGTERM at the end of the
// test, which must make it exit 0 unless it had exited already.
func spawnBroker(t testing.TB, bc brokerConfig) *brokerProc {
	t.Helper()
	path := writeBrokerConfig(t, &bc)
	return spawnBrokerFile(t, path, bc.DataDir, bc.Env...)
}

func spawnBrokerFile(t testing.TB, path, dataDir string, env ...string) *brokerProc {
	t.Helper()
	return spawnBrokerBin(t, brokerBin, path, dataDir, env...)
}

func spawnBrokerBin(t testing.TB, bin, path, dataDir string, env ...string) *brokerProc {
	t.Helper()
	p := &brokerProc{t: t, DataDir: dataDir, Config: path, exited: make(chan struct{}), addrCh: make(chan string, 1), owCh: make(chan string, 1)}
	p.cmd = exec.Command(bin, "serve", "--config", path)
	p.cmd.Env = append(os.Environ(), adminOff(t, path, env)...)
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			p.mu.Unlock()
			if m := listenRE.FindStringSubmatch(line); m != nil {
				select {
				case p.addrCh <- m[1]:
				default:
				}
			}
			if m := openWireListenRE.FindStringSubmatch(line); m != nil {
				select {
				case p.owCh <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.Stop()
		p.checkRaces()
	})
	return p
}

// adminOff returns env with the admin listener turned off (BROKER_BROKER_ADMINADDRESS
// empty) unless the test asks for it, in env or in the configuration file at path:
// the tests start many brokers at once, and each would take 127.0.0.1:8161.
func adminOff(t testing.TB, path string, env []string) []string {
	t.Helper()
	for _, kv := range env {
		name, _, _ := strings.Cut(strings.ToUpper(kv), "=")
		if name == "BROKER_BROKER_ADMINADDRESS" || name == "BROKER_BROKER_STATSADDRESS" {
			return env
		}
	}
	cfg, err := os.ReadFile(path)
	require.NoError(t, err)
	if lower := strings.ToLower(string(cfg)); strings.Contains(lower, "adminaddress") || strings.Contains(lower, "statsaddress") {
		return env
	}
	return append(env[:len(env):len(env)], "BROKER_BROKER_ADMINADDRESS=")
}

// checkRaces fails the test if the broker, now ended, reported a data race: the race
// detector writes each report to stderr, between lines of "=" signs.
func (p *brokerProc) checkRaces() {
	p.t.Helper()
	if reports := raceReports(p.Log()); len(reports) > 0 {
		p.t.Errorf("the broker reported %d data race(s):\n%s", len(reports), strings.Join(reports, "\n"))
	}
}

// raceExitCode is the status a race-built program exits with after it reported a race
// (GORACE exitcode, 66 by default).
const raceExitCode = 66

// raceReports returns the data race reports in a race-built program's output.
func raceReports(out string) []string {
	const sep = "=================="
	var reports []string
	for {
		i := strings.Index(out, "WARNING: DATA RACE")
		if i < 0 {
			return reports
		}
		end := strings.Index(out[i:], sep)
		if end < 0 {
			end = len(out) - i
		}
		reports = append(reports, out[i:i+end])
		out = out[i+end:]
	}
}

// WaitListening waits up to d for the broker's "listening" log line and sets Addr. A
// broker that exits first, or is still not listening after d (it is then killed), is
// an error.
func (p *brokerProc) WaitListening(d time.Duration) error {
	if p.Addr != "" {
		return nil
	}
	select {
	case p.Addr = <-p.addrCh:
		return nil
	case <-p.exited:
		return fmt.Errorf("broker exited before listening: %v\n%s", p.err, p.Log())
	case <-time.After(d):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("broker did not listen within %v\n%s", d, p.Log())
	}
}

// WaitExit waits up to d for the broker process to end by itself and returns its exit
// error (nil for status 0); it fails the test if the process is still running after d.
func (p *brokerProc) WaitExit(d time.Duration) error {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(d):
		p.t.Fatalf("broker still running after %v\n%s", d, p.Log())
		return nil
	}
}

// Exited reports whether the broker process has ended.
func (p *brokerProc) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Log returns what the broker wrote to stderr so far.
func (p *brokerProc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// Stop sends SIGTERM and requires a clean exit (status 0) within 15 s.
func (p *brokerProc) Stop() {
	p.t.Helper()
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		var ee *exec.ExitError
		if errors.As(p.err, &ee) && ee.ExitCode() == raceExitCode && len(raceReports(p.Log())) > 0 {
			return // the races fail the test (checkRaces), with the reports
		}
		if p.err != nil {
			p.t.Errorf("broker exit after SIGTERM: %v\n%s", p.err, p.Log())
		}
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		p.t.Errorf("broker did not exit within 15s of SIGTERM\n%s", p.Log())
	}
}

// Kill ends the broker with SIGKILL (a crash) and waits for it to be gone.
func (p *brokerProc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// dial connects a go-stomp client; it is disconnected at the end of the test.
func dial(t testing.TB, addr string, opts ...func(*stomp.Conn) error) *stomp.Conn {
	t.Helper()
	c, err := stomp.Dial("tcp", addr, append([]func(*stomp.Conn) error{stomp.ConnOpt.Logger(quietLogger{})}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.MustDisconnect() })
	return c
}

// rawConn speaks STOMP frame by frame, for tests of the protocol itself.
type rawConn struct {
	t  testing.TB
	nc net.Conn
	r  *stompcodec.Reader
	w  *stompcodec.Writer
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	return newRawConn(t, nc)
}

// newRawConn is a rawConn on nc (a TLS or WebSocket connection as well), closed at the
// end of the test.
func newRawConn(t testing.TB, nc net.Conn) *rawConn {
	t.Cleanup(func() { _ = nc.Close() })
	lim := stompcodec.DefaultLimits()
	lim.MaxFrameSize = 64 << 20
	return &rawConn{t: t, nc: nc, r: stompcodec.NewReader(nc, lim), w: stompcodec.NewWriter(nc, 0)}
}

// connect sends CONNECT with the given extra headers and returns CONNECTED (or ERROR).
func (c *rawConn) connect(headers ...string) *frame.Frame {
	c.t.Helper()
	h := append([]string{"accept-version", "1.2", "host", "localhost"}, headers...)
	c.send(frame.New("CONNECT", h...))
	f := c.read()
	if f.Command == "CONNECTED" {
		v := f.Header.Get("version")
		c.r.SetVersion(v)
		c.w.SetVersion(v)
	}
	return f
}

func (c *rawConn) send(f *frame.Frame) {
	c.t.Helper()
	require.NoError(c.t, c.w.WriteFrame(f))
	require.NoError(c.t, c.w.Flush())
}

func (c *rawConn) sendRaw(b string) {
	c.t.Helper()
	_, err := c.nc.Write([]byte(b))
	require.NoError(c.t, err)
}

// read returns the next frame, skipping heart-beats; it fails the test after 10 s.
func (c *rawConn) read() *frame.Frame {
	c.t.Helper()
	f, err := c.readWithin(10 * time.Second)
	require.NoError(c.t, err)
	return f
}

func (c *rawConn) readWithin(d time.Duration) (*frame.Frame, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	for {
		f, err := c.r.Read()
		if err != nil || f != nil {
			return f, err
		}
	}
}

// expectClosed requires the broker to close the connection within d.
func (c *rawConn) expectClosed(d time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		f, err := c.readWithin(time.Until(deadline))
		if err != nil {
			var ne net.Error
			if ok := asNetErr(err, &ne); ok && ne.Timeout() {
				c.t.Fatalf("connection still open after %v", d)
			}
			return
		}
		_ = f
	}
}

func asNetErr(err error, target *net.Error) bool {
	ne, ok := err.(net.Error)
	if ok {
		*target = ne
	}
	return ok
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// quietLogger keeps go-stomp from logging the expected "write channel closed" of every
// subscription when a test disconnects.
type quietLogger struct{}

func (quietLogger) Debugf(string, ...interface{})   {}
func (quietLogger) Infof(string, ...interface{})    {}
func (quietLogger) Warningf(string, ...interface{}) {}
func (quietLogger) Errorf(string, ...interface{})   {}
func (quietLogger) Debug(string)                    {}
func (quietLogger) Info(string)                     {}
func (quietLogger) Warning(string)                  {}
func (quietLogger) Error(string)                    {}

// jdbcAdapter returns the persistenceAdapter YAML of the jdbc adapter for the database
// of dsn (a pgtest DSN) on srv: a jdbc:postgresql: URL, with user and password as their
// own keys, quoted (the pgtest password holds ":@/?#"), and the given lease renewal
// period; extra adds more keys of the block ("lockAcquireSleepInterval: 200ms").
func jdbcAdapter(t testing.TB, srv *pgtest.Server, dsn string, keepAlive time.Duration, extra ...string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	u.User = nil
	fields := []string{
		"url: " + strconv.Quote("jdbc:postgresql:"+strings.TrimPrefix(u.String(), u.Scheme+":")),
		"user: " + strconv.Quote(pgtest.User),
		"password: " + strconv.Quote(srv.Password()),
		"lockKeepAlivePeriod: " + keepAlive.String(),
	}
	return "jdbc: {" + strings.Join(append(fields, extra...), ", ") + "}"
}

// sharedJDBCAdapter is jdbcAdapter for a fresh database, dropped when the test ends, on
// the PostgreSQL server shared by the tests, with a 500ms lease renewal period so that a
// broker restarted after kill -9 takes the lock over within about 2s.
func sharedJDBCAdapter(t testing.TB) string {
	t.Helper()
	srv := pgtest.Shared(t)
	return jdbcAdapter(t, srv, srv.CreateDB(t, t.Name()), 500*time.Millisecond)
}

// unsubscribe sends UNSUBSCRIBE and waits for its RECEIPT. go-stomp 3.1.3 can miss a
// RECEIPT that arrives before it starts waiting (its waitWithTimeout calls sync.Cond.Wait
// in a new goroutine, and closeChannel may Broadcast before that goroutine waits); it then
// returns ErrUnsubscribeReceiptTimeout although the RECEIPT came and the subscription is
// closed. That case counts as done; a real timeout leaves an error message on C instead.
func unsubscribe(t testing.TB, sub *stomp.Subscription, opts ...func(*frame.Frame) error) {
	t.Helper()
	err := sub.Unsubscribe(opts...)
	if !errors.Is(err, &stomp.ErrUnsubscribeReceiptTimeout) {
		require.NoError(t, err)
		return
	}
	for {
		select {
		case m, ok := <-sub.C:
			if !ok {
				return // closed by the RECEIPT: go-stomp only missed the wake-up
			}
			if m.Err != nil {
				t.Fatalf("no RECEIPT for UNSUBSCRIBE: %v", m.Err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no RECEIPT for UNSUBSCRIBE")
		}
	}
}
