package config

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
)

// DefaultCipherSuites are the TLS 1.2 cipher suites every TLS listener offers
// unless sslContext.enabledCipherSuites or a connector's
// transport.enabledCipherSuites says otherwise: ECDHE key exchange with an AEAD
// cipher (AES-GCM, ChaCha20-Poly1305) only. Go's own defaults add the CBC-SHA1
// suites, which ActiveMQ's JVM has disabled for years. TLS 1.3 connections are not
// affected: their suites are all AEAD and cannot be chosen.
var DefaultCipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

const cipherSuitesAllowed = `TLS cipher suite names (IANA's, as Go and Java spell them; Java's "SSL_" prefix ` +
	`is read as "TLS_"), comma-separated, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA; ` +
	`TLS 1.3 suites are accepted and always on; naming only TLS 1.3 suites turns TLS 1.2 off`

// parseCipherSuites reads a list of suite names into the TLS 1.2 suites they
// name, in order, without repeats. TLS 1.3 names are accepted and dropped (Go
// always enables every TLS 1.3 suite), so a list of TLS 1.3 names only gives an
// empty, non-nil list: TLS 1.3 only. An unknown name is an error naming it.
func parseCipherSuites(names []string) ([]uint16, *Error) {
	known := map[string]*tls.CipherSuite{}
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		known[s.Name] = s
	}
	out := []uint16{}
	named := false
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		named = true
		key := strings.ToUpper(n)
		if rest, ok := strings.CutPrefix(key, "SSL_"); ok {
			key = "TLS_" + rest
		}
		s := known[key]
		if s == nil {
			return nil, &Error{Problem: fmt.Sprintf("unknown cipher suite %q", n), Allowed: cipherSuitesAllowed}
		}
		if !slices.Contains(s.SupportedVersions, tls.VersionTLS12) {
			continue // a TLS 1.3 suite: always enabled
		}
		if !slices.Contains(out, s.ID) {
			out = append(out, s.ID)
		}
	}
	if !named {
		return nil, &Error{Problem: "no cipher suite named (leave the option out for the default AEAD suites)",
			Allowed: cipherSuitesAllowed}
	}
	return out, nil
}

// cipherSuitesOption is a connector's transport.enabledCipherSuites.
func cipherSuitesOption(c *Connector, v string) *Error {
	ids, err := parseCipherSuites(strings.Split(v, ","))
	c.CipherSuites = ids
	return err
}

// applyCipherSuites sets the TLS 1.2 suites of tc: ids, or DefaultCipherSuites
// when ids is nil; an empty ids turns TLS 1.2 off.
func applyCipherSuites(tc *tls.Config, ids []uint16) {
	switch {
	case ids == nil:
		tc.CipherSuites = slices.Clone(DefaultCipherSuites)
	case len(ids) == 0:
		tc.CipherSuites, tc.MinVersion = nil, tls.VersionTLS13
	default:
		tc.CipherSuites, tc.MinVersion = slices.Clone(ids), tls.VersionTLS12
	}
}

// ConnectorTLS returns the TLS configuration of connector c: ServerTLS with c's
// client-certificate check and, when c has transport.enabledCipherSuites, those
// suites. It returns nil when no certificate is loaded.
func (s SSLContext) ConnectorTLS(c Connector) *tls.Config {
	tc := s.ServerTLS(c.ClientAuth)
	if tc != nil && c.CipherSuites != nil {
		applyCipherSuites(tc, c.CipherSuites)
	}
	return tc
}
