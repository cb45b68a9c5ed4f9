// Package security authenticates STOMP clients and authorizes what they do, the way
// ActiveMQ's simpleAuthenticationPlugin, jaasAuthenticationPlugin (PropertiesLoginModule,
// TextFileCertificateLoginModule) and authorizationPlugin do.
//
// It is a leaf: it knows users, groups, password hashes, ActiveMQ's properties files,
// certificate subject DNs and the authorization map with ActiveMQ's wildcards; it knows
// no STOMP, no HTTP and nothing of the broker. The broker asks it "who is this" once per
// CONNECT and "may this subject read/write/admin this destination" per request.
package security

import (
	"crypto/x509"
	"errors"
	"time"
)

// Rights are what a subject may do with a destination, ActiveMQ's read, write and admin.
type Rights uint8

const (
	// Read is SUBSCRIBE and browse.
	Read Rights = 1 << iota
	// Write is SEND.
	Write
	// Admin is creating a destination that does not exist yet (auto-creation on
	// first use) and removing one.
	Admin
)

// Kind is the kind of destination an authorization entry or check is about.
type Kind uint8

const (
	Queue Kind = iota
	Topic
)

// Defaults.
const (
	DefaultAnonymousUser  = "anonymous"
	DefaultAnonymousGroup = "anonymous"
	DefaultAdminGroup     = "admins"
	// DefaultBcryptCost is the cost `broker passwd` hashes with.
	DefaultBcryptCost = 10
	// DefaultFailureDelay is the delay before the ERROR of a first failed login from
	// an address; it doubles with each further failure up to DefaultMaxFailureDelay.
	DefaultFailureDelay    = 100 * time.Millisecond
	DefaultMaxFailureDelay = 5 * time.Second
	// DefaultMaxDelayedPerAddress bounds the connections of one address waiting out a
	// failure delay at once; more are closed without an answer.
	DefaultMaxDelayedPerAddress = 32
)

// ErrInvalidCredentials is a failed login: unknown user, wrong passcode, no
// credentials where they are required, or a certificate whose DN is unknown.
var ErrInvalidCredentials = errors.New("security: invalid credentials")

// ErrThrottled is a failed login from an address that already has
// MaxDelayedPerAddress failed logins waiting out their delay.
var ErrThrottled = errors.New("security: too many failed logins from this address")

// Config is the plugins section, as the broker's configuration gives it.
type Config struct {
	// Authentication is on when any user source is given (Users, JAAS or
	// CertificateUsers); otherwise every client is let in as Anonymous.
	AnonymousAccessAllowed bool
	AnonymousUser          string // default DefaultAnonymousUser
	AnonymousGroup         string // default DefaultAnonymousGroup

	Users            []User     // simpleAuthentication users
	JAAS             *JAASFiles // ActiveMQ's PropertiesLoginModule files
	CertificateUsers *CertificateUsers

	// Authorization is on when Entries is not nil (an empty list denies everything
	// but temporary destinations, as an empty authorizationMap does).
	Entries []Entry
	// Temp is the tempDestinationAuthorizationEntry; nil lets every authenticated
	// subject write to temporary destinations (reading stays the creating
	// connection's).
	Temp *Entry

	// AdminGroups may use the admin HTTP listener; default [DefaultAdminGroup].
	AdminGroups []string
	// MaxConnectionsPerUser bounds each user's live connections; 0 no limit. A
	// User's MaxConnections overrides it for that user.
	MaxConnectionsPerUser int
	// MaxDestinationsPerUser bounds the queues and topics each user's SENDs and
	// SUBSCRIBEs create, MaxDurableSubscriptionsPerUser the durable subscriptions it
	// creates (counted while they exist); 0 no limit.
	MaxDestinationsPerUser         int
	MaxDurableSubscriptionsPerUser int
	// MaxUnackedBytesPerUser bounds the bytes of queue messages dispatched to each
	// user's consumers and not yet acknowledged; 0 no limit.
	MaxUnackedBytesPerUser int64

	FailureDelay         time.Duration // default DefaultFailureDelay; negative: no delays
	MaxFailureDelay      time.Duration // default DefaultMaxFailureDelay
	MaxDelayedPerAddress int           // default DefaultMaxDelayedPerAddress
}

