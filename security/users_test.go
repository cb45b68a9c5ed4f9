package security

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestJAASFiles(t *testing.T) {
	dir := t.TempDir()
	hash := bcryptHash(t, "hashed-pw")
	users := writeFile(t, dir, "users.properties", strings.Join([]string{
		"## ActiveMQ's users.properties",
		"system=manager",
		"user: password",
		"guest password",
		"hashed=" + hash,
		"argon=" + argon2idHash("argon-pw", 64, 1, 1),
		"long=first\\",
		"    second",
		"twice=old",
		"twice=new",
	}, "\n"))
	groups := writeFile(t, dir, "groups.properties", "admins=system\nusers=system,user, hashed\nguests=guest\n! comment\nusers=twice\n")
	s, _, _ := newTestService(t, Config{
		JAAS:  &JAASFiles{Users: users, Groups: groups},
		Users: []User{{Name: "app", Password: "app-pw", Groups: []string{"apps", "users"}}},
	})
	ctx := context.Background()
	tests := []struct {
		user, pass string
		groups     []string
	}{
		{"system", "manager", []string{"admins", "users"}},
		{"user", "password", []string{"users"}},
		{"guest", "password", []string{"guests"}},
		{"hashed", "hashed-pw", []string{"users"}},
		{"argon", "argon-pw", nil},
		{"long", "firstsecond", nil},
		{"twice", "new", []string{"users"}},
		{"app", "app-pw", []string{"apps", "users"}},
	}
	for _, tt := range tests {
		sub, err := s.Authenticate(ctx, login(tt.user, tt.pass))
		if err != nil {
			t.Errorf("%s: %v", tt.user, err)
			continue
		}
		if sub.User != tt.user || sub.Anonymous || !slices.Equal(sub.Groups, tt.groups) && len(sub.Groups)+len(tt.groups) > 0 {
			t.Errorf("%s: %+v, want groups %v", tt.user, sub, tt.groups)
		}
	}
	for _, c := range []Credentials{login("twice", "old"), login("hashed", hash), login("system", "Manager"), login("nobody", "manager")} {
		if _, err := s.Authenticate(ctx, c); !errors.Is(err, ErrInvalidCredentials) {
			t.Errorf("%s/%s: err = %v, want ErrInvalidCredentials", c.Login, c.Passcode, err)
		}
	}
}

func TestJAASFileErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ users, want string }{
		{"a=x\nb=\n", "line 2 (b): the password is empty"},
		{"a=x\n=y\n", "line 2: the user name is empty"},
		{"a=$2a$10$tooshort\n", "line 1 (a): the password looks like a hash but is not a bcrypt"},
		{"app=x\n", "line 1 (app): the user is also in plugins.simpleAuthentication.users"},
		{"a=\\u12\n", "line 1: value: malformed \\uXXXX"},
	}
	for _, tt := range tests {
		p := writeFile(t, dir, "users.properties", tt.users)
		_, err := New(Config{JAAS: &JAASFiles{Users: p}, Users: []User{{Name: "app", Password: "x"}}}, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%q: err = %v, want %q and the path", tt.users, err, tt.want)
		}
	}
	_, err := New(Config{JAAS: &JAASFiles{Users: dir + "/missing.properties"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "missing.properties") {
		t.Errorf("missing file: %v", err)
	}
	_, err = New(Config{JAAS: &JAASFiles{}}, nil)
	if err == nil || !strings.Contains(err.Error(), "jaasProperties.users is empty") {
		t.Errorf("no users file: %v", err)
	}
}

// rewrite replaces a file's contents and moves its modification time on, as an
// editor saving it a while later would.
func rewrite(t *testing.T, path, content string, mod time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

func TestJAASReload(t *testing.T) {
	dir := t.TempDir()
	users := writeFile(t, dir, "users.properties", "alice=old\nbob=bobpw\n")
	groups := writeFile(t, dir, "groups.properties", "readers=alice\n")
	s, clock, logs := newTestService(t, Config{
		JAAS:    &JAASFiles{Users: users, Groups: groups, Reload: true},
		Entries: exampleEntries(),
	})
	ctx := context.Background()
	ok := func(user, pass string) *Subject {
		t.Helper()
		sub, err := s.Authenticate(ctx, login(user, pass))
		if err != nil {
			t.Fatalf("%s/%s: %v", user, pass, err)
		}
		return sub
	}
	refused := func(user, pass string) {
		t.Helper()
		if _, err := s.Authenticate(ctx, login(user, pass)); !errors.Is(err, ErrInvalidCredentials) {
			t.Fatalf("%s/%s: err = %v, want ErrInvalidCredentials", user, pass, err)
		}
	}
	ok("alice", "old")
	gen := s.Generation()
	s.Authorize(&Subject{}, Queue, "FOO", Read)
	aclCache := s.authz.cache.Load()

	mod := time.Now().Add(time.Hour)
	rewrite(t, users, "alice=new\nbob=bobpw\n", mod)
	rewrite(t, groups, "writers=alice\n", mod)
	clock.advance(500 * time.Millisecond) // less than a second since the last look
	ok("alice", "old")
	clock.advance(600 * time.Millisecond)
	if sub := ok("alice", "new"); !slices.Equal(sub.Groups, []string{"writers"}) {
		t.Errorf("groups after reload: %v", sub.Groups)
	}
	refused("alice", "old")
	if s.Generation() != gen+1 || s.Stats().Reloads != 1 {
		t.Errorf("generation %d (was %d), reloads %d; want one reload", s.Generation(), gen, s.Stats().Reloads)
	}
	s.Authorize(&Subject{}, Queue, "FOO", Read)
	if s.authz.cache.Load() == aclCache {
		t.Error("the authorization cache outlived a reload")
	}

	// A broken file keeps the users and is logged once.
	clock.advance(2 * time.Second)
	rewrite(t, users, "alice=newer\nbroken=\\u12\n", mod.Add(time.Hour))
	for i := 0; i < 3; i++ {
		clock.advance(2 * time.Second)
		ok("alice", "new")
	}
	if n := strings.Count(logs.String(), "re-reading the users failed"); n != 1 {
		t.Errorf("the failed re-read was logged %d times, want once:\n%s", n, logs)
	}
	if strings.Contains(logs.String(), "newer") {
		t.Errorf("the log quotes a password:\n%s", logs)
	}
	// Fixing it is picked up.
	rewrite(t, users, "alice=newest\n", mod.Add(2*time.Hour))
	clock.advance(2 * time.Second)
	ok("alice", "newest")
	refused("bob", "bobpw")
	if s.Stats().Reloads != 2 {
		t.Errorf("reloads = %d, want 2", s.Stats().Reloads)
	}
	// A deleted file keeps the users too.
	os.Remove(users)
	clock.advance(2 * time.Second)
	ok("alice", "newest")
}

func TestNoReloadWithoutReload(t *testing.T) {
	dir := t.TempDir()
	users := writeFile(t, dir, "users.properties", "alice=old\n")
	s, clock, _ := newTestService(t, Config{JAAS: &JAASFiles{Users: users}})
	rewrite(t, users, "alice=new\n", time.Now().Add(time.Hour))
	clock.advance(time.Minute)
	if _, err := s.Authenticate(context.Background(), login("alice", "old")); err != nil {
		t.Errorf("without Reload the file must not be re-read: %v", err)
	}
}
