package config

import (
	"crypto/tls"
	"fmt"
	"math"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/activemq-go/broker/internal/allowedhosts"
	"github.com/activemq-go/broker/internal/setting"
)

// transportKind is the protocol of a connector scheme and how it is carried.
type transportKind struct {
	tls       bool // TLS, with the certificate of the sslContext section
	webSocket bool // STOMP over WebSocket (an HTTP upgrade)
	openWire  bool // OpenWire, ActiveMQ's own protocol (its Java client)
}

// schemes maps each accepted connector URI scheme to how it carries STOMP. The
// "nio" variants are ActiveMQ's NIO connectors: the same protocol, and Go has one
// I/O model.
var schemes = map[string]transportKind{
	"stomp":         {},
	"stomp+nio":     {},
	"stomp+ssl":     {tls: true},
	"stomp+nio+ssl": {tls: true},
	"ws":            {webSocket: true},
	"wss":           {tls: true, webSocket: true},
	"tcp":           {openWire: true},
	"nio":           {openWire: true},
	"ssl":           {tls: true, openWire: true},
	"nio+ssl":       {tls: true, openWire: true},
}

const schemesAllowed = "stomp, stomp+nio, stomp+ssl, stomp+nio+ssl, ws, wss (STOMP); tcp, nio, ssl, nio+ssl (OpenWire)"

// schemeHints explain schemes that a migrated activemq.xml often carries.
var schemeHints = map[string]string{
	"auto": "auto:// detects OpenWire, AMQP and MQTT too; use stomp:// for STOMP and tcp:// for OpenWire",
}

// connectorOption is one query option of a connector URI.
type connectorOption struct {
	names []string // accepted spellings, ActiveMQ's first; matched case-insensitively
	set   func(c *Connector, value string) *Error
}

// connectorOptions are the query options a connector URI may carry. Unlike
// ActiveMQ, which ignores options it does not know (a misspelt or wrongly
// prefixed one silently does nothing), any other option is an error.
var connectorOptions = []connectorOption{
	{[]string{"maximumConnections", "maxConnections"}, func(c *Connector, v string) *Error {
		n, err := intOption(v, 1, math.MaxInt32)
		c.MaxConnections = n
		return err
	}},
	{[]string{"wireFormat.maxFrameSize", "maxFrameSize"}, func(c *Connector, v string) *Error {
		n, err := sizeOption(v, 1024, math.MaxInt64)
		c.MaxFrameSize = n
		return err
	}},
	{[]string{"maxFrameSizeBeforeLogin"}, func(c *Connector, v string) *Error {
		n, err := sizeOption(v, 1024, math.MaxInt64)
		c.MaxFrameSizeBeforeLogin = n
		return err
	}},
	{[]string{"wireFormat.maxDataLength"}, func(c *Connector, v string) *Error {
		n, err := sizeOption(v, 1, math.MaxInt64)
		c.MaxDataLength = n
		return err
	}},
	{[]string{"wireFormat.maxHeaders", "maxHeaders"}, func(c *Connector, v string) *Error {
		n, err := intOption(v, 1, math.MaxInt32)
		c.MaxHeaders = n
		return err
	}},
	{[]string{"wireFormat.maxHeaderLength", "maxHeaderLength"}, func(c *Connector, v string) *Error {
		n, err := sizeOption(v, 1, math.MaxInt32)
		c.MaxHeaderLength = int(n)
		return err
	}},
	{[]string{"wireFormat.maxInactivityDuration", "maxInactivityDuration"}, func(c *Connector, v string) *Error {
		d, err := durationOption(v)
		c.MaxInactivityDuration = d
		return err
	}},
	{[]string{"wireFormat.maxInactivityDurationInitalDelay", "wireFormat.maxInactivityDurationInitialDelay", "maxInactivityDurationInitalDelay"}, func(c *Connector, v string) *Error {
		d, err := durationOption(v)
		c.MaxInactivityInitialDelay = d
		return err
	}},
	{[]string{"transport.connectAttemptTimeout", "connectTimeout"}, func(c *Connector, v string) *Error {
		d, err := durationOption(v)
		c.ConnectTimeout = d
		return err
	}},
	{[]string{"transport.hbGracePeriodMultiplier", "hbGracePeriodMultiplier"}, func(c *Connector, v string) *Error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return &Error{Problem: "not a number", Allowed: "a decimal number >= 1.0, e.g. 1.5"}
		}
		if f < 1 {
			return &Error{Problem: "must be at least 1.0", Allowed: "a decimal number >= 1.0, e.g. 1.5"}
		}
		c.HeartBeatGrace = f
		return nil
	}},
	{[]string{"transport.needClientAuth", "needClientAuth"}, func(c *Connector, v string) *Error {
		return clientAuthOption(c, v, tls.RequireAndVerifyClientCert)
	}},
	{[]string{"transport.wantClientAuth", "wantClientAuth"}, func(c *Connector, v string) *Error {
		return clientAuthOption(c, v, tls.VerifyClientCertIfGiven)
	}},
	{[]string{"transport.defaultHeartBeat"}, func(c *Connector, v string) *Error {
		const allowed = `"x,y": two durations (integers are milliseconds) >= 0, e.g. 5000,0`
		xs, ys, ok := strings.Cut(v, ",")
		if !ok {
			return &Error{Problem: "not a heart-beat pair", Allowed: allowed}
		}
		for i, s := range []string{xs, ys} {
			d, err := setting.ParseDuration(s)
			if err != nil {
				return &Error{Problem: "not a heart-beat pair", Allowed: allowed}
			}
			if d < 0 {
				return &Error{Problem: "heart-beat must not be negative", Allowed: allowed}
			}
			c.DefaultHeartBeat[i] = d
		}
		return nil
	}},
	{[]string{"allowedOrigins"}, allowedOriginsOption},
	{[]string{"transport.enabledCipherSuites", "enabledCipherSuites"}, cipherSuitesOption},
	{[]string{"allowedHosts"}, allowedHostsOption},
}

