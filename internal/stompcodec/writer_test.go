package stompcodec

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"
)

func encode(t *testing.T, version string, f *frame.Frame) string {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, 0)
	w.SetVersion(version)
	require.NoError(t, w.WriteFrame(f))
	require.NoError(t, w.Flush())
	return buf.String()
}

func TestWriteEscaping(t *testing.T) {
	f := newFrame("MESSAGE", "body", "na:me", "a:b\nc\\d\re", "cr", "x\r")
	tests := []struct {
		version, want string
	}{
		{V10, "MESSAGE\nna:me:a:b c\\d e\ncr:x \n\nbody\x00\n"},
		{V11, "MESSAGE\nna\\cme:a\\cb\\nc\\\\d\re\ncr:x \n\nbody\x00\n"},
		{V12, "MESSAGE\nna\\cme:a\\cb\\nc\\\\d\\re\ncr:x\\r\n\nbody\x00\n"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, encode(t, tt.version, f), tt.version)
	}
}

func TestWriteConnectFramesUnescaped(t *testing.T) {
	for _, cmd := range []string{"CONNECTED", "CONNECT", "STOMP"} {
		f := newFrame(cmd, "", "version", "1.2", "session", `id:1\x`, "server", "a\nb")
		want := cmd + "\nversion:1.2\nsession:id:1\\x\nserver:a b\n\n\x00\n"
		require.Equal(t, want, encode(t, V12, f), cmd)
	}
	// Escaping resumes with the next frame.
	var buf bytes.Buffer
	w := NewWriter(&buf, 0)
	w.SetVersion(V12)
	require.NoError(t, w.WriteFrame(newFrame("CONNECTED", "", "session", "a:b")))
	require.NoError(t, w.WriteFrame(newFrame("RECEIPT", "", "receipt-id", "a:b")))
	require.NoError(t, w.Flush())
	require.Equal(t, "CONNECTED\nsession:a:b\n\n\x00\nRECEIPT\nreceipt-id:a\\cb\n\n\x00\n", buf.String())
}

