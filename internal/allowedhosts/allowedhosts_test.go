package allowedhosts

import (
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAllow(t *testing.T) {
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8161}
	h := New([]string{"broker.example", "*.internal.example"}, loopback)
	for host, want := range map[string]bool{
		"127.0.0.1:8161": true, "[::1]:8161": true, "10.1.2.3": true, "localhost:8161": true, "LOCALHOST.": true,
		"": true, "broker.example:443": true, "Broker.Example": true, "mq.internal.example:1": true,
		"evil.example:8161": false, "internal.example": false, "broker.example.evil.example": false,
		"localhost.evil.example": false, "127.0.0.1.nip.io": false,
	} {
		assert.Equal(t, want, h.Allow(host), "Host %q", host)
	}
	assert.True(t, New([]string{"*"}, loopback).Allow("evil.example"))
	var zero Hosts
	assert.True(t, zero.Allow("localhost:1"))
	assert.False(t, zero.Allow("evil.example"))

	// Listening on every interface: the machine's host name too.
	name, err := os.Hostname()
	if err == nil && name != "" && name != "localhost" {
		assert.False(t, New(nil, loopback).Allow(name+":8161"))
		assert.True(t, New(nil, &net.TCPAddr{IP: net.IPv4zero, Port: 8161}).Allow(name+":8161"))
	}
}

func TestCheck(t *testing.T) {
	for _, ok := range []string{"broker.example", "*.example.com", "*", "::1", "10.0.0.1"} {
		assert.NoError(t, Check(ok), ok)
	}
	for _, bad := range []string{"", " ", "http://broker.example", "broker.example:8161", "a/b", "user@host", "[a-"} {
		assert.Error(t, Check(bad), bad)
	}
}
