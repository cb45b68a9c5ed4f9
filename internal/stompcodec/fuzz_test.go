package stompcodec

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/go-stomp/stomp/v3/frame"
)

// chunkReader hands out data in chunks whose sizes cycle through sizes, so that frames are
// split at every possible place across reads.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(c.sizes[c.i%len(c.sizes)], len(p), len(c.data))
	c.i++
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// fuzzLimits are small, so the fuzzer reaches every limit.
var fuzzLimits = Limits{MaxCommandLine: 64, MaxHeaderLine: 128, MaxHeaders: 16, MaxFrameSize: 2048}

// FuzzReader feeds arbitrary bytes, split into chunks, to a Reader. It must not panic, must
// not return a frame over the limits, must fail only with the documented errors, and every
// frame it returns must survive being written with the Writer and read again.
//
// split picks the chunking (0: one byte at a time) and mode the starting version (mode%3)
// and whether the read buffer is smaller than the line limits (mode&4).
func FuzzReader(f *testing.F) {
	seeds := []string{
		"CONNECT\naccept-version:1.0,1.1,1.2\nhost:localhost\nlogin:a\\c\npasscode:\r\n\r\n\x00",
		"STOMP\naccept-version:1.2\n\n\x00SEND\nk:a\\rb\\c\n\nx\x00",
		"SEND\ndestination:/queue/a\ncontent-type:text/plain\ncontent-length:5\n\na\x00b\x00c\x00\n\n",
		"SEND\r\ndestination:/queue/a\r\nreceipt:1\r\n\r\nhello\x00\r\n",
		"\n\n\r\nMESSAGE\nsubscription:0\nmessage-id:1\nack:2\n\nbody\x00",
		"SEND\nfoo:1\nfoo:2\n\n\x00",
		"SEND\n  foo :  bar  \n\n\x00",
		"SEND\nk:a\\tb\n\n\x00",
		"SEND\nk:v\\\n\n\x00",
		"SEND\nk:x\\\\y\\ny\\cz\n\n\x00",
		"SEND\ncontent-length:-1\n\n\x00",
		"SEND\ncontent-length:99999999999999999999\n\n\x00",
		"SEND\ncontent-length:1000000000000\n\n",
		"SEND\ncontent-length:2\n\nabc\x00",
		"SEND\nnocolon\n\n\x00",
		"SEND\n:novalue\n\n\x00",
		"SEND\nk:v\r\r\n\n\x00CONNECTED\nversion:1.2\nsession:a:b\\c\n\n\x00",
		"SEND\n" + strings.Repeat("k:v\n", 20) + "\n\x00",
		"SEND\nk:" + strings.Repeat("v", 200) + "\n\n\x00",
		strings.Repeat("C", 100) + "\n\n\x00",
		"SEND\n\n" + strings.Repeat("b", 3000) + "\x00",
		"SEND\ncontent-length:0005\n\nabcde\x00",
		"SEND",
		"",
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i*7), uint8(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, split, mode uint8) {
		var in io.Reader
		if split == 0 {
			in = iotest.OneByteReader(bytes.NewReader(data))
		} else {
			a, b := int(split%13)+1, int(split/13)+1
			in = &chunkReader{data: data, sizes: []int{a, b, a + b, 1, 64}}
		}
		bufSize := readBufferSize
		if mode&4 != 0 {
			bufSize = 16
		}
		r := newReaderSize(in, fuzzLimits, bufSize)
		r.SetVersion([]string{V10, V11, V12}[mode%3])

		for {
			version := r.Version()
			fr, err := r.Read()
			if err != nil {
				checkFuzzError(t, err)
				return
			}
			if fr == nil {
				continue
			}
			checkFuzzLimits(t, fr)
			checkRoundTrip(t, version, fr)
		}
	})
}

func checkFuzzError(t *testing.T, err error) {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return
	}
	var fe *FrameError
	if !errors.As(err, &fe) {
		t.Fatalf("unexpected error type %T: %v", err, err)
	}
	for _, s := range []error{ErrFrameTooLarge, ErrTooManyHeaders, ErrHeaderTooLong,
		ErrCommandTooLong, ErrMalformedHeader, ErrBadContentLength, ErrMissingNull, ErrUndefinedEscape} {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error wraps no sentinel: %v", err)
}

func checkFuzzLimits(t *testing.T, f *frame.Frame) {
	if f.Command == "" || len(f.Command) > fuzzLimits.MaxCommandLine {
		t.Fatalf("command %q breaks the limit", f.Command)
	}
	if f.Header.Len() > fuzzLimits.MaxHeaders {
		t.Fatalf("%d headers", f.Header.Len())
	}
	size := len(f.Command) + 2 + len(f.Body)
	for i := range f.Header.Len() {
		k, v := f.Header.GetAt(i)
		if k == "" || len(k)+1+len(v) > fuzzLimits.MaxHeaderLine {
			t.Fatalf("header %q:%q breaks the limit", k, v)
		}
		size += len(k) + len(v) + 2
	}
	if int64(size) > fuzzLimits.MaxFrameSize {
		t.Fatalf("frame of at least %d bytes", size)
	}
}

// checkRoundTrip writes f with the version it was read with and reads it back.
func checkRoundTrip(t *testing.T, version string, f *frame.Frame) {
	if strings.HasSuffix(f.Command, "\r") {
		return // the Writer does not validate commands; a trailing CR reads back as EOL
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, 0)
	w.SetVersion(version)
	if err := w.WriteFrame(f); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	wire := bytes.Clone(buf.Bytes())
	r := NewReader(&buf, Limits{})
	r.SetVersion(version)
	got, err := r.Read()
	if err != nil {
		t.Fatalf("re-reading %q: %v", wire, err)
	}
	want := representable(version, f)
	if got.Command != want.Command || !bytes.Equal(got.Body, want.Body) ||
		!slices.Equal(entries(got.Header), entries(want.Header)) {
		t.Fatalf("round trip in %s:\nwant %q %q %q\ngot  %q %q %q\nwire %q", version,
			want.Command, entries(want.Header), want.Body, got.Command, entries(got.Header), got.Body, wire)
	}
	if f, err := r.Read(); f != nil || err != nil {
		t.Fatalf("re-read frame not followed by its LF (a heart-beat): %v, %v", f, err)
	}
	if _, err := r.Read(); err != io.EOF {
		t.Fatalf("trailing data after re-read frame: %v", err)
	}
}

// representable is what f becomes after a trip through the Writer: the encodings that cannot
// carry a byte replace it with a space (see the package comment).
var eolToSpace = strings.NewReplacer("\r", " ", "\n", " ")

func representable(version string, f *frame.Frame) *frame.Frame {
	raw := version == V10 || rawCommand(f.Command)
	out := &frame.Frame{Command: f.Command, Header: frame.NewHeader(), Body: f.Body}
	for i := range f.Header.Len() {
		k, v := f.Header.GetAt(i)
		switch {
		case raw:
			k, v = eolToSpace.Replace(k), eolToSpace.Replace(v)
		case version == V11 && strings.HasSuffix(v, "\r"):
			v = strings.TrimSuffix(v, "\r") + " "
		}
		out.Header.Add(k, v)
	}
	return out
}
