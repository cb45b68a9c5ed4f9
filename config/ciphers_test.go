package config

import (
	"crypto/tls"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCipherSuites(t *testing.T) {
	f := writePEMFiles(t)
	section := fmt.Sprintf("  certFile: %s\n  keyFile: %s\n", f.cert, f.key)

	// Default: the AEAD suites, TLS 1.2 or later, on every listener.
	c, err := Parse([]byte(sslFile("stomp+ssl://h:1", section)), nil)
	require.NoError(t, err)
	tc := c.SSLContext.ConnectorTLS(c.TransportConnectors[0])
	assert.Equal(t, DefaultCipherSuites, tc.CipherSuites)
	assert.Equal(t, uint16(tls.VersionTLS12), tc.MinVersion)
	for _, id := range tc.CipherSuites {
		name := tls.CipherSuiteName(id)
		assert.Regexp(t, `^TLS_ECDHE_(RSA|ECDSA)_WITH_(AES_\d+_GCM|CHACHA20_POLY1305)_SHA\d+$`, name)
	}

	// Broker-wide, as a list with Java's SSL_ prefix, repeats dropped; a connector's
	// option wins; TLS 1.3 names only: TLS 1.3 only.
	wide := section + "  enabledCipherSuites: [SSL_ECDHE_RSA_WITH_AES_128_CBC_SHA, TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, TLS_AES_128_GCM_SHA256]\n"
	c, err = Parse([]byte(sslFile("stomp+ssl://h:1", wide)), nil)
	require.NoError(t, err)
	assert.Equal(t, []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA}, c.SSLContext.ServerTLS(tls.NoClientCert).CipherSuites)
	c, err = Parse([]byte(sslFile("wss://h:1?enabledCipherSuites=tls_aes_256_gcm_sha384", wide)), nil)
	require.NoError(t, err)
	tc = c.SSLContext.ConnectorTLS(c.TransportConnectors[0])
	assert.Nil(t, tc.CipherSuites)
	assert.Equal(t, uint16(tls.VersionTLS13), tc.MinVersion)

	for _, bad := range []struct{ file, want string }{
		{sslFile("stomp+ssl://h:1", section+"  enabledCipherSuites: TLS_BOGUS\n"),
			`sslContext.enabledCipherSuites: unknown cipher suite "TLS_BOGUS"`},
		{sslFile("stomp+ssl://h:1", section+"  enabledCipherSuites: \"\"\n"), "no cipher suite named"},
		{sslFile("ssl://h:1?transport.enabledCipherSuites=,", section), "option transport.enabledCipherSuites: no cipher suite named"},
		{connector("tcp://h:1?transport.enabledCipherSuites=TLS_AES_128_GCM_SHA256"), "applies to TLS connectors only"},
	} {
		_, err := Parse([]byte(bad.file), nil)
		require.Error(t, err, bad.file)
		assert.Contains(t, err.Error(), bad.want)
	}
}
