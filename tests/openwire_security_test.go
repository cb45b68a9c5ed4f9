package tests

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	ow "github.com/activemq-go/broker/internal/openwire"
)

// OpenWire over TLS and OpenWire's security: ActiveMQ's own client with a trust store
// (and a key store for certificate users) on ssl:// and nio+ssl://, and the users,
// groups and authorization entries of the security expectations, side by side with
// ActiveMQ 5.17 where the configuration carries over.

// owStorePassword protects the test's Java key and trust stores.
const owStorePassword = "changeit"

// javaTrustStore is a PKCS#12 trust store of the test CA, made by keytool, as the
// JVM options that make ActiveMQ's client (its default SSL socket factory) use it.
func (p *testPKI) javaTrustStore(t testing.TB) []string {
	t.Helper()
	store := filepath.Join(t.TempDir(), "trust.p12")
	out, err := exec.Command(filepath.Join(filepath.Dir(javaBinary()), "keytool"), "-importcert", "-noprompt",
		"-alias", "e2e-ca", "-file", p.CAFile, "-keystore", store, "-storetype", "PKCS12",
		"-storepass", owStorePassword).CombinedOutput()
	require.NoError(t, err, "keytool: %s", out)
	return []string{"-Djavax.net.ssl.trustStore=" + store, "-Djavax.net.ssl.trustStoreType=PKCS12",
		"-Djavax.net.ssl.trustStorePassword=" + owStorePassword}
}

// javaKeyStore is a PKCS#12 key store of the client certificate c (made by openssl,
// since keytool imports no PEM key), as the JVM options that present it.
func javaKeyStore(t testing.TB, c tls.Certificate) []string {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile, store := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "client.p12")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600))
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	out, err := exec.Command("openssl", "pkcs12", "-export", "-in", certFile, "-inkey", keyFile, "-name", "client",
		"-out", store, "-passout", "pass:"+owStorePassword).CombinedOutput()
	require.NoError(t, err, "openssl pkcs12: %s", out)
	return []string{"-Djavax.net.ssl.keyStore=" + store, "-Djavax.net.ssl.keyStoreType=PKCS12",
		"-Djavax.net.ssl.keyStorePassword=" + owStorePassword}
}

// TestOpenWireTLS: ssl:// and nio+ssl:// connectors serve ActiveMQ's client with the
// sslContext certificate, which the client verifies against its trust store; a
// plain-text OpenWire client on the TLS port is dropped and counted as a failed TLS
// handshake, as a STOMP one is.
func TestOpenWireTLS(t *testing.T) {
	pki := newTestPKI(t)
	b := startSecBroker(t, secBroker{Open: true, Extra: pki.sslContextYAML(false), Env: []string{adminEnv}, Connectors: []string{
		"stomp", "stomp://127.0.0.1:0", "ssl", "ssl://127.0.0.1:0", "nio-ssl", "nio+ssl://127.0.0.1:0",
	}})
	trust := pki.javaTrustStore(t)
	for _, name := range []string{"ssl", "nio-ssl"} {
		t.Run(name, func(t *testing.T) {
			r := runOWJVM(t, trust, "ssl://"+b.connectorAddr(name), "connect", "dest="+owName(t, "q"), "client="+owName(t, "c"))
			assert.Equal(t, "hello", r.get("received"))
			assert.Equal(t, "true", r.get("closed"))
		})
	}
	assert.Contains(t, b.Log(), "transport=openwire+tls")

	plain := dialOWRaw(t, b.connectorAddr("ssl"))
	plain.write(ow.NewWireFormatInfo(ow.Format{Version: ow.Version}))
	plain.expectClosed(raceScaled(20 * time.Second))
	a := newAPI(t, "http://"+statsAddr(t, b))
	eventually(t, 10*time.Second, "the failed TLS handshake counted", func() bool {
		_, metrics, _ := a.call("GET", "/metrics", "")
		n, _ := metricSum(string(metrics), "broker_connections_rejected_total", "reason", "tls")
		return n == 1
	})
	_, metrics, _ := a.call("GET", "/metrics", "")
	n, _ := metricSum(string(metrics), "broker_connections_rejected_total", "reason", "protocol")
	assert.Zero(t, n, "a failed TLS handshake counted as a protocol failure")
}