// optionsAllowed lists every accepted option name.
func optionsAllowed() string {
	var names []string
	for _, o := range connectorOptions {
		names = append(names, o.names...)
	}
	return strings.Join(names, ", ")
}

// findOption finds an option by any of its names, case-insensitively.
func findOption(name string) (*connectorOption, string) {
	for i := range connectorOptions {
		for _, n := range connectorOptions[i].names {
			if strings.EqualFold(n, name) {
				return &connectorOptions[i], n
			}
		}
	}
	return nil, ""
}

// suggestOption finds the option whose name, without its prefix, matches name's:
// transport.maxFrameSize -> wireFormat.maxFrameSize.
func suggestOption(name string) string {
	base := name[strings.LastIndexByte(name, '.')+1:]
	for _, o := range connectorOptions {
		n := o.names[0]
		if strings.EqualFold(n[strings.LastIndexByte(n, '.')+1:], base) {
			return n
		}
	}
	var names []string
	for _, o := range connectorOptions {
		names = append(names, o.names...)
	}
	return setting.Suggest(name, names)
}

// newConnector returns a connector with every limit at its default.
func newConnector() Connector {
	return Connector{
		MaxConnections:          DefaultMaxConnections,
		MaxFrameSize:            DefaultMaxFrameSize,
		MaxDataLength:           DefaultMaxDataLength,
		MaxFrameSizeBeforeLogin: DefaultMaxFrameSizeBeforeLogin,
		MaxHeaders:              DefaultMaxHeaders,
		MaxHeaderLength:         DefaultMaxHeaderLength,
		ConnectTimeout:          DefaultConnectTimeout,
		HeartBeatGrace:          DefaultHeartBeatGrace,
	}
}

// buildConnectors validates the transportConnectors section: at least one
// connector, each with a unique name and a valid uri.
func (c *checker) buildConnectors(entries []connectorEntry) ([]Connector, *Error) {
	const path = "transportConnectors"
	if len(entries) == 0 {
		return nil, c.errorf(path, nil, "at least one connector is required",
			"a list of {name, uri}, e.g. - {name: stomp, uri: \"stomp://0.0.0.0:61613\"}")
	}
	out := make([]Connector, 0, len(entries))
	names := map[string]int{}
	for i, e := range entries {
		at := joinIndex(path, i)
		if strings.TrimSpace(e.Name) == "" {
			return nil, c.errorf(joinKey(at, "name"), nil, "missing connector name", "any unique name, e.g. stomp")
		}
		if j, dup := names[e.Name]; dup {
			return nil, c.errorf(joinKey(at, "name"), e.Name,
				fmt.Sprintf("duplicate connector name (also %s)", joinIndex(path, j)), "a name not used by another connector")
		}
		names[e.Name] = i
		if strings.TrimSpace(e.URI) == "" {
			return nil, c.errorf(joinKey(at, "uri"), nil, "missing connector uri", "e.g. stomp://0.0.0.0:61613")
		}
		conn, err := parseConnectorURI(e.URI)
		if err != nil {
			err.Key = joinKey(at, "uri")
			return nil, c.from.annotate(err)
		}
		conn.Name = e.Name
		out = append(out, conn)
	}
	return out, nil
}

