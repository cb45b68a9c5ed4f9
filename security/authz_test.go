package security

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// exampleEntries is ActiveMQ's example authorization map
// (examples/conf/activemq-security.xml, /work/shared/tools/activemq-security.xml),
// plus a "PUBLIC.>" topic entry for everyone.
func exampleEntries() []Entry {
	return []Entry{
		{Kind: Queue, Pattern: ">", Read: []string{"admins"}, Write: []string{"admins"}, Admin: []string{"admins"}},
		{Kind: Queue, Pattern: "USERS.>", Read: []string{"users"}, Write: []string{"users"}, Admin: []string{"users"}},
		{Kind: Queue, Pattern: "GUEST.>", Read: []string{"guests"}, Write: []string{"guests,users"}, Admin: []string{"guests", "users"}},
		{Kind: Queue, Pattern: "TEST.Q", Read: []string{"guests"}, Write: []string{"guests"}},
		{Kind: Topic, Pattern: ">", Read: []string{"admins"}, Write: []string{"admins"}, Admin: []string{"admins"}},
		{Kind: Topic, Pattern: "USERS.>", Read: []string{"users"}, Write: []string{"users"}, Admin: []string{"users"}},
		{Kind: Topic, Pattern: "GUEST.>", Read: []string{"guests"}, Write: []string{"guests,users"}, Admin: []string{"guests,users"}},
		{Kind: Topic, Pattern: "ActiveMQ.Advisory.>", Read: []string{"guests,users"}, Write: []string{"guests,users"}, Admin: []string{"guests,users"}},
		{Kind: Topic, Pattern: "PUBLIC.>", Read: []string{"*"}, Write: []string{" * "}},
	}
}

func TestAuthorizeExampleMap(t *testing.T) {
	s, _, _ := newTestService(t, Config{Entries: exampleEntries(), Users: []User{
		{Name: "system", Password: "manager", Groups: []string{"users", "admins"}},
		{Name: "user", Password: "password", Groups: []string{"users"}},
		{Name: "guest", Password: "password", Groups: []string{"guests"}},
	}})
	system := &Subject{User: "system", Groups: []string{"admins", "users"}}
	user := &Subject{User: "user", Groups: []string{"users"}}
	guest := &Subject{User: "guest", Groups: []string{"guests"}}
	anon := &Subject{User: "anonymous", Groups: []string{"anonymous"}, Anonymous: true}
	tests := []struct {
		who  *Subject
		kind Kind
		name string
		r    Rights
		want bool
	}{
		// TEST.Q: the union of ">" (admins) and "TEST.Q" (guests).
		{system, Queue, "TEST.Q", Read | Write | Admin, true},
		{guest, Queue, "TEST.Q", Read | Write, true},
		{guest, Queue, "TEST.Q", Admin, false},
		{guest, Queue, "TEST.Q", Read | Admin, false},
		{user, Queue, "TEST.Q", Read, false},
		{user, Queue, "FOO", Read, false},
		{user, Queue, "FOO", Write, false},
		{user, Queue, "USERS", Write, true}, // "USERS.>" matches USERS itself
		{user, Queue, "USERS.a.b", Write | Read | Admin, true},
		{user, Queue, "USERSX", Write, false},
		{user, Queue, "GUEST.x", Write | Admin, true},
		{user, Queue, "GUEST.x", Read, false},
		{guest, Queue, "GUEST.x", Read | Write | Admin, true},
		{guest, Queue, "USERS.a", Read, false},
		{system, Queue, "anything.at.all", Admin, true},
		{user, Topic, "USERS.a", Write, true},
		{user, Topic, "TEST.Q", Write, false}, // TEST.Q is a queue entry
		{guest, Topic, "ActiveMQ.Advisory.Queue", Read, true},
		{anon, Topic, "ActiveMQ.Advisory.Queue", Read, false},
		{anon, Topic, "PUBLIC.news", Read | Write, true}, // "*" is everyone
		{nil, Topic, "PUBLIC.news", Write, true},
		{anon, Topic, "PUBLIC.news", Admin, false},
		{system, Topic, "PUBLIC.news", Admin, true},
		{anon, Queue, "TEST.Q", Read, false},
		{nil, Queue, "TEST.Q", Read, false},
		{system, Queue, "TEST.Q", 0, true},
		{system, Queue, "TEST.Q", 1 << 5, false}, // unknown rights are refused
		{system, Kind(7), "TEST.Q", Read, false},
	}
	denied := uint64(0)
	for _, tt := range tests {
		for pass := 0; pass < 2; pass++ { // the second from the cache
			got := s.Authorize(tt.who, tt.kind, tt.name, tt.r)
			if got != tt.want {
				t.Errorf("pass %d: Authorize(%v, %s %s, %b) = %v, want %v", pass, tt.who, kindName(tt.kind), tt.name, tt.r, got, tt.want)
			}
			if !got {
				denied++
			}
		}
	}
	if got := s.Stats().Denied; got != denied {
		t.Errorf("Stats().Denied = %d, want %d", got, denied)
	}
}

func TestAuthorizeWithoutMap(t *testing.T) {
	s, _, _ := newTestService(t, Config{})
	if s.Authorizing() {
		t.Fatal("Authorizing() with no entries")
	}
	if !s.Authorize(nil, Queue, "FOO", Read|Write|Admin) || !s.AuthorizeTemp(nil, Write) {
		t.Error("without an authorization map everything must be allowed")
	}
}

