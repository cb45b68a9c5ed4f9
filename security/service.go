package security

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Service authenticates and authorizes; it is safe for concurrent use. Make it with
// New.
type Service struct {
	cfg   Config // with the defaults filled in
	log   *slog.Logger
	authn bool

	static []staticUser // cfg.Users, parsed
	files  []fileSpec   // the JAAS and certificate files, in a fixed order
	reload bool         // some file has Reload

	dir atomic.Pointer[directory] // the users as of Generation
	gen atomic.Uint64

	reloadMu    sync.Mutex
	nextCheck   atomic.Int64 // unix nanos before which files are not looked at again
	failedStats []fileStat   // the file stats a re-read failed on (logged once)

	salt [32]byte // of the verified-credentials cache, random per process

	authz  *authorizer // nil: everything is allowed
	temp   *acl        // nil: every authenticated subject
	admins []string    // sorted

	throttle throttle
	failLog  failureLog

	stats struct {
		ok, failed, throttled, denied, hits, misses, reloads atomic.Uint64
	}
	hashVerifies atomic.Uint64 // bcrypt/argon2id computations (Stats.HashVerifications)
	// verifyHook, when set (by tests), is told the cost class of every hash
	// verification, as it starts.
	verifyHook func(costClass)

	// now and sleep are the clock, replaced by tests.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error

	done      chan struct{} // closed by Close: failure delays end
	closeOnce sync.Once
}

// New checks cfg, reads the files it names and returns the Service. Its errors name
// the setting or the file and line at fault, and never quote a password.
func New(cfg Config, log *slog.Logger) (*Service, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := applyDefaults(&cfg); err != nil {
		return nil, err
	}
	s := &Service{
		cfg:   cfg,
		log:   log,
		authn: len(cfg.Users) > 0 || cfg.JAAS != nil || cfg.CertificateUsers != nil,
		done:  make(chan struct{}),
	}
	s.now = time.Now
	s.sleep = s.realSleep
	rand.Read(s.salt[:])
	s.throttle = newThrottle(cfg.FailureDelay, cfg.MaxFailureDelay, cfg.MaxDelayedPerAddress)
	s.failLog.log = log

	var err error
	if s.static, err = parseStaticUsers(cfg.Users); err != nil {
		return nil, err
	}
	if s.files, err = fileSpecs(&cfg); err != nil {
		return nil, err
	}
	for _, f := range s.files {
		s.reload = s.reload || f.reload
	}
	d, err := s.build(nil, nil)
	if err != nil {
		return nil, err
	}
	d.gen = s.gen.Add(1)
	s.dir.Store(d)

	if cfg.Entries != nil {
		if s.authz, err = newAuthorizer(cfg.Entries); err != nil {
			return nil, err
		}
		if !s.authn {
			log.Warn("security: authorization entries are set but no users are: every client is anonymous, and only rights given to \"*\" or to the anonymous group apply",
				slog.String("anonymousGroup", cfg.AnonymousGroup))
		}
	}
	if cfg.Temp != nil {
		t := normalEntry(*cfg.Temp)
		a := unionACL([]*Entry{&t})
		s.temp = &a
	}
	s.admins = sortedUnique(cfg.AdminGroups)
	return s, nil
}

// applyDefaults fills in what cfg leaves zero and checks the rest.
func applyDefaults(cfg *Config) error {
	if cfg.AnonymousUser == "" {
		cfg.AnonymousUser = DefaultAnonymousUser
	}
	if cfg.AnonymousGroup == "" {
		cfg.AnonymousGroup = DefaultAnonymousGroup
	}
	if cfg.AdminGroups == nil {
		cfg.AdminGroups = []string{DefaultAdminGroup}
	}
	if cfg.FailureDelay == 0 {
		cfg.FailureDelay = DefaultFailureDelay
	}
	if cfg.MaxFailureDelay == 0 {
		cfg.MaxFailureDelay = DefaultMaxFailureDelay
	}
	if cfg.MaxDelayedPerAddress == 0 {
		cfg.MaxDelayedPerAddress = DefaultMaxDelayedPerAddress
	}
	switch {
	case cfg.MaxConnectionsPerUser < 0:
		return errors.New("security: plugins.maxConnectionsPerUser is negative; use 0 for no limit")
	case cfg.MaxDestinationsPerUser < 0 || cfg.MaxDurableSubscriptionsPerUser < 0 || cfg.MaxUnackedBytesPerUser < 0:
		return errors.New("security: plugins.maxDestinationsPerUser, maxDurableSubscriptionsPerUser and maxUnackedBytesPerUser may not be negative; use 0 for no limit")
	case cfg.FailureDelay > 0 && cfg.MaxFailureDelay < cfg.FailureDelay:
		return fmt.Errorf("security: plugins.maxLoginFailureDelay (%v) is below plugins.loginFailureDelay (%v); raise it", cfg.MaxFailureDelay, cfg.FailureDelay)
	case cfg.MaxDelayedPerAddress < 0:
		return errors.New("security: plugins.maxDelayedPerAddress is negative; use a positive bound (0 is the default, 32)")
	}
	for i, g := range cfg.AdminGroups {
		if strings.TrimSpace(g) == "" {
			return fmt.Errorf("security: plugins.adminGroups[%d] is empty; name a group", i)
		}
	}
	return nil
}

// Authenticating tells whether any user source is configured. When not, every client
// is let in as an anonymous subject.
func (s *Service) Authenticating() bool { return s.authn }

// Authorizing tells whether an authorization map is configured. When not, Authorize
// and AuthorizeTemp allow everything.
func (s *Service) Authorizing() bool { return s.authz != nil }

// Generation counts the versions of the users: it starts at 1 and grows each time
// the users or groups files are re-read. The caches of credentials and
// authorization decisions belong to one generation.
func (s *Service) Generation() uint64 { return s.gen.Load() }

// Stats returns the counters. LoginsFailed counts every failed login, the throttled
// ones (LoginsThrottled) among them.
func (s *Service) Stats() Stats {
	return Stats{
		LoginsOK:          s.stats.ok.Load(),
		LoginsFailed:      s.stats.failed.Load(),
		LoginsThrottled:   s.stats.throttled.Load(),
		Denied:            s.stats.denied.Load(),
		CacheHits:         s.stats.hits.Load(),
		CacheMisses:       s.stats.misses.Load(),
		Reloads:           s.stats.reloads.Load(),
		HashVerifications: s.hashVerifies.Load(),
	}
}

// Close ends the failure delays under way (those Authenticate calls return
// ErrInvalidCredentials at once, as do later failures) and logs the failed logins the
// rate limit kept out of the log. The Service still answers afterwards.
func (s *Service) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		s.failLog.flush()
	})
	return nil
}

// realSleep waits d, or less if ctx ends or the Service closes.
func (s *Service) realSleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
