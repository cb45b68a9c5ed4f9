package stompclient

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Schemes and their default ports: ActiveMQ's connector schemes, and its default ports
// (61613 STOMP, 61612 STOMP over TLS, 61614 WebSocket; 61619 for wss, as this
// project's README configures it).
const (
	SchemeSTOMP = "stomp"
	SchemeSSL   = "stomp+ssl"
	SchemeWS    = "ws"
	SchemeWSS   = "wss"
)

var defaultPorts = map[string]string{
	SchemeSTOMP: "61613",
	SchemeSSL:   "61612",
	SchemeWS:    "61614",
	SchemeWSS:   "61619",
}

// aliases are the other spellings of a scheme an ActiveMQ connector URI uses.
var aliases = map[string]string{
	"stomp+nio":     SchemeSTOMP,
	"stomp+nio+ssl": SchemeSSL,
	"stomp+tls":     SchemeSSL,
}

// URL is where and as whom a client connects:
//
//	stomp://[user[:pass]@]host[:port]       STOMP over TCP (stomp+nio:// too)
//	stomp+ssl://[user[:pass]@]host[:port]   STOMP over TLS (stomp+nio+ssl://, stomp+tls://)
//	ws://[user[:pass]@]host[:port][/path]   STOMP over WebSocket
//	wss://[user[:pass]@]host[:port][/path]  STOMP over WebSocket over TLS
//
// The user and password go in CONNECT's login and passcode headers (percent-encode
// reserved characters: p%40ss for p@ss).
type URL struct {
	Scheme string // SchemeSTOMP, SchemeSSL, SchemeWS or SchemeWSS
	Host   string // name or address, without brackets
	Port   string
	// Path is a WebSocket URL's path and query ("/" when it has none); empty otherwise.
	Path     string
	Login    string
	Passcode string
	// HasLogin: the URL names a user, so CONNECT carries login and passcode.
	HasLogin bool
}

// ParseURL parses s. A missing host is 127.0.0.1, a missing port the scheme's default.
// Errors wrap ErrURL and never contain the password.
func ParseURL(s string) (*URL, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrURL, redactRaw(s), fmt.Sprintf(format, args...))
	}
	if !strings.Contains(s, "://") {
		if scheme, _, ok := strings.Cut(s, ":"); ok && known(scheme) {
			return nil, bad("write %s://host:port", scheme)
		}
		return nil, bad("no scheme: write stomp://host:port, stomp+ssl://, ws:// or wss://")
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, bad("%s", strings.TrimPrefix(unwrapURLError(err), "parse "))
	}
	scheme := canonicalScheme(u.Scheme)
	if !known(scheme) {
		return nil, bad("scheme %q: use stomp, stomp+ssl, ws or wss", u.Scheme)
	}
	if u.Fragment != "" {
		return nil, bad("a URL with a #fragment")
	}
	r := &URL{Scheme: scheme, Host: u.Hostname(), Port: u.Port()}
	if r.Host == "" {
		r.Host = "127.0.0.1"
	}
	if r.Port == "" {
		if strings.HasSuffix(u.Host, ":") {
			return nil, bad("empty port")
		}
		r.Port = defaultPorts[scheme]
	}
	if n, err := strconv.ParseUint(r.Port, 10, 16); err != nil || n == 0 {
		return nil, bad("port %q: a number from 1 to 65535", r.Port)
	}
	switch scheme {
	case SchemeWS, SchemeWSS:
		r.Path = u.EscapedPath()
		if r.Path == "" {
			r.Path = "/"
		}
		if u.RawQuery != "" {
			r.Path += "?" + u.RawQuery
		}
	default:
		if u.RawQuery != "" || u.ForceQuery {
			return nil, bad("%s URLs take no ?parameters", scheme)
		}
		if u.Path != "" && u.Path != "/" {
			return nil, bad("%s URLs have no path (%q)", scheme, u.Path)
		}
	}
	if u.User != nil {
		r.HasLogin = true
		r.Login = u.User.Username()
		r.Passcode, _ = u.User.Password()
		if strings.ContainsAny(r.Login+r.Passcode, "\r\n\x00") {
			return nil, bad("a user or password with a line break or NUL cannot go in a CONNECT header")
		}
	}
	return r, nil
}

// canonicalScheme is scheme in lower case, an alias replaced by its scheme.
func canonicalScheme(scheme string) string {
	scheme = strings.ToLower(scheme)
	if a, ok := aliases[scheme]; ok {
		return a
	}
	return scheme
}

// known reports whether scheme, or its canonical form, is a scheme of URL.
func known(scheme string) bool {
	_, ok := defaultPorts[canonicalScheme(scheme)]
	return ok
}

// Addr is host:port for net.Dial.
func (u *URL) Addr() string { return net.JoinHostPort(u.Host, u.Port) }

// TLS reports whether the scheme runs over TLS.
func (u *URL) TLS() bool { return u.Scheme == SchemeSSL || u.Scheme == SchemeWSS }

// WebSocket reports whether the scheme runs over WebSocket.
func (u *URL) WebSocket() bool { return u.Scheme == SchemeWS || u.Scheme == SchemeWSS }

// String is the URL with the password, if any, as "xxxxx": safe for logs and errors.
func (u *URL) String() string {
	var b strings.Builder
	b.WriteString(u.Scheme + "://")
	if u.HasLogin {
		b.WriteString(url.User(u.Login).String())
		if u.Passcode != "" {
			b.WriteString(":xxxxx")
		}
		b.WriteByte('@')
	}
	b.WriteString(u.Addr())
	b.WriteString(u.Path)
	return b.String()
}

// wsURL is the http(s) form of a ws or wss URL, without credentials, for the WebSocket
// handshake.
func (u *URL) wsURL() string {
	return u.Scheme + "://" + u.Addr() + u.Path
}

// redactRaw quotes s for an error message with its password, if url.Parse finds one,
// replaced by "xxxxx"; a string url.Parse cannot read is shown up to its '@', which is
// where a password would end.
func redactRaw(s string) string {
	if u, err := url.Parse(s); err == nil {
		return strconv.Quote(u.Redacted())
	}
	if i := strings.LastIndex(s, "@"); i >= 0 {
		scheme, _, _ := strings.Cut(s, "://")
		return strconv.Quote(scheme + "://xxxxx" + s[i:])
	}
	return strconv.Quote(s)
}

// unwrapURLError is the reason of a *url.Error without the URL it quotes (which may hold a
// password).
func unwrapURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
