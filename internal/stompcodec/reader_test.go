package stompcodec

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unsafe"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"
)

func TestReadFrames(t *testing.T) {
	tests := []struct {
		name    string
		version string
		in      string
		want    []*frame.Frame
	}{
		{
			name: "heart-beats between frames",
			in:   "\n\r\nSEND\ndestination:/queue/a\n\nhi\x00\n\nSEND\n\n\x00\r\n",
			want: []*frame.Frame{hb, hb, newFrame("SEND", "hi", "destination", "/queue/a"), hb, hb,
				newFrame("SEND", ""), hb},
		},
		{
			name: "LF",
			in:   "SEND\ndestination:/queue/a\nreceipt:1\n\nbody\x00",
			want: []*frame.Frame{newFrame("SEND", "body", "destination", "/queue/a", "receipt", "1")},
		},
		{
			name: "CRLF",
			in:   "SEND\r\ndestination:/queue/a\r\nreceipt:1\r\n\r\nbody\x00",
			want: []*frame.Frame{newFrame("SEND", "body", "destination", "/queue/a", "receipt", "1")},
		},
		{
			name: "CRLF in 1.0 and 1.1 too",
			in:   "SEND\r\nreceipt:1\r\n\r\n\x00",
			want: []*frame.Frame{newFrame("SEND", "", "receipt", "1")},
		},
		{
			name: "content-length body with NULs",
			in:   "SEND\ncontent-length:5\n\na\x00b\x00c\x00\n",
			want: []*frame.Frame{newFrame("SEND", "a\x00b\x00c", "content-length", "5"), hb},
		},
		{
			name: "content-length zero",
			in:   "SEND\ncontent-length:0\n\n\x00",
			want: []*frame.Frame{newFrame("SEND", "", "content-length", "0")},
		},
		{
			name: "first content-length wins",
			in:   "SEND\ncontent-length:3\ncontent-length:100\n\nabc\x00",
			want: []*frame.Frame{newFrame("SEND", "abc", "content-length", "3", "content-length", "100")},
		},
		{
			name: "body without content-length up to NUL",
			in:   "MESSAGE\n\nhello\nworld\x00MESSAGE\n\n\x00",
			want: []*frame.Frame{newFrame("MESSAGE", "hello\nworld"), newFrame("MESSAGE", "")},
		},
		{
			name: "repeated headers all kept in order",
			in:   "SEND\nfoo:1\nbar:x\nfoo:2\n\n\x00",
			want: []*frame.Frame{newFrame("SEND", "", "foo", "1", "bar", "x", "foo", "2")},
		},
		{
			name: "value split at first colon, empty value",
			in:   "SEND\nurl:http://x:80/\nempty:\n\n\x00",
			want: []*frame.Frame{newFrame("SEND", "", "url", "http://x:80/", "empty", "")},
		},
		{
			name: "unknown command is not rejected here",
			in:   "FOO BAR\n\n\x00",
			want: []*frame.Frame{newFrame("FOO BAR", "")},
		},
		{
			name:    "1.0 trims names and values",
			version: V10,
			in:      "SEND\n  foo \t:  bar baz \t\r\nx: \n\n\x00",
			want:    []*frame.Frame{newFrame("SEND", "", "foo", "bar baz", "x", "")},
		},
		{
			name:    "1.1 does not trim",
			version: V11,
			in:      "SEND\n foo : bar \n\n\x00",
			want:    []*frame.Frame{newFrame("SEND", "", " foo ", " bar ")},
		},
		{
			name:    "1.0 does not unescape",
			version: V10,
			in:      "SEND\na\\cb:c\\nd\\t\\\n\n\x00",
			want:    []*frame.Frame{newFrame("SEND", "", `a\cb`, `c\nd\t\`)},
		},
		{
			name:    "1.1 unescapes names and values",
			version: V11,
			in:      "SEND\na\\cb\\\\:x\\ny\\cz\\\\\n\n\x00",
			want:    []*frame.Frame{newFrame("SEND", "", `a:b\`, "x\ny:z\\")},
		},
		{
			name:    "1.2 unescapes CR",
			version: V12,
			in:      "SEND\nk:a\\rb\\n\\c\\\\\n\n\x00",
			want:    []*frame.Frame{newFrame("SEND", "", "k", "a\rb\n:\\")},
		},
		{
			name:    "CONNECT headers are not unescaped",
			version: V12,
			in:      "CONNECT\nlogin:a\\cb\npasscode:p\\t\\\n\n\x00",
			want:    []*frame.Frame{newFrame("CONNECT", "", "login", `a\cb`, "passcode", `p\t\`)},
		},
		{
			name:    "STOMP and CONNECTED headers are not unescaped",
			version: V11,
			in:      "STOMP\nhost:a\\r\n\n\x00CONNECTED\nserver:x\\y\n\n\x00",
			want: []*frame.Frame{newFrame("STOMP", "", "host", `a\r`),
				newFrame("CONNECTED", "", "server", `x\y`)},
		},
		{
			name: "trailing EOLs after NUL",
			in:   "SEND\n\nx\x00\n\r\n\n",
			want: []*frame.Frame{newFrame("SEND", "x"), hb, hb, hb},
		},
		{
			name: "large header block gets one string per value",
			in:   "SEND\na:" + strings.Repeat("x", 3000) + "\nb:" + strings.Repeat("y", 3000) + "\n\n\x00",
			want: []*frame.Frame{newFrame("SEND", "", "a", strings.Repeat("x", 3000), "b", strings.Repeat("y", 3000))},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, split := range []string{"whole", "one byte"} {
				var in io.Reader = strings.NewReader(tt.in)
				if split == "one byte" {
					in = iotest.OneByteReader(in)
				}
				r := NewReader(in, Limits{})
				if tt.version != "" {
					r.SetVersion(tt.version)
				}
				got, err := readAll(r)
				require.ErrorIs(t, err, io.EOF, split)
				requireFrames(t, tt.want, got)
			}
		})
	}
}

func TestReadFirstHeaderWins(t *testing.T) {
	r := NewReader(strings.NewReader("SEND\ndestination:/queue/a\ndestination:/queue/b\n\n\x00"), Limits{})
	f, err := r.Read()
	require.NoError(t, err)
	require.Equal(t, "/queue/a", f.Header.Get("destination"))
	require.Equal(t, []string{"/queue/a", "/queue/b"}, f.Header.GetAll("destination"))
}

func TestReadErrors(t *testing.T) {
	tests := []struct {
		name     string
		version  string
		in       string
		sentinel error
		mentions []string
	}{
		{"no colon", V12, "SEND\nfoo\n\n\x00", ErrMalformedHeader, []string{`"foo"`, "no ':'"}},
		{"empty name", V12, "SEND\n:foo\n\n\x00", ErrMalformedHeader, []string{"empty name"}},
		{"empty name after 1.0 trim", V10, "SEND\n  :foo\n\n\x00", ErrMalformedHeader, []string{"empty name"}},
		{"negative content-length", V12, "SEND\ncontent-length:-1\n\n\x00", ErrBadContentLength, []string{`"-1"`}},
		{"signed content-length", V12, "SEND\ncontent-length:+1\n\nx\x00", ErrBadContentLength, nil},
		{"text content-length", V12, "SEND\ncontent-length:abc\n\n\x00", ErrBadContentLength, []string{`"abc"`}},
		{"empty content-length", V12, "SEND\ncontent-length:\n\n\x00", ErrBadContentLength, nil},
		{"spaced content-length in 1.2", V12, "SEND\ncontent-length: 1\n\nx\x00", ErrBadContentLength, nil},
		{"overflowing content-length", V12, "SEND\ncontent-length:99999999999999999999\n\n\x00", ErrBadContentLength, []string{"overflows"}},
		{"missing NUL", V12, "SEND\ncontent-length:2\n\nabc\x00", ErrMissingNull, []string{`'c'`, "2-byte body"}},
		{"tab escape in 1.1", V11, "SEND\nk:a\\tb\n\n\x00", ErrUndefinedEscape, []string{`"\\t"`, "1.1"}},
		{"tab escape in 1.2", V12, "SEND\nk:a\\tb\n\n\x00", ErrUndefinedEscape, []string{`"\\t"`, "1.2"}},
		{"CR escape in 1.1", V11, "SEND\nk:a\\rb\n\n\x00", ErrUndefinedEscape, []string{`"\\r"`}},
		{"escape in name", V12, "SEND\nk\\x:v\n\n\x00", ErrUndefinedEscape, nil},
		{"lone backslash", V12, "SEND\nk:v\\\n\n\x00", ErrUndefinedEscape, []string{"lone backslash"}},
		{"lone backslash in name", V11, "SEND\nk\\:v\n\n\x00", ErrUndefinedEscape, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.in), Limits{})
			r.SetVersion(tt.version)
			f, err := r.Read()
			require.Nil(t, f)
			requireFrameError(t, err, tt.sentinel, tt.mentions...)

			// Errors are final.
			_, again := r.Read()
			require.Equal(t, err, again)
		})
	}
}

func TestReadEOF(t *testing.T) {
	clean := []string{"", "\n", "SEND\n\n\x00", "SEND\n\n\x00\n\n"}
	for _, in := range clean {
		_, err := readAll(NewReader(strings.NewReader(in), Limits{}))
		require.Equal(t, io.EOF, err, "%q", in)
	}
	truncated := []string{
		"S", "SEND", "SEND\r", "SEND\n", "SEND\ndest", "SEND\ndestination:/q\n",
		"SEND\n\n", "SEND\n\nbody", "SEND\ncontent-length:4\n\nab",
		"SEND\ncontent-length:4\n\nabcd", "SEND\ncontent-length:0\n\n",
		"SEND\n\n\x00SEND\n",
	}
	for _, in := range truncated {
		for _, r := range []*Reader{
			NewReader(strings.NewReader(in), Limits{}),
			newReaderSize(iotest.OneByteReader(strings.NewReader(in)), Limits{MaxHeaderLine: 40}, 16),
		} {
			_, err := readAll(r)
			require.Equal(t, io.ErrUnexpectedEOF, err, "%q", in)
		}
	}
}

func TestReadPassesReaderErrors(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("SEND\nk:v"), iotest.ErrReader(boom)), Limits{})
	_, err := r.Read()
	require.Equal(t, boom, err)
}

func TestReadVersionSwitch(t *testing.T) {
	in := "CONNECT\naccept-version:1.1,1.2\nhost:h\n\n\x00" +
		"SEND\nk:a\\rb\n\n\x00"
	r := NewReader(strings.NewReader(in), Limits{})
	require.Equal(t, V10, r.Version())

	f, err := r.Read()
	require.NoError(t, err)
	require.Equal(t, "CONNECT", f.Command)
	require.Equal(t, V12, r.Version())

	f, err = r.Read()
	require.NoError(t, err)
	require.Equal(t, "a\rb", f.Header.Get("k"), "1.2 rules after the switch")
}

func TestReadVersionSwitchRules(t *testing.T) {
	tests := []struct {
		name, start, in, want string
	}{
		{"STOMP frame", V10, "STOMP\naccept-version:1.1\n\n\x00", V11},
		{"no accept-version means 1.0", V12, "CONNECT\n\n\x00", V10},
		{"1.0 trims the list", V10, "CONNECT\naccept-version: 1.0,1.1 \n\n\x00", V11},
		{"failed negotiation keeps the version", V11, "CONNECT\naccept-version:2.0\n\n\x00", V11},
		{"other frames do not switch", V10, "SEND\naccept-version:1.2\n\n\x00", V10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.in), Limits{})
			r.SetVersion(tt.start)
			_, err := r.Read()
			require.NoError(t, err)
			require.Equal(t, tt.want, r.Version())
		})
	}
}

func TestReadInternsNames(t *testing.T) {
	in := "SEND\ndestination:/queue/a\nx-custom:1\n\n\x00SEND\ndestination:/queue/b\nx-custom:2\n\n\x00"
	got, err := readAll(NewReader(strings.NewReader(in), Limits{}))
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, got, 2)
	d1, _ := got[0].Header.GetAt(0)
	d2, _ := got[1].Header.GetAt(0)
	require.Same(t, unsafe.StringData(d1), unsafe.StringData(d2), "well-known names are interned")
	c1, _ := got[0].Header.GetAt(1)
	c2, _ := got[1].Header.GetAt(1)
	require.Equal(t, c1, c2)
	require.NotSame(t, unsafe.StringData(c1), unsafe.StringData(c2), "other names are not")
	require.Same(t, unsafe.StringData(got[0].Command), unsafe.StringData(got[1].Command), "commands are interned")
}
