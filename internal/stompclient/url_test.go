package stompclient

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseURL(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want URL
	}{
		{"stomp://127.0.0.1:61613", URL{Scheme: SchemeSTOMP, Host: "127.0.0.1", Port: "61613"}},
		{"stomp://mq", URL{Scheme: SchemeSTOMP, Host: "mq", Port: "61613"}},
		{"stomp://", URL{Scheme: SchemeSTOMP, Host: "127.0.0.1", Port: "61613"}},
		{"stomp://mq/", URL{Scheme: SchemeSTOMP, Host: "mq", Port: "61613"}},
		{"STOMP+NIO://mq:1", URL{Scheme: SchemeSTOMP, Host: "mq", Port: "1"}},
		{"stomp://app:s%40cret@mq:61613", URL{Scheme: SchemeSTOMP, Host: "mq", Port: "61613", Login: "app", Passcode: "s@cret", HasLogin: true}},
		{"stomp://guest@mq", URL{Scheme: SchemeSTOMP, Host: "mq", Port: "61613", Login: "guest", HasLogin: true}},
		{"stomp://[::1]:7", URL{Scheme: SchemeSTOMP, Host: "::1", Port: "7"}},
		{"stomp+ssl://mq", URL{Scheme: SchemeSSL, Host: "mq", Port: "61612"}},
		{"stomp+nio+ssl://mq:2", URL{Scheme: SchemeSSL, Host: "mq", Port: "2"}},
		{"ws://mq", URL{Scheme: SchemeWS, Host: "mq", Port: "61614", Path: "/"}},
		{"ws://u:p@mq:80/stomp?x=1", URL{Scheme: SchemeWS, Host: "mq", Port: "80", Path: "/stomp?x=1", Login: "u", Passcode: "p", HasLogin: true}},
		{"wss://mq/a%20b", URL{Scheme: SchemeWSS, Host: "mq", Port: "61619", Path: "/a%20b"}},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseURL(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, *got)
		})
	}
}

func TestParseURLErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"127.0.0.1:61613", "no scheme"},
		{"ftp://mq", "use stomp, stomp+ssl, ws or wss"},
		{"mq", "no scheme"},
		{"tcp://mq:61616", `scheme "tcp"`},
		{"http://mq", `scheme "http"`},
		{"stomp://mq:0", `port "0"`},
		{"stomp://mq:99999", `port "99999"`},
		{"stomp://mq:", "empty port"},
		{"stomp://mq?x=1", "no ?parameters"},
		{"stomp://mq/queue/x", "no path"},
		{"stomp://mq#f", "#fragment"},
		{"stomp:mq", "write stomp://host:port"},
		{"stomp://u:p%0Aq@mq", "line break"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseURL(tt.in)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrURL), "%v", err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestParseURLHidesPassword: no error or String shows the password.
func TestParseURLHidesPassword(t *testing.T) {
	for _, in := range []string{
		"ftp://u:hunter2@mq",
		"stomp://u:hunter2@mq:x",
		"stomp://u:hunter2@mq?a=b",
		"stomp://u:hunter2%zz@mq", // url.Parse fails on the escape
		"stomp://u:hunter2@mq:70000",
	} {
		_, err := ParseURL(in)
		require.Error(t, err, in)
		assert.NotContains(t, err.Error(), "hunter2", in)
	}
	u, err := ParseURL("wss://u:hunter2@mq/p")
	require.NoError(t, err)
	assert.Equal(t, "wss://u:xxxxx@mq:61619/p", u.String())
	assert.Equal(t, "wss://mq:61619/p", u.wsURL())
	assert.True(t, u.TLS())
	assert.True(t, u.WebSocket())
}
