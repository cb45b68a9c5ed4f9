// Package pgtest runs throwaway PostgreSQL servers for tests, from the system's
// PostgreSQL 15 binaries (/usr/lib/postgresql/15/bin, or $PGTEST_BINDIR).
//
// A server lives in a fresh temporary directory: initdb (UTF8, C locale, a superuser
// "pgtest" with a random password and scram-sha-256 authentication, so that tests can
// check that the password never leaks), then pg_ctl start on a free 127.0.0.1 port with
// its unix socket inside the directory and durability switched off for speed
// (fsync=off, full_page_writes=off, small shared_buffers). Close stops it and removes
// the directory.
//
// initdb refuses to run as root. When the tests run as root (as in CI), initdb and
// pg_ctl run as the "postgres" user, which owns the directory.
//
// If the binaries are missing, the servers fail to start with an error saying how to
// install them; tests using this package fail, they never skip: .ci/run installs the
// Debian package postgresql-15.
//
// # Use
//
// One server per test binary, started on first use and stopped when the tests end
// (Run is the same for a TestMain that does more):
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestX(t *testing.T) {
//		srv := pgtest.Shared(t)
//		dsn := srv.CreateDB(t, "x") // a fresh database, dropped when the test ends
//		...
//	}
//
// A test that stops or restarts its server gets one of its own with Start (or
// StartStopped, which does not start it yet, for "database unreachable" tests):
//
//	srv := pgtest.Start(t) // closed by t.Cleanup
//	require.NoError(t, srv.Down()) // pg_ctl stop -m fast, data kept
//	require.NoError(t, srv.Up())   // same port, same data
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultBinDir is where Debian's postgresql-15 package puts the server binaries.
const DefaultBinDir = "/usr/lib/postgresql/15/bin"

// BinDirEnv names the environment variable that overrides DefaultBinDir.
const BinDirEnv = "PGTEST_BINDIR"

// User is the superuser of every server.
const User = "pgtest"

// startTimeout bounds pg_ctl start and stop.
const startTimeout = 60 * time.Second

// Server is one throwaway PostgreSQL server. Its methods are safe for concurrent use.
type Server struct {
	dir      string // temporary directory, removed by Close
	data     string // PGDATA
	logFile  string
	bin      string
	port     int
	password string
	creds    *syscall.Credential // run initdb/pg_ctl as this user (root only)
	dbs      atomic.Int64        // CreateDB counter

	mu     sync.Mutex
	up     bool
	closed bool
}

// Options configures New.
type Options struct {
	// BinDir holds initdb, pg_ctl and postgres; empty means $PGTEST_BINDIR or
	// DefaultBinDir.
	BinDir string
	// Stopped leaves the server stopped after initdb: its address is known, but
	// nothing listens there until Up.
	Stopped bool
}

// New creates a server in a fresh temporary directory and starts it unless
// o.Stopped. The caller must Close it.
func New(o Options) (*Server, error) {
	bin := o.BinDir
	if bin == "" {
		bin = os.Getenv(BinDirEnv)
	}
	if bin == "" {
		bin = DefaultBinDir
	}
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			return nil, fmt.Errorf("pgtest: PostgreSQL 15 server binaries not found in %s (%v); "+
				".ci/run installs them (apt-get install postgresql-15), or set %s to their directory",
				bin, err, BinDirEnv)
		}
	}
	creds, err := credentials()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, creds: creds}
	if s.dir, err = os.MkdirTemp(s.tempBase(), "pgtest-"); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if err := s.init(); err != nil {
		_ = os.RemoveAll(s.dir)
		return nil, err
	}
	if !o.Stopped {
		if err := s.Up(); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	return s, nil
}

// credentials returns whom to run the PostgreSQL programs as: nil (ourselves) unless
// we are root, then the postgres user.
func credentials() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and initdb refuses to run as root: "+
			"a \"postgres\" user is needed (the postgresql-15 package creates it): %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("pgtest: postgres user has uid %q gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// init runs initdb (or copies the process-wide template cluster) and writes the