// parseConnectorURI parses scheme://host:port?option=value&... into a connector
// (without a name). "&amp;", as copied from activemq.xml, is read as "&". The
// returned error has no Key.
func parseConnectorURI(raw string) (Connector, *Error) {
	c := newConnector()
	c.URI = raw
	const uriAllowed = "scheme://host:port?option=value&..., e.g. stomp://0.0.0.0:61613?maxFrameSize=10mb"
	fail := func(problem, allowed string) (Connector, *Error) {
		return Connector{}, newError("", raw, problem, allowed)
	}
	u, err := url.Parse(strings.ReplaceAll(strings.TrimSpace(raw), "&amp;", "&"))
	if err != nil {
		if strings.Contains(err.Error(), "invalid port") {
			return fail("bad port", "a port number 0 to 65535 (0 picks a free port)")
		}
		return fail("malformed URI", uriAllowed)
	}
	if u.Scheme == "" || u.Opaque != "" || (u.Host == "" && u.User == nil) {
		return fail("malformed URI", uriAllowed)
	}
	scheme, ok := schemes[u.Scheme]
	if !ok {
		problem := fmt.Sprintf("unknown scheme %q", u.Scheme)
		if hint := schemeHints[u.Scheme]; hint != "" {
			problem += ": " + hint
		}
		return fail(problem, schemesAllowed)
	}
	c.Scheme, c.TLS, c.WebSocket, c.OpenWire = "stomp", scheme.tls, scheme.webSocket, scheme.openWire
	if c.OpenWire {
		c.Scheme, c.MaxFrameSize = "openwire", DefaultOpenWireMaxFrameSize
		c.MaxInactivityDuration, c.MaxInactivityInitialDelay = DefaultMaxInactivityDuration, DefaultMaxInactivityDurationInitialDelay
	}
	if u.User != nil {
		return fail("a connector URI takes no user or password; configure users in the broker", uriAllowed)
	}
	if (u.Path != "" && u.Path != "/") || u.Fragment != "" {
		return fail("unexpected path or fragment after host:port", uriAllowed)
	}
	port := u.Port()
	if port == "" {
		return fail("missing port", "host:port with a port number 0 to 65535 (0 picks a free port)")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fail("bad port", "a port number 0 to 65535 (0 picks a free port)")
	}
	c.Addr = net.JoinHostPort(u.Hostname(), port)
	if err := applyOptions(&c, u.RawQuery); err != nil {
		return Connector{}, err
	}
	c.MaxFrameSizeBeforeLogin = min(c.MaxFrameSizeBeforeLogin, c.MaxFrameSize)
	if c.ClientAuth != tls.NoClientCert && !c.TLS {
		return fail("needClientAuth and wantClientAuth apply to TLS connectors only",
			"stomp+ssl://, stomp+nio+ssl:// or wss:// with the option, or no option")
	}
	if c.CipherSuites != nil && !c.TLS {
		return fail("enabledCipherSuites applies to TLS connectors only",
			"stomp+ssl://, stomp+nio+ssl://, wss://, ssl:// or nio+ssl:// with the option, or no option")
	}
	if c.AllowedOrigins != nil && !c.WebSocket {
		return fail("allowedOrigins applies to WebSocket connectors only: browsers send Origin",
			"ws:// or wss:// with the option, or no option")
	}
	if c.AllowedHosts != nil && !c.WebSocket {
		return fail("allowedHosts applies to WebSocket connectors only: browsers send Host over HTTP",
			"ws:// or wss:// with the option, or no option")
	}
	return c, nil
}

const originsAllowed = `Origin host patterns separated by ",": host or host:port, matched case-insensitively ` +
	`with path.Match ("*.example.com:8443"), "*" for any, or scheme://host to match the scheme too`

// allowedOriginsOption sets the Origin patterns of a WebSocket connector, as
// coder/websocket's AcceptOptions.OriginPatterns takes them.
func allowedOriginsOption(c *Connector, v string) *Error {
	var patterns []string
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if _, err := path.Match(strings.ToLower(p), ""); err != nil {
			return &Error{Problem: fmt.Sprintf("malformed pattern %q", p), Allowed: originsAllowed}
		}
		host := p
		if scheme, rest, ok := strings.Cut(p, "://"); ok {
			if scheme == "" {
				return &Error{Problem: fmt.Sprintf("pattern %q has an empty scheme", p), Allowed: originsAllowed}
			}
			host = rest
		}
		if host == "" || strings.ContainsAny(host, "/?#@") {
			return &Error{Problem: fmt.Sprintf("pattern %q is not a host: an Origin is scheme://host[:port], with no path", p),
				Allowed: originsAllowed}
		}
		patterns = append(patterns, p)
	}
	if len(patterns) == 0 {
		return &Error{Problem: "no pattern (leave the option out to accept pages of the connector's own host only)",
			Allowed: originsAllowed}
	}
	c.AllowedOrigins = patterns
	return nil
}

