package setting

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// secret appears in test inputs where a password could leak; it must never
// appear in an error.
const secret = "s3cret-Pa55"

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Key: "a.b", Value: "v", Problem: "bad", Allowed: "x, y"}, `config: a.b: bad (value "v"; allowed: x, y)`},
		{&Error{Key: "a.b", Problem: "bad", Allowed: "x, y"}, `config: a.b: bad (allowed: x, y)`},
		{&Error{Key: "a.b", Value: "v", Problem: "bad"}, `config: a.b: bad (value "v")`},
		{&Error{Problem: "bad"}, `config: bad`},
		{&Error{Key: "k"}, `config: k: invalid value`},
		{&Error{Key: "k", Value: "line\nbreak", Problem: "bad"}, `config: k: bad (value "line\nbreak")`},
		// Redaction at format time too, for Errors built by hand.
		{&Error{Key: "persistenceAdapter.jdbc.password", Value: secret, Problem: "bad"}, `config: persistenceAdapter.jdbc.password: bad (value "xxxxx")`},
		{&Error{Key: "BROKER_PERSISTENCEADAPTER_JDBC_PASSCODE", Value: secret, Problem: "bad"}, `config: BROKER_PERSISTENCEADAPTER_JDBC_PASSCODE: bad (value "xxxxx")`},
		{&Error{Key: "u", Value: "postgres://u:" + secret + "@h:5432/db?sslmode=off&password=" + secret, Problem: "bad"},
			`config: u: bad (value "postgres://u:xxxxx@h:5432/db?sslmode=off&password=xxxxx")`},
		{&Error{Key: "u", Problem: "cannot reach jdbc:postgresql://h/db?user=u&password=" + secret}, `config: u: cannot reach jdbc:postgresql://h/db?user=u&password=xxxxx`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.err.Error())
	}
}

func TestErrorUnwrap(t *testing.T) {
	cause := errors.New("cause")
	var err error = fmt.Errorf("wrapped: %w", &Error{Problem: "p", Err: cause})
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, cause)
}

func TestNewErrorRedactsSecretKeys(t *testing.T) {
	for _, key := range []string{"password", "plugins.users[0].password", "plugins.simpleAuthentication.users[1].passwordHash",
		"BROKER_PLUGINS_SIMPLEAUTHENTICATION_USERS_0_PASSWORDHASH", "sslContext.keyStorePassword", "BROKER_X_PASSCODE", "jdbc.passwd", "clientSecret"} {
		e := NewError(key, secret, "bad", "")
		assert.Equal(t, Redacted, e.Value, key)
		assert.NotContains(t, e.Error(), secret, key)
	}
	assert.Equal(t, "plain", NewError("broker.brokerName", "plain", "bad", "").Value)
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://u:" + secret + "@h:5432/db", "postgres://u:xxxxx@h:5432/db"},
		{"postgres://u:p@ss" + secret + "@h/db", "postgres://u:xxxxx@h/db"},
		{"stomp://admin@h:1", "stomp://admin@h:1"},
		{"a postgres://u:" + secret + "@h/db and mysql://v:" + secret + "@i/db", "a postgres://u:xxxxx@h/db and mysql://v:xxxxx@i/db"},
		{"host=h user=u password=" + secret + " dbname=x", "host=h user=u password=xxxxx dbname=x"},
		{"jdbc:postgresql://h/db?user=u&Password=" + secret + "&ssl=true", "jdbc:postgresql://h/db?user=u&Password=xxxxx&ssl=true"},
		{"nothing to hide", "nothing to hide"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Redact(tt.in))
	}
}
