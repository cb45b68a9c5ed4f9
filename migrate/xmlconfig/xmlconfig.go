// Package xmlconfig converts ActiveMQ's activemq.xml into the broker's
// activemq-style.yaml, with a report saying for every element and attribute
// whether it was converted, converted with a difference, or is not supported and
// why. Nothing is dropped silently.
//
// The file is read as plain XML (encoding/xml), namespaces ignored, Spring's
// <beans> wrapper looked into only for the <broker> element, the data source
// beans a jdbcPersistenceAdapter names and property placeholder configurers.
// ${activemq.base}, ${activemq.home}, ${activemq.conf} and ${activemq.data} are
// resolved from Options; any other ${name} is kept as a placeholder the broker
// expands from the environment, renamed to an environment variable name
// (${activemq.password} becomes ${ACTIVEMQ_PASSWORD}). A password written in
// clear (a user's, the data source's) becomes a placeholder too, of a variable
// named after its owner (ACTIVEMQ_USER_<NAME>_PASSWORD), so that no password is
// written into the YAML. Result.Env lists the variables, as do the report and the
// YAML's header comment.
package xmlconfig

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Options are the values placeholders and relative files are resolved with.
type Options struct {
	// Base is ${activemq.base} and ${activemq.home}; ${activemq.conf} is Base/conf.
	Base string
	// Conf is ${activemq.conf}; "" is Base/conf.
	Conf string
	// Data is ${activemq.data}; "" is Base/data.
	Data string
	// OutDir is the directory the YAML goes to: the PEM files made from key stores
	// are named there; "" is Base.
	OutDir string
	// LoginConfig is the JAAS login.config a jaasAuthenticationPlugin names; "" for none.
	LoginConfig string
	// Source names the input in the YAML's header comment.
	Source string
}

// Result is a converted file.
type Result struct {
	YAML     []byte
	Items    []Item
	Env      map[string]string // environment variable -> what it holds: "was ${placeholder}", or the clear-text password it keeps out of the YAML
	Commands []string          // shell commands making the PEM files sslContext names
	// Exposure says, per connector, where the YAML listens differently from the XML.
	Exposure []string
}

type conv struct {
	o        Options
	res      *Result
	top      *omap
	broker   *omap
	adapter  *omap // persistenceAdapter
	policies []*omap
	beans    map[string]*node

	reported     map[*node]Status // elements with a report line
	hasSTOMP     bool
	tlsConnector *node       // a converted TLS connector, nil for none
	binds        []string    // the host each connector of the XML listens on, in order
	ssl          *pendingSSL // the converted sslContext, written if a TLS connector survives
	placeholders []int       // indexes of the report items about placeholder configurers
	err          error       // the first value that cannot be converted safely
}

// Convert converts an activemq.xml document.
func Convert(data []byte, o Options) (*Result, error) {
	if o.Conf == "" {
		o.Conf = filepath.Join(o.Base, "conf")
	}
	if o.Data == "" {
		o.Data = filepath.Join(o.Base, "data")
	}
	if o.OutDir == "" {
		o.OutDir = o.Base
	}
	root, err := parseTree(data)
	if err != nil {
		return nil, err
	}
	c := &conv{o: o, res: &Result{Env: map[string]string{}}, top: newMap(), beans: map[string]*node{},
		reported: map[*node]Status{}}
	c.broker = c.top.sub("broker")
	for _, b := range root.find("bean") {
		if id, ok := b.attr("id"); ok {
			c.beans[id] = b
		}
	}
	brokers := root.find("broker")
	if len(brokers) == 0 {
		return nil, ErrNoBroker
	}
	if len(brokers) > 1 {
		for _, b := range brokers[1:] {
			c.report(b, Unsupported, "one broker per file: only the first is converted")
		}
	}
	c.outside(root, brokers)
	if err := c.convertBroker(brokers[0]); err != nil {
		return nil, err
	}
	c.sweep(brokers[0])
	if c.err != nil {
		return nil, c.err
	}
	c.notePlaceholders()
	sort.SliceStable(c.res.Items, func(i, j int) bool { return c.res.Items[i].Line < c.res.Items[j].Line })
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Converted from %s by `broker config import`; see the report for what differs.\n", c.o.Source)
	if lines := c.res.envLines(); len(lines) > 0 {
		b.WriteString("#\n# Set these environment variables before starting the broker (the ${...} below read them):\n")
		for _, l := range lines {
			b.WriteString("#" + l + "\n")
		}
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c.top); err != nil {
		return nil, err
	}
	c.res.YAML = b.Bytes()
	return c.res, nil
}

