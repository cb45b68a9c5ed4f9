package transport

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFrameBoundary(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"\n", 1},
		{"\r\n\n", 3},
		{"RECEIPT\nreceipt-id:1\n\n\x00", 23},
		{"RECEIPT\nreceipt-id:1\n\n\x00\n", 24},
		{"RECEIPT\nreceipt-id:1\n\n\x00MESS", 23},
		{"MESSAGE\ncontent-length:3\n\nab", 0},
		{"A\n\n\x00B\n\n\x00\n\nC\n", 8},
	} {
		assert.Equal(t, tt.want, frameBoundary([]byte(tt.in)), "%q", tt.in)
	}
}
