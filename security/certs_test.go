package security

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestNormalizeDN(t *testing.T) {
	same := [][]string{
		{
			"CN=client1,OU=Test,O=Example,C=US",
			"cn = client1 , ou=Test, o=Example ,c=US",
			"2.5.4.3=client1,OID.2.5.4.11=Test;O=Example,C=US",
			"CN=#0c07636c69656e7431,OU=Test,O=Example,C=US", // UTF8String "client1"
			"CN=#1307636c69656e7431,OU=Test,O=Example,C=US", // PrintableString "client1"
			`CN="client1",OU=Test,O=Example,C=US`,
			`CN=\63lient1,OU=Test,O=Example,C=US`,
		},
		{`CN=Doe\, John,O=Ex`, `CN="Doe, John",O=Ex`, `CN=Doe\2C John,O=Ex`, `CN=Doe\2c John , O=Ex`},
		{"CN=a+UID=b,O=x", "UID=b+CN=a,O=x", "0.9.2342.19200300.100.1.1=b + cn=a,o=x"},
		{"EMAILADDRESS=a@b.c,DC=example", "E=a@b.c,0.9.2342.19200300.100.1.25=example", "1.2.840.113549.1.9.1=#16056140622e63,DC=example"},
		{`CN=\ lead,O=x`, `CN=\20lead,O=x`, `CN=" lead",O=x`},
	}
	for _, group := range same {
		want, err := normalizeDN(group[0])
		if err != nil {
			t.Fatalf("%q: %v", group[0], err)
		}
		for _, dn := range group[1:] {
			if got, err := normalizeDN(dn); err != nil || got != want {
				t.Errorf("%q: %q, %v; want %q as for %q", dn, got, err, want, group[0])
			}
		}
	}
	different := [][2]string{
		{"CN=client1,OU=Test,O=Example,C=US", "CN=Client1,OU=Test,O=Example,C=US"}, // values keep their case
		{"CN=client1,OU=Test,O=Example,C=US", "C=US,O=Example,OU=Test,CN=client1"}, // order matters
		{"CN=a,O=x", "CN=a+O=x"},
		{"CN=a b", "CN=ab"},
		{"CN=#0403616263", "CN=abc"}, // an OCTET STRING is no string
	}
	for _, d := range different {
		a, _ := normalizeDN(d[0])
		b, _ := normalizeDN(d[1])
		if a == b {
			t.Errorf("%q and %q normalize alike (%q)", d[0], d[1], a)
		}
	}
	for _, bad := range []string{"", "   ", "CN", "FOO=bar", `CN=a\`, `CN="abc`, "CN=#zz", "CN=#", "CN=a,,O=b", "=x", "CN=a,"} {
		if got, err := normalizeDN(bad); err == nil {
			t.Errorf("%q was accepted as %q", bad, got)
		} else if !errors.Is(err, errDN) {
			t.Errorf("%q: %v does not wrap errDN", bad, err)
		}
	}
}

// selfSigned makes a certificate with the subject; raw, when set, is the DER subject.
func selfSigned(t testing.TB, subject pkix.Name, raw []byte) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: subject, RawSubject: raw,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestCertificateDN(t *testing.T) {
	client1 := selfSigned(t, pkix.Name{CommonName: "client1", OrganizationalUnit: []string{"Test"}, Organization: []string{"Example"}, Country: []string{"US"}}, nil)
	want, _ := normalizeDN("CN=client1,OU=Test,O=Example,C=US")
	if got, err := certificateDN(client1); err != nil || got != want {
		t.Errorf("certificateDN = %q, %v; want %q", got, err, want)
	}
	if got, _ := normalizeDN(client1.Subject.String()); got != want {
		t.Errorf("Go's Subject.String() %q normalizes to %q, want %q", client1.Subject.String(), got, want)
	}

	// Attributes Java and Go name differently, and a multi-valued RDN.
	email := pkix.AttributeTypeAndValue{Type: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}, Value: "ops@example.com"}
	dc := asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	uid := asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
	seq := pkix.RDNSequence{
		{{Type: dc, Value: "com"}},
		{{Type: dc, Value: "example"}},
		{{Type: asn1.ObjectIdentifier{2, 5, 4, 5}, Value: "42"}},
		{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "svc"}, {Type: uid, Value: "u7"}},
		{email},
	}
	raw, err := asn1.Marshal(seq)
	if err != nil {
		t.Fatal(err)
	}
	cert := selfSigned(t, pkix.Name{}, raw)
	ia5, _ := asn1.MarshalWithParams("ops@example.com", "ia5")
	ps, _ := asn1.MarshalWithParams("42", "printable")
	javaStyle := "1.2.840.113549.1.9.1=#" + hex.EncodeToString(ia5) + ",CN=svc+UID=u7,2.5.4.5=#" + hex.EncodeToString(ps) + ",DC=example,DC=com"
	want, err = normalizeDN(javaStyle)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := certificateDN(cert); err != nil || got != want {
		t.Errorf("certificateDN = %q, %v; want %q (from %q)", got, err, want, javaStyle)
	}
	// (Go's Subject.String() is rebuilt from the parsed fields: it loses this
	// order and the multi-valued RDN, which is why the DER subject is read.)
}

