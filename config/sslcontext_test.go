package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pemFiles are a self-signed certificate, its key and a second, unrelated key,
// written to a temporary directory.
type pemFiles struct{ dir, cert, key, otherKey string }

func writePEMFiles(t *testing.T) pemFiles {
	t.Helper()
	dir := t.TempDir()
	key := func() (*ecdsa.PrivateKey, []byte) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		der, err := x509.MarshalPKCS8PrivateKey(k)
		require.NoError(t, err)
		return k, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	k, keyPEM := key()
	_, otherPEM := key()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	require.NoError(t, err)
	f := pemFiles{dir: dir, cert: filepath.Join(dir, "cert.pem"), key: filepath.Join(dir, "key.pem"), otherKey: filepath.Join(dir, "other.pem")}
	require.NoError(t, os.WriteFile(f.cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(f.key, keyPEM, 0o600))
	require.NoError(t, os.WriteFile(f.otherKey, otherPEM, 0o600))
	return f
}

func sslFile(uri, section string) string {
	return connector(uri) + "sslContext:\n" + section
}

func TestSSLContext(t *testing.T) {
	f := writePEMFiles(t)
	section := fmt.Sprintf("  certFile: %s\n  keyFile: %s\n  clientCAFile: %s\n", f.cert, f.key, f.cert)
	c, err := Parse([]byte(sslFile("stomp+ssl://0.0.0.0:61612?transport.needClientAuth=true", section)), nil)
	require.NoError(t, err)
	require.NotNil(t, c.SSLContext.Certificate)
	require.NotNil(t, c.SSLContext.ClientCAs)
	assert.Equal(t, f.cert, c.SSLContext.CertFile)
	conn := c.TransportConnectors[0]
	assert.True(t, conn.TLS)
	tc := c.SSLContext.ServerTLS(conn.ClientAuth)
	require.NotNil(t, tc)
	assert.Equal(t, uint16(tls.VersionTLS12), tc.MinVersion)
	assert.Equal(t, tls.RequireAndVerifyClientCert, tc.ClientAuth)
	assert.Len(t, tc.Certificates, 1)

	// From the environment, as every key.
	env := []string{"BROKER_SSLCONTEXT_CERTFILE=" + f.cert, "BROKER_SSLCONTEXT_KEYFILE=" + f.key}
	c, err = Parse([]byte(connector("wss://0.0.0.0:61614")), env)
	require.NoError(t, err)
	assert.NotNil(t, c.SSLContext.ServerTLS(tls.NoClientCert))

	// No TLS connector and no sslContext: nothing loaded.
	c, err = Parse([]byte(connector("ws://0.0.0.0:61614")), nil)
	require.NoError(t, err)
	assert.Nil(t, c.SSLContext.Certificate)
	assert.Nil(t, c.SSLContext.ServerTLS(tls.NoClientCert))
}

func TestSSLContextErrors(t *testing.T) {
	f := writePEMFiles(t)
	garbage := filepath.Join(f.dir, "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not pem\n"), 0o600))
	encrypted := filepath.Join(f.dir, "encrypted.pem")
	require.NoError(t, os.WriteFile(encrypted, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1}}), 0o600))
	missing := filepath.Join(f.dir, "missing.pem")
	pair := func(cert, key string) string { return fmt.Sprintf("  certFile: %s\n  keyFile: %s\n", cert, key) }
	const ssl = "stomp+ssl://0.0.0.0:61612"
	runErrorCases(t, []errorCase{
		{"no sslContext", connector(ssl), "sslContext.certFile", "required by the TLS connector stomp", "PEM file", ""},
		{"no key file", sslFile("wss://h:1", "  certFile: "+f.cert+"\n"), "sslContext.keyFile", "required by the TLS connector stomp", "PEM file", ""},
		{"section without TLS connector", sslFile("stomp://h:1", "  keyFile: "+f.key+"\n"), "sslContext.certFile", "needs certFile and keyFile", "PEM file", ""},
		{"missing cert", sslFile(ssl, pair(missing, f.key)), "sslContext.certFile", "cannot read the file: no such file or directory", "readable PEM", ""},
		{"missing key", sslFile(ssl, pair(f.cert, missing)), "sslContext.keyFile", "cannot read the file: no such file or directory", "readable PEM", ""},
		{"cert not PEM", sslFile(ssl, pair(garbage, f.key)), "sslContext.certFile", "no PEM certificate in the file", `"CERTIFICATE" block`, ""},
		{"key not PEM", sslFile(ssl, pair(f.cert, garbage)), "sslContext.keyFile", "no PEM private key in the file", `"PRIVATE KEY" block`, ""},
		{"key is a certificate", sslFile(ssl, pair(f.cert, f.cert)), "sslContext.keyFile", "no PEM private key", "", ""},
		{"encrypted key", sslFile(ssl, pair(f.cert, encrypted)), "sslContext.keyFile", "encrypted private keys are not supported", "unencrypted", ""},
		{"key of another certificate", sslFile(ssl, pair(f.cert, f.otherKey)), "sslContext.keyFile", "cannot use the key with certFile's certificate", "private key of certFile", ""},
		{"client CA not PEM", sslFile(ssl, pair(f.cert, f.key)+"  clientCAFile: "+garbage+"\n"), "sslContext.clientCAFile", "no PEM certificate", "", ""},
		{"needClientAuth without CA", sslFile(ssl+"?needClientAuth=true", pair(f.cert, f.key)), "transportConnectors[0].uri", "need sslContext.clientCAFile", "trustStore", ""},
		{"wantClientAuth without CA", sslFile(ssl+"?transport.wantClientAuth=true", pair(f.cert, f.key)), "transportConnectors[0].uri", "need sslContext.clientCAFile", "trustStore", ""},
		{"unknown key", sslFile(ssl, "  keyStorePassword: "+secret+"\n"), "sslContext.keyStorePassword", "unknown key", "certFile, keyFile, clientCAFile", ""},
	})
	_, err := Parse([]byte(sslFile(ssl, pair(missing, f.key))), nil)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}
