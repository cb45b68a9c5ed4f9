package xmlconfig

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// convertBroker converts the <broker> element and everything in it.
func (c *conv) convertBroker(b *node) error {
	if v, ok := b.attr("deleteAllMessagesOnStartup"); ok && strings.EqualFold(c.val(v), "true") {
		c.reportAttr(b, "deleteAllMessagesOnStartup", Unsupported, "the broker never deletes its messages at start; dropped (purge with `broker purge` if that was meant)")
	}
	c.copyAttrs(b, c.broker, "brokerName")
	if v, ok := b.attr("dataDirectory"); ok {
		c.broker.set("dataDirectory", c.val(v))
	} else {
		c.broker.set("dataDirectory", c.o.Data)
		c.res.Items = append(c.res.Items, Item{Line: b.line, Element: b.path() + "@dataDirectory", Status: Differs,
			Note: "absent: ${activemq.data} (" + c.o.Data + ") is written, not the broker's working directory"})
	}
	persistent := true
	if v, ok := b.attr("persistent"); ok {
		if t, isBool := typed(c.val(v)).(bool); !isBool {
			return fmt.Errorf("%w: line %d: persistent=%q is neither true nor false", ErrUnsafe, b.line, v)
		} else {
			persistent = t
		}
		c.broker.set("persistent", persistent)
	}
	if v, ok := b.attr("schedulerSupport"); ok {
		c.broker.set("schedulerSupport", typed(c.val(v)))
	} else {
		c.broker.set("schedulerSupport", false)
		c.res.Items = append(c.res.Items, Item{Line: b.line, Element: b.path() + "@schedulerSupport", Status: Differs,
			Note: "absent, ActiveMQ's default false is written out (the broker's own default is true)"})
	}
	c.copyAttrs(b, c.broker, "advisorySupport", "populateJMSXUserID", "useAuthenticatedPrincipalForJMSXUserID",
		"allowLinkStealing", "offlineDurableSubscriberTaskSchedule")
	if _, ok := b.attr("useJmx"); ok {
		c.reportAttr(b, "useJmx", Unsupported, "no JMX: use the admin REST API (/api/) and /metrics on broker.adminAddress")
	}
	offlineTimeout, hasOfflineTimeout := b.attr("offlineDurableSubscriberTimeout")
	if _, ok := b.attr("schedulePeriodForDestinationPurge"); ok {
		c.reportAttr(b, "schedulePeriodForDestinationPurge", Differs, "the broker checks gcInactiveDestinations by itself; dropped")
	}
	c.notApplicable(b, "useShutdownHook", "start", "useLocalHostBrokerName", "restartAllowed", "networkConnectorStartAsync",
		"useVirtualTopics", "monitorConnectionSplits", "enableStatistics", "cacheTempDestinations", "timeBeforePurgeTempDestinations")
	c.leftover(b, "no counterpart")

	if !persistent {
		c.top.set("persistenceAdapter", map[string]any{"memory": map[string]any{}})
	}
	for _, k := range b.kids {
		switch k.name {
		case "persistenceAdapter":
			c.persistence(k, persistent)
		case "transportConnectors":
			c.connectors(k)
		case "destinationPolicy":
			c.destinationPolicy(k)
		case "systemUsage":
			c.systemUsage(k)
		case "destinationInterceptors":
			c.interceptors(k)
		case "plugins":
			c.plugins(k)
		case "sslContext":
			c.sslContext(k)
		case "managementContext":
			c.report(k, Unsupported, "no JMX: use the admin REST API (/api/) and /metrics on broker.adminAddress")
		case "networkConnectors":
			c.report(k, Unsupported, "store-and-forward networks of brokers are not supported")
		case "shutdownHooks":
			c.report(k, Unsupported, "Spring shutdown hooks are not applicable")
		case "persistenceFactory":
			c.report(k, Unsupported, "journalPersistenceAdapterFactory is not supported; the kahaDB adapter is used")
			if persistent && c.adapter == nil {
				c.adapter = newMap()
				c.adapter.set("kahaDB", map[string]any{})
				c.top.set("persistenceAdapter", c.adapter)
			}
		default:
			c.report(k, Unsupported, "no counterpart")
		}
	}
	if !c.hasSTOMP {
		c.addSTOMP(b)
	}
	c.finishSSL()
	if _, ok := c.top.get("sslContext"); !ok && c.tlsConnector != nil {
		s := newMap()
		s.set("certFile", filepath.Join(c.o.OutDir, "broker-cert.pem"))
		s.set("keyFile", filepath.Join(c.o.OutDir, "broker-key.pem"))
		c.top.set("sslContext", s)
		c.res.Items = append(c.res.Items, Item{Line: c.tlsConnector.line, Element: c.tlsConnector.path(), Status: Differs,
			Note: "a TLS connector without <sslContext> (ActiveMQ read javax.net.ssl.keyStore): sslContext names PEM files in " + c.o.OutDir + " to write from that key store (KEYSTORE in the commands below)"})
		c.keyStoreCommands("KEYSTORE", filepath.Join(c.o.OutDir, "broker.p12"), filepath.Join(c.o.OutDir, "broker-cert.pem"), filepath.Join(c.o.OutDir, "broker-key.pem"))
	}
	c.queuesFIFO(b)
	if hasOfflineTimeout {
		// A broker-wide setting here is per policy entry: every topic entry gets it
		// (an entry applies whole), and a topic ">" entry covers the other topics.
		c.policyFor("topic", ">")
		for _, p := range c.policies {
			if _, topic := p.get("topic"); topic {
				if _, own := p.get("offlineDurableSubscriberTimeout"); !own {
					p.set("offlineDurableSubscriberTimeout", typed(c.val(offlineTimeout)))
				}
			}
		}
		c.reportAttr(b, "offlineDurableSubscriberTimeout", Differs, "written into every topic entry of destinationPolicy, with a topic \">\" entry for the others")
	}
	if len(c.policies) > 0 {
		list := make([]any, len(c.policies))
		for i, p := range c.policies {
			list[i] = p
		}
		c.top.set("destinationPolicy", list)
	}
	return nil
}