// User is one simpleAuthentication user: exactly one of Password (plain text, as
// ActiveMQ's files hold them) and PasswordHash (bcrypt "$2a$/$2b$/$2y$..." or
// argon2id "$argon2id$v=19$m=...,t=...,p=...$salt$hash") is set.
type User struct {
	Name           string
	Password       string
	PasswordHash   string
	Groups         []string
	MaxConnections int // 0: Config.MaxConnectionsPerUser
}

// JAASFiles are ActiveMQ's PropertiesLoginModule files: users ("user=password", a
// password may also be a bcrypt or argon2id hash) and groups ("group=user1,user2").
// With Reload they are re-read when they change, without a restart.
type JAASFiles struct {
	Users, Groups string
	Reload        bool
}

// CertificateUsers maps a TLS client certificate's subject DN to a user, as ActiveMQ's
// TextFileCertificateLoginModule: File holds "user=DN" lines; the user's groups are
// those the other sources give that name (simpleAuthentication users, the JAAS groups
// file) plus those of Groups, a "group=user1,user2" file, when set.
type CertificateUsers struct {
	File   string
	Groups string
	Reload bool
}

// Entry is one authorizationEntry: a queue or topic pattern with ActiveMQ's
// wildcards ('.' separates elements, '*' is one element, '>' the rest, zero or
// more), and the groups holding each right ("*" is every group).
type Entry struct {
	Kind               Kind
	Pattern            string
	Read, Write, Admin []string
}

// Credentials are what a client presents when it connects.
type Credentials struct {
	Login, Passcode string
	// HasLogin is set when the CONNECT frame had a login header (even empty).
	HasLogin bool
	// RemoteAddr is the client's address ("host:port"); failures are throttled per host.
	RemoteAddr string
	// PeerCertificates are the verified TLS client certificate chain, leaf first;
	// empty for plain connections or when the client sent none.
	PeerCertificates []*x509.Certificate
}

// Subject is an authenticated user.
type Subject struct {
	User      string
	Groups    []string // sorted, without duplicates
	Anonymous bool
	// Quotas are this user's share of the broker, shared by its connections: none
	// without authentication, where every login is unverified.
	Quotas
	// ByCertificate is set when the TLS client certificate named the user.
	ByCertificate bool
}

// Quotas are what one user may make the broker hold at once, across its connections;
// 0 is no limit.
type Quotas struct {
	MaxConnections          int // live connections
	MaxDestinations         int // queues and topics its SENDs and SUBSCRIBEs created
	MaxDurableSubscriptions int // durable subscriptions it created
	// MaxUnackedBytes bounds the queue messages dispatched to its consumers and not
	// yet acknowledged (auto-acknowledged ones until written): past it, they get no more.
	MaxUnackedBytes int64
}

// Stats are counters for the admin listener and the log.
type Stats struct {
	LoginsOK, LoginsFailed, LoginsThrottled uint64
	Denied                                  uint64 // Authorize answers false
	CacheHits, CacheMisses                  uint64 // verified-credentials cache
	Reloads                                 uint64 // users/groups files re-read
	// HashVerifications counts the bcrypt and argon2id verifications of logins: a
	// failed login runs one per hash cost in use, whatever the user.
	HashVerifications uint64
}

// The Service's methods, implemented in the other files of this package:
//
//	func New(cfg Config, log *slog.Logger) (*Service, error)
//	func (s *Service) Authenticating() bool
//	func (s *Service) Authorizing() bool
//	func (s *Service) Authenticate(ctx context.Context, c Credentials) (*Subject, error)
//	func (s *Service) SubjectOf(user string) *Subject
//	func (s *Service) Authorize(sub *Subject, kind Kind, name string, r Rights) bool
//	func (s *Service) AuthorizeTemp(sub *Subject, r Rights) bool
//	func (s *Service) IsAdmin(sub *Subject) bool
//	func (s *Service) Generation() uint64
//	func (s *Service) Stats() Stats
//	func (s *Service) Close() error
//	func FailureMessage(login string) string
//	func HashPassword(password string) (string, error)
