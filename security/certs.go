package security

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A certificate user's DN in the TextFileCertificateLoginModule file is written as
// Java's X500Principal.getName() prints it (RFC 2253: most specific RDN first,
// "CN=client1,OU=Test,O=Example,C=US"). It is compared with the client certificate's
// subject in a normal form, so that what Java, OpenSSL (-nameopt RFC2253) or Go's
// pkix.Name.String() print all match:
//
//   - attribute types by OID, whatever the spelling: "cn", "CN", "2.5.4.3" and
//     "OID.2.5.4.3" are one type; Java prints SERIALNUMBER and emailAddress as
//     OIDs where Go prints names, and Go prints DC and UID as OIDs;
//   - a "#hex" value (the DER of a value, as both print attributes they have no name
//     for) is its string when it is a string type;
//   - spaces around ',', '+' and '=' are ignored, and the attributes of a
//     multi-valued RDN are compared in any order;
//   - values are compared exactly (case too), as ActiveMQ compares them.

// attributeOIDs are the attribute type names RFC 2253, RFC 4514, Java and Go use.
var attributeOIDs = map[string]string{
	"CN": "2.5.4.3", "SURNAME": "2.5.4.4", "SN": "2.5.4.4", "SERIALNUMBER": "2.5.4.5",
	"C": "2.5.4.6", "L": "2.5.4.7", "ST": "2.5.4.8", "S": "2.5.4.8", "STREET": "2.5.4.9",
	"O": "2.5.4.10", "OU": "2.5.4.11", "T": "2.5.4.12", "TITLE": "2.5.4.12",
	"POSTALCODE": "2.5.4.17", "GIVENNAME": "2.5.4.42", "GN": "2.5.4.42",
	"INITIALS": "2.5.4.43", "GENERATION": "2.5.4.44", "DNQUALIFIER": "2.5.4.46",
	"DC": "0.9.2342.19200300.100.1.25", "UID": "0.9.2342.19200300.100.1.1",
	"EMAILADDRESS": "1.2.840.113549.1.9.1", "EMAIL": "1.2.840.113549.1.9.1", "E": "1.2.840.113549.1.9.1",
}

// attribute is one type=value of an RDN, the type as an OID. A value of no string
// type is "#" and the hex of its DER, with der set.
type attribute struct {
	oid, value string
	der        bool
}

// errDN is the start of every DN parse error.
var errDN = errors.New("not an RFC 2253 distinguished name like CN=client1,OU=Test,O=Example,C=US")

// normalizeDN parses an RFC 2253 DN and returns its normal form.
func normalizeDN(dn string) (string, error) {
	rdns, err := parseDN(dn)
	if err != nil {
		return "", err
	}
	return formatDN(rdns), nil
}

// certificateDN is the normal form of a certificate's subject, read from its DER
// (RawSubject) so that no attribute, order or multi-valued RDN is lost.
func certificateDN(cert *x509.Certificate) (string, error) {
	var seq []attributeSET
	rest, err := asn1.Unmarshal(cert.RawSubject, &seq)
	if err != nil || len(rest) != 0 {
		return "", fmt.Errorf("certificate subject: malformed DER name")
	}
	rdns := make([][]attribute, 0, len(seq))
	for i := len(seq) - 1; i >= 0; i-- { // RFC 2253 order: most specific first
		var rdn []attribute
		for _, a := range seq[i] {
			v, isString := derValue(a.Value.FullBytes)
			rdn = append(rdn, attribute{oid: a.Type.String(), value: v, der: !isString})
		}
		rdns = append(rdns, rdn)
	}
	return formatDN(rdns), nil
}

// attributeSET is one RDN as DER has it (asn1 makes a SET OF of a type named *SET).
type attributeSET []struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// derValue is the string of a DER attribute value of a string type, else "#" and
// its hex, as RFC 2253 writes values of types it has no string form for; isString
// tells which.
func derValue(der []byte) (string, bool) {
	var v asn1.RawValue
	if rest, err := asn1.Unmarshal(der, &v); err == nil && len(rest) == 0 && v.Class == asn1.ClassUniversal && !v.IsCompound {
		switch v.Tag {
		case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, asn1.TagT61String,
			asn1.TagNumericString, 26 /* VisibleString */, 27 /* GeneralString */ :
			if utf8.Valid(v.Bytes) {
				return string(v.Bytes), true
			}
		case asn1.TagBMPString:
			if len(v.Bytes)%2 == 0 {
				u := make([]uint16, len(v.Bytes)/2)
				for i := range u {
					u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
				}
				return string(utf16.Decode(u)), true
			}
		}
	}
	return "#" + hex.EncodeToString(der), false
}

// parseDN parses an RFC 2253 DN (also accepting ';' between RDNs, quoted values as
// RFC 1779 has them, and spaces around separators).
func parseDN(s string) ([][]attribute, error) {
	var rdns [][]attribute
	var rdn []attribute
	p := dnParser{s: s}
	p.skipSpaces()
	if p.done() {
		return nil, fmt.Errorf("%w: it is empty", errDN)
	}
	for {
		a, err := p.attribute()
		if err != nil {
			return nil, err
		}
		rdn = append(rdn, a)
		p.skipSpaces()
		if p.done() {
			return append(rdns, rdn), nil
		}
		switch p.s[p.i] {
		case '+':
		case ',', ';':
			rdns, rdn = append(rdns, rdn), nil
		default:
			return nil, fmt.Errorf("%w: unexpected %q at offset %d", errDN, p.s[p.i], p.i)
		}
		p.i++
		p.skipSpaces()
	}
}