// server's settings.
func (s *Server) init() error {
	s.data = filepath.Join(s.dir, "data")
	s.logFile = filepath.Join(s.dir, "postgres.log")
	sock := filepath.Join(s.dir, "sock")
	if err := os.Mkdir(sock, 0o700); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if err := s.chown(s.dir, sock); err != nil {
		return err
	}
	if err := s.initdb(); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	s.port = port
	conf := fmt.Sprintf(`
# pgtest: a throwaway server, no durability
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
fsync = off
full_page_writes = off
synchronous_commit = on
shared_buffers = 16MB
max_connections = 200
max_wal_size = 256MB
log_min_messages = warning
log_line_prefix = '%%m [%%p] '
`, port, sock)
	f, err := os.OpenFile(filepath.Join(s.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pgtest: write postgresql.conf: %w", err)
	}
	return nil
}

// template is a cluster made once per process by initdb and copied by every later
// server while Main is in control (Main removes it); initdb takes seconds, a copy
// a fraction of one.
var template struct {
	sync.Mutex
	dir      string
	password string
}

func (s *Server) initdb() error {
	if !mainMode.Load() {
		s.password = newPassword()
		return s.runInitdb(s.data, s.password)
	}
	template.Lock()
	defer template.Unlock()
	if template.dir == "" {
		dir, err := os.MkdirTemp(s.tempBase(), "pgtest-template-")
		if err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
		if err := s.chown(dir); err != nil {
			_ = os.RemoveAll(dir)
			return err
		}
		pw := newPassword()
		if err := s.runInitdb(filepath.Join(dir, "data"), pw); err != nil {
			_ = os.RemoveAll(dir)
			return err
		}
		template.dir, template.password = dir, pw
	}
	s.password = template.password
	// cp -a keeps modes and owners (PGDATA must be 0700 and owned by the server's user).
	if out, err := exec.Command("cp", "-a", filepath.Join(template.dir, "data"), s.data).CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: copy template cluster: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

func (s *Server) runInitdb(data, password string) error {
	pwfile := filepath.Join(filepath.Dir(data), "pwfile")
	if err := os.WriteFile(pwfile, []byte(password+"\n"), 0o600); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer os.Remove(pwfile)
	if err := s.chown(pwfile); err != nil {
		return err
	}
	_, err := s.run("initdb", "-D", data, "-U", User, "--pwfile="+pwfile,
		"--auth=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync")
	return err
}

// newPassword returns a random password with characters that need escaping in a URL,
// so that redaction is tested against its raw and its escaped form.
func newPassword() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "pw:" + hex.EncodeToString(b[:]) + "@/?#"
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tempBase is where the server directories go: the system's temporary directory, or
// /tmp when we run as root and the postgres user could not reach the former (a
// TMPDIR private to root).
func (s *Server) tempBase() string {
	base := os.TempDir()
	if s.creds == nil {
		return base
	}
	for dir := base; ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if dir == filepath.Dir(dir) {
			return base
		}
	}
}

// chown gives paths to the postgres user when we run as root.
func (s *Server) chown(paths ...string) error {
	if s.creds == nil {
		return nil
	}
	for _, p := range paths {
		if err := os.Chown(p, int(s.creds.Uid), int(s.creds.Gid)); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
	}
	return nil
}

// run runs one of the PostgreSQL programs, as the postgres user when we are root.
func (s *Server) run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout+10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = cleanEnv()
	if s.creds != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.creds}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("pgtest: %s %s: %v\n%s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// cleanEnv is our environment without the PG* variables, which would redirect the
// programs to another cluster.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return append(env, "LC_ALL=C")
}

