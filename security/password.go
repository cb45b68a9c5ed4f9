package security

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// maxPasscode bounds the passcodes worth verifying; longer ones fail at once.
const maxPasscode = 4096

// bcryptMaxPassword is what bcrypt reads of a password; a longer passcode cannot be
// the one a bcrypt hash was made from (GenerateFromPassword refuses them), and bcrypt
// would ignore its tail, so it is refused rather than compared.
const bcryptMaxPassword = 72

// errNotAHash is what parseHash says of a value that is neither hash format.
var errNotAHash = errors.New("not a bcrypt ($2a$/$2b$/$2y$) or argon2id ($argon2id$...) hash")

type passwordKind uint8

const (
	plainPassword passwordKind = iota
	bcryptPassword
	argon2idPassword
)

// password is one user's verifier: a plain password (kept as its SHA-256, so the
// compare takes the same time whatever the lengths) or a parsed bcrypt or argon2id
// hash. It is immutable once made.
type password struct {
	kind passwordKind

	plain [sha256.Size]byte // plainPassword

	bcrypt []byte // bcryptPassword: the whole "$2a$..." hash

	// argon2idPassword
	salt, key      []byte
	memory, passes uint32
	threads        uint8
}

// plainPasswordOf is the verifier of a plain-text password.
func plainPasswordOf(pw string) password {
	return password{kind: plainPassword, plain: sha256.Sum256([]byte(pw))}
}

// looksLikeHash tells whether a value is meant as a password hash: a JAAS users file
// holds either, and a value with a hash's prefix is taken as a hash.
func looksLikeHash(s string) bool {
	return isBcryptPrefix(s) || strings.HasPrefix(s, "$argon2id$")
}

func isBcryptPrefix(s string) bool {
	return strings.HasPrefix(s, "$2a$") || strings.HasPrefix(s, "$2b$") || strings.HasPrefix(s, "$2y$")
}

// parseHash parses a bcrypt or argon2id hash. Its errors never quote the hash.
func parseHash(s string) (password, error) {
	switch {
	case isBcryptPrefix(s):
		if _, err := bcrypt.Cost([]byte(s)); err != nil || len(s) != 60 {
			return password{}, fmt.Errorf("%w: malformed bcrypt hash (a bcrypt hash is 60 characters, like `broker passwd` prints)", errNotAHash)
		}
		return password{kind: bcryptPassword, bcrypt: []byte(s)}, nil
	case strings.HasPrefix(s, "$argon2id$"):
		return parseArgon2id(s)
	}
	return password{}, errNotAHash
}

// parseArgon2id parses the PHC string format
// "$argon2id$v=19$m=65536,t=3,p=4$<salt>$<hash>" (base64 without padding).
func parseArgon2id(s string) (password, error) {
	bad := func(what string) (password, error) {
		return password{}, fmt.Errorf("%w: malformed argon2id hash: %s (want $argon2id$v=19$m=<KiB>,t=<passes>,p=<threads>$<base64 salt>$<base64 hash>)", errNotAHash, what)
	}
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[0] != "" {
		return bad("not six $-separated fields")
	}
	if parts[2] != "v=19" {
		return bad("version is not v=19")
	}
	p := password{kind: argon2idPassword}
	var seen [3]bool
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if !ok || err != nil {
			return bad("parameter " + strconv.Quote(k) + " is not a number")
		}
		switch k {
		case "m":
			p.memory, seen[0] = uint32(n), true
		case "t":
			p.passes, seen[1] = uint32(n), true
		case "p":
			if n < 1 || n > 255 {
				return bad("p is not 1..255")
			}
			p.threads, seen[2] = uint8(n), true
		default:
			return bad("unknown parameter " + strconv.Quote(k))
		}
	}
	if !seen[0] || !seen[1] || !seen[2] {
		return bad("m, t and p are all required")
	}
	if p.passes < 1 || p.memory < 8*uint32(p.threads) {
		return bad("t must be at least 1 and m at least 8*p")
	}
	var err error
	if p.salt, err = decodeB64(parts[4]); err != nil || len(p.salt) < 8 {
		return bad("salt is not base64 of at least 8 bytes")
	}
	if p.key, err = decodeB64(parts[5]); err != nil || len(p.key) < 16 {
		return bad("hash is not base64 of at least 16 bytes")
	}
	return p, nil
}

// decodeB64 decodes standard base64, with or without padding (PHC strings have none).
func decodeB64(s string) ([]byte, error) {
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
}

// expensive tells whether verifying costs a hash computation worth caching.
func (p *password) expensive() bool { return p.kind != plainPassword }

