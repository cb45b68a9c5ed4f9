// Package allowedhosts decides which Host headers an HTTP listener (the admin
// listener, a WebSocket connector) serves: the defence against DNS rebinding. A
// page of a name an attacker controls, whose DNS answers first with the attacker's
// address and then with the broker's (127.0.0.1, an address on the operator's
// network), is same-origin with the broker as far as the browser knows: its
// requests carry an Origin equal to their Host, so no Origin check refuses them,
// and their answers are readable to the page. They still name the attacker's name
// in Host, which is what is checked here.
//
// A listener serves a Host that is
//   - an IP address, any: a page reaches the listener by address only from the
//     listener's own origin (an address cannot be rebound);
//   - localhost (browsers resolve it to loopback themselves);
//   - when it listens on every interface (0.0.0.0, ::), the machine's host name;
//   - a name matching one of the configured patterns: host names matched
//     case-insensitively with path.Match ("*.example.com"), "*" for any Host.
//
// The port is not compared: proxies and port mappings change it.
package allowedhosts

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path"
	"strings"
)

// Allowed describes the patterns' syntax, for configuration errors.
const Allowed = `host names separated by ",", matched case-insensitively with path.Match ("*.example.com"), ` +
	`no port; "*" for any Host (no check)`

// Hosts is what one listener serves. Its zero value serves addresses and localhost.
type Hosts struct {
	any      bool
	names    map[string]bool // exact names, lower case
	patterns []string        // globs, lower case
}

// Check reports what is wrong with a pattern, or nil.
func Check(pattern string) error {
	p := strings.TrimSpace(pattern)
	switch {
	case p == "":
		return fmt.Errorf("empty pattern")
	case strings.ContainsAny(p, "/?#@ "):
		return fmt.Errorf("pattern %q is not a host name: a Host is a name or an address, with no scheme or path", p)
	case strings.Contains(p, ":") && !isAddr(p):
		return fmt.Errorf("pattern %q has a port: ports are not compared, write the name alone", p)
	}
	if _, err := path.Match(strings.ToLower(p), ""); err != nil {
		return fmt.Errorf("malformed pattern %q", p)
	}
	return nil
}

// New returns what a listener bound to bound serves with patterns (each passed
// Check) besides the defaults.
func New(patterns []string, bound net.Addr) *Hosts {
	h := &Hosts{names: map[string]bool{}}
	if ta, ok := bound.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		if name, err := os.Hostname(); err == nil && name != "" {
			h.names[strings.ToLower(name)] = true
		}
	}
	for _, p := range patterns {
		p = strings.ToLower(strings.TrimSpace(p))
		switch {
		case p == "*":
			h.any = true
		case strings.ContainsAny(p, `*?[\`):
			h.patterns = append(h.patterns, p)
		default:
			h.names[p] = true
		}
	}
	return h
}

// Allow reports whether a request whose Host header is host is served. An empty
// Host (an HTTP/1.0 client, never a browser) is.
func (h *Hosts) Allow(host string) bool {
	name := Name(host)
	if h.any || name == "" || name == "localhost" || isAddr(name) {
		return true
	}
	if h.names[name] {
		return true
	}
	for _, p := range h.patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// Name is the host name of a Host header: without its port and the brackets of an
// IPv6 address, without a final dot, lower case.
func Name(host string) string {
	name := host
	if n, _, err := net.SplitHostPort(host); err == nil {
		name = n
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	return strings.ToLower(strings.TrimSuffix(name, "."))
}

func isAddr(s string) bool {
	_, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	return err == nil
}