func TestWriteRoundTrip(t *testing.T) {
	awkward := []string{
		"colon", "a:b:c",
		"newline", "line1\nline2",
		"backslash", `C:\temp\`,
		"cr", "a\rb",
		"na:me\\with\nall", "v",
		"content-length", "5",
		"content-length", "3",
		"empty", "",
		"unicode", "héllo ✓",
	}
	// What each version can represent: 1.0 has no escapes, so LF and CR become spaces, and
	// a colon in a name splits it; 1.1 cannot escape CR but keeps it inside a value.
	want10 := []string{
		"colon", "a:b:c", "newline", "line1 line2", "backslash", `C:\temp\`, "cr", "a b",
		"na", "me\\with all:v", "content-length", "5", "content-length", "3", "empty", "",
		"unicode", "héllo ✓",
	}
	for _, version := range []string{V10, V11, V12} {
		t.Run(version, func(t *testing.T) {
			f := newFrame("MESSAGE", "a\x00b\x00c", awkward...)
			var buf bytes.Buffer
			w := NewWriter(&buf, 0)
			w.SetVersion(version)
			require.NoError(t, w.WriteFrame(f))
			require.NoError(t, w.WriteHeartBeat())
			require.NoError(t, w.WriteFrame(newFrame("ERROR", "no length", "message", "bad: frame\\")))
			require.NoError(t, w.Flush())

			r := NewReader(&buf, Limits{})
			r.SetVersion(version)
			got, err := readAll(r)
			require.ErrorIs(t, err, io.EOF)
			want := f
			if version == V10 {
				want = newFrame("MESSAGE", "a\x00b\x00c", want10...)
			}
			// Each frame's LF after its NUL reads as a heart-beat.
			requireFrames(t, []*frame.Frame{want, hb, hb, newFrame("ERROR", "no length", "message", "bad: frame\\"), hb}, got)
		})
	}
}

func TestStreamingMatchesWriteFrame(t *testing.T) {
	headers := []string{
		"destination", "/queue/orders", "message-id", "ID:host-1:1:1:1",
		"subscription", "sub:0", "ack", "42", "content-length", "3", "x-note", "a\nb\\c\rd",
	}
	for _, version := range []string{V10, V11, V12} {
		var whole, streamed bytes.Buffer
		w := NewWriter(&whole, 0)
		w.SetVersion(version)
		require.NoError(t, w.WriteFrame(newFrame("MESSAGE", "abc", headers...)))
		require.NoError(t, w.Flush())

		s := NewWriter(&streamed, 0)
		s.SetVersion(version)
		require.NoError(t, s.StartFrame("MESSAGE"))
		for i := 0; i < len(headers); i += 2 {
			require.NoError(t, s.Header(headers[i], headers[i+1]))
		}
		require.NoError(t, s.EndFrame([]byte("abc")))
		require.NoError(t, s.Flush())

		require.Equal(t, whole.String(), streamed.String(), version)
	}
}

func TestWriteBuffersUntilFlush(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 0)
	for range 10 {
		require.NoError(t, w.WriteFrame(newFrame("MESSAGE", "hello", "destination", "/queue/a")))
		require.NoError(t, w.WriteHeartBeat())
	}
	require.Zero(t, buf.Len(), "nothing reaches the connection before Flush")
	require.Positive(t, w.Buffered())

	require.NoError(t, w.Flush())
	require.Zero(t, w.Buffered())
	require.Equal(t, strings.Repeat("MESSAGE\ndestination:/queue/a\n\nhello\x00\n\n", 10), buf.String())
}

func TestWriteNilHeader(t *testing.T) {
	require.Equal(t, "DISCONNECT\n\n\x00\n", encode(t, V12, &frame.Frame{Command: "DISCONNECT"}))
}

// TestWriteFramesEndWithNULAndLF: every frame ends with NUL and LF, as ActiveMQ writes them,
// whichever way it is written, so that a client which reads the byte after the NUL as the
// frame's EOL (PHP's PECL stomp) still finds the next frame's command intact when several
// frames come in one read.
func TestWriteFramesEndWithNULAndLF(t *testing.T) {
	for _, version := range []string{V10, V11, V12} {
		var buf bytes.Buffer
		w := NewWriter(&buf, 0)
		w.SetVersion(version)
		require.NoError(t, w.WriteFrame(newFrame("RECEIPT", "", "receipt-id", "r1")))
		require.NoError(t, w.StartFrame("MESSAGE"))
		require.NoError(t, w.Header("destination", "/queue/a"))
		require.NoError(t, w.HeaderInt("content-length", 3))
		require.NoError(t, w.EndFrame([]byte("a\x00b")))
		require.NoError(t, w.WriteFrame(newFrame("ERROR", "oops", "message", "bad")))
		require.NoError(t, w.Flush())
		require.Equal(t, "RECEIPT\nreceipt-id:r1\n\n\x00\n"+
			"MESSAGE\ndestination:/queue/a\ncontent-length:3\n\na\x00b\x00\n"+
			"ERROR\nmessage:bad\n\noops\x00\n", buf.String(), version)
	}
}

// TestSetFrameEOLOff: a WebSocket connection ends frames at the NUL, as ActiveMQ sends them
// there; heart-beats are unchanged, and the LF comes back when turned on again.
func TestSetFrameEOLOff(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 0)
	w.SetFrameEOL(false)
	require.NoError(t, w.WriteFrame(newFrame("RECEIPT", "", "receipt-id", "r1")))
	require.NoError(t, w.WriteHeartBeat())
	require.NoError(t, w.StartFrame("MESSAGE"))
	require.NoError(t, w.EndFrame([]byte("x")))
	w.SetFrameEOL(true)
	require.NoError(t, w.WriteFrame(newFrame("RECEIPT", "", "receipt-id", "r2")))
	require.NoError(t, w.Flush())
	require.Equal(t, "RECEIPT\nreceipt-id:r1\n\n\x00\nMESSAGE\n\nx\x00RECEIPT\nreceipt-id:r2\n\n\x00\n", buf.String())
}

func TestStreamingDoesNotAllocate(t *testing.T) {
	w := NewWriter(discard{}, 0)
	w.SetVersion(V12)
	body := make([]byte, 256)
	allocs := testing.AllocsPerRun(100, func() {
		_ = w.StartFrame("MESSAGE")
		_ = w.Header("destination", "/queue/orders")
		_ = w.Header("x-escaped", "a:b\nc")
		_ = w.EndFrame(body)
	})
	require.Zero(t, allocs)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

func TestWriteErrors(t *testing.T) {
	boom := errors.New("boom")
	w := NewWriter(failWriter{boom}, 16)
	w.SetVersion(V12)
	err := w.WriteFrame(newFrame("MESSAGE", strings.Repeat("x", 100), "k", strings.Repeat("a:", 20)))
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, w.WriteHeartBeat(), boom, "errors are sticky")
	require.ErrorIs(t, w.Flush(), boom)
}

// HeaderInt writes what Header writes with the number formatted, also with the buffer
// nearly full (the number does not fit in what is left of it).
func TestWriteHeaderInt(t *testing.T) {
	values := []int64{0, 7, -1, 1234567890123, math.MaxInt64, math.MinInt64}
	for _, version := range []string{V10, V11, V12} {
		for _, bufSize := range []int{0, 16, 31} {
			var got, want bytes.Buffer
			gw, ww := NewWriter(&got, bufSize), NewWriter(&want, bufSize)
			gw.SetVersion(version)
			ww.SetVersion(version)
			for _, v := range values {
				require.NoError(t, gw.StartFrame("MESSAGE"))
				require.NoError(t, ww.StartFrame("MESSAGE"))
				require.NoError(t, gw.HeaderInt("x:offset", v))
				require.NoError(t, ww.Header("x:offset", strconv.FormatInt(v, 10)))
				require.NoError(t, gw.EndFrame(nil))
				require.NoError(t, ww.EndFrame(nil))
			}
			require.NoError(t, gw.Flush())
			require.NoError(t, ww.Flush())
			require.Equal(t, want.String(), got.String(), "version %s, buffer %d", version, bufSize)
		}
	}
}
