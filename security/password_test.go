package security

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

func bcryptHash(t testing.TB, pw string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func argon2idHash(pw string, memory, passes uint32, threads uint8) string {
	salt := []byte("some salt 16 byt")
	key := argon2.IDKey([]byte(pw), salt, passes, memory, threads, 32)
	b64 := base64.RawStdEncoding.EncodeToString
	return fmt.Sprintf("$argon2id$v=19$m=%d,t=%d,p=%d$%s$%s", memory, passes, threads, b64(salt), b64(key))
}

func TestPasswordKinds(t *testing.T) {
	b := bcryptHash(t, "s3cret")
	tests := []struct {
		name, hash, password string
	}{
		{"plain", "", "s3cret"},
		{"bcrypt 2a", b, ""},
		{"bcrypt 2b", "$2b$" + b[4:], ""},
		{"bcrypt 2y", "$2y$" + b[4:], ""},
		{"argon2id", argon2idHash("s3cret", 1024, 1, 1), ""},
		{"argon2id 64MiB t=3 p=4", argon2idHash("s3cret", 65536, 3, 4), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, _ := newTestService(t, Config{Users: []User{{Name: "app", Password: tt.password, PasswordHash: tt.hash}}})
			if _, err := s.Authenticate(context.Background(), login("app", "s3cret")); err != nil {
				t.Errorf("the right passcode: %v", err)
			}
			for _, wrong := range []string{"s3cre", "s3cret ", "S3cret", "s3cret\x00", strings.Repeat("x", 100)} {
				if _, err := s.Authenticate(context.Background(), login("app", wrong)); !errors.Is(err, ErrInvalidCredentials) {
					t.Errorf("passcode %q: err = %v, want ErrInvalidCredentials", wrong, err)
				}
			}
		})
	}
}

func TestBadHashesAreConfigErrors(t *testing.T) {
	good := bcryptHash(t, "pw")
	bad := []string{
		"plain",
		"$2a$04$short",
		"$2x$" + good[4:],
		good[:59],
		"$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ",
		"$argon2id$v=18$m=65536,t=3,p=4$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2g",
		"$argon2id$v=19$m=65536,t=0,p=4$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2g",
		"$argon2id$v=19$m=4,t=1,p=4$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2g",
		"$argon2id$v=19$m=65536,t=3$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2g",
		"$argon2id$v=19$m=65536,t=3,p=4,x=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2g",
		"$argon2id$v=19$m=65536,t=3,p=4$!!!$aGFzaGhhc2hoYXNoaGFzaGhhc2g",
		"$argon2i$v=19$m=65536,t=3,p=4$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2g",
	}
	for _, h := range bad {
		_, err := New(Config{Users: []User{{Name: "ok", Password: "x"}, {Name: "app", PasswordHash: h}}}, nil)
		if err == nil {
			t.Errorf("hash %q was accepted", h)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "plugins.simpleAuthentication.users[1] (app): passwordHash is not a bcrypt ($2a$/$2b$/$2y$) or argon2id ($argon2id$...) hash") {
			t.Errorf("hash %q: error %q does not name the user and say what is wrong", h, msg)
		}
		if len(h) > 12 && strings.Contains(msg, h[8:]) {
			t.Errorf("hash %q: error %q quotes the hash", h, msg)
		}
	}
	// The good ones, with and without base64 padding.
	a := argon2idHash("pw", 64, 1, 1)
	f := strings.Split(a, "$")
	std := base64.StdEncoding.EncodeToString
	salt, _ := base64.RawStdEncoding.DecodeString(f[4])
	key, _ := base64.RawStdEncoding.DecodeString(f[5])
	padded := strings.Join(append(f[:4], std(salt), std(key)), "$")
	if !strings.Contains(padded, "=$") {
		t.Fatalf("%s has no padding", padded)
	}
	for _, h := range []string{good, a, padded} {
		if _, err := New(Config{Users: []User{{Name: "app", PasswordHash: h}}}, nil); err != nil {
			t.Errorf("hash %q: %v", h, err)
		}
	}
}

func TestUserConfigErrors(t *testing.T) {
	tests := []struct {
		users []User
		want  string
	}{
		{[]User{{Name: "a"}}, "no password or passwordHash; an empty password can never log in"},
		{[]User{{Name: "a", Password: "x", PasswordHash: "y"}}, "both password and passwordHash"},
		{[]User{{Name: "", Password: "x"}}, "the name is empty"},
		{[]User{{Name: "a", Password: "x"}, {Name: "a", Password: "y"}}, "listed twice"},
		{[]User{{Name: "a", Password: "x", MaxConnections: -1}}, "maxConnections is negative"},
		{[]User{{Name: "a", Password: "x", Groups: []string{" "}}}, "groups[0] is empty"},
	}
	for _, tt := range tests {
		_, err := New(Config{Users: tt.users}, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want %q", tt.users, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), `"x"`) {
			t.Errorf("error %q may quote a password", err)
		}
	}
}

func TestHashPassword(t *testing.T) {
	h, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$2a$10$") {
		t.Errorf("HashPassword = %q, want a bcrypt hash at cost %d", h, DefaultBcryptCost)
	}
	p, err := parseHash(h)
	if err != nil || !p.verify("correct horse") || p.verify("correct horse ") {
		t.Errorf("the hash does not verify: %v", err)
	}
	if _, err := HashPassword(""); err == nil {
		t.Error("an empty password was hashed")
	}
	if _, err := HashPassword(strings.Repeat("x", 73)); err == nil {
		t.Error("a 73-byte password was hashed (bcrypt would ignore its end)")
	}
}

func TestDummyCostsLikeUsers(t *testing.T) {
	p, _ := parseHash(bcryptHash(t, "x"))
	d, err := dummyOf(p.class())
	if cost, _ := bcrypt.Cost(d.bcrypt); err != nil || d.kind != bcryptPassword || cost != bcrypt.MinCost || d.class() != p.class() {
		t.Errorf("the dummy of a cost %d bcrypt hash has cost %d (%v)", bcrypt.MinCost, cost, err)
	}
	p10, _ := parseHash(dummyBcrypt)
	if d10, _ := dummyOf(p10.class()); string(d10.bcrypt) != dummyBcrypt {
		t.Error("cost 10: the fixed dummy hash should be used")
	}
	a, _ := parseHash(argon2idHash("x", 64, 2, 1))
	if d, err := dummyOf(a.class()); err != nil || d.class() != a.class() || d.verify("x") {
		t.Errorf("the argon2id dummy must have the same parameters and another salt (%v)", err)
	}
}