// persistence converts <persistenceAdapter>.
func (c *conv) persistence(n *node, persistent bool) {
	if len(n.kids) == 0 {
		c.report(n, Unsupported, "empty")
		return
	}
	for i, k := range n.kids {
		if i > 0 {
			c.report(k, Unsupported, "exactly one persistence adapter: only the first is converted")
			continue
		}
		if !persistent {
			c.report(k, Differs, "persistent=\"false\": the memory adapter is used, as ActiveMQ does")
			continue
		}
		block := newMap()
		key := ""
		switch k.name {
		case "kahaDB":
			key = "kahaDB"
			if v, ok := k.attr("directory"); ok {
				block.set("directory", c.val(v))
			}
			for _, s := range []string{"journalMaxFileLength"} {
				if v, ok := k.attr(s); ok {
					block.set(s, c.size(k, s, c.val(v)))
				}
			}
			c.copyAttrs(k, block, "journalDiskSyncStrategy", "journalDiskSyncInterval", "checkpointInterval",
				"cleanupInterval", "concurrentStoreAndDispatchQueues")
			c.notApplicable(k, "indexWriteBatchSize", "indexCacheSize", "enableIndexWriteAsync", "enableJournalDiskSyncs",
				"preallocationStrategy", "preallocationScope", "journalMaxWriteBatchSize", "enableIndexDiskSyncs")
			c.leftover(k, "not an option of the kahaDB adapter")
			c.report(k, Differs, "the kahaDB adapter is the broker's own journal: ActiveMQ's KahaDB files are not read")
		case "jdbcPersistenceAdapter":
			key = c.jdbc(k, block)
		case "memoryPersistenceAdapter":
			key = "memory"
			c.leftover(k, "no counterpart")
			c.report(k, Converted, "")
		default:
			key = "kahaDB"
			c.report(k, Unsupported, k.name+" is not supported; the kahaDB adapter is used instead")
		}
		c.adapter = newMap()
		c.adapter.set(key, block)
		c.top.set("persistenceAdapter", c.adapter)
	}
}