func TestAuthorizeEmptyMapDeniesAll(t *testing.T) {
	s, _, _ := newTestService(t, Config{Entries: []Entry{}, Users: []User{{Name: "a", Password: "p", Groups: []string{"admins"}}}})
	if !s.Authorizing() {
		t.Fatal("an empty (non-nil) map must authorize")
	}
	sub := &Subject{User: "a", Groups: []string{"admins"}}
	if s.Authorize(sub, Queue, "FOO", Read) {
		t.Error("an empty map allowed a read")
	}
	if !s.AuthorizeTemp(sub, Write) {
		t.Error("an empty map must still allow temporary destinations to authenticated users")
	}
}

func TestAuthorizeTemp(t *testing.T) {
	users := []User{{Name: "a", Password: "p", Groups: []string{"users"}}}
	user := &Subject{User: "a", Groups: []string{"users"}}
	anon := &Subject{User: "anonymous", Groups: []string{"anonymous"}, Anonymous: true}

	s, _, _ := newTestService(t, Config{Entries: exampleEntries(), Users: users, AnonymousAccessAllowed: true})
	if !s.AuthorizeTemp(user, Read|Write|Admin) {
		t.Error("no temp entry: an authenticated user was refused")
	}
	if s.AuthorizeTemp(anon, Write) || s.AuthorizeTemp(nil, Write) {
		t.Error("no temp entry: an anonymous subject was allowed while authenticating")
	}

	s, _, _ = newTestService(t, Config{Entries: exampleEntries()})
	if !s.AuthorizeTemp(anon, Write) {
		t.Error("no temp entry, no authentication: the anonymous subject was refused")
	}

	s, _, _ = newTestService(t, Config{Entries: exampleEntries(), Users: users,
		Temp: &Entry{Read: []string{"admins"}, Write: []string{"users, admins"}, Admin: []string{"*"}}})
	if !s.AuthorizeTemp(user, Write|Admin) || s.AuthorizeTemp(user, Read) {
		t.Error("temp entry: users may write and admin, not read")
	}
	if !s.AuthorizeTemp(anon, Admin) {
		t.Error(`temp entry: "*" must allow anyone`)
	}
}

func TestIsAdmin(t *testing.T) {
	s, _, _ := newTestService(t, Config{})
	if !s.IsAdmin(&Subject{Groups: []string{"admins", "users"}}) || s.IsAdmin(&Subject{Groups: []string{"users"}}) || s.IsAdmin(nil) {
		t.Error("default admin group is admins")
	}
	s, _, _ = newTestService(t, Config{AdminGroups: []string{"ops", "root"}})
	if !s.IsAdmin(&Subject{Groups: []string{"root"}}) || s.IsAdmin(&Subject{Groups: []string{"admins"}}) {
		t.Error("AdminGroups not honoured")
	}
}

func TestEntryErrors(t *testing.T) {
	tests := []struct {
		e    Entry
		want string
	}{
		{Entry{Pattern: ""}, "pattern is empty"},
		{Entry{Pattern: "FOO.>.BAR"}, "'>' must be the last element"},
		{Entry{Kind: 9, Pattern: "FOO"}, "neither queue nor topic"},
	}
	for _, tt := range tests {
		_, err := New(Config{Entries: []Entry{{Pattern: ">"}, tt.e}}, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "authorization.entries[1]") {
			t.Errorf("entry %+v: err = %v, want one about entries[1] saying %q", tt.e, err, tt.want)
		}
	}
}

// TestACLCacheBoundAndGeneration fills the cache past its bound and checks that
// answers stay right, that it restarts, and that a new generation restarts it.
func TestACLCacheBoundAndGeneration(t *testing.T) {
	s, _, _ := newTestService(t, Config{Entries: exampleEntries()})
	user := &Subject{Groups: []string{"users"}}
	for i := 0; i < aclCacheSize+100; i++ {
		if !s.Authorize(user, Queue, fmt.Sprintf("USERS.%d", i), Write) {
			t.Fatalf("USERS.%d refused", i)
		}
	}
	if n := s.authz.cache.Load().n.Load(); n > aclCacheSize {
		t.Errorf("cache holds %d names, more than %d", n, aclCacheSize)
	}
	before := s.authz.cache.Load()
	s.gen.Add(1)
	if !s.Authorize(user, Queue, "USERS.1", Write) {
		t.Error("USERS.1 refused after a generation change")
	}
	if after := s.authz.cache.Load(); after == before || after.gen != s.Generation() {
		t.Error("a new generation did not restart the cache")
	}
}

// TestAuthorizeConcurrent runs decisions from many goroutines, for the race
// detector, while the generation changes.
func TestAuthorizeConcurrent(t *testing.T) {
	s, _, _ := newTestService(t, Config{Entries: exampleEntries()})
	user := &Subject{Groups: []string{"users"}}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				name := fmt.Sprintf("USERS.%d", i%50)
				if !s.Authorize(user, Queue, name, Write) || s.Authorize(user, Queue, "FOO", Write) {
					t.Error("wrong decision")
					return
				}
				if i%500 == 0 {
					s.gen.Add(1)
				}
			}
		}()
	}
	wg.Wait()
}