// TestOpenWireCertificateUsers: on ssl:// with needClientAuth, the certificateUsers
// plugin makes the client certificate's DN a user, as on stomp+ssl://
// (TestSecurityTLSClientCertificate): its user may use USERS.> and is the message's
// JMSXUserID, may not write to FOO (the connection carries on), and a certificate the
// CA signed for a DN the file does not name is refused at connect.
func TestOpenWireCertificateUsers(t *testing.T) {
	pki := newTestPKI(t)
	known := pki.clientCert(t, pkix.Name{CommonName: "client1", Organization: []string{"Test"}})
	stranger := pki.clientCert(t, pkix.Name{CommonName: "client2", Organization: []string{"Test"}})
	dir := t.TempDir()
	usersFile, groupsFile := filepath.Join(dir, "users-by-dn.properties"), filepath.Join(dir, "groups.properties")
	require.NoError(t, os.WriteFile(usersFile, []byte("certuser="+known.Leaf.Subject.String()+"\n"), 0o600))
	require.NoError(t, os.WriteFile(groupsFile, []byte("users=certuser\n"), 0o600))
	b := startSecBroker(t, secBroker{
		Connectors: []string{"stomp", "stomp://127.0.0.1:0", "ssl", "ssl://127.0.0.1:0?transport.needClientAuth=true"},
		Plugins: strings.Replace(secPluginsYAML(secPasswords(), fmt.Sprintf("certificateUsers: {file: %q, groups: %q}", usersFile, groupsFile)),
			"    entries:\n", "    tempDestination: {read: users, write: users, admin: users}\n    entries:\n", 1),
		Extra: pki.sslContextYAML(true),
	})
	url := "ssl://" + b.connectorAddr("ssl")
	trust := pki.javaTrustStore(t)

	r := runOWJVM(t, append(trust, javaKeyStore(t, known)...), url, "secure", "allowed=USERS."+owName(t, "cert"), "denied=FOO")
	assert.Equal(t, "ok", r.get("connect"))
	assert.Equal(t, "allowed/certuser", r.get("received"))
	assert.Equal(t, "JMSSecurityException: User certuser is not authorized to write to: queue://FOO", r.get("denied_producer"))
	assert.Equal(t, "JMSSecurityException: User certuser is not authorized to write to: queue://FOO", r.get("denied"))
	assert.Equal(t, "after-denied/certuser", r.get("after_denied"))
	assert.Equal(t, "ok", r.get("temp"))

	r = runOWJVM(t, append(trust, javaKeyStore(t, stranger)...), url, "secure", "allowed=USERS."+owName(t, "cert"))
	assert.True(t, strings.HasPrefix(r.get("connect"), "javax.jms.JMSSecurityException: "), "connect=%s", r.get("connect"))
}

// owTempRights are the temporary destinations' rights of TestOpenWireSecurity: users
// may create them, guests not.
const owTempRights = "read: users, write: users, admin: users"