func TestAuthenticateByCertificate(t *testing.T) {
	dir := t.TempDir()
	certUsers := writeFile(t, dir, "certs.properties", "# TextFileCertificateLoginModule\nclient1=CN=client1, OU=Test, O=Example, C=US\nother=CN=other\n")
	certGroups := writeFile(t, dir, "certgroups.properties", "tls=client1\n")
	jaasUsers := writeFile(t, dir, "users.properties", "bob=pw\n")
	jaasGroups := writeFile(t, dir, "groups.properties", "readers=client1,bob\n")
	cfg := Config{
		Users:                 []User{{Name: "client1", Password: "pw1", Groups: []string{"users"}, MaxConnections: 3}},
		JAAS:                  &JAASFiles{Users: jaasUsers, Groups: jaasGroups},
		CertificateUsers:      &CertificateUsers{File: certUsers, Groups: certGroups},
		MaxConnectionsPerUser: 10,
	}
	s, _, _ := newTestService(t, cfg)
	client1 := selfSigned(t, pkix.Name{CommonName: "client1", OrganizationalUnit: []string{"Test"}, Organization: []string{"Example"}, Country: []string{"US"}}, nil)
	stranger := selfSigned(t, pkix.Name{CommonName: "stranger"}, nil)
	other := selfSigned(t, pkix.Name{CommonName: "other"}, nil)
	ctx := context.Background()

	c := login("client1", "wrong")
	c.PeerCertificates = []*x509.Certificate{client1}
	sub, err := s.Authenticate(ctx, c)
	if err != nil {
		t.Fatalf("client1 by certificate: %v", err)
	}
	if sub.User != "client1" || !sub.ByCertificate || sub.Anonymous || sub.MaxConnections != 3 ||
		!slices.Equal(sub.Groups, []string{"readers", "tls", "users"}) {
		t.Errorf("client1 by certificate: %+v", sub)
	}

	c = Credentials{RemoteAddr: "192.0.2.9:1", PeerCertificates: []*x509.Certificate{other}}
	if sub, err := s.Authenticate(ctx, c); err != nil || sub.User != "other" || sub.MaxConnections != 10 || len(sub.Groups) != 0 {
		t.Errorf("other by certificate: %+v, %v", sub, err)
	}

	c = login("bob", "pw")
	c.PeerCertificates = []*x509.Certificate{stranger}
	if _, err := s.Authenticate(ctx, c); !errors.Is(err, ErrInvalidCredentials) {
		t.Errorf("unknown DN: err = %v, want ErrInvalidCredentials even with a good password", err)
	}

	if sub, err := s.Authenticate(ctx, login("bob", "pw")); err != nil || sub.ByCertificate || !slices.Equal(sub.Groups, []string{"readers"}) {
		t.Errorf("bob by password: %+v, %v", sub, err)
	}
}

func TestCertificateWithoutCertificateUsers(t *testing.T) {
	s, _, _ := newTestService(t, Config{Users: []User{{Name: "app", Password: "pw"}}})
	c := login("app", "pw")
	c.PeerCertificates = []*x509.Certificate{selfSigned(t, pkix.Name{CommonName: "x"}, nil)}
	if sub, err := s.Authenticate(context.Background(), c); err != nil || sub.User != "app" || sub.ByCertificate {
		t.Errorf("a certificate without certificateUsers: %+v, %v; the login should count", sub, err)
	}
}

func TestCertificateUsersFileErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ content, want string }{
		{"a=CN=x\nb=FOO=y\n", "line 2 (b): not an RFC 2253"},
		{"a=CN=x\nb=cn = x\n", "line 2 (b): the DN is also user a's"},
		{"=CN=x\n", "line 1: the user name is empty"},
	}
	for _, tt := range tests {
		p := writeFile(t, dir, "certs.properties", tt.content)
		_, err := New(Config{CertificateUsers: &CertificateUsers{File: p}}, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%q: err = %v, want %q and the path", tt.content, err, tt.want)
		}
	}
	if _, err := New(Config{CertificateUsers: &CertificateUsers{}}, nil); err == nil || !strings.Contains(err.Error(), "certificateUsers.file is empty") {
		t.Errorf("no file: %v", err)
	}
}

// FuzzNormalizeDN checks that the DN parser does not panic, that its normal form is
// a fixed point (normalizing it again gives it back) and valid for any input.
func FuzzNormalizeDN(f *testing.F) {
	for _, s := range []string{"CN=client1,OU=Test,O=Example,C=US", `CN=Doe\, John+UID=x;O="a,b"`, "CN=#0c0161", "2.5.4.3= a ", `CN=\zz`, "E=a@b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dn string) {
		n, err := normalizeDN(dn)
		if err != nil {
			if !errors.Is(err, errDN) {
				t.Fatalf("%q: error %v does not wrap errDN", dn, err)
			}
			return
		}
		if n2, err := normalizeDN(n); err != nil || n2 != n {
			if utf8.ValidString(dn) {
				t.Fatalf("%q normalizes to %q, which normalizes to %q, %v", dn, n, n2, err)
			}
		}
	})
}