// outside reports what surrounds the broker: Spring beans and imports.
func (c *conv) outside(root *node, brokers []*node) {
	var walk func(n *node)
	walk = func(n *node) {
		for _, k := range n.kids {
			switch k.name {
			case "broker":
				continue
			case "beans":
				walk(k)
			case "bean":
				class, _ := k.attr("class")
				switch {
				case strings.Contains(class, "PropertyPlaceholderConfigurer"):
					c.placeholders = append(c.placeholders, len(c.res.Items))
					c.report(k, Differs, "") // the note is written once the variables are known
				case c.usedBean(k, brokers):
					// reported with the jdbcPersistenceAdapter
				default:
					c.report(k, Unsupported, "Spring bean "+class+": the broker has no Spring context")
				}
			case "import":
				res, _ := k.attr("resource")
				note := "imported file " + res + " is not read"
				if strings.Contains(res, "jetty") {
					note += ": the web console and REST API are the admin listener, broker.adminAddress"
				}
				c.report(k, Unsupported, note)
			default:
				c.report(k, Unsupported, "outside <broker>: no counterpart")
			}
		}
	}
	walk(root)
}

// usedBean tells whether a jdbcPersistenceAdapter refers to the bean.
func (c *conv) usedBean(b *node, brokers []*node) bool {
	id, _ := b.attr("id")
	for _, br := range brokers {
		for _, j := range br.find("jdbcPersistenceAdapter") {
			for _, a := range j.attrs {
				if a.Name.Local == "dataSource" && strings.TrimPrefix(a.Value, "#") == id {
					return true
				}
			}
		}
	}
	return false
}

func (c *conv) report(n *node, s Status, note string) {
	if old, ok := c.reported[n]; !ok || s > old {
		c.reported[n] = s
	}
	c.res.Items = append(c.res.Items, Item{Line: n.line, Element: n.path(), Status: s, Note: note})
}

func (c *conv) reportAttr(n *node, attr string, s Status, note string) {
	n.done[attr] = true
	c.res.Items = append(c.res.Items, Item{Line: n.line, Element: n.path() + "@" + attr, Status: s, Note: note})
}

// sweep reports what the converter did not read: attributes nothing consumed and
// elements with no report line of their own or of a descendant (wrappers such as
// <policyEntries> are accounted for by their entries). An element reported not
// supported accounts for its whole subtree.
func (c *conv) sweep(n *node) bool {
	st, ok := c.reported[n]
	if ok && st == Unsupported {
		return true
	}
	covered := ok
	for _, k := range n.kids {
		if c.sweep(k) {
			covered = true
		}
	}
	c.leftover(n, "no counterpart")
	if !covered {
		c.report(n, Unsupported, "no counterpart")
	}
	return true
}

// leftover reports the attributes of n nothing consumed.
func (c *conv) leftover(n *node, why string) {
	for _, a := range n.attrs {
		if !n.done[a.Name.Local] {
			c.reportAttr(n, a.Name.Local, Unsupported, why)
		}
	}
}

var placeholderRE = regexp.MustCompile(`\$\{([^}]*)\}`)

// val resolves an attribute value's placeholders.
func (c *conv) val(s string) string {
	return placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		switch name {
		case "activemq.base", "activemq.home":
			return c.o.Base
		case "activemq.conf":
			return c.o.Conf
		case "activemq.data":
			return c.o.Data
		}
		env := envName(name)
		c.res.Env[env] = "was " + m
		return "${" + env + "}"
	})
}

// secret converts a password attribute: one made of placeholders only as val
// does; one with clear text becomes ${ACTIVEMQ_<owner>_PASSWORD} (owner
// sanitized, numbered if two owners give the same name), listed in Env with
// what, so that the password itself is never written into the YAML.
func (c *conv) secret(v, owner, what string) string {
	if strings.TrimSpace(placeholderRE.ReplaceAllString(v, "")) == "" {
		return c.val(v)
	}
	base := "ACTIVEMQ_" + envName(placeholderRE.ReplaceAllString(owner, "$1")) + "_PASSWORD"
	env := base
	for i := 2; c.res.Env[env] != ""; i++ {
		env = base + "_" + strconv.Itoa(i)
	}
	c.res.Env[env] = what + ", written in clear in the XML"
	return "${" + env + "}"
}

// envName makes an environment variable name of a property name.
func envName(p string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(p) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// copyAttrs copies the named attributes of n into m as typed values, reporting
// each converted.
func (c *conv) copyAttrs(n *node, m *omap, names ...string) {
	for _, name := range names {
		if v, ok := n.attr(name); ok {
			m.set(name, typed(c.val(v)))
		}
	}
}

// notApplicable reports attributes that tune ActiveMQ's implementation.
func (c *conv) notApplicable(n *node, names ...string) {
	for _, name := range names {
		if _, ok := n.attr(name); ok {
			c.reportAttr(n, name, Unsupported, "ActiveMQ implementation tuning, not applicable")
		}
	}
}

// size converts an ActiveMQ size attribute ("64 mb", "1 gb", bytes); one that is
// not a size is an error, since leaving it out would lift a limit.
func (c *conv) size(n *node, attr, v string) any {
	out := size(v)
	if s, ok := out.(string); ok && !strings.HasPrefix(s, "${") {
		t := strings.TrimRight(s, "bikmgtp")
		if _, err := strconv.ParseInt(t, 10, 64); err != nil || t == s && s != "" {
			if c.err == nil {
				c.err = fmt.Errorf("%w: line %d: %s %s=%q is not a size", ErrUnsafe, n.line, n.name, attr, v)
			}
		}
	}
	return out
}
