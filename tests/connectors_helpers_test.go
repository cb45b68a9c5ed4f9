package tests

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testPKI is a CA, a server certificate for 127.0.0.1 and a client certificate,
// generated for one test, with the PEM files the broker reads.
type testPKI struct {
	CAFile, CertFile, KeyFile string
	Roots                     *x509.CertPool  // trusts the CA
	Client                    tls.Certificate // signed by the CA

	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	dir := t.TempDir()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		return k
	}
	serial := int64(0)
	issue := func(tmpl, parent *x509.Certificate, pub, signer any) *x509.Certificate {
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		if parent == nil {
			parent = tmpl
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
		require.NoError(t, err)
		c, err := x509.ParseCertificate(der)
		require.NoError(t, err)
		return c
	}
	caKey := newKey()
	ca := issue(&x509.Certificate{
		Subject: pkix.Name{CommonName: "e2e CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, nil, &caKey.PublicKey, caKey)
	srvKey := newKey()
	srv := issue(&x509.Certificate{
		Subject: pkix.Name{CommonName: "broker"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, &srvKey.PublicKey, caKey)
	cliKey := newKey()
	cli := issue(&x509.Certificate{
		Subject:  pkix.Name{CommonName: "client"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, &cliKey.PublicKey, caKey)

	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return path
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		require.NoError(t, err)
		return der
	}
	p := &testPKI{
		CAFile:   write("ca.pem", "CERTIFICATE", ca.Raw),
		CertFile: write("broker-cert.pem", "CERTIFICATE", srv.Raw),
		KeyFile:  write("broker-key.pem", "PRIVATE KEY", keyDER(srvKey)),
		Roots:    x509.NewCertPool(),
		Client:   tls.Certificate{Certificate: [][]byte{cli.Raw}, PrivateKey: cliKey, Leaf: cli},
		ca:       ca,
		caKey:    caKey,
	}
	p.Roots.AddCert(ca)
	return p
}

// clientTLS is the TLS configuration of a client that trusts the test CA, with
// the client certificate when withCert.
func (p *testPKI) clientTLS(withCert bool) *tls.Config {
	c := &tls.Config{RootCAs: p.Roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if withCert {
		c.Certificates = []tls.Certificate{p.Client}
	}
	return c
}

// sslContextYAML is the sslContext section for the PKI's files; clientCA adds the
// CA bundle that verifies client certificates.
func (p *testPKI) sslContextYAML(clientCA bool) string {
	s := fmt.Sprintf("sslContext:\n  certFile: %s\n  keyFile: %s\n", p.CertFile, p.KeyFile)
	if clientCA {
		s += fmt.Sprintf("  clientCAFile: %s\n", p.CAFile)
	}
	return s
}

// startConnectors starts the broker with the given transportConnectors, name to
// uri in order, plus extra YAML, and returns it once every connector listens.
func startConnectors(t testing.TB, extra string, nameURI ...string) *brokerProc {
	t.Helper()
	var b strings.Builder
	dataDir := t.TempDir()
	fmt.Fprintf(&b, "broker:\n  brokerName: e2e\n  dataDirectory: %s\npersistenceAdapter:\n  memory: {}\ntransportConnectors:\n", dataDir)
	for i := 0; i+1 < len(nameURI); i += 2 {
		fmt.Fprintf(&b, "  - name: %s\n    uri: %q\n", nameURI[i], nameURI[i+1])
	}
	b.WriteString(extra)
	path := writeFile(t, b.String())
	p := startBrokerFile(t, path, dataDir)
	for i := 0; i+1 < len(nameURI); i += 2 {
		p.connectorAddr(nameURI[i])
	}
	return p
}

// connectorAddr returns the address the named connector listens on, from its
// "listening" log line.
func (p *brokerProc) connectorAddr(name string) string {
	p.t.Helper()
	re := regexp.MustCompile(`msg=listening connector=` + regexp.QuoteMeta(name) + ` addr=(\S+)`)
	var addr string
	eventually(p.t, 10*time.Second, "connector "+name+" listening", func() bool {
		if m := re.FindStringSubmatch(p.Log()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	return addr
}

// writeFile writes a configuration file into a fresh temporary directory.
func writeFile(t testing.TB, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "broker.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

// clientCert issues another client certificate of the CA, for subject.
func (p *testPKI) clientCert(t testing.TB, subject pkix.Name) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}
