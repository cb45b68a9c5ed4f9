package xmlconfig_test

import (
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/activemq-go/broker/config"
	"github.com/activemq-go/broker/migrate/xmlconfig"
)

// wrap puts broker content into a Spring file as ActiveMQ ships them.
func wrap(brokerAttrs, inner string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" ` + brokerAttrs + `>
` + inner + `
  </broker>
</beans>`
}

// lookup walks a decoded YAML document along a path like "a.b.0.c".
func lookup(doc any, path string) (any, bool) {
	cur := doc
	for _, p := range strings.Split(path, ".") {
		switch v := cur.(type) {
		case map[string]any:
			var ok bool
			if cur, ok = v[p]; !ok {
				return nil, false
			}
		case []any:
			var i int
			if _, err := fmt.Sscan(p, &i); err != nil || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// load writes the YAML and loads it with config.Load, setting the variables it names.
func load(t *testing.T, res *xmlconfig.Result) *config.Config {
	t.Helper()
	for v := range res.Env {
		t.Setenv(v, "secret-"+strings.ToLower(v))
	}
	path := filepath.Join(t.TempDir(), "broker.yaml")
	if err := os.WriteFile(path, res.YAML, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config.Load refuses the converted file: %v\n%s", err, res.YAML)
	}
	return cfg
}

func TestConvertMappings(t *testing.T) {
	base := t.TempDir()
	login := filepath.Join(base, "login.config")
	if err := os.WriteFile(login, []byte(`activemq {
    org.apache.activemq.jaas.PropertiesLoginModule required
        org.apache.activemq.jaas.properties.user="users.properties"
        org.apache.activemq.jaas.properties.group="groups.properties"
        reload=true;
};`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"users.properties", "groups.properties"} {
		if err := os.WriteFile(filepath.Join(base, f), []byte("admin=admin\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	type want map[string]any
	cases := []struct {
		name   string
		xml    string
		want   want
		absent []string
		report []string // substrings the report must contain
		never  []string // substrings it must not contain
		check  func(t *testing.T, c *config.Config)
	}{
		{
			name: "broker attributes and placeholders",
			xml: wrap(`brokerName="b1" dataDirectory="${activemq.data}/b1" persistent="true" schedulerSupport="true" useJmx="false"
				advisorySupport="false" populateJMSXUserID="true" useAuthenticatedPrincipalForJMSXUserID="true"
				offlineDurableSubscriberTaskSchedule="60000" deleteAllMessagesOnStartup="true" frobnicate="1"`, ``),
			want: want{"broker.brokerName": "b1", "broker.dataDirectory": filepath.Join(base, "data") + "/b1",
				"broker.persistent": true, "broker.schedulerSupport": true, "broker.advisorySupport": false,
				"broker.populateJMSXUserID": true, "broker.useAuthenticatedPrincipalForJMSXUserID": true,
				"broker.offlineDurableSubscriberTaskSchedule": 60000},
			report: []string{"broker@useJmx: not supported: no JMX", "broker@frobnicate: not supported",
				"broker@deleteAllMessagesOnStartup: not supported", "one named stomp on stomp://127.0.0.1:61613",
				"stomp: not in the XML, written as stomp://127.0.0.1:61613 (the XML has no connector: loopback only)"},
			check: func(t *testing.T, c *config.Config) {
				if c.Broker.BrokerName != "b1" || c.Broker.AdvisorySupport {
					t.Errorf("broker = %+v", c.Broker)
				}
			},
		},
		{
			name: "broker offlineDurableSubscriberTimeout",
			xml: wrap(`offlineDurableSubscriberTimeout="120000"`, `<destinationPolicy><policyMap><policyEntries>
				<policyEntry topic="EVENTS.>" memoryLimit="1mb"/><policyEntry topic="AUDIT" offlineDurableSubscriberTimeout="5000"/>
				<policyEntry queue=">" memoryLimit="1mb"/></policyEntries></policyMap></destinationPolicy>`),
			want: want{"destinationPolicy.0.offlineDurableSubscriberTimeout": 120000,
				"destinationPolicy.1.offlineDurableSubscriberTimeout": 5000,
				"destinationPolicy.3.topic":                           ">", "destinationPolicy.3.offlineDurableSubscriberTimeout": 120000},
			absent: []string{"destinationPolicy.2.offlineDurableSubscriberTimeout"},
			report: []string{"broker@offlineDurableSubscriberTimeout: converted with a difference"},
		},
		{
			name:   "scheduler default is ActiveMQ's",
			xml:    wrap(`brokerName="b"`, ``),
			want:   want{"broker.schedulerSupport": false},
			report: []string{"ActiveMQ's default false is written out"},
		},
		{
			name: "kahaDB",
			xml: wrap(``, `<persistenceAdapter><kahaDB directory="${activemq.base}/kahadb" journalMaxFileLength="32 mb"
				journalDiskSyncStrategy="periodic" journalDiskSyncInterval="500" indexCacheSize="1000" bogus="x"/></persistenceAdapter>`),
			want: want{"persistenceAdapter.kahaDB.directory": filepath.Join(base, "kahadb"),
				"persistenceAdapter.kahaDB.journalMaxFileLength":    "32mb",
				"persistenceAdapter.kahaDB.journalDiskSyncStrategy": "periodic",
				"persistenceAdapter.kahaDB.journalDiskSyncInterval": 500},
			absent: []string{"persistenceAdapter.kahaDB.indexCacheSize", "persistenceAdapter.kahaDB.bogus"},
			report: []string{"kahaDB@indexCacheSize: not supported: ActiveMQ implementation tuning", "kahaDB@bogus: not supported",
				"ActiveMQ's KahaDB files are not read"},
		},
		{
			name: "jdbc with a PostgreSQL data source",
			xml: `<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core"><persistenceAdapter>
    <jdbcPersistenceAdapter dataSource="#pg" createTablesOnStartup="false" lockKeepAlivePeriod="5000">
      <statements><statements tablePrefix="AMQ_"/></statements></jdbcPersistenceAdapter>
  </persistenceAdapter></broker>
  <bean id="pg" class="org.apache.commons.dbcp2.BasicDataSource">
    <property name="url" value="jdbc:postgresql://db:5432/activemq"/>
    <property name="username" value="amq"/><property name="password" value="${db.password}"/>
  </bean></beans>`,
			want: want{"persistenceAdapter.jdbc.url": "jdbc:postgresql://db:5432/activemq", "persistenceAdapter.jdbc.user": "amq",
				"persistenceAdapter.jdbc.password": "${DB_PASSWORD}", "persistenceAdapter.jdbc.createTablesOnStartup": false,
				"persistenceAdapter.jdbc.lockKeepAlivePeriod": 5000, "persistenceAdapter.jdbc.tablePrefix": "AMQ_"},
			report: []string{"DB_PASSWORD (was ${db.password})"},
		},
		{
			name: "jdbc with a PGPoolingDataSource",
			xml: `<beans><broker><persistenceAdapter><jdbcPersistenceAdapter dataSource="#pg"/></persistenceAdapter></broker>
  <bean id="pg" class="org.postgresql.ds.PGPoolingDataSource"><property name="serverName" value="db1"/>
  <property name="databaseName" value="amq"/><property name="portNumber" value="0"/>
  <property name="user" value="activemq"/><property name="password" value="${pg.password}"/></bean></beans>`,
			want: want{"persistenceAdapter.jdbc.url": "jdbc:postgresql://db1:5432/amq", "persistenceAdapter.jdbc.user": "activemq",
				"persistenceAdapter.jdbc.password": "${PG_PASSWORD}"},
		},
		{
			name:   "jdbc with another database",
			xml:    `<beans><broker><persistenceAdapter><jdbcPersistenceAdapter dataSource="#d"/></persistenceAdapter></broker><bean id="d"><property name="url" value="jdbc:derby:x"/></bean></beans>`,
			want:   want{"persistenceAdapter.kahaDB": map[string]any{}},
			report: []string{"only PostgreSQL"},
		},
		{
			name:   "memory adapter and persistent false",
			xml:    wrap(`persistent="false"`, `<persistenceAdapter><kahaDB/></persistenceAdapter>`),
			want:   want{"persistenceAdapter.memory": map[string]any{}, "broker.persistent": false},
			absent: []string{"persistenceAdapter.kahaDB"},
		},
		{
			name: "memoryPersistenceAdapter",
			xml:  wrap(``, `<persistenceAdapter><memoryPersistenceAdapter/></persistenceAdapter>`),
			want: want{"persistenceAdapter.memory": map[string]any{}},
		},
		{
			name:   "levelDB",
			xml:    wrap(``, `<persistenceAdapter><levelDB directory="x"/></persistenceAdapter>`),
			want:   want{"persistenceAdapter.kahaDB": map[string]any{}},
			report: []string{"levelDB: not supported"},
		},
		{
			name: "transport connectors",
			xml: wrap(``, `<transportConnectors>
				<transportConnector name="openwire" uri="tcp://0.0.0.0:61616?maximumConnections=1000"/>
				<transportConnector name="stomp" uri="stomp://0.0.0.0:61613?maximumConnections=1000&amp;wireFormat.maxFrameSize=104857600&amp;transport.closeAsync=false"/>
				<transportConnector name="nio" uri="stomp+nio://127.0.0.1:61614" allowLinkStealing="true"/>
				<transportConnector name="ws" uri="ws://0.0.0.0:61619?allowedOrigins=*.example.com&amp;needClientAuth=true"/>
				<transportConnector name="amqp" uri="amqp://0.0.0.0:5672"/>
				<transportConnector name="mqtt" uri="mqtt://0.0.0.0:1883"/>
				<transportConnector name="auto" uri="auto://0.0.0.0:5671"/>
			</transportConnectors>`),
			want: want{"transportConnectors.0.name": "openwire",
				"transportConnectors.0.uri":  "tcp://0.0.0.0:61616?maximumConnections=1000",
				"transportConnectors.1.name": "stomp",
				"transportConnectors.1.uri":  "stomp://0.0.0.0:61613?maximumConnections=1000&wireFormat.maxFrameSize=104857600",
				"transportConnectors.2.uri":  "stomp+nio://127.0.0.1:61614", "broker.allowLinkStealing": true,
				"transportConnectors.3.uri": "ws://0.0.0.0:61619?allowedOrigins=*.example.com"},
			absent: []string{"transportConnectors.4"},
			report: []string{"amqp (amqp)", "mqtt (mqtt)", "auto (auto)",
				"dropped: transport.closeAsync", "dropped: needClientAuth"},
		},
		{
			name: "destination policy",
			xml: wrap(``, `<destinationPolicy><policyMap><policyEntries>
				<policyEntry queue="ORDERS.>" memoryLimit="10 mb" producerFlowControl="false" prioritizedMessages="true"
					expireMessagesPeriod="5000" gcInactiveDestinations="true" inactiveTimoutBeforeGC="30000" queuePrefetch="10" maxPageSize="200">
					<deadLetterStrategy><individualDeadLetterStrategy queuePrefix="DLQ." useQueueForQueueMessages="true" processExpired="false"/></deadLetterStrategy>
					<pendingQueuePolicy><vmQueueCursor/></pendingQueuePolicy>
				</policyEntry>
				<policyEntry topic=">" topicPrefetch="500">
					<pendingMessageLimitStrategy><constantPendingMessageLimitStrategy limit="1000"/></pendingMessageLimitStrategy>
					<slowConsumerStrategy><abortSlowConsumerStrategy abortConnection="true" maxSlowDuration="10000"/></slowConsumerStrategy>
					<deadLetterStrategy><sharedDeadLetterStrategy processNonPersistent="true"/></deadLetterStrategy>
				</policyEntry>
				<policyEntry tempQueue="true"><deadLetterStrategy><discarding/></deadLetterStrategy></policyEntry>
			</policyEntries></policyMap></destinationPolicy>`),
			want: want{"destinationPolicy.0.queue": "ORDERS.>", "destinationPolicy.0.memoryLimit": "10mb",
				"destinationPolicy.0.prioritizedMessages": true, "destinationPolicy.0.expireMessagesPeriod": 5000,
				"destinationPolicy.0.gcInactiveDestinations": true, "destinationPolicy.0.inactiveTimeoutBeforeGC": 30000,
				"destinationPolicy.0.prefetch": 10, "destinationPolicy.0.deadLetterStrategy.individual": true,
				"destinationPolicy.0.deadLetterStrategy.queuePrefix":    "DLQ.",
				"destinationPolicy.0.deadLetterStrategy.processExpired": false,
				"destinationPolicy.1.topic":                             ">", "destinationPolicy.1.prefetch": 500,
				"destinationPolicy.1.pendingMessageLimitStrategy.constantPendingMessageLimitStrategy.limit": 1000,
				"destinationPolicy.1.slowConsumerStrategy.abortSlowConsumerStrategy.abortConnection":        true,
				"destinationPolicy.1.slowConsumerStrategy.abortSlowConsumerStrategy.maxSlowDuration":        10000,
				"destinationPolicy.1.deadLetterStrategy.processNonPersistent":                               true,
				"destinationPolicy.2.tempQueue": true, "destinationPolicy.2.deadLetterStrategy.discard": true,
				"destinationPolicy.2.prioritizedMessages": false,
				"destinationPolicy.3.queue":               ">", "destinationPolicy.3.prioritizedMessages": false},
			report: []string{"producerFlowControl: converted with a difference", "policyEntry@maxPageSize: not supported",
				"pendingQueuePolicy: not supported", "no prioritizedMessages: ActiveMQ's default false (FIFO whatever the priority) is written out",
				`a queue ">" entry with ActiveMQ's default prioritizedMessages: false is written`},
			check: func(t *testing.T, c *config.Config) {
				if len(c.DestinationPolicy) != 4 {
					t.Fatalf("%d policy entries", len(c.DestinationPolicy))
				}
			},
		},
		{
			name: "redelivery plugin",
			xml: wrap(`schedulerSupport="true"`, `<plugins><redeliveryPlugin fallbackToDeadLetter="true" sendToDlqIfMaxRetriesExceeded="true">
				<redeliveryPolicyMap><redeliveryPolicyMap><redeliveryPolicyEntries>
					<redeliveryPolicy queue="ORDERS" maximumRedeliveries="4" redeliveryDelay="10000" useExponentialBackOff="true" backOffMultiplier="2"/>
				</redeliveryPolicyEntries><defaultEntry><redeliveryPolicy maximumRedeliveries="2" initialRedeliveryDelay="5000"/></defaultEntry>
				</redeliveryPolicyMap></redeliveryPolicyMap></redeliveryPlugin></plugins>`),
			want: want{"destinationPolicy.0.queue": "ORDERS", "destinationPolicy.0.nackPolicy": "redeliver",
				"destinationPolicy.0.redeliveryPolicy.maximumRedeliveries": 4,
				"destinationPolicy.0.redeliveryPolicy.backOffMultiplier":   2,
				"destinationPolicy.1.queue":                                ">", "destinationPolicy.2.topic": ">",
				"destinationPolicy.2.redeliveryPolicy.initialRedeliveryDelay": 5000},
			report: []string{"fallbackToDeadLetter: converted with a difference"},
		},
		{
			name: "system usage",
			xml: wrap(``, `<systemUsage><systemUsage sendFailIfNoSpace="true" sendFailIfNoSpaceAfterTimeout="3000">
				<memoryUsage><memoryUsage percentOfJvmHeap="70"/></memoryUsage>
				<storeUsage><storeUsage limit="100 gb"/></storeUsage>
				<tempUsage><tempUsage limit="50 gb"/></tempUsage></systemUsage></systemUsage>`),
			want: want{"systemUsage.sendFailIfNoSpace": true, "systemUsage.sendFailIfNoSpaceAfterTimeout": 3000,
				"systemUsage.storeUsage": "100gb"},
			absent: []string{"systemUsage.memoryUsage"},
			report: []string{"memoryUsage@percentOfJvmHeap: not supported", "tempUsage: not supported"},
		},
		{
			name: "virtual topics and composites",
			xml: wrap(``, `<destinationInterceptors><virtualDestinationInterceptor><virtualDestinations>
				<virtualTopic name="VT.>" prefix="C.*." selectorAware="true"/>
				<compositeQueue name="ALL"><forwardTo><queue physicalName="A"/></forwardTo></compositeQueue>
			</virtualDestinations></virtualDestinationInterceptor></destinationInterceptors>`),
			never:  []string{"virtualDestinationInterceptor: not supported", "virtualDestinations: not supported"},
			want:   want{"virtualTopics.enabled": true, "virtualTopics.name": "VT.>", "virtualTopics.prefix": "C.*."},
			report: []string{"virtualTopic@selectorAware: not supported", "compositeQueue: not supported: composite destinations"},
		},
		{
			name: "simple authentication and authorization",
			xml: wrap(``, `<plugins><simpleAuthenticationPlugin anonymousAccessAllowed="false"><users>
				<authenticationUser username="system" password="${activemq.password}" groups="users,admins"/>
				<authenticationUser username="app" password="app" groups="users"/></users></simpleAuthenticationPlugin>
				<authorizationPlugin><map><authorizationMap><authorizationEntries>
					<authorizationEntry queue=">" read="admins" write="admins" admin="admins"/>
					<authorizationEntry topic="ActiveMQ.Advisory.>" read="*" write="*" admin="*"/>
				</authorizationEntries>
				<tempDestinationAuthorizationEntry><tempDestinationAuthorizationEntry read="users" write="users" admin="users"/></tempDestinationAuthorizationEntry>
				</authorizationMap></map></authorizationPlugin></plugins>`),
			want: want{"plugins.simpleAuthentication.anonymousAccessAllowed": false,
				"plugins.simpleAuthentication.users.0.password": "${ACTIVEMQ_PASSWORD}",
				"plugins.simpleAuthentication.users.1.username": "app",
				"plugins.authorization.entries.0.queue":         ">", "plugins.authorization.entries.1.topic": "ActiveMQ.Advisory.>",
				"plugins.authorization.tempDestination.read": "users"},
			report: []string{"ACTIVEMQ_PASSWORD (was ${activemq.password})", "authenticationUser: converted"},
			never:  []string{": not supported"},
			check: func(t *testing.T, c *config.Config) {
				if c.Plugins.Authorization == nil || len(c.Plugins.Users) != 2 {
					t.Errorf("plugins = %+v", c.Plugins)
				}
			},
		},
		{
			name: "passwords in clear",
			xml: `<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core"><plugins><simpleAuthenticationPlugin><users>
    <authenticationUser username="a.b" password="s3cret-ab" groups="users"/>
    <authenticationUser username="a_b" password="s3cret-a_b" groups="users"/>
    <authenticationUser username="${ops.user}" password="pre-${ops.suffix}" groups="admins"/>
  </users></simpleAuthenticationPlugin></plugins>
  <persistenceAdapter><jdbcPersistenceAdapter dataSource="#pg"/></persistenceAdapter></broker>
  <bean id="pg" class="org.apache.commons.dbcp2.BasicDataSource">
    <property name="url" value="jdbc:postgresql://db:5432/activemq"/>
    <property name="username" value="amq"/><property name="password" value="s3cret-db"/>
  </bean></beans>`,
			want: want{"plugins.simpleAuthentication.users.0.password": "${ACTIVEMQ_USER_A_B_PASSWORD}",
				"plugins.simpleAuthentication.users.1.password": "${ACTIVEMQ_USER_A_B_PASSWORD_2}",
				"plugins.simpleAuthentication.users.2.username": "${OPS_USER}",
				"plugins.simpleAuthentication.users.2.password": "${ACTIVEMQ_USER_OPS_USER_PASSWORD}",
				"persistenceAdapter.jdbc.password":              "${ACTIVEMQ_JDBC_PASSWORD}"},
			report: []string{`ACTIVEMQ_USER_A_B_PASSWORD (the password of user "a.b", written in clear in the XML)`,
				`ACTIVEMQ_USER_A_B_PASSWORD_2 (the password of user "a_b", written in clear in the XML)`,
				"ACTIVEMQ_JDBC_PASSWORD (the password of data source #pg, written in clear in the XML)",
				"OPS_USER (was ${ops.user})"},
			never: []string{"s3cret", "OPS_SUFFIX"},
		},
		{
			name: "jaas through login.config",
			xml:  wrap(``, `<plugins><jaasAuthenticationPlugin configuration="activemq"/></plugins>`),
			want: want{"plugins.jaasProperties.users": filepath.Join(base, "users.properties"), "plugins.jaasProperties.reload": true},
		},
		{
			name: "TLS connector without sslContext",
			xml:  wrap(``, `<transportConnectors><transportConnector name="stomp+ssl" uri="stomp+ssl://0.0.0.0:61612?needClientAuth=false"/></transportConnectors>`),
			want: want{"sslContext.certFile": filepath.Join(base, "broker-cert.pem"),
				"transportConnectors.0.uri": "stomp+ssl://0.0.0.0:61612?needClientAuth=false"},
			report: []string{"a TLS connector without <sslContext>"},
		},
		{
			name: "sslContext",
			xml: wrap(``, `<sslContext><sslContext keyStore="file:${activemq.conf}/broker.ks" keyStorePassword="password"
				trustStore="file:${activemq.conf}/broker.ts" trustStorePassword="password"/></sslContext>
				<transportConnectors><transportConnector name="ssl" uri="ssl://127.0.0.1:61617"/></transportConnectors>`),
			want: want{"sslContext.certFile": filepath.Join(base, "broker-cert.pem"),
				"sslContext.clientCAFile": filepath.Join(base, "client-ca.pem")},
			report: []string{"keytool -importkeystore -srckeystore " + filepath.Join(base, "conf", "broker.ks") +
				" -destkeystore " + filepath.Join(base, "broker.p12"),
				"openssl pkcs12 -in", "keytool -list -rfc -keystore", "start: not before you write the PEM files"},
		},
		{
			name: "sslContext without a TLS connector",
			xml: wrap(``, `<sslContext><sslContext keyStore="file:${activemq.conf}/broker.ks" keyStorePassword="password"/></sslContext>
				<transportConnectors><transportConnector name="stomp" uri="stomp://127.0.0.1:61613"/></transportConnectors>`),
			absent: []string{"sslContext"},
			report: []string{"sslContext: not supported: not written: no TLS connector survives", "start: ready as written"},
			never:  []string{"keytool", "listening differently"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := xmlconfig.Convert([]byte(tc.xml), xmlconfig.Options{Base: base, LoginConfig: login, Source: "test.xml"})
			if err != nil {
				t.Fatal(err)
			}
			var doc any
			if err := yaml.Unmarshal(res.YAML, &doc); err != nil {
				t.Fatalf("%v\n%s", err, res.YAML)
			}
			for path, w := range tc.want {
				got, ok := lookup(doc, path)
				if !ok {
					t.Errorf("%s missing\n%s", path, res.YAML)
					continue
				}
				if !reflect.DeepEqual(got, w) {
					t.Errorf("%s = %#v, want %#v", path, got, w)
				}
			}
			for _, path := range tc.absent {
				if _, ok := lookup(doc, path); ok {
					t.Errorf("%s present\n%s", path, res.YAML)
				}
			}
			var rep bytes.Buffer
			if err := res.WriteReport(&rep); err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.never {
				if strings.Contains(rep.String(), s) {
					t.Errorf("report has %q:\n%s", s, rep.String())
				}
			}
			for _, s := range tc.report {
				if !strings.Contains(rep.String(), s) {
					t.Errorf("report lacks %q:\n%s", s, rep.String())
				}
			}
			for _, s := range tc.never {
				if strings.Contains(string(res.YAML), s) {
					t.Errorf("YAML has %q:\n%s", s, res.YAML)
				}
			}
			for v := range res.Env {
				if !strings.Contains(string(res.YAML), "\n#  "+v+" (") {
					t.Errorf("the YAML's header does not list %s:\n%s", v, res.YAML)
				}
			}
			writePEMs(t, doc)
			cfg := load(t, res)
			if tc.check != nil {
				tc.check(t, cfg)
			}
		})
	}
}

