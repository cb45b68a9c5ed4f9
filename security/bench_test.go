package security

import (
	"context"
	"fmt"
	"testing"
)

// thousandEntries is an authorization map of 1,000 entries: one per application
// ("APP<i>.>", its own group), and ActiveMQ's ">" for admins.
func thousandEntries() []Entry {
	entries := []Entry{{Kind: Queue, Pattern: ">", Read: []string{"admins"}, Write: []string{"admins"}, Admin: []string{"admins"}}}
	for i := 1; i < 1000; i++ {
		g := []string{fmt.Sprintf("app%d", i)}
		entries = append(entries, Entry{Kind: Queue, Pattern: fmt.Sprintf("APP%d.>", i), Read: g, Write: g, Admin: g})
	}
	return entries
}

func benchNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("APP%d.orders.eu", i%999+1)
	}
	return names
}

// BenchmarkAuthorize1000Entries is the SEND path's check with a 1,000-entry map,
// from all CPUs, answered from the cache.
func BenchmarkAuthorize1000Entries(b *testing.B) {
	s, _, _ := newTestService(b, Config{Entries: thousandEntries()})
	// Allowed everywhere, through ">" and each name's own entry, as a SEND mostly is.
	sub := &Subject{User: "svc", Groups: []string{"admins", "users"}}
	names := benchNames(999)
	for _, n := range names {
		s.Authorize(sub, Queue, n, Write)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if !s.Authorize(sub, Queue, names[i%len(names)], Write) {
				b.Error("refused")
				return
			}
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}

// BenchmarkAuthorizeMiss1000Entries is the work of a cache miss: matching a name
// against the 1,000 patterns and combining the matching entries.
func BenchmarkAuthorizeMiss1000Entries(b *testing.B) {
	a, err := newAuthorizer(thousandEntries())
	if err != nil {
		b.Fatal(err)
	}
	names := benchNames(999)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		unionACL(a.roots[Queue].matchName(names[i%len(names)], nil))
	}
}

// BenchmarkAuthorizeNoMap is the check without an authorization map.
func BenchmarkAuthorizeNoMap(b *testing.B) {
	s, _, _ := newTestService(b, Config{})
	sub := &Subject{User: "svc"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.Authorize(sub, Queue, "APP7.orders.eu", Write)
		}
	})
}

// BenchmarkAuthenticateBcrypt is a CONNECT of a user with a bcrypt hash at the
// default cost: cached is a reconnect with the passcode that verified last time,
// uncached pays for bcrypt.
func BenchmarkAuthenticateBcrypt(b *testing.B) {
	hash, err := HashPassword("pw")
	if err != nil {
		b.Fatal(err)
	}
	for _, cached := range []bool{true, false} {
		name := "Uncached"
		if cached {
			name = "Cached"
		}
		b.Run(name, func(b *testing.B) {
			s, _, _ := newTestService(b, Config{Users: []User{{Name: "app", PasswordHash: hash}}})
			c := login("app", "pw")
			ctx := context.Background()
			acct := s.dir.Load().accounts["app"]
			b.ReportAllocs()
			for b.Loop() {
				if !cached {
					acct.verified.Store(nil)
				}
				if _, err := s.Authenticate(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "logins/s")
		})
	}
}

// BenchmarkFailedLogin is a failed login of each kind (no failure delay): an unknown
// user, and a wrong passcode for a user with a plain-text password, a bcrypt hash at the
// default cost and an argon2id hash; the users have both hash kinds, so each verifies
// one bcrypt and one argon2id hash, and the four cost the same.
func BenchmarkFailedLogin(b *testing.B) {
	hash, err := HashPassword("pw")
	if err != nil {
		b.Fatal(err)
	}
	s, _, _ := newTestService(b, Config{Users: []User{
		{Name: "plain", Password: "pw"},
		{Name: "bcrypt", PasswordHash: hash},
		{Name: "argon", PasswordHash: argon2idHash("pw", 19456, 2, 1)},
	}})
	s.throttle.base = -1
	for _, user := range []string{"nobody", "plain", "bcrypt", "argon"} {
		b.Run(user, func(b *testing.B) {
			c := login(user, "wrong")
			for b.Loop() {
				if _, err := s.Authenticate(context.Background(), c); err == nil {
					b.Fatal("logged in")
				}
			}
		})
	}
}
