package security

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"log/slog"
)

// Authenticate tells who the client is, once per CONNECT:
//
//   - Without user sources (Authenticating false) every client is let in:
//     Subject{User: c.Login, Groups: [AnonymousGroup], Anonymous: true}.
//   - With CertificateUsers and a client certificate, the certificate's subject DN
//     names the user (login and passcode are not looked at); ByCertificate is set.
//   - Without a login (no login header, or an empty one): with
//     AnonymousAccessAllowed, Subject{User: AnonymousUser, Groups: [AnonymousGroup],
//     Anonymous: true}; else a failure.
//   - Else login and passcode must match a user of Config.Users or the JAAS users
//     file. An empty passcode never matches.
//
// A failure returns ErrInvalidCredentials after a delay that grows with the recent
// failures of the client's host (see Config.FailureDelay), or ErrThrottled at once
// when that host already has MaxDelayedPerAddress failures waiting. If ctx ends
// during the delay, the error wraps both ErrInvalidCredentials and ctx.Err(). A
// success is never delayed. FailureMessage is ActiveMQ's text for the client.
func (s *Service) Authenticate(ctx context.Context, c Credentials) (*Subject, error) {
	if !s.authn {
		s.stats.ok.Add(1)
		return &Subject{User: c.Login, Groups: []string{s.cfg.AnonymousGroup}, Anonymous: true}, nil
	}
	s.maybeReload()
	d := s.dir.Load()

	if s.cfg.CertificateUsers != nil && len(c.PeerCertificates) > 0 {
		dn, err := certificateDN(c.PeerCertificates[0])
		if err != nil {
			return nil, s.fail(ctx, c, "the client certificate's subject cannot be read")
		}
		user, ok := d.certs[dn]
		if !ok {
			return nil, s.fail(ctx, c, "no certificate user has the client certificate's subject",
				slog.String("subject", sanitize(c.PeerCertificates[0].Subject.String())))
		}
		s.stats.ok.Add(1)
		return &Subject{User: user, Groups: d.groupsOf(user), Quotas: s.quotas(d, user), ByCertificate: true}, nil
	}

	if !c.HasLogin || c.Login == "" {
		if s.cfg.AnonymousAccessAllowed {
			s.stats.ok.Add(1)
			// The clients without a login share the anonymous user's quotas.
			return &Subject{User: s.cfg.AnonymousUser, Groups: []string{s.cfg.AnonymousGroup}, Anonymous: true,
				Quotas: s.quotas(d, s.cfg.AnonymousUser)}, nil
		}
		return nil, s.fail(ctx, c, "no login given and anonymous access is not allowed")
	}
	if c.Passcode == "" {
		return nil, s.fail(ctx, c, "empty passcode")
	}
	a := d.accounts[c.Login] // nil for an unknown user: verified all the same
	if !s.verify(d, a, c.Passcode) {
		reason := "wrong passcode"
		if a == nil {
			reason = "unknown user"
		}
		return nil, s.fail(ctx, c, reason)
	}
	s.stats.ok.Add(1)
	return &Subject{User: a.name, Groups: d.groupsOf(a.name), Quotas: s.quotas(d, a.name)}, nil
}

// SubjectOf is the subject user would be if it logged in now without a certificate,
// for a decision about what it did earlier (a message it sent, named by its
// JMSXUserID): its groups as the user sources give them now (re-read first when they
// reload). Without user sources it is anonymous, as every client is; so is the
// anonymous user when anonymous access is allowed and no user has that name. A user
// no source knows holds no group.
func (s *Service) SubjectOf(user string) *Subject {
	if !s.authn {
		return &Subject{User: user, Groups: []string{s.cfg.AnonymousGroup}, Anonymous: true}
	}
	s.maybeReload()
	d := s.dir.Load()
	if user == s.cfg.AnonymousUser && s.cfg.AnonymousAccessAllowed && d.accounts[user] == nil {
		return &Subject{User: user, Groups: []string{s.cfg.AnonymousGroup}, Anonymous: true}
	}
	return &Subject{User: user, Groups: d.groupsOf(user), Quotas: s.quotas(d, user)}
}

// verify checks the passcode of account a (nil: an unknown user, never right).
//
// A right plain-text passcode, or one the verified-credentials cache knows, succeeds
// at once. Anything else costs the same whatever the user: one verification of each
// cost class of hash in use (d.work), in the same order, against the account's own
// hash for its class and a dummy for every other. A wrong passcode, an unknown user
// and a user with a hash of another cost or kind are thus told apart by nothing but
// the answer (and the failure delay, which is the host's, follows alike).
func (s *Service) verify(d *directory, a *account, passcode string) bool {
	class := -1
	if a != nil {
		if !a.pw.expensive() && a.pw.verify(passcode) { // constant time
			return true
		}
		class = a.class
	}
	var sum [sha256.Size]byte
	if class >= 0 {
		sum = s.credentialSum(passcode)
		if v := a.verified.Load(); v != nil && subtle.ConstantTimeCompare(v[:], sum[:]) == 1 {
			s.stats.hits.Add(1)
			return true
		}
		s.stats.misses.Add(1)
	}
	ok := false
	for i := range d.work {
		p := &d.work[i]
		if i == class {
			p = a.pw
		}
		s.hashVerifies.Add(1)
		if s.verifyHook != nil {
			s.verifyHook(p.class())
		}
		if p.verify(passcode) && i == class {
			ok = true
		}
	}
	if ok {
		a.verified.Store(&sum)
	}
	return ok
}

// credentialSum is SHA-256(salt || passcode), what the cache keeps of a passcode.
func (s *Service) credentialSum(passcode string) [sha256.Size]byte {
	h := sha256.New()
	h.Write(s.salt[:])
	io.WriteString(h, passcode)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// quotas are the user's quotas: its own connection limit, if it has one, and the
// configuration's per-user ones.
func (s *Service) quotas(d *directory, user string) Quotas {
	q := Quotas{MaxConnections: s.cfg.MaxConnectionsPerUser, MaxDestinations: s.cfg.MaxDestinationsPerUser,
		MaxDurableSubscriptions: s.cfg.MaxDurableSubscriptionsPerUser, MaxUnackedBytes: s.cfg.MaxUnackedBytesPerUser}
	if n := d.maxConns[user]; n > 0 {
		q.MaxConnections = n
	}
	return q
}

// fail counts and logs a failed login and waits out the host's failure delay.
func (s *Service) fail(ctx context.Context, c Credentials, reason string, attrs ...slog.Attr) error {
	s.stats.failed.Add(1)
	host := hostOf(c.RemoteAddr)
	delay, release, ok := s.throttle.failure(host, s.now())
	attrs = append(attrs, slog.String("reason", reason))
	if !ok {
		s.stats.throttled.Add(1)
		attrs = append(attrs, slog.Bool("throttled", true))
	}
	s.failLog.note(s.now(), sanitize(c.Login), host, attrs)
	if !ok {
		return ErrThrottled
	}
	defer release()
	if err := s.sleep(ctx, delay); err != nil {
		return fmt.Errorf("%w (%w)", ErrInvalidCredentials, err)
	}
	return ErrInvalidCredentials
}
