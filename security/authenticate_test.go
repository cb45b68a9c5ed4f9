package security

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestAuthenticateWithoutUsers(t *testing.T) {
	s, _, _ := newTestService(t, Config{})
	if s.Authenticating() {
		t.Fatal("Authenticating() without user sources")
	}
	for _, c := range []Credentials{login("whoever", "whatever"), {}, {Login: "x", HasLogin: true}} {
		sub, err := s.Authenticate(context.Background(), c)
		if err != nil || sub.User != c.Login || !sub.Anonymous || !slices.Equal(sub.Groups, []string{DefaultAnonymousGroup}) {
			t.Errorf("%+v: %+v, %v; want an anonymous subject named by the login", c, sub, err)
		}
	}
}

func TestAnonymousAccess(t *testing.T) {
	users := []User{{Name: "app", Password: "pw"}}
	noLogin := []Credentials{{RemoteAddr: "192.0.2.1:1"}, {HasLogin: true, RemoteAddr: "192.0.2.1:1"}, {Passcode: "pw", RemoteAddr: "192.0.2.1:1"}}

	s, _, _ := newTestService(t, Config{Users: users, AnonymousAccessAllowed: true, AnonymousUser: "nobody", AnonymousGroup: "visitors"})
	for _, c := range noLogin {
		sub, err := s.Authenticate(context.Background(), c)
		if err != nil || sub.User != "nobody" || !sub.Anonymous || sub.ByCertificate || !slices.Equal(sub.Groups, []string{"visitors"}) {
			t.Errorf("%+v: %+v, %v; want the anonymous user", c, sub, err)
		}
	}
	if _, err := s.Authenticate(context.Background(), login("app", "wrong")); !errors.Is(err, ErrInvalidCredentials) {
		t.Errorf("a wrong password with anonymous access allowed: %v; a login given must be right", err)
	}

	s, _, _ = newTestService(t, Config{Users: users})
	for _, c := range noLogin {
		if _, err := s.Authenticate(context.Background(), c); !errors.Is(err, ErrInvalidCredentials) {
			t.Errorf("%+v: err = %v, want ErrInvalidCredentials", c, err)
		}
	}
}

func TestEmptyPasscodeNeverMatches(t *testing.T) {
	s, _, _ := newTestService(t, Config{Users: []User{{Name: "app", Password: "pw"}}})
	c := login("app", "")
	if _, err := s.Authenticate(context.Background(), c); !errors.Is(err, ErrInvalidCredentials) {
		t.Errorf("empty passcode: %v", err)
	}
	if s.hashVerifies.Load() != 0 {
		t.Error("an empty passcode was verified")
	}
}

func TestMaxConnections(t *testing.T) {
	s, _, _ := newTestService(t, Config{MaxConnectionsPerUser: 5, Users: []User{
		{Name: "a", Password: "pw", MaxConnections: 2}, {Name: "b", Password: "pw"}}})
	for user, want := range map[string]int{"a": 2, "b": 5} {
		if sub, err := s.Authenticate(context.Background(), login(user, "pw")); err != nil || sub.MaxConnections != want {
			t.Errorf("%s: %+v, %v; want MaxConnections %d", user, sub, err, want)
		}
	}
}

func TestVerifiedCredentialsCache(t *testing.T) {
	s, _, _ := newTestService(t, Config{Users: []User{
		{Name: "app", PasswordHash: bcryptHash(t, "pw")},
		{Name: "plain", Password: "pw"},
	}})
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if _, err := s.Authenticate(ctx, login("app", "pw")); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.hashVerifies.Load(); n != 1 {
		t.Errorf("bcrypt ran %d times for 5 logins with one passcode, want 1", n)
	}
	if st := s.Stats(); st.CacheHits != 4 || st.CacheMisses != 1 || st.LoginsOK != 5 {
		t.Errorf("stats %+v, want 4 hits, 1 miss, 5 ok", st)
	}
	// A wrong passcode is not answered from the cache, nor does it evict the right one.
	if _, err := s.Authenticate(ctx, login("app", "wrong")); !errors.Is(err, ErrInvalidCredentials) {
		t.Errorf("wrong passcode: %v", err)
	}
	if _, err := s.Authenticate(ctx, login("app", "pw")); err != nil {
		t.Fatal(err)
	}
	if n := s.hashVerifies.Load(); n != 2 {
		t.Errorf("bcrypt ran %d times, want 2 (the wrong passcode only)", n)
	}
	// Plain passwords need no cache.
	s.Authenticate(ctx, login("plain", "pw"))
	if st := s.Stats(); st.CacheHits+st.CacheMisses != 7 {
		t.Errorf("stats %+v: plain passwords went through the cache", st)
	}
	// Unknown users cost a verification too.
	s.Authenticate(ctx, login("nobody", "pw"))
	if n := s.hashVerifies.Load(); n != 3 {
		t.Errorf("an unknown user made %d verifications, want 1", n-2)
	}
}

func TestFailedLoginLog(t *testing.T) {
	s, clock, logs := newTestService(t, Config{Users: []User{{Name: "app", Password: "hunter2"}}})
	s.throttle.base = -1 // no delays: the clock moves only when the test says
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		s.Authenticate(ctx, login("app\nforged line", fmt.Sprintf("secret-%d", i)))
	}
	clock.advance(1500 * time.Millisecond)
	s.Authenticate(ctx, login(strings.Repeat("x", 100), "hunter3"))
	s.Close()
	out := logs.String()
	if n := strings.Count(out, "login failed"); n != 2 {
		t.Errorf("%d failed-login lines, want 2 (one a second):\n%s", n, out)
	}
	for _, want := range []string{"notLogged=4", `user="appforged line"`, "host=192.0.2.1", "reason=\"unknown user\"", strings.Repeat("x", 64) + "…"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{"secret-", "hunter"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log shows a passcode:\n%s", out)
		}
	}
	if st := s.Stats(); st.LoginsFailed != 6 {
		t.Errorf("LoginsFailed = %d, want 6", st.LoginsFailed)
	}
}

func TestCloseFlushesSuppressedCount(t *testing.T) {
	s, _, logs := newTestService(t, Config{Users: []User{{Name: "app", Password: "pw"}}})
	s.throttle.base = -1
	s.Authenticate(context.Background(), login("a", "b"))
	s.Authenticate(context.Background(), login("a", "b"))
	s.Close()
	if !strings.Contains(logs.String(), "failed logins not logged") || !strings.Contains(logs.String(), "notLogged=1") {
		t.Errorf("Close did not log the suppressed count:\n%s", logs)
	}
}