// allowedHostsOption sets the Host names a WebSocket connector serves besides
// its defaults (package allowedhosts).
func allowedHostsOption(c *Connector, v string) *Error {
	hosts, err := hostPatterns(strings.Split(v, ","))
	if err != nil {
		return err
	}
	if len(hosts) == 0 {
		return &Error{Problem: "no host name (leave the option out to serve the connector's addresses and localhost only)",
			Allowed: allowedhosts.Allowed}
	}
	c.AllowedHosts = hosts
	return nil
}

// hostPatterns checks Host name patterns (allowedHosts, broker.adminAllowedHosts)
// and returns them trimmed, without empty ones.
func hostPatterns(list []string) ([]string, *Error) {
	var out []string
	for _, p := range list {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if err := allowedhosts.Check(p); err != nil {
			return nil, &Error{Problem: err.Error(), Allowed: allowedhosts.Allowed}
		}
		out = append(out, p)
	}
	return out, nil
}

// clientAuthOption sets a client-certificate option: true asks for auth (need
// wins over want, as in ActiveMQ), false leaves the connector as it is.
func clientAuthOption(c *Connector, v string, auth tls.ClientAuthType) *Error {
	on, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return &Error{Problem: "not a boolean", Allowed: "true, false"}
	}
	if on && c.ClientAuth != tls.RequireAndVerifyClientCert {
		c.ClientAuth = auth
	}
	return nil
}

// applyOptions sets the connector's limits from the URI's query.
func applyOptions(c *Connector, query string) *Error {
	seen := map[*connectorOption]string{}
	for _, part := range strings.Split(query, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		name, err1 := url.QueryUnescape(k)
		value, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return newError("", part, "malformed query option", "option=value pairs joined by &")
		}
		opt, canonical := findOption(name)
		if opt == nil {
			problem := fmt.Sprintf("unknown option %q", name)
			if s := suggestOption(name); s != "" {
				problem += fmt.Sprintf(" (did you mean %s?)", s)
			}
			return newError("", part, problem, optionsAllowed())
		}
		if prev, dup := seen[opt]; dup {
			return newError("", part, fmt.Sprintf("option %s is given twice (also as %s)", canonical, prev), "")
		}
		seen[opt] = canonical
		if err := opt.set(c, value); err != nil {
			err.Problem = fmt.Sprintf("option %s: %s", canonical, err.Problem)
			err.Value = setting.Redact(part)
			return err
		}
	}
	return nil
}

// intOption parses a plain integer in [lo, hi].
func intOption(v string, lo, hi int64) (int, *Error) {
	allowed := fmt.Sprintf("an integer from %d to %d", lo, hi)
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, &Error{Problem: "not an integer", Allowed: allowed}
	}
	if n < lo || n > hi {
		return 0, &Error{Problem: fmt.Sprintf("%d is out of range", n), Allowed: allowed}
	}
	return int(n), nil
}

// sizeOption parses a size (see setting.ParseSize) in [lo, hi].
func sizeOption(v string, lo, hi int64) (int64, *Error) {
	allowed := fmt.Sprintf("a size from %d to %d bytes: %s", lo, hi, setting.SizeAllowed)
	if hi == math.MaxInt64 {
		allowed = fmt.Sprintf("a size of at least %d bytes: %s", lo, setting.SizeAllowed)
	}
	n, err := setting.ParseSize(v)
	if err != nil {
		return 0, &Error{Problem: "not a size", Allowed: allowed}
	}
	if n < lo || n > hi {
		return 0, &Error{Problem: fmt.Sprintf("%d bytes is out of range", n), Allowed: allowed}
	}
	return n, nil
}

// durationOption parses a non-negative duration (see setting.ParseDuration).
func durationOption(v string) (time.Duration, *Error) {
	allowed := "0 (no limit) or more: " + setting.DurationAllowed
	d, err := setting.ParseDuration(v)
	if err != nil {
		return 0, &Error{Problem: "not a duration", Allowed: allowed}
	}
	if d < 0 {
		return 0, &Error{Problem: "must not be negative", Allowed: allowed}
	}
	return d, nil
}
