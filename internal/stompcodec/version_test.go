package stompcodec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNegotiateVersion(t *testing.T) {
	tests := []struct {
		accept string
		want   string
	}{
		{"", V10},
		{"  ", V10},
		{"1.0", V10},
		{"1.1", V11},
		{"1.2", V12},
		{"1.0,1.2", V12},
		{"1.2,1.0", V12},
		{"1.0,1.1,1.2", V12},
		{" 1.0 , 1.1 ", V11},
		{"2.0,1.1", V11},
		{"1.1,2.0", V11},
	}
	for _, tt := range tests {
		got, err := NegotiateVersion(tt.accept)
		require.NoError(t, err, "accept-version %q", tt.accept)
		require.Equal(t, tt.want, got, "accept-version %q", tt.accept)
	}
}

func TestNegotiateVersionNoCommon(t *testing.T) {
	for _, accept := range []string{"2.0", "1.3,2.0", ",", "1.10", "v1.2"} {
		_, err := NegotiateVersion(accept)
		requireFrameError(t, err, ErrNoCommonVersion, Supported)
	}
}

func TestSetVersionIgnoresUnknown(t *testing.T) {
	r := NewReader(nil, Limits{})
	r.SetVersion(V11)
	r.SetVersion("2.0")
	require.Equal(t, V11, r.Version())

	w := NewWriter(nil, 0)
	require.Equal(t, V10, w.Version())
	w.SetVersion(V12)
	w.SetVersion("")
	require.Equal(t, V12, w.Version())
}
