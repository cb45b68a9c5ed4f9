package xmlconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// plugins converts <plugins>.
func (c *conv) plugins(n *node) {
	pl := newMap()
	for _, k := range n.kids {
		switch k.name {
		case "simpleAuthenticationPlugin":
			sa := newMap()
			c.copyAttrs(k, sa, "anonymousAccessAllowed", "anonymousUser", "anonymousGroup")
			c.leftover(k, "no counterpart")
			var users []any
			for _, us := range k.kids {
				if us.name != "users" {
					c.report(us, Unsupported, "no counterpart")
					continue
				}
				for _, u := range us.kids {
					um := newMap()
					name, _ := u.attr("username")
					if name != "" {
						um.set("username", c.val(name))
					}
					if v, ok := u.attr("password"); ok {
						um.set("password", c.secret(v, "USER_"+name, fmt.Sprintf("the password of user %q", name)))
					}
					if v, ok := u.attr("groups"); ok {
						um.set("groups", c.val(v))
					}
					c.leftover(u, "no counterpart")
					users = append(users, um)
					c.report(u, Converted, "")
				}
			}
			if users != nil {
				sa.set("users", users)
			}
			pl.set("simpleAuthentication", sa)
			c.report(k, Converted, "")
		case "jaasAuthenticationPlugin":
			c.jaas(k, pl)
		case "authorizationPlugin":
			c.authorization(k, pl)
		case "redeliveryPlugin":
			c.redelivery(k)
		default:
			c.report(k, Unsupported, "no counterpart")
		}
	}
	if !pl.empty() {
		c.top.set("plugins", pl)
	}
}

var moduleRE = regexp.MustCompile(`(?s)([A-Za-z0-9_.-]+)\s*\{(.*?)\};`)
var optionRE = regexp.MustCompile(`([A-Za-z0-9_.]+)\s*=\s*"?([^"\s;]*)"?`)

// jaas converts a jaasAuthenticationPlugin through the login.config it names.
func (c *conv) jaas(k *node, pl *omap) {
	name, ok := k.attr("configuration")
	if !ok {
		name = "activemq"
	}
	c.leftover(k, "no counterpart")
	if c.o.LoginConfig == "" {
		c.report(k, Unsupported, "give the login.config with --login-config to convert its PropertiesLoginModule")
		return
	}
	data, err := os.ReadFile(c.o.LoginConfig)
	if err != nil {
		c.report(k, Unsupported, "login.config unreadable: "+err.Error())
		return
	}
	for _, m := range moduleRE.FindAllStringSubmatch(string(data), -1) {
		if m[1] != name {
			continue
		}
		if !strings.Contains(m[2], "PropertiesLoginModule") {
			c.report(k, Unsupported, "login module of "+name+" is not PropertiesLoginModule")
			return
		}
		jp := newMap()
		dir := filepath.Dir(c.o.LoginConfig)
		for _, o := range optionRE.FindAllStringSubmatch(m[2], -1) {
			switch o[1] {
			case "org.apache.activemq.jaas.properties.user":
				jp.set("users", filepath.Join(dir, o[2]))
			case "org.apache.activemq.jaas.properties.group":
				jp.set("groups", filepath.Join(dir, o[2]))
			case "reload":
				jp.set("reload", typed(o[2]))
			}
		}
		pl.set("jaasProperties", jp)
		c.report(k, Converted, "")
		return
	}
	c.report(k, Unsupported, "login.config has no entry "+name)
}

// authorization converts an authorizationPlugin's authorizationMap.
func (c *conv) authorization(k *node, pl *omap) {
	c.leftover(k, "no counterpart")
	auth := pl.sub("authorization")
	var entries []any
	for _, mp := range k.kids {
		am := mp.kid("authorizationMap")
		if mp.name != "map" || am == nil {
			c.report(mp, Unsupported, "only an authorizationMap is supported")
			continue
		}
		for _, part := range am.kids {
			switch part.name {
			case "authorizationEntries":
				for _, e := range part.kids {
					if m := c.authEntry(e, ""); m != nil {
						entries = append(entries, m)
					}
				}
			case "defaultEntry":
				for _, e := range part.kids {
					for _, kind := range []string{"queue", "topic"} {
						e.done = map[string]bool{}
						if m := c.authEntry(e, kind); m != nil {
							entries = append(entries, m)
						}
					}
				}
			case "tempDestinationAuthorizationEntry":
				if e := part.kid("tempDestinationAuthorizationEntry"); e != nil {
					m := newMap()
					c.rights(e, m)
					c.leftover(e, "no counterpart")
					auth.set("tempDestination", m)
					c.report(e, Converted, "")
				}
			default:
				c.report(part, Unsupported, "no counterpart")
			}
		}
	}
	if entries == nil {
		entries = []any{}
	}
	auth.set("entries", entries)
}

func (c *conv) authEntry(e *node, kind string) *omap {
	m := newMap()
	pattern := ">"
	if kind == "" {
		if v, ok := e.attr("queue"); ok {
			kind, pattern = "queue", c.val(v)
		} else if v, ok := e.attr("topic"); ok {
			kind, pattern = "topic", c.val(v)
		} else {
			c.report(e, Unsupported, "tempQueue/tempTopic entries: use tempDestinationAuthorizationEntry")
			return nil
		}
	}
	m.set(kind, pattern)
	c.rights(e, m)
	c.leftover(e, "no counterpart")
	c.report(e, Converted, "")
	return m
}

func (c *conv) rights(e *node, m *omap) {
	for _, r := range []string{"read", "write", "admin"} {
		if v, ok := e.attr(r); ok {
			m.set(r, c.val(v))
		}
	}
	for _, a := range []string{"queue", "topic"} {
		e.attr(a)
	}
}
