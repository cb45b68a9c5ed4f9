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
	a := d.accounts[c.Login]
	if a == nil {
		// Cost what a known user costs, so that timing does not tell them apart.
		if d.dummy.expensive() {
			s.hashVerifies.Add(1)
		}
		d.dummy.verify(c.Passcode)
		return nil, s.fail(ctx, c, "unknown user")
	}
	if !s.verify(a, c.Passcode) {
		return nil, s.fail(ctx, c, "wrong passcode")
	}
	s.stats.ok.Add(1)
	return &Subject{User: a.name, Groups: d.groupsOf(a.name), Quotas: s.quotas(d, a.name)}, nil
}

// verify checks the passcode, through the verified-credentials cache for hashes.
func (s *Service) verify(a *account, passcode string) bool {
	if !a.pw.expensive() {
		return a.pw.verify(passcode)
	}
	sum := s.credentialSum(passcode)
	if v := a.verified.Load(); v != nil && subtle.ConstantTimeCompare(v[:], sum[:]) == 1 {
		s.stats.hits.Add(1)
		return true
	}
	s.stats.misses.Add(1)
	s.hashVerifies.Add(1)
	if !a.pw.verify(passcode) {
		return false
	}
	a.verified.Store(&sum)
	return true
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