// TestOpenWireSecurity: with the users and authorization entries of the security
// expectations (plus tempDestination rights for users), ActiveMQ's client against
// ActiveMQ 5.17 and against ours: a wrong password is a JMSSecurityException at
// connect; a producer and a send the entries deny throw (the producer when it is
// made) and the connection carries on; a temporary
// queue is created only by a group the tempDestination rights name.
func TestOpenWireSecurity(t *testing.T) {
	pw := secPasswords()
	amqXML := strings.NewReplacer(
		`<transportConnector name="stomp" uri="stomp://127.0.0.1:`+amqStompPort+`"/>`,
		`<transportConnector name="stomp" uri="stomp://127.0.0.1:`+amqStompPort+`"/>
      <transportConnector name="openwire" uri="tcp://127.0.0.1:`+amqOpenWirePort+`"/>`,
		`</authorizationEntries>`, `</authorizationEntries>
            <tempDestinationAuthorizationEntry>
              <tempDestinationAuthorizationEntry read="users" write="users" admin="users"/>
            </tempDestinationAuthorizationEntry>`,
	).Replace(activeMQSecurityXML(pw))
	targets := []struct {
		name  string
		start func(t *testing.T) string
	}{
		{"activemq", func(t *testing.T) string { return "tcp://" + sharedActiveMQ(t, amqXML).OpenWireAddr }},
		{"ours", func(t *testing.T) string {
			b := startSecBroker(t, secBroker{
				Connectors: []string{"stomp", "stomp://127.0.0.1:0", "openwire", "tcp://127.0.0.1:0"},
				Plugins:    strings.Replace(secPluginsYAML(pw), "    entries:\n", "    tempDestination: {"+owTempRights+"}\n    entries:\n", 1),
			})
			return "tcp://" + b.connectorAddr("openwire")
		}},
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			url := tg.start(t)
			r := runOW(t, url, "secure", "user=user", "password=wrong-"+pw["user"])
			assert.Equal(t, "javax.jms.JMSSecurityException: User name [user] or password is invalid.", r.get("connect"))

			r = runOW(t, url, "secure", "user=user", "password="+pw["user"], "allowed=USERS."+owName(t, "q"), "denied=FOO")
			assert.Equal(t, "ok", r.get("connect"))
			assert.Equal(t, "allowed/user", r.get("received"))
			assert.Equal(t, "JMSSecurityException: User user is not authorized to write to: queue://FOO", r.get("denied_producer"))
			assert.Equal(t, "JMSSecurityException: User user is not authorized to write to: queue://FOO", r.get("denied"))
			assert.Equal(t, "after-denied/user", r.get("after_denied"))
			assert.Equal(t, "ok", r.get("temp"))

			r = runOW(t, url, "secure", "user=guest", "password="+pw["guest"], "allowed=GUEST."+owName(t, "q"))
			assert.Equal(t, "allowed/guest", r.get("received"))
			temp, _, _ := strings.Cut(r.get("temp"), "temp-queue://")
			assert.Equal(t, "JMSSecurityException: User guest is not authorized to create: ", temp, "temp=%s", r.get("temp"))
		})
	}
}

// TestOpenWireTempQueueByPlainName: the OpenWire side of TestSecurityTempQueueByPlainName.
// Another connection (system, who may read every queue) that takes a temporary queue's
// name for a queue's (new ActiveMQQueue(tq.getQueueName()): the client's createQueue
// makes a temporary queue of an ID:... name) is refused a consumer and a browser, the
// temporary queue itself its client refuses, and its wildcard consumer gets none of
// the replies it sends, which all go to the temporary queue's owner.
func TestOpenWireTempQueueByPlainName(t *testing.T) {
	pw := secPasswords()
	b := startSecBroker(t, secBroker{
		Connectors: []string{"stomp", "stomp://127.0.0.1:0", "openwire", "tcp://127.0.0.1:0"},
		Plugins:    strings.Replace(secPluginsYAML(pw), "    entries:\n", "    tempDestination: {"+owTempRights+"}\n    entries:\n", 1),
	})
	r := runOW(t, "tcp://"+b.connectorAddr("openwire"), "tempsteal", "user=user", "password="+pw["user"],
		"intruder=system", "intruder_password="+pw["system"], "n=4")
	for _, k := range []string{"plain_consumer", "plain_browser"} {
		assert.Contains(t, r.get(k), "names a temporary queue, which no queue name reaches", "%s=%s", k, r.get(k))
	}
	assert.Equal(t, "InvalidDestinationException: Cannot use a Temporary destination from another Connection", r.get("temp_consumer"))
	assert.Equal(t, "reply1,reply2,reply3,reply4", r.get("owner_received"))
	assert.Equal(t, "none", r.get("intruder_wildcard"))
}