// jdbc converts a jdbcPersistenceAdapter and its data source bean.
func (c *conv) jdbc(k *node, block *omap) string {
	ref, _ := k.attr("dataSource")
	bean := c.beans[strings.TrimPrefix(ref, "#")]
	props := map[string]string{}
	password := "" // as written: converted only if the adapter is
	if bean != nil {
		for _, p := range bean.find("property") {
			name, _ := p.attr("name")
			v, _ := p.attr("value")
			if name == "password" {
				password = v
				continue
			}
			props[name] = c.val(v)
		}
	}
	u := props["url"]
	class := ""
	if bean != nil {
		class, _ = bean.attr("class")
	}
	if u == "" && strings.HasPrefix(class, "org.postgresql.") { // PGSimpleDataSource, PGPoolingDataSource
		host, port := props["serverName"], props["portNumber"]
		if host == "" {
			host = "localhost"
		}
		if port == "" || port == "0" {
			port = "5432"
		}
		u = "jdbc:postgresql://" + host + ":" + port + "/" + props["databaseName"]
		props["username"] = props["user"]
	}
	if !strings.HasPrefix(u, "jdbc:postgresql:") && !strings.HasPrefix(u, "${") {
		what := redactURL(u)
		if what == "" {
			what = class
		}
		k.attr("createTablesOnStartup")
		k.attr("dataDirectory")
		c.report(k, Unsupported, fmt.Sprintf("data source %s (%s): only PostgreSQL is supported; the kahaDB adapter is used instead", ref, what))
		return "kahaDB"
	}
	if _, ok := k.attr("dataDirectory"); ok {
		c.reportAttr(k, "dataDirectory", Unsupported, "the jdbc adapter keeps nothing on disk")
	}
	block.set("url", u)
	if v := props["username"]; v != "" {
		block.set("user", v)
	}
	if password != "" {
		block.set("password", c.secret(password, "JDBC", "the password of data source "+ref))
	}
	c.copyAttrs(k, block, "createTablesOnStartup", "lockKeepAlivePeriod", "cleanupPeriod", "useLock")
	if st := k.kid("statements"); st != nil {
		if s := st.kid("statements"); s != nil {
			c.copyAttrs(s, block, "tablePrefix")
			c.leftover(s, "custom SQL statements are not supported")
		}
	}
	for _, kk := range k.kids {
		if kk.name != "statements" {
			c.report(kk, Unsupported, "no counterpart (the jdbc adapter has its own lease lock: useLock, lockKeepAlivePeriod)")
		}
	}
	c.leftover(k, "not an option of the jdbc adapter")
	c.report(k, Converted, "")
	return "jdbc"
}

// redactURL hides a password in a URL for the report.
func redactURL(s string) string {
	if u, err := url.Parse(strings.TrimPrefix(s, "jdbc:")); err == nil && u.User != nil {
		u.User = url.User(u.User.Username())
		return "jdbc:" + u.String()
	}
	return s
}

// connectorOptions are the URI options config.parseConnectorURI knows, lower-cased.
var connectorOptions = map[string]bool{
	"maximumconnections": true, "maxconnections": true, "wireformat.maxframesize": true, "maxframesize": true,
	"wireformat.maxdatalength": true, "wireformat.maxheaders": true, "maxheaders": true,
	"wireformat.maxheaderlength": true, "maxheaderlength": true, "transport.connectattempttimeout": true,
	"connecttimeout": true, "transport.hbgraceperiodmultiplier": true, "hbgraceperiodmultiplier": true,
	"transport.defaultheartbeat": true,
}

// openWireOptions are the options only OpenWire connectors take.
var openWireOptions = map[string]bool{"wireformat.maxinactivityduration": true,
	"wireformat.maxinactivitydurationinitaldelay": true, "wireformat.maxinactivitydurationinitialdelay": true}

var tlsOptions = map[string]bool{"transport.needclientauth": true, "needclientauth": true,
	"transport.wantclientauth": true, "wantclientauth": true}

// connectorSchemes are the connector schemes spoken here, true for TLS ones.
var connectorSchemes = map[string]bool{"stomp": false, "stomp+nio": false, "stomp+ssl": true, "stomp+nio+ssl": true,
	"ws": false, "wss": true, "tcp": false, "nio": false, "ssl": true, "nio+ssl": true}