// verify tells whether pass is the password. It takes constant time for a given
// verifier, whatever pass is (bar the length limits, which fail at once).
func (p *password) verify(pass string) bool {
	if len(pass) > maxPasscode {
		return false
	}
	switch p.kind {
	case plainPassword:
		sum := sha256.Sum256([]byte(pass))
		return subtle.ConstantTimeCompare(sum[:], p.plain[:]) == 1
	case bcryptPassword:
		if len(pass) > bcryptMaxPassword {
			return false
		}
		return bcrypt.CompareHashAndPassword(p.bcrypt, []byte(pass)) == nil
	case argon2idPassword:
		key := argon2.IDKey([]byte(pass), p.salt, p.passes, p.memory, p.threads, uint32(len(p.key)))
		return subtle.ConstantTimeCompare(key, p.key) == 1
	}
	return false
}

// dummyBcrypt is a bcrypt hash at DefaultBcryptCost of a random string nobody knows,
// the dummy of that cost (no hash to make at start-up).
const dummyBcrypt = "$2a$10$Qu3UHR/2gykfcq65a8j3TuWB8Bdvz6OW6uNRsuzA/Sr.y9lQEFcle"

// costClass is what verifying a hash costs: its kind and every parameter the work
// depends on. Two hashes of one class take the same time to verify.
type costClass struct {
	kind            passwordKind
	bcryptCost      int
	memory, passes  uint32
	threads         uint8
	saltLen, keyLen int
}

// class returns the cost class of an expensive verifier.
func (p *password) class() costClass {
	switch p.kind {
	case bcryptPassword:
		cost, _ := bcrypt.Cost(p.bcrypt)
		return costClass{kind: bcryptPassword, bcryptCost: cost}
	case argon2idPassword:
		return costClass{kind: argon2idPassword, memory: p.memory, passes: p.passes, threads: p.threads,
			saltLen: len(p.salt), keyLen: len(p.key)}
	}
	return costClass{kind: plainPassword}
}

// String names the class for logs and tests, without anything secret.
func (c costClass) String() string {
	switch c.kind {
	case bcryptPassword:
		return fmt.Sprintf("bcrypt cost %d", c.bcryptCost)
	case argon2idPassword:
		return fmt.Sprintf("argon2id m=%d,t=%d,p=%d (salt %d, key %d bytes)", c.memory, c.passes, c.threads, c.saltLen, c.keyLen)
	}
	return "plain"
}

// compareClasses orders classes: bcrypt before argon2id, cheaper first.
func compareClasses(a, b costClass) int {
	return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.bcryptCost, b.bcryptCost),
		cmp.Compare(a.memory, b.memory), cmp.Compare(a.passes, b.passes), cmp.Compare(a.threads, b.threads),
		cmp.Compare(a.saltLen, b.saltLen), cmp.Compare(a.keyLen, b.keyLen))
}

// dummyOf returns a verifier of class c (bcrypt or argon2id) that no passcode is
// expected to match: a hash of random bytes nobody knows. Its answer is ignored; it
// is there for the work.
func dummyOf(c costClass) (password, error) {
	switch c.kind {
	case bcryptPassword:
		if c.bcryptCost == DefaultBcryptCost {
			return password{kind: bcryptPassword, bcrypt: []byte(dummyBcrypt)}, nil
		}
		h, err := bcrypt.GenerateFromPassword([]byte(rand.Text()), c.bcryptCost)
		if err != nil {
			return password{}, fmt.Errorf("security: making the dummy hash of %s: %w", c, err)
		}
		return password{kind: bcryptPassword, bcrypt: h}, nil
	case argon2idPassword:
		d := password{kind: argon2idPassword, memory: c.memory, passes: c.passes, threads: c.threads,
			salt: make([]byte, c.saltLen), key: make([]byte, c.keyLen)}
		rand.Read(d.salt)
		rand.Read(d.key)
		return d, nil
	}
	return password{}, fmt.Errorf("security: no dummy for %s", c)
}

// HashPassword returns the bcrypt hash of password at DefaultBcryptCost, for a
// passwordHash in the configuration or a JAAS users file (`broker passwd` prints it).
func HashPassword(password string) (string, error) {
	if password == "" {
		return "", errors.New("security: an empty password cannot log in; choose a non-empty one")
	}
	if len(password) > bcryptMaxPassword {
		return "", fmt.Errorf("security: bcrypt reads at most %d bytes of a password; choose a shorter one", bcryptMaxPassword)
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), DefaultBcryptCost)
	if err != nil {
		return "", fmt.Errorf("security: hashing the password: %w", err)
	}
	return string(h), nil
}
