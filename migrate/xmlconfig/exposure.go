package xmlconfig

import (
	"fmt"
	"net"
	"sort"
	"strings"
)

// pendingSSL is a converted <sslContext>, written only if a TLS connector survives
// the conversion (otherwise the broker would refuse to start on PEM files nothing
// needs).
type pendingSSL struct {
	n        *node
	s        *omap
	commands []string
}

// hostPort is the host:port of a connector URI's rest (after "scheme://"), without
// a path or options.
func hostPort(rest string) string {
	hp, _, _ := strings.Cut(rest, "?")
	hp, _, _ = strings.Cut(hp, "/")
	return hp
}

// wildcard tells whether a connector host listens on every interface.
func wildcard(host string) bool {
	switch host {
	case "", "0.0.0.0", "::", "[::]":
		return true
	}
	return false
}

// noteBind records where a connector of the XML listens, and, for one that is not
// written, that nothing listens there any more.
func (c *conv) noteBind(name, hp string, written bool) {
	host, _, err := net.SplitHostPort(hp)
	if err != nil {
		host = hp
	}
	c.binds = append(c.binds, host)
	if !written {
		c.res.Exposure = append(c.res.Exposure, fmt.Sprintf("%s: was %s in the XML, not written: nothing listens there", name, hp))
	}
}

// stompHost is the host the added STOMP connector listens on: every interface if one
// of the XML's connectors did, else the host of its first connector, and loopback
// if it had none (ActiveMQ then listened on no port at all).
func (c *conv) stompHost() (host, why string) {
	if len(c.binds) == 0 {
		return "127.0.0.1", "the XML has no connector: loopback only"
	}
	for _, h := range c.binds {
		if wildcard(h) {
			return "0.0.0.0", "a connector of the XML listens on every interface"
		}
	}
	return c.binds[0], "where the XML's connectors listen"
}

// addSTOMP writes the STOMP connector a file without one gets.
func (c *conv) addSTOMP(b *node) {
	host, why := c.stompHost()
	uri := "stomp://" + net.JoinHostPort(strings.Trim(host, "[]"), "61613")
	list, _ := c.top.get("transportConnectors")
	connectors, _ := list.([]any)
	c.top.set("transportConnectors", append(connectors, map[string]any{"name": "stomp", "uri": uri}))
	c.res.Items = append(c.res.Items, Item{Line: b.line, Element: b.path() + "/transportConnectors", Status: Differs,
		Note: "no STOMP connector in the file: one named stomp on " + uri + " is written"})
	c.res.Exposure = append(c.res.Exposure, fmt.Sprintf("stomp: not in the XML, written as %s (%s)", uri, why))
}

// finishSSL writes the converted sslContext if a TLS connector survived, and
// reports it not written otherwise.
func (c *conv) finishSSL() {
	if c.ssl == nil {
		return
	}
	if c.tlsConnector == nil {
		c.report(c.ssl.n, Unsupported, "not written: no TLS connector survives the import, so no key or certificate is needed")
		return
	}
	c.top.set("sslContext", c.ssl.s)
	c.res.Commands = append(c.res.Commands, c.ssl.commands...)
	c.report(c.ssl.n, Differs, "sslContext reads PEM files, not key stores: run the commands below to write them where the YAML expects")
}

// notePlaceholders writes the note of the placeholder configurers, naming the
// variables the YAML reads.
func (c *conv) notePlaceholders() {
	note := "no placeholder other than ${activemq.*} is used: nothing is read from the environment; the properties file is not read"
	status := Converted
	if len(c.res.Env) > 0 {
		vars := make([]string, 0, len(c.res.Env))
		for v := range c.res.Env {
			vars = append(vars, v)
		}
		sort.Strings(vars)
		note = "placeholders other than ${activemq.*} are kept and read from the environment: " + strings.Join(vars, ", ") +
			" (listed below); the properties file is not read"
		status = Differs
	}
	for _, i := range c.placeholders {
		c.res.Items[i].Note, c.res.Items[i].Status = note, status
	}
}

// startAdvice is the report's last word: whether the YAML starts as written or what
// to do first.
func (r *Result) startAdvice() string {
	var todo []string
	if len(r.Env) > 0 {
		todo = append(todo, "set the environment variables above")
	}
	if len(r.Commands) > 0 {
		todo = append(todo, "write the PEM files with the commands above")
	}
	if len(todo) == 0 {
		return "start: ready as written (broker serve --config with the YAML)"
	}
	return "start: not before you " + strings.Join(todo, " and ") + ", then broker serve --config with the YAML"
}
