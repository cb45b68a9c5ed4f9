package openwire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNegotiate follows OpenWireFormat.renegotiateWireFormat: the lower positive version
// and frame limit, options on only when both sides enable them, the smaller cache.
func TestNegotiate(t *testing.T) {
	client := Format{Version: 12, TightEncoding: true, Cache: true, CacheSize: 1024, StackTrace: true, TCPNoDelay: true,
		MaxInactivityDuration: 30000, MaxInactivityDurationInitialDelay: 10000}
	for _, tc := range []struct {
		name string
		ours Format
		want Format
	}{
		{"all on", Format{Version: 12, TightEncoding: true, Cache: true, CacheSize: 2048, StackTrace: true, TCPNoDelay: true, MaxFrameSize: 1 << 20, MaxInactivityDuration: 60000, MaxInactivityDurationInitialDelay: 10000},
			Format{Version: 12, TightEncoding: true, Cache: true, CacheSize: 1024, StackTrace: true, TCPNoDelay: true, MaxFrameSize: 1 << 20, MaxInactivityDuration: 30000, MaxInactivityDurationInitialDelay: 10000}},
		{"broker turns the cache and tight encoding off", Format{Version: 12, StackTrace: true, MaxInactivityDuration: 30000},
			Format{Version: 12, StackTrace: true, MaxFrameSize: 1<<63 - 1, MaxInactivityDuration: 30000}},
		{"older broker version", Format{Version: 9, TightEncoding: true, Cache: true, CacheSize: 4096},
			Format{Version: 9, TightEncoding: true, Cache: true, CacheSize: 1024, MaxFrameSize: 1<<63 - 1}},
		{"cache size 0 means ActiveMQ's default", Format{Version: 12, Cache: true, CacheSize: 0},
			Format{Version: 12, Cache: true, CacheSize: defaultCacheSize, MaxFrameSize: 1<<63 - 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Negotiate(NewWireFormatInfo(tc.ours), NewWireFormatInfo(client))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}

	old := NewWireFormatInfo(Format{Version: 5})
	_, err := Negotiate(NewWireFormatInfo(client), old)
	assert.ErrorIs(t, err, ErrVersion)
	bad := NewWireFormatInfo(client)
	bad.Magic = []byte("ActiveMX")
	_, err = Negotiate(NewWireFormatInfo(client), bad)
	assert.ErrorIs(t, err, ErrVersion)
}
