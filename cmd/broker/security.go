package main

import (
	"log/slog"
	"net"

	"github.com/activemq-go/broker/config"
	"github.com/activemq-go/broker/security"
)

// newSecurity builds the security service of the plugins section; nil when the section
// neither authenticates nor authorizes (the broker is open, as ActiveMQ without
// plugins).
func newSecurity(cfg *config.Config, log *slog.Logger) (*security.Service, error) {
	p := cfg.Plugins
	sc := security.Config{
		AnonymousAccessAllowed:         p.AnonymousAccessAllowed,
		AnonymousUser:                  p.AnonymousUser,
		AnonymousGroup:                 p.AnonymousGroup,
		AdminGroups:                    p.AdminGroups,
		MaxConnectionsPerUser:          p.MaxConnectionsPerUser,
		MaxDestinationsPerUser:         p.MaxDestinationsPerUser,
		MaxDurableSubscriptionsPerUser: p.MaxDurableSubscriptionsPerUser,
		MaxUnackedBytesPerUser:         p.MaxUnackedBytesPerUser,
		FailureDelay:                   p.LoginFailureDelay,
		MaxFailureDelay:                p.MaxLoginFailureDelay,
	}
	for _, u := range p.Users {
		sc.Users = append(sc.Users, security.User{Name: u.Username, Password: u.Password, PasswordHash: u.PasswordHash,
			Groups: u.Groups, MaxConnections: u.MaxConnections})
	}
	if j := p.JAAS; j != nil {
		sc.JAAS = &security.JAASFiles{Users: j.Users, Groups: j.Groups, Reload: j.Reload}
	}
	if c := p.CertificateUsers; c != nil {
		sc.CertificateUsers = &security.CertificateUsers{File: c.File, Groups: c.Groups, Reload: c.Reload}
	}
	if a := p.Authorization; a != nil {
		sc.Entries = []security.Entry{}
		for _, e := range a.Entries {
			kind := security.Queue
			if e.Topic {
				kind = security.Topic
			}
			sc.Entries = append(sc.Entries, security.Entry{Kind: kind, Pattern: e.Pattern, Read: e.Read, Write: e.Write, Admin: e.Admin})
		}
		if t := a.TempDestination; t != nil {
			sc.Temp = &security.Entry{Read: t.Read, Write: t.Write, Admin: t.Admin}
		}
	}
	if sc.Users == nil && sc.JAAS == nil && sc.CertificateUsers == nil && sc.Entries == nil {
		return nil, nil
	}
	return security.New(sc, log)
}

// warnOpenConnectors logs a warning for each connector that listens beyond loopback
// while the broker authenticates no one.
func warnOpenConnectors(cfg *config.Config, sec *security.Service, log *slog.Logger) {
	if sec != nil && sec.Authenticating() {
		return
	}
	for _, c := range cfg.TransportConnectors {
		if !loopbackOnly(c.Addr) {
			log.Warn("connector listens beyond loopback and the broker has no authentication: anyone who reaches it can read and write every destination (configure plugins.simpleAuthentication or plugins.jaasProperties)",
				slog.String("connector", c.Name), slog.String("addr", c.Addr))
		}
	}
}

// loopbackOnly reports whether a listen address reaches loopback only.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