func TestConvertRefuses(t *testing.T) {
	for _, x := range []string{`<beans><broker>`, `<broker persistent="maybe"/>`,
		wrap(``, `<systemUsage><systemUsage><memoryUsage><memoryUsage limit="lots"/></memoryUsage></systemUsage></systemUsage>`)} {
		_, err := xmlconfig.Convert([]byte(x), xmlconfig.Options{Base: t.TempDir()})
		if !errors.Is(err, xmlconfig.ErrXML) && !errors.Is(err, xmlconfig.ErrUnsafe) {
			t.Errorf("%s: err = %v", x, err)
		}
	}
}

// writePEMs writes a self-signed certificate, its key and a CA bundle where the
// converted sslContext expects them, as the commands of the report would.
func writePEMs(t *testing.T, doc any) {
	t.Helper()
	cert, _ := lookup(doc, "sslContext.certFile")
	if cert == nil {
		return
	}
	key, _ := lookup(doc, "sslContext.keyFile")
	ca, _ := lookup(doc, "sslContext.clientCAFile")
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"},
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	files := map[string][]byte{cert.(string): certPEM, key.(string): pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})}
	if ca != nil {
		files[ca.(string)] = certPEM
	}
	for f, b := range files {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

const examples = "/usr/share/doc/activemq/examples/conf"

// TestConvertDebianExamples converts every configuration Debian's activemq
// package ships and loads each result.
func TestConvertDebianExamples(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(examples, "*.xml"))
	gz, _ := filepath.Glob(filepath.Join(examples, "*.xml.gz"))
	files = append(files, gz...)
	if len(files) == 0 {
		t.Fatalf("no examples in %s: install Debian's activemq package", examples)
	}
	brokers, unsupported := 0, map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".gz") {
			z, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if data, err = io.ReadAll(z); err != nil {
				t.Fatal(err)
			}
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			res, err := xmlconfig.Convert(data, xmlconfig.Options{Base: t.TempDir(), Source: f})
			if !bytes.Contains(data, []byte("<broker")) {
				if !errors.Is(err, xmlconfig.ErrNoBroker) {
					t.Fatalf("a file with no <broker>: err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			brokers++
			var doc any
			if err := yaml.Unmarshal(res.YAML, &doc); err != nil {
				t.Fatal(err)
			}
			writePEMs(t, doc)
			for _, it := range res.Unsupported() {
				unsupported[it.Element] = true
			}
			load(t, res)
		})
	}
	t.Logf("%d files converted (%d with a <broker>), %d distinct unsupported elements/attributes", len(files), brokers, len(unsupported))
	for e := range unsupported {
		t.Log("  unsupported:", e)
	}
}