type dnParser struct {
	s string
	i int
}

func (p *dnParser) done() bool { return p.i >= len(p.s) }

func (p *dnParser) skipSpaces() {
	for !p.done() && p.s[p.i] == ' ' {
		p.i++
	}
}

// attribute parses "type=value", after which p is at a separator or the end.
func (p *dnParser) attribute() (attribute, error) {
	start := p.i
	for !p.done() && p.s[p.i] != '=' && p.s[p.i] != ',' && p.s[p.i] != '+' && p.s[p.i] != ';' {
		p.i++
	}
	if p.done() || p.s[p.i] != '=' {
		return attribute{}, fmt.Errorf("%w: %q has no '='", errDN, strings.TrimSpace(p.s[start:p.i]))
	}
	typ := strings.TrimSpace(p.s[start:p.i])
	oid, err := attributeOID(typ)
	if err != nil {
		return attribute{}, err
	}
	p.i++
	p.skipSpaces()
	value, isString, err := p.value()
	if err != nil {
		return attribute{}, fmt.Errorf("%w: the value of %s: %v", errDN, typ, err)
	}
	return attribute{oid: oid, value: value, der: !isString}, nil
}

// attributeOID returns the OID of a type name or dotted OID.
func attributeOID(t string) (string, error) {
	u := strings.ToUpper(t)
	if oid, ok := attributeOIDs[u]; ok {
		return oid, nil
	}
	u = strings.TrimPrefix(u, "OID.")
	if isDottedOID(u) {
		return u, nil
	}
	if t == "" {
		return "", fmt.Errorf("%w: an attribute type is empty", errDN)
	}
	return "", fmt.Errorf("%w: unknown attribute type %q; write it as its OID (like 2.5.4.3)", errDN, t)
}

func isDottedOID(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '.' {
			return false
		}
	}
	return true
}

// value parses a value: "#hex" (see derValue), a quoted string, or a string with
// \-escapes (of a special character or of a hex byte pair), trailing unescaped spaces
// dropped.
func (p *dnParser) value() (v string, isString bool, err error) {
	if !p.done() && p.s[p.i] == '#' {
		start := p.i + 1
		for p.i++; !p.done() && isHex(p.s[p.i]); p.i++ {
		}
		der, err := hex.DecodeString(p.s[start:p.i])
		if err != nil || len(der) == 0 {
			return "", false, errors.New("# is not followed by an even number of hex digits")
		}
		v, isString = derValue(der)
		return v, isString, nil
	}
	if !p.done() && p.s[p.i] == '"' {
		var b []byte
		for p.i++; ; p.i++ {
			if p.done() {
				return "", false, errors.New("unterminated quote")
			}
			c := p.s[p.i]
			if c == '"' {
				p.i++
				return string(b), true, nil
			}
			if c == '\\' {
				if p.i+1 == len(p.s) {
					return "", false, errors.New("it ends in a lone backslash")
				}
				p.i++
				c = p.s[p.i]
			}
			b = append(b, c)
		}
	}
	var b []byte
	keep := 0 // length of b up to its last escaped or non-space byte
	for ; !p.done(); p.i++ {
		c := p.s[p.i]
		if c == ',' || c == '+' || c == ';' {
			break
		}
		if c == '\\' {
			if p.i+1 == len(p.s) {
				return "", false, errors.New("it ends in a lone backslash")
			}
			if p.i+2 < len(p.s) && isHex(p.s[p.i+1]) && isHex(p.s[p.i+2]) {
				x, _ := hex.DecodeString(p.s[p.i+1 : p.i+3])
				b = append(b, x[0])
				p.i += 2
			} else {
				p.i++
				b = append(b, p.s[p.i])
			}
			keep = len(b)
			continue
		}
		b = append(b, c)
		if c != ' ' {
			keep = len(b)
		}
	}
	return string(b[:keep]), true, nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// formatDN writes the normal form: RDNs in the given order, a multi-valued RDN's
// attributes sorted, each "oid=value" with the special characters escaped.
func formatDN(rdns [][]attribute) string {
	var b strings.Builder
	for i, rdn := range rdns {
		if i > 0 {
			b.WriteByte(',')
		}
		rdn = slices.Clone(rdn)
		slices.SortFunc(rdn, func(x, y attribute) int {
			if c := strings.Compare(x.oid, y.oid); c != 0 {
				return c
			}
			return strings.Compare(x.value, y.value)
		})
		for j, a := range rdn {
			if j > 0 {
				b.WriteByte('+')
			}
			b.WriteString(a.oid)
			b.WriteByte('=')
			if a.der {
				b.WriteString(a.value)
				continue
			}
			for k := 0; k < len(a.value); k++ {
				c := a.value[k]
				switch {
				case strings.IndexByte(`,+="\<>;#`, c) >= 0 || c == ' ' && (k == 0 || k == len(a.value)-1):
					b.WriteByte('\\')
					b.WriteByte(c)
				case c < 0x20 || c == 0x7f:
					fmt.Fprintf(&b, `\%02x`, c)
				default:
					b.WriteByte(c)
				}
			}
		}
	}
	return b.String()
}
