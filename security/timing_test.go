package security

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// timingUsers are users of every password form: plain text, bcrypt at two costs and
// argon2id.
func timingUsers(t testing.TB) []User {
	h5, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost+1)
	if err != nil {
		t.Fatal(err)
	}
	return []User{
		{Name: "plain", Password: "pw"},
		{Name: "bcrypt4", PasswordHash: bcryptHash(t, "pw")},
		{Name: "bcrypt5", PasswordHash: string(h5)},
		{Name: "argon", PasswordHash: argon2idHash("pw", 64, 2, 1)},
	}
}

// recordWork makes s tell, per call of attempt, the cost classes of the hash
// verifications it ran, in order.
func recordWork(s *Service) (attempt func(func()) []string) {
	var mu sync.Mutex
	var got []string
	s.verifyHook = func(c costClass) {
		mu.Lock()
		got = append(got, c.String())
		mu.Unlock()
	}
	return func(f func()) []string {
		mu.Lock()
		got = nil
		mu.Unlock()
		f()
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// Every failed login does the same work, whoever the login names: the same hash
// verifications, of the same kinds and costs, in the same order, and the same failure
// delay. Only the answer tells a wrong passcode from an unknown user.
func TestFailedLoginsDoTheSameWork(t *testing.T) {
	s, clock, _ := newTestService(t, Config{Users: timingUsers(t)})
	attempt := recordWork(s)
	ctx := context.Background()
	want := []string{"bcrypt cost 4", "bcrypt cost 5", "argon2id m=64,t=2,p=1 (salt 16, key 32 bytes)"}
	for i, user := range []string{"nobody", "plain", "bcrypt4", "bcrypt5", "argon"} {
		// A host's delay doubles with its failures: each attempt from a host of its own.
		c := login(user, "wrong")
		c.RemoteAddr = []string{"192.0.2.1:1", "192.0.2.2:1", "192.0.2.3:1", "192.0.2.4:1", "192.0.2.5:1"}[i]
		var err error
		work := attempt(func() { _, err = s.Authenticate(ctx, c) })
		if !errors.Is(err, ErrInvalidCredentials) {
			t.Fatalf("%s: %v", user, err)
		}
		if !slices.Equal(work, want) {
			t.Errorf("a failed login of %s verified %q, want %q", user, work, want)
		}
		if d := clock.delays(); !slices.Equal(d, []time.Duration{DefaultFailureDelay}) {
			t.Errorf("a failed login of %s waited %v, want %v", user, d, DefaultFailureDelay)
		}
	}

	// A right passcode still logs in, and once verified, a hash is not run again.
	for _, u := range timingUsers(t) {
		if _, err := s.Authenticate(ctx, login(u.Name, "pw")); err != nil {
			t.Errorf("%s: %v", u.Name, err)
		}
		if work := attempt(func() { s.Authenticate(ctx, login(u.Name, "pw")) }); len(work) != 0 {
			t.Errorf("%s logging in again verified %q; want nothing (plain text, or the cache)", u.Name, work)
		}
	}
}

// With plain-text users only, no login costs a hash verification, and a failed one
// of a known user costs what an unknown user's does.
func TestFailedLoginsPlainOnly(t *testing.T) {
	s, _, _ := newTestService(t, Config{Users: []User{{Name: "plain", Password: "pw"}}})
	s.throttle.base = -1
	attempt := recordWork(s)
	for _, user := range []string{"nobody", "plain"} {
		if work := attempt(func() { s.Authenticate(context.Background(), login(user, "wrong")) }); len(work) != 0 {
			t.Errorf("%s: verified %q, want no hash", user, work)
		}
	}
}

// The cost classes come from the files as well, and a re-read keeps the dummies of the
// classes still in use.
func TestWorkFollowsReload(t *testing.T) {
	dir := t.TempDir()
	users := writeFile(t, dir, "users.properties", "a="+bcryptHash(t, "pw")+"\nb=pw\n")
	s, _, logs := newTestService(t, Config{Users: []User{{Name: "argon", PasswordHash: argon2idHash("pw", 64, 2, 1)}},
		JAAS: &JAASFiles{Users: users, Groups: writeFile(t, dir, "groups.properties", "g=a\n")}})
	d := s.dir.Load()
	if len(d.work) != 2 || d.work[0].class().kind != bcryptPassword || d.work[1].class().kind != argon2idPassword {
		t.Fatalf("work %v, want one bcrypt then one argon2id verification", d.work)
	}
	if d.accounts["b"].class != -1 || d.accounts["a"].class != 0 || d.accounts["argon"].class != 1 {
		t.Errorf("classes: a %d, b %d, argon %d; want 0, -1, 1", d.accounts["a"].class, d.accounts["b"].class, d.accounts["argon"].class)
	}
	if !strings.Contains(logs.String(), "hashCosts") {
		t.Errorf("several hash costs are not logged:\n%s", logs)
	}
	next, err := s.build(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if &next.work[0].bcrypt[0] != &d.work[0].bcrypt[0] {
		t.Error("a re-read made a new bcrypt dummy for a class still in use")
	}
}
