package config

import (
	"net"
	"strconv"
)

const adminAddressAllowed = `host:port, e.g. 127.0.0.1:8161 (":8161" listens on loopback, 0.0.0.0:8161 everywhere), or "" for no admin listener`

// buildAdmin settles the admin listener's keys and their older names: broker.adminAddress
// (or, when only it is set, broker.statsAddress) and broker.adminGroups (or, when it is
// not set, plugins.adminGroups).
func (c *checker) buildAdmin(b *Broker, p *Plugins) *Error {
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
	return nil
}
