package main

import (
	"bytes"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// runPasswd runs `broker passwd args...` with stdin and returns what it printed.
func runPasswd(t *testing.T, stdin io.Reader, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetArgs(append([]string{"passwd"}, args...))
	root.SetIn(stdin)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// oneHash returns the single line of out.
func oneHash(t *testing.T, out string) string {
	t.Helper()
	require.True(t, strings.HasSuffix(out, "\n"), "%q", out)
	hash := strings.TrimSuffix(out, "\n")
	require.NotContains(t, hash, "\n")
	return hash
}

// verifyArgon2id recomputes an argon2id PHC hash from password and its parameters.
func verifyArgon2id(t *testing.T, hash, password string) bool {
	t.Helper()
	parts := strings.Split(hash, "$")
	require.Len(t, parts, 6, hash)
	require.Equal(t, "argon2id", parts[1])
	require.Equal(t, "v=19", parts[2])
	var m, ti uint32
	var p uint8
	_, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &ti, &p)
	require.NoError(t, err)
	assert.Equal(t, []any{uint32(65536), uint32(3), uint8(4)}, []any{m, ti, p})
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	require.NoError(t, err)
	require.Len(t, salt, 16)
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	require.NoError(t, err)
	require.Len(t, key, 32)
	return subtle.ConstantTimeCompare(argon2.IDKey([]byte(password), salt, ti, m, p, 32), key) == 1
}

func TestPasswdBcrypt(t *testing.T) {
	out, _, err := runPasswd(t, strings.NewReader("correct horse\n"))
	require.NoError(t, err)
	hash := oneHash(t, out)
	assert.True(t, strings.HasPrefix(hash, "$2a$10$"), hash)
	assert.NoError(t, bcrypt.CompareHashAndPassword([]byte(hash), []byte("correct horse")))
	assert.Error(t, bcrypt.CompareHashAndPassword([]byte(hash), []byte("correct horse\n")), "the newline is not part of it")
	cost, err := bcrypt.Cost([]byte(hash))
	require.NoError(t, err)
	assert.Equal(t, 10, cost)

	out, _, err = runPasswd(t, strings.NewReader("pw\n"), "--cost", "4")
	require.NoError(t, err)
	hash = oneHash(t, out)
	cost, err = bcrypt.Cost([]byte(hash))
	require.NoError(t, err)
	assert.Equal(t, 4, cost)
	assert.NoError(t, bcrypt.CompareHashAndPassword([]byte(hash), []byte("pw")))
}

func TestPasswdArgon2id(t *testing.T) {
	out, _, err := runPasswd(t, strings.NewReader("correct horse\n"), "--argon2id")
	require.NoError(t, err)
	hash := oneHash(t, out)
	assert.True(t, verifyArgon2id(t, hash, "correct horse"))
	assert.False(t, verifyArgon2id(t, hash, "correct horse\n"))

	// A new salt every time.
	again, _, err := runPasswd(t, strings.NewReader("correct horse\n"), "--argon2id")
	require.NoError(t, err)
	assert.NotEqual(t, hash, oneHash(t, again))

	// Longer than bcrypt takes is fine for argon2id.
	long := strings.Repeat("x", 100)
	out, _, err = runPasswd(t, strings.NewReader(long), "--argon2id")
	require.NoError(t, err)
	assert.True(t, verifyArgon2id(t, oneHash(t, out), long))
}

func TestPasswdStdinLine(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"pw", "pw"},
		{"pw\n", "pw"},
		{"pw\r\n", "pw"},
		{"pw\nsecond line\n", "pw"},
		{" spaced pw \n", " spaced pw "},
		{"p#ss: w'o\"rd\n", "p#ss: w'o\"rd"},
	} {
		out, _, err := runPasswd(t, strings.NewReader(tt.in), "--cost", "4")
		require.NoError(t, err, "%q", tt.in)
		assert.NoError(t, bcrypt.CompareHashAndPassword([]byte(oneHash(t, out)), []byte(tt.want)), "%q", tt.in)
	}

	// A pipe is a file but not a terminal: read as a line too.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	_, err = io.WriteString(w, "from a pipe\n")
	require.NoError(t, err)
	require.NoError(t, w.Close())
	out, _, err := runPasswd(t, r, "--cost", "4")
	require.NoError(t, err)
	assert.NoError(t, bcrypt.CompareHashAndPassword([]byte(oneHash(t, out)), []byte("from a pipe")))
}

func TestPasswdRefuses(t *testing.T) {
	const secret = "hunter2-s3cret"
	for _, tt := range []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"a positional argument", "pw\n", []string{secret}, "never from the command line"},
		{"an argument after a flag", "pw\n", []string{"--argon2id", secret}, "takes no arguments"},
		{"empty stdin", "", nil, "empty password refused"},
		{"empty line", "\n", nil, "empty password refused"},
		{"empty line, argon2id", "\r\n", []string{"--argon2id"}, "empty password refused"},
		{"too long for bcrypt", strings.Repeat("x", 73) + "\n", nil, "longer than 72 bytes"},
		{"line too long", strings.Repeat("x", 5000), []string{"--argon2id"}, "longer than 4096 bytes"},
		{"cost too low", "pw\n", []string{"--cost", "3"}, "--cost 3: use 4 to 31"},
		{"cost too high", "pw\n", []string{"--cost=32"}, "--cost 32"},
		{"cost with argon2id", "pw\n", []string{"--argon2id", "--cost", "12"}, "--cost is bcrypt's"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runPasswd(t, strings.NewReader(tt.stdin), tt.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), secret, "the argument may be the password")
			assert.Empty(t, out, "no hash printed")
		})
	}
}

func TestPasswdHelpSaysWhy(t *testing.T) {
	out, _, err := runPasswd(t, strings.NewReader(""), "--help")
	require.NoError(t, err)
	assert.Contains(t, out, "never taken as an argument")
	assert.Contains(t, out, "--argon2id")
	assert.Contains(t, out, "--cost")
}
