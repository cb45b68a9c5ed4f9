package setting

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"10485760", 10485760},
		{"100b", 100},
		{"100 B", 100},
		{"1k", 1 << 10},
		{"512kb", 512 << 10},
		{"512KiB", 512 << 10},
		{"64mb", 64 << 20},
		{"64 mb", 64 << 20},
		{"32MB", 32 << 20},
		{"32Mi", 32 << 20},
		{"1gb", 1 << 30},
		{"1 GiB", 1 << 30},
		{"100 gb", 100 << 30},
		{"2tb", 2 << 40},
		{"2TiB", 2 << 40},
		{" 7kb ", 7 << 10},
		{"8388607tb", 8388607 << 40},
		{"9223372036854775807", math.MaxInt64},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		require.NoError(t, err, "%q", tt.in)
		assert.Equal(t, tt.want, got, "%q", tt.in)
	}
}

func TestParseSizeErrors(t *testing.T) {
	for _, in := range []string{
		"", " ", "mb", "-1", "+1", "-1mb", "1.5mb", "1,000", "10zb", "10 m b", "10bb", "10kbb", "10ik", "1e6",
		"8388608tb", "9223372036854775808", "0x10", "ten",
	} {
		_, err := ParseSize(in)
		var ce *Error
		require.True(t, errors.As(err, &ce), "%q: %v", in, err)
		assert.Equal(t, in, ce.Value)
		assert.Contains(t, ce.Allowed, "kb, mb, gb or tb", in)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"30000", 30 * time.Second},
		{"1", time.Millisecond},
		{" 250 ", 250 * time.Millisecond},
		{"-5", -5 * time.Millisecond},
		{"5s", 5 * time.Second},
		{"1m30s", 90 * time.Second},
		{"250ms", 250 * time.Millisecond},
		{"1h", time.Hour},
		{"-1s", -time.Second},
		{"9223372036854", 9223372036854 * time.Millisecond},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		require.NoError(t, err, "%q", tt.in)
		assert.Equal(t, tt.want, got, "%q", tt.in)
	}
}

func TestParseDurationErrors(t *testing.T) {
	for _, in := range []string{"", "soon", "5 s", "1.5", "30sec", "9223372036855", "99999999999999999999", "s5"} {
		_, err := ParseDuration(in)
		var ce *Error
		require.True(t, errors.As(err, &ce), "%q: %v", in, err)
		assert.Equal(t, in, ce.Value)
		assert.Contains(t, ce.Allowed, "milliseconds", in)
	}
}
