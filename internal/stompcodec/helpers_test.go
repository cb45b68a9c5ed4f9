package stompcodec

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"
)

// hb stands for a heart-beat in a list of expected Read results.
var hb *frame.Frame

// newFrame builds an expected frame; headers alternate name, value.
func newFrame(command, body string, headers ...string) *frame.Frame {
	f := frame.New(command, headers...)
	if body != "" {
		f.Body = []byte(body)
	}
	return f
}

// readAll reads until the first error and returns every result (nil for a heart-beat).
func readAll(r *Reader) ([]*frame.Frame, error) {
	var out []*frame.Frame
	for {
		f, err := r.Read()
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
}

func entries(h *frame.Header) []string {
	if h == nil {
		return nil
	}
	var out []string
	for i := range h.Len() {
		k, v := h.GetAt(i)
		out = append(out, k, v)
	}
	return out
}

// requireFrames compares frames by command, header entries in order, and body bytes.
func requireFrames(t *testing.T, want, got []*frame.Frame) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		if want[i] == nil {
			require.Nil(t, got[i], "result %d: want heart-beat", i)
			continue
		}
		require.NotNil(t, got[i], "result %d: want %s frame, got heart-beat", i, want[i].Command)
		requireFrame(t, want[i], got[i])
	}
}

func requireFrame(t *testing.T, want, got *frame.Frame) {
	t.Helper()
	require.Equal(t, want.Command, got.Command)
	require.Equal(t, entries(want.Header), entries(got.Header), "headers of %s", want.Command)
	require.True(t, bytes.Equal(want.Body, got.Body), "body of %s: want %q, got %q", want.Command, want.Body, got.Body)
}

// requireFrameError checks that err is a *FrameError wrapping sentinel whose message names
// every string in mentions.
func requireFrameError(t *testing.T, err, sentinel error, mentions ...string) {
	t.Helper()
	require.ErrorIs(t, err, sentinel)
	var fe *FrameError
	require.True(t, errors.As(err, &fe), "%v is not a *FrameError", err)
	require.True(t, strings.HasPrefix(fe.Error(), "stomp: "), fe.Error())
	for _, m := range mentions {
		require.Contains(t, fe.Error(), m)
	}
}

// countingReader serves n bytes produced by fill without holding them, and counts what it
// served.
type countingReader struct {
	prefix []byte
	n      int64 // bytes left after prefix
	fill   byte
	served int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		c.served += int64(n)
		return n, nil
	}
	if c.n == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	for i := range p {
		p[i] = c.fill
	}
	c.n -= int64(len(p))
	c.served += int64(len(p))
	return len(p), nil
}