// Up starts the server (again) on its port and waits until it accepts connections.
func (s *Server) Up() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return errors.New("pgtest: server closed")
	case s.up:
		return nil
	}
	_, err := s.run("pg_ctl", "-D", s.data, "-l", s.logFile, "-w", "-t", strconv.Itoa(int(startTimeout/time.Second)), "start")
	if err != nil {
		return fmt.Errorf("%w\nserver log:\n%s", err, s.logTail())
	}
	s.up = true
	return nil
}

// Down stops the server the way an operator would (pg_ctl stop -m fast: clients are
// disconnected, the data is kept). Up starts it again.
func (s *Server) Down() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.up {
		return nil
	}
	if _, err := s.run("pg_ctl", "-D", s.data, "-m", "fast", "-w", "-t", strconv.Itoa(int(startTimeout/time.Second)), "stop"); err != nil {
		return err
	}
	s.up = false
	return nil
}

// Close stops the server at once and removes its directory. A second Close does
// nothing.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.up {
		_, err = s.run("pg_ctl", "-D", s.data, "-m", "immediate", "-w", "stop")
		s.up = false
	}
	if rerr := os.RemoveAll(s.dir); err == nil {
		err = rerr
	}
	return err
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.logFile)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Addr is the server's "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// Password is the password of User. Tests use it to check that it never appears in
// errors or logs.
func (s *Server) Password() string { return s.password }

// DSN is a postgres:// URL for database db as User, with the password.
func (s *Server) DSN(db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(User, s.password),
		Host:     s.Addr(),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Exec runs one SQL statement in database db.
func (s *Server) Exec(ctx context.Context, db, sql string, args ...any) error {
	conn, err := pgx.Connect(ctx, s.DSN(db))
	if err != nil {
		return fmt.Errorf("pgtest: connect to %s: %w", db, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("pgtest: %s: %w", sql, err)
	}
	return nil
}

var nameRE = regexp.MustCompile(`[^a-z0-9_]+`)

// CreateDB creates an empty database whose name starts with name, drops it when the
// test ends, and returns its DSN.
func (s *Server) CreateDB(t testing.TB, name string) string {
	t.Helper()
	name = nameRE.ReplaceAllString(strings.ToLower(name), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	db := fmt.Sprintf("%s_%d", name, s.dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Exec(ctx, "postgres", "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		s.mu.Lock()
		up := s.up && !s.closed
		s.mu.Unlock()
		if !up {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Exec(ctx, "postgres", "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Logf("pgtest: drop database %s: %v", db, err)
		}
	})
	return s.DSN(db)
}

// Start starts a server of the test's own, closed when the test ends. It fails the
// test (never skips it) if the server cannot start.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, Options{})
}

// StartStopped is Start without starting the server: its DSN is known, nothing
// listens there until Up.
func StartStopped(t testing.TB) *Server {
	t.Helper()
	return start(t, Options{Stopped: true})
}

func start(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("pgtest: close server: %v", err)
		}
	})
	return s
}

var (
	mainMode   atomic.Bool
	sharedOnce sync.Once
	shared     *Server
	sharedErr  error
)

// Main runs the tests of a package that uses Shared, then closes the shared server,
// removes the template cluster and exits. Call it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main without the exit, for a TestMain that does more:
//
//	func TestMain(m *testing.M) {
//		setUp()
//		code := pgtest.Run(m)
//		tearDown()
//		os.Exit(code)
//	}
func Run(m *testing.M) int {
	mainMode.Store(true)
	code := m.Run()
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	template.Lock()
	if template.dir != "" {
		_ = os.RemoveAll(template.dir)
		template.dir = ""
	}
	template.Unlock()
	return code
}

// Shared returns the server shared by all tests of the binary, starting it on first
// use. The package's TestMain must call Main, which stops it at the end.
func Shared(t testing.TB) *Server {
	t.Helper()
	if !mainMode.Load() {
		t.Fatal("pgtest.Shared: the package's TestMain must call pgtest.Main(m), which stops the shared server")
	}
	sharedOnce.Do(func() { shared, sharedErr = New(Options{}) })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}
