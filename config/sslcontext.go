package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"strings"
)

// SSLContext is the sslContext section, ActiveMQ's <sslContext> with PEM files
// instead of Java key stores. Relative paths are read against the process's
// working directory, as written.
type SSLContext struct {
	// CertFile is the PEM certificate chain of the TLS connectors, the server's
	// certificate first (ActiveMQ's keyStore); required when a TLS connector exists.
	CertFile string
	// KeyFile is the PEM private key of CertFile's certificate (PKCS #1, PKCS #8
	// or EC; not encrypted); required with CertFile.
	KeyFile string
	// ClientCAFile is a PEM bundle of the CAs that verify client certificates
	// (ActiveMQ's trustStore); required by needClientAuth and wantClientAuth.
	ClientCAFile string
	// Certificate is CertFile and KeyFile, loaded; nil when the section is empty
	// and no connector uses TLS.
	Certificate *tls.Certificate
	// ClientCAs is ClientCAFile, loaded; nil without one.
	ClientCAs *x509.CertPool
	// CipherSuites are the TLS 1.2 cipher suites of every TLS listener
	// (enabledCipherSuites, ActiveMQ's transport.enabledCipherSuites for all
	// connectors): nil for DefaultCipherSuites, empty for TLS 1.3 only. A
	// connector's own transport.enabledCipherSuites wins.
	CipherSuites []uint16
}

// ServerTLS returns the TLS configuration of a listener: TLS 1.2 or later with
// CipherSuites (DefaultCipherSuites unless widened), the certificate, and the
// client-certificate check auth with ClientCAs. It returns nil when no
// certificate is loaded.
func (s SSLContext) ServerTLS(auth tls.ClientAuthType) *tls.Config {
	if s.Certificate == nil {
		return nil
	}
	tc := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{*s.Certificate},
		ClientAuth:   auth,
		ClientCAs:    s.ClientCAs,
	}
	applyCipherSuites(tc, s.CipherSuites)
	return tc
}

// sslContextSection is sslContext as written.
type sslContextSection struct {
	CertFile     string `mapstructure:"certFile"`
	KeyFile      string `mapstructure:"keyFile"`
	ClientCAFile string `mapstructure:"clientCAFile"`
	// EnabledCipherSuites is nil when the key is absent.
	EnabledCipherSuites nameList `mapstructure:"enabledCipherSuites"`
}

// buildSSLContext loads the files of the sslContext section when a connector
// uses TLS or the section names a file, so that a bad file stops the start
// rather than the first TLS client, and checks that every connector asking for
// client certificates has a CA to verify them.
func (c *checker) buildSSLContext(s sslContextSection, conns []Connector) (SSLContext, *Error) {
	const path = "sslContext"
	out := SSLContext{CertFile: s.CertFile, KeyFile: s.KeyFile, ClientCAFile: s.ClientCAFile}
	if s.EnabledCipherSuites != nil {
		ids, err := parseCipherSuites(s.EnabledCipherSuites)
		if err != nil {
			return SSLContext{}, c.invalid(joinKey(path, "enabledCipherSuites"), err.Problem, err.Allowed)
		}
		out.CipherSuites = ids
	}
	tlsAt := -1
	for i, conn := range conns {
		if conn.TLS && tlsAt < 0 {
			tlsAt = i
		}
		if conn.ClientAuth != tls.NoClientCert && strings.TrimSpace(s.ClientCAFile) == "" {
			return SSLContext{}, c.invalid(joinKey(joinIndex("transportConnectors", i), "uri"),
				"needClientAuth and wantClientAuth need sslContext.clientCAFile to verify client certificates",
				"sslContext: {clientCAFile: ca.pem} (a PEM CA bundle, ActiveMQ's trustStore), or no client-auth option")
		}
	}
	if tlsAt < 0 && s.CertFile == "" && s.KeyFile == "" && s.ClientCAFile == "" {
		return out, nil
	}
	certKey, keyKey := joinKey(path, "certFile"), joinKey(path, "keyFile")
	for _, kv := range [][2]string{{certKey, s.CertFile}, {keyKey, s.KeyFile}} {
		k := kv[0]
		if strings.TrimSpace(kv[1]) != "" {
			continue
		}
		problem := "missing: " + path + " needs certFile and keyFile"
		if tlsAt >= 0 {
			problem = "missing: required by the TLS connector " + conns[tlsAt].Name
		}
		return SSLContext{}, c.errorf(c.written(k), nil, problem, "a PEM file path, e.g. ./conf/broker-cert.pem")
	}
	certPEM, err := c.readPEM(certKey, s.CertFile, "CERTIFICATE")
	if err != nil {
		return SSLContext{}, err
	}
	keyPEM, err := c.readPEM(keyKey, s.KeyFile, "PRIVATE KEY")
	if err != nil {
		return SSLContext{}, err
	}
	cert, kerr := tls.X509KeyPair(certPEM, keyPEM)
	if kerr != nil {
		e := c.invalid(keyKey, "cannot use the key with certFile's certificate: "+kerr.Error(),
			"the unencrypted PEM private key of certFile's first certificate")
		e.Err = kerr
		return SSLContext{}, e
	}
	out.Certificate = &cert
	if s.ClientCAFile != "" {
		caPEM, err := c.readPEM(joinKey(path, "clientCAFile"), s.ClientCAFile, "CERTIFICATE")
		if err != nil {
			return SSLContext{}, err
		}
		out.ClientCAs = x509.NewCertPool()
		if !out.ClientCAs.AppendCertsFromPEM(caPEM) {
			return SSLContext{}, c.invalid(joinKey(path, "clientCAFile"), "no valid certificate in the file",
				"a PEM bundle of CA certificates")
		}
	}
	return out, nil
}

// readPEM reads the file at key's path and checks it holds a PEM block whose type
// ends with want ("CERTIFICATE", "PRIVATE KEY": RSA, EC and PKCS #8 keys).
func (c *checker) readPEM(key, file, want string) ([]byte, *Error) {
	const allowed = "a readable PEM file"
	data, err := os.ReadFile(file)
	if err != nil {
		e := c.invalid(key, readProblem("cannot read the file", err), allowed)
		e.Err = err
		return nil, e
	}
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if strings.HasSuffix(b.Type, want) {
			if strings.Contains(b.Type, "ENCRYPTED") || b.Headers["Proc-Type"] != "" {
				return nil, c.invalid(key, "encrypted private keys are not supported", "an unencrypted PEM private key")
			}
			return data, nil
		}
	}
	return nil, c.invalid(key, "no PEM "+strings.ToLower(want)+" in the file", allowed+" with a \""+want+"\" block")
}
