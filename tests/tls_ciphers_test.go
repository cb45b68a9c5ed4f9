package tests

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cbcSHA1 is a TLS 1.2 suite Go's own defaults accept and the broker's do not:
// CBC with HMAC-SHA1, for the test PKI's ECDSA certificate.
const cbcSHA1 = "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"

// cbcWidened is an enabledCipherSuites value that adds cbcSHA1 to one AEAD suite.
const cbcWidened = cbcSHA1 + ",TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"

// tls12Client is the test PKI's client limited to TLS 1.2 and the one suite id.
func tls12Client(pki *testPKI, id uint16) *tls.Config {
	c := pki.clientTLS(false)
	c.MaxVersion, c.CipherSuites = tls.VersionTLS12, []uint16{id}
	return c
}

// handshake completes a TLS handshake with addr and closes the connection.
func handshake(addr string, cfg *tls.Config) error {
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err == nil {
		_ = nc.Close()
	}
	return err
}

// javaTLS12Only are the JVM options making ActiveMQ's Java client offer TLS 1.2
// with the single suite cbcSHA1.
func javaTLS12Only(trust []string) []string {
	return append(append([]string{}, trust...), "-Djdk.tls.client.protocols=TLSv1.2",
		"-Djdk.tls.client.cipherSuites="+cbcSHA1)
}

// TestTLSCipherSuites: every TLS listener (stomp+ssl, wss, OpenWire's ssl) refuses a
// TLS 1.2 client offering only a CBC-SHA1 suite, ActiveMQ's Java client among them,
// and serves one offering an AEAD suite, or TLS 1.3.
func TestTLSCipherSuites(t *testing.T) {
	pki := newTestPKI(t)
	p := startConnectors(t, pki.sslContextYAML(false),
		"stomp+ssl", "stomp+ssl://127.0.0.1:0", "wss", "wss://127.0.0.1:0", "ssl", "ssl://127.0.0.1:0")
	for _, name := range []string{"stomp+ssl", "wss", "ssl"} {
		addr := p.connectorAddr(name)
		err := handshake(addr, tls12Client(pki, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA))
		if assert.Error(t, err, "%s: a TLS 1.2 client offering only %s must be refused", name, cbcSHA1) {
			assert.Contains(t, err.Error(), "handshake failure", name)
		}
		for _, id := range []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256} {
			assert.NoError(t, handshake(addr, tls12Client(pki, id)), "%s: TLS 1.2 with %s", name, tls.CipherSuiteName(id))
		}
		assert.NoError(t, handshake(addr, pki.clientTLS(false)), "%s: TLS 1.3", name)
	}
	c, err := dialTLS(t, p.connectorAddr("stomp+ssl"), tls12Client(pki, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256))
	require.NoError(t, err)
	roundTrip(t, c, "/queue/aead", "over AES-GCM")

	// ActiveMQ's Java client offering only the CBC suite is refused; with the JVM's
	// own suites it connects.
	trust := pki.javaTrustStore(t)
	r := runOWJVM(t, javaTLS12Only(trust), "ssl://"+p.connectorAddr("ssl"), "secure", "allowed="+owName(t, "q"))
	assert.NotEqual(t, "ok", r.get("connect"), "the Java client offering only %s connected", cbcSHA1)
	r = runOWJVM(t, trust, "ssl://"+p.connectorAddr("ssl"), "secure", "allowed="+owName(t, "q"))
	assert.Equal(t, "ok", r.get("connect"))
	require.False(t, p.Exited())
}

// TestTLSCipherSuitesWidened: a connector's transport.enabledCipherSuites widens its
// own list (the Java client limited to the CBC suite connects there), and
// sslContext.enabledCipherSuites every TLS listener's.
func TestTLSCipherSuitesWidened(t *testing.T) {
	pki := newTestPKI(t)
	widened := "?transport.enabledCipherSuites=" + cbcWidened
	p := startConnectors(t, pki.sslContextYAML(false),
		"stomp+ssl", "stomp+ssl://127.0.0.1:0", "stomp+ssl-cbc", "stomp+ssl://127.0.0.1:0"+widened,
		"ssl-cbc", "nio+ssl://127.0.0.1:0"+widened)
	require.Error(t, handshake(p.connectorAddr("stomp+ssl"), tls12Client(pki, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA)),
		"the connector without the option keeps the default")
	c, err := dialTLS(t, p.connectorAddr("stomp+ssl-cbc"), tls12Client(pki, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA))
	require.NoError(t, err)
	roundTrip(t, c, "/queue/cbc", "over CBC, as configured")
	require.NoError(t, handshake(p.connectorAddr("stomp+ssl-cbc"), tls12Client(pki, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)))
	r := runOWJVM(t, javaTLS12Only(pki.javaTrustStore(t)), "ssl://"+p.connectorAddr("ssl-cbc"), "secure", "allowed="+owName(t, "q"))
	assert.Equal(t, "ok", r.get("connect"))
	assert.True(t, strings.HasPrefix(r.get("received"), "allowed/"), r.get("received"))

	p = startConnectors(t, pki.sslContextYAML(false)+"  enabledCipherSuites: ["+cbcWidened+"]\n",
		"stomp+ssl", "stomp+ssl://127.0.0.1:0", "wss", "wss://127.0.0.1:0")
	for _, name := range []string{"stomp+ssl", "wss"} {
		assert.NoError(t, handshake(p.connectorAddr(name), tls12Client(pki, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA)), name)
		// A suite the list leaves out is refused.
		assert.Error(t, handshake(p.connectorAddr(name), tls12Client(pki, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384)), name)
	}
}

// TestTLSCipherSuitesConfigErrors: a suite name the broker does not know stops the
// start, naming it, as does the option on a connector without TLS.
func TestTLSCipherSuitesConfigErrors(t *testing.T) {
	pki := newTestPKI(t)
	for _, bad := range []struct{ yaml, uri, log string }{
		{"  enabledCipherSuites: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_NO_SUCH_SUITE\n", "stomp+ssl://127.0.0.1:0",
			`config: sslContext.enabledCipherSuites: unknown cipher suite "TLS_NO_SUCH_SUITE"`},
		{"", "stomp+ssl://127.0.0.1:0?transport.enabledCipherSuites=TLS_RSA_WITH_RC5",
			`option transport.enabledCipherSuites: unknown cipher suite "TLS_RSA_WITH_RC5"`},
		{"", "stomp://127.0.0.1:0?transport.enabledCipherSuites=" + cbcSHA1,
			"enabledCipherSuites applies to TLS connectors only"},
	} {
		dataDir := t.TempDir()
		cfg := "broker:\n  dataDirectory: " + dataDir + "\ntransportConnectors:\n  - {name: c, uri: \"" + bad.uri + "\"}\n" +
			pki.sslContextYAML(false) + bad.yaml
		b := spawnBrokerFile(t, writeFile(t, cfg), dataDir)
		require.Error(t, b.WaitExit(20*time.Second), bad.log)
		assert.Contains(t, b.Log(), bad.log)
	}
}
