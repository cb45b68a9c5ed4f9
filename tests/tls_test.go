package tests

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dialTLS connects a go-stomp client over TLS; it is disconnected at the end of the
// test. The error is stomp.Connect's or the handshake's.
func dialTLS(t testing.TB, addr string, cfg *tls.Config) (*stomp.Conn, error) {
	t.Helper()
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second)) // CONNECT only
	c, err := stomp.Connect(nc, stomp.ConnOpt.Logger(quietLogger{}))
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	t.Cleanup(func() { _ = c.MustDisconnect() })
	return c, nil
}

// roundTrip subscribes on c, sends body to dest with a receipt and requires it back.
func roundTrip(t testing.TB, c *stomp.Conn, dest, body string) {
	t.Helper()
	sub, err := c.Subscribe(dest, stomp.AckAuto)
	require.NoError(t, err)
	require.NoError(t, c.Send(dest, "text/plain", []byte(body), stomp.SendOpt.Receipt))
	receive(t, sub, body)
}

// receive requires the next message of sub, within 10 s, to have body.
func receive(t testing.TB, sub *stomp.Subscription, body string) {
	t.Helper()
	select {
	case m := <-sub.C:
		require.NoError(t, m.Err)
		assert.Equal(t, body, string(m.Body))
	case <-time.After(10 * time.Second):
		t.Fatalf("no MESSAGE %q on %s", body, sub.Destination())
	}
}

// TestTLSConnector: a stomp+ssl and a stomp+nio+ssl connector serve STOMP over TLS
// with the sslContext certificate; a plain-text client on the TLS port is dropped
// without harm to the broker; TLS below 1.2 is refused.
func TestTLSConnector(t *testing.T) {
	pki := newTestPKI(t)
	p := startConnectors(t, pki.sslContextYAML(false),
		"stomp", "stomp://127.0.0.1:0", "stomp+ssl", "stomp+ssl://127.0.0.1:0", "nio-ssl", "stomp+nio+ssl://127.0.0.1:0")
	sslAddr := p.connectorAddr("stomp+ssl")

	c, err := dialTLS(t, sslAddr, pki.clientTLS(false))
	require.NoError(t, err)
	roundTrip(t, c, "/queue/tls", "over TLS")
	c2, err := dialTLS(t, p.connectorAddr("nio-ssl"), pki.clientTLS(false))
	require.NoError(t, err)
	roundTrip(t, c2, "/queue/nio-tls", "over NIO TLS")

	// Messages cross transports: sent over TCP, received over TLS.
	sub, err := c.Subscribe("/queue/cross", stomp.AckAuto)
	require.NoError(t, err)
	plain := dial(t, p.connectorAddr("stomp"))
	require.NoError(t, plain.Send("/queue/cross", "text/plain", []byte("from tcp"), stomp.SendOpt.Receipt))
	receive(t, sub, "from tcp")

	// A STOMP client speaking plain text to the TLS port gets no CONNECTED and is
	// disconnected (the handshake fails on the CONNECT bytes).
	raw := dialRaw(t, sslAddr)
	raw.sendRaw("CONNECT\naccept-version:1.2\nhost:localhost\n\n\x00")
	f, err := raw.readWithin(10 * time.Second)
	require.Error(t, err, "a plain-text client must not get a frame from a TLS port, got %v", f)
	var ne net.Error
	assert.False(t, asNetErr(err, &ne) && ne.Timeout(), "the broker must close the connection, not leave it open")

	// TLS 1.1 is refused.
	old := pki.clientTLS(false)
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	_, err = dialTLS(t, sslAddr, old)
	require.Error(t, err)

	// The broker is still up and serving TLS.
	require.False(t, p.Exited())
	c3, err := dialTLS(t, sslAddr, pki.clientTLS(false))
	require.NoError(t, err)
	roundTrip(t, c3, "/queue/tls-after", "still here")
}

// TestTLSNeedClientAuth: with transport.needClientAuth=true a client without a
// certificate is refused, one with a certificate from clientCAFile's CA works.
func TestTLSNeedClientAuth(t *testing.T) {
	pki := newTestPKI(t)
	p := startConnectors(t, pki.sslContextYAML(true),
		"stomp+ssl", "stomp+ssl://127.0.0.1:0?transport.needClientAuth=true")
	addr := p.connectorAddr("stomp+ssl")

	_, err := dialTLS(t, addr, pki.clientTLS(false))
	require.Error(t, err, "a client without a certificate must be refused")

	// A certificate the CA did not sign is refused too.
	other := newTestPKI(t)
	stranger := pki.clientTLS(false)
	stranger.Certificates = []tls.Certificate{other.Client}
	_, err = dialTLS(t, addr, stranger)
	require.Error(t, err, "a client certificate from another CA must be refused")

	c, err := dialTLS(t, addr, pki.clientTLS(true))
	require.NoError(t, err)
	roundTrip(t, c, "/queue/mtls", "with a client certificate")
	require.False(t, p.Exited())
}

// TestTLSWantClientAuth: with wantClientAuth a client may come without a
// certificate; one with a certificate works too.
func TestTLSWantClientAuth(t *testing.T) {
	pki := newTestPKI(t)
	p := startConnectors(t, pki.sslContextYAML(true), "ssl", "stomp+ssl://127.0.0.1:0?wantClientAuth=true")
	addr := p.connectorAddr("ssl")
	c, err := dialTLS(t, addr, pki.clientTLS(false))
	require.NoError(t, err)
	roundTrip(t, c, "/queue/want-none", "no certificate")
	c2, err := dialTLS(t, addr, pki.clientTLS(true))
	require.NoError(t, err)
	roundTrip(t, c2, "/queue/want-cert", "certificate")
}

// TestTLSConfigErrors: a TLS connector with a missing certificate file stops the
// start with the config error.
func TestTLSConfigErrors(t *testing.T) {
	pki := newTestPKI(t)
	pki.CertFile += ".missing"
	dataDir := t.TempDir()
	cfg := "broker:\n  dataDirectory: " + dataDir + "\ntransportConnectors:\n  - {name: ssl, uri: \"stomp+ssl://127.0.0.1:0\"}\n" + pki.sslContextYAML(false)
	path := writeFile(t, cfg)
	p := spawnBrokerFile(t, path, dataDir)
	require.Error(t, p.WaitExit(20*time.Second))
	assert.Contains(t, p.Log(), "config: sslContext.certFile: cannot read the file: no such file or directory")
}
