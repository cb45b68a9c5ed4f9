package config

import (
	"crypto/tls"
	"net"
	"strconv"
)

const adminAddressAllowed = `host:port, e.g. 127.0.0.1:8161 (":8161" listens on loopback, 0.0.0.0:8161 everywhere), or "" for no admin listener`

// adminClientAuths maps broker.adminClientAuth's values to what the TLS listener asks;
// "" (the default) is none.
var adminClientAuths = map[string]tls.ClientAuthType{
	"":     tls.NoClientCert,
	"none": tls.NoClientCert,
	"want": tls.VerifyClientCertIfGiven,
	"need": tls.RequireAndVerifyClientCert,
}

// AdminTLSConfig returns the TLS configuration of the admin listener (the TLS
// connectors' certificate, with broker.adminClientAuth), or nil without
// broker.adminTLS.
func (c *Config) AdminTLSConfig() *tls.Config {
	if !c.Broker.AdminTLS {
		return nil
	}
	return c.SSLContext.ServerTLS(adminClientAuths[c.Broker.AdminClientAuth])
}

// buildAdmin settles the admin listener's keys and their older names: broker.adminAddress
// (or, when only it is set, broker.statsAddress) and broker.adminGroups (or, when it is
// not set, plugins.adminGroups); it checks the Host names and that HTTPS has the
// certificate (and the client CAs) of ssl.
func (c *checker) buildAdmin(b *Broker, p *Plugins, ssl SSLContext) *Error {
	const addrKey, statsKey = "broker.adminAddress", "broker.statsAddress"
	adminGiven, statsGiven := c.given(addrKey), c.given(statsKey)
	switch {
	case adminGiven && statsGiven && b.AdminAddress != b.StatsAddress:
		return c.invalid(statsKey, "is the older name of broker.adminAddress, which is set to "+strconv.Quote(b.AdminAddress),
			"one of the two keys")
	case !adminGiven && statsGiven:
		b.AdminAddress = b.StatsAddress
	}
	key := addrKey
	if !adminGiven && statsGiven {
		key = statsKey
	}
	if b.AdminAddress != "" {
		_, port, err := net.SplitHostPort(b.AdminAddress)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
			return c.invalid(key, "not a listen address", adminAddressAllowed)
		}
	}
	b.StatsAddress = b.AdminAddress

	if c.given("broker.adminGroups") {
		if len(b.AdminGroups) == 0 {
			return c.invalid("broker.adminGroups", "must name at least one group", namesAllowed)
		}
		p.AdminGroups = append([]string(nil), b.AdminGroups...)
	}
	b.AdminGroups = append(Names(nil), p.AdminGroups...)

	hosts, err := hostPatterns(b.AdminAllowedHosts)
	if err != nil {
		err.Key = "broker.adminAllowedHosts"
		return c.from.annotate(err)
	}
	b.AdminAllowedHosts = hosts
	return c.buildAdminTLS(b, ssl)
}

// buildAdminTLS checks broker.adminTLS and broker.adminClientAuth against ssl.
func (c *checker) buildAdminTLS(b *Broker, ssl SSLContext) *Error {
	const authKey = "broker.adminClientAuth"
	auth, ok := adminClientAuths[b.AdminClientAuth]
	switch {
	case !ok:
		return c.invalid(authKey, "unknown value", "none, want (wantClientAuth) or need (needClientAuth)")
	case auth != tls.NoClientCert && !b.AdminTLS:
		return c.invalid(authKey, "asks for client certificates of an admin listener without TLS",
			"broker.adminTLS: true with it, or none")
	case auth != tls.NoClientCert && ssl.ClientCAs == nil:
		return c.invalid(authKey, "needs sslContext.clientCAFile to verify client certificates",
			"sslContext: {clientCAFile: ca.pem} (a PEM CA bundle), or none")
	case b.AdminTLS && ssl.Certificate == nil:
		return c.invalid("broker.adminTLS", "needs the certificate of the sslContext section",
			"sslContext: {certFile: ./conf/broker-cert.pem, keyFile: ./conf/broker-key.pem}, or false")
	}
	return nil
}