// connectors converts <transportConnectors>.
func (c *conv) connectors(n *node) {
	var list []any
	for _, k := range n.kids {
		if k.name != "transportConnector" {
			c.report(k, Unsupported, "no counterpart")
			continue
		}
		name, _ := k.attr("name")
		raw, _ := k.attr("uri")
		raw = c.val(raw)
		if v, ok := k.attr("allowLinkStealing"); ok {
			c.broker.set("allowLinkStealing", typed(c.val(v)))
			c.reportAttr(k, "allowLinkStealing", Differs, "broker.allowLinkStealing applies to every connector")
		}
		c.leftover(k, "no counterpart")
		scheme, rest, _ := strings.Cut(raw, "://")
		scheme = strings.ToLower(scheme)
		label := name
		if label == "" {
			label = scheme
		}
		_, supported := connectorSchemes[scheme]
		c.noteBind(label, hostPort(rest), supported)
		tls := connectorSchemes[scheme]
		if !supported {
			c.report(k, Unsupported, fmt.Sprintf("%s (%s): STOMP (stomp, stomp+ssl, ws, wss) and OpenWire (tcp, nio, ssl) are spoken; clients of this protocol will not connect", label, scheme))
			continue
		}
		hostport, query, _ := strings.Cut(rest, "?")
		var kept, dropped []string
		for _, opt := range strings.Split(query, "&") {
			if opt == "" {
				continue
			}
			key, _, _ := strings.Cut(opt, "=")
			lk := strings.ToLower(key)
			if connectorOptions[lk] || tls && tlsOptions[lk] || (scheme == "ws" || scheme == "wss") && lk == "allowedorigins" ||
				openWireOptions[lk] && (scheme == "tcp" || scheme == "nio" || scheme == "ssl" || scheme == "nio+ssl") {
				kept = append(kept, opt)
			} else {
				dropped = append(dropped, key)
			}
		}
		u := scheme + "://" + hostport
		if len(kept) > 0 {
			u += "?" + strings.Join(kept, "&")
		}
		list = append(list, map[string]any{"name": label, "uri": u})
		c.hasSTOMP = c.hasSTOMP || !strings.HasPrefix(scheme, "tcp") && !strings.HasPrefix(scheme, "nio") && !strings.HasPrefix(scheme, "ssl")
		if tls {
			c.tlsConnector = k
		}
		switch {
		case len(dropped) > 0:
			c.report(k, Differs, "options without a counterpart dropped: "+strings.Join(dropped, ", "))
		case strings.Contains(scheme, "nio"):
			c.report(k, Differs, "nio is the same listener here")
		default:
			c.report(k, Converted, "")
		}
	}
	if len(list) > 0 {
		c.top.set("transportConnectors", list)
	}
}

// systemUsage converts <systemUsage><systemUsage>.
func (c *conv) systemUsage(n *node) {
	u := newMap()
	for _, outer := range n.kids {
		if outer.name != "systemUsage" {
			c.report(outer, Unsupported, "no counterpart")
			continue
		}
		c.copyAttrs(outer, u, "sendFailIfNoSpace", "sendFailIfNoSpaceAfterTimeout")
		c.leftover(outer, "no counterpart")
		for _, k := range outer.kids {
			inner := k.kid(k.name)
			switch k.name {
			case "memoryUsage", "storeUsage":
				if inner == nil {
					c.report(k, Unsupported, "empty")
					continue
				}
				inner.attr("name")
				if v, ok := inner.attr("limit"); ok {
					u.set(k.name, c.size(inner, "limit", c.val(v)))
					c.report(inner, Converted, "")
				}
				c.leftover(inner, "only limit is supported (percentOfJvmHeap and percentLimit are not)")
			case "tempUsage":
				c.report(k, Unsupported, "no temporary store: non-persistent messages stay in memory within memoryUsage")
			case "jobSchedulerUsage":
				c.report(k, Unsupported, "scheduled messages are limited by systemUsage.schedulerMemoryLimit and storeUsage")
			default:
				c.report(k, Unsupported, "no counterpart")
			}
		}
	}
	if !u.empty() {
		c.top.set("systemUsage", u)
	}
}