// TestConvertKeyStoreCommands makes Java key stores with keytool, converts an
// sslContext naming them, runs the report's commands (passwords given on the
// command line instead of at the prompts) and loads the result: the PEM files
// land where the YAML expects them and config.Load accepts them.
func TestConvertKeyStoreCommands(t *testing.T) {
	for _, tool := range []string{"keytool", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (Debian's activemq package brings Java's keytool): %v", tool, err)
		}
	}
	dir := t.TempDir()
	run := func(script string) {
		t.Helper()
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	run(`keytool -genkeypair -alias broker -keyalg RSA -keysize 2048 -dname CN=localhost -validity 2 -storetype JKS -keystore broker.ks -storepass secret -keypass secret &&
		keytool -exportcert -alias broker -keystore broker.ks -storepass secret -file broker.der &&
		keytool -importcert -noprompt -alias broker -file broker.der -storetype JKS -keystore broker.ts -storepass secret`)
	xml := wrap(`persistent="false"`, `<sslContext><sslContext keyStore="broker.ks" keyStorePassword="${ks.password}"
		trustStore="broker.ts" trustStorePassword="${ks.password}"/></sslContext>
		<transportConnectors><transportConnector name="ssl" uri="stomp+ssl://127.0.0.1:0?transport.needClientAuth=true"/></transportConnectors>`)
	res, err := xmlconfig.Convert([]byte(xml), xmlconfig.Options{Base: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Commands) != 4 {
		t.Fatalf("commands: %q", res.Commands)
	}
	for _, c := range res.Commands {
		c = strings.Replace(c, "-deststoretype PKCS12", "-deststoretype PKCS12 -srcstorepass secret -deststorepass secret", 1)
		c = strings.Replace(c, "openssl pkcs12 ", "openssl pkcs12 -passin pass:secret ", 1)
		c = strings.Replace(c, "keytool -list -rfc ", "keytool -list -rfc -storepass secret ", 1)
		run(c)
	}
	cfg := load(t, res)
	if cfg.SSLContext.Certificate == nil {
		t.Error("no certificate loaded")
	}
}