// interceptors converts <destinationInterceptors>.
func (c *conv) interceptors(n *node) {
	for _, k := range n.kids {
		if k.name != "virtualDestinationInterceptor" {
			c.report(k, Unsupported, "no counterpart")
			continue
		}
		vds := k.kid("virtualDestinations")
		if vds == nil {
			c.report(k, Unsupported, "empty")
			continue
		}
		seen := false
		for _, vd := range vds.kids {
			switch vd.name {
			case "virtualTopic":
				if seen {
					c.report(vd, Unsupported, "one virtualTopic rule is supported: only the first is converted")
					continue
				}
				seen = true
				vt := newMap()
				vt.set("enabled", true)
				if v, ok := vd.attr("name"); ok {
					vt.set("name", c.val(v))
				}
				if v, ok := vd.attr("prefix"); ok {
					vt.set("prefix", c.val(v))
				}
				c.leftover(vd, "no counterpart")
				c.top.set("virtualTopics", vt)
				c.report(vd, Converted, "")
			case "compositeQueue", "compositeTopic":
				c.report(vd, Unsupported, "composite destinations are not supported: a message sent to it reaches only that destination, not its forwardTo targets")
			default:
				c.report(vd, Unsupported, "no counterpart")
			}
		}
	}
}

// sslContext converts <sslContext><sslContext keyStore trustStore>.
func (c *conv) sslContext(n *node) {
	inner := n.kid("sslContext")
	if inner == nil {
		c.report(n, Unsupported, "empty")
		return
	}
	s := newMap()
	ks, hasKS := inner.attr("keyStore")
	inner.attr("keyStorePassword")
	inner.attr("keyStoreType")
	// The PEM files (and the intermediate PKCS12 copy) go next to the YAML: the key
	// stores' directory is ActiveMQ's, and may not be writable.
	var commands []string
	if hasKS {
		ks = c.path(c.val(ks))
		cert, key := filepath.Join(c.o.OutDir, "broker-cert.pem"), filepath.Join(c.o.OutDir, "broker-key.pem")
		s.set("certFile", cert)
		s.set("keyFile", key)
		p12 := filepath.Join(c.o.OutDir, strings.TrimSuffix(filepath.Base(ks), filepath.Ext(ks))+".p12")
		commands = keyStoreCommands(ks, p12, cert, key)
	}
	if ts, ok := inner.attr("trustStore"); ok {
		ts = c.path(c.val(ts))
		ca := filepath.Join(c.o.OutDir, "client-ca.pem")
		s.set("clientCAFile", ca)
		commands = append(commands, fmt.Sprintf("keytool -list -rfc -keystore %s > %s", ts, ca))
	}
	inner.attr("trustStorePassword")
	inner.attr("trustStoreType")
	c.leftover(inner, "no counterpart")
	if !s.empty() {
		c.ssl = &pendingSSL{n: inner, s: s, commands: commands}
	}
}

// path resolves a file: URL or a path relative to the base.
func (c *conv) path(p string) string {
	p = strings.TrimPrefix(p, "file:")
	if p != "" && !filepath.IsAbs(p) && !strings.HasPrefix(p, "$") {
		p = filepath.Join(c.o.Base, p)
	}
	return p
}

// keyStoreCommands adds the commands turning a Java key store into the PEM
// certificate chain and unencrypted key sslContext reads.
func (c *conv) keyStoreCommands(ks, p12, cert, key string) {
	c.res.Commands = append(c.res.Commands, keyStoreCommands(ks, p12, cert, key)...)
}

// keyStoreCommands are the commands turning a Java key store into the PEM
// certificate chain and unencrypted key sslContext reads.
func keyStoreCommands(ks, p12, cert, key string) []string {
	return []string{
		fmt.Sprintf("keytool -importkeystore -srckeystore %s -destkeystore %s -deststoretype PKCS12", ks, p12),
		fmt.Sprintf("openssl pkcs12 -in %s -nokeys -out %s", p12, cert),
		fmt.Sprintf("openssl pkcs12 -in %s -nocerts -nodes -out %s", p12, key)}
}
