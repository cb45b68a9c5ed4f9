package stompcodec

import (
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefaultLimits(t *testing.T) {
	require.Equal(t, Limits{
		MaxCommandLine: 1024,
		MaxHeaderLine:  10240,
		MaxHeaders:     1000,
		MaxFrameSize:   10485760,
	}, DefaultLimits())
	require.Equal(t, DefaultLimits(), NewReader(nil, Limits{}).lim)
	require.Equal(t, 7, NewReader(nil, Limits{MaxHeaders: 7}).lim.MaxHeaders)
	require.Equal(t, DefaultLimits(), NewReader(nil, Limits{-1, -1, -1, -1}).lim)
}

func header(name string, valueLen int) string {
	return name + ":" + strings.Repeat("v", valueLen) + "\n"
}

func TestLimits(t *testing.T) {
	tests := []struct {
		name     string
		lim      Limits
		in       string
		sentinel error // nil: the frame must be accepted
		mentions []string
	}{
		{"command at limit", Limits{}, strings.Repeat("C", 1024) + "\r\n\n\x00", nil, nil},
		{"command over limit", Limits{}, strings.Repeat("C", 1025) + "\n\n\x00",
			ErrCommandTooLong, []string{"maxCommandLine 1024", `"CCCC`}},
		{"header at limit with CRLF", Limits{}, "SEND\r\n" + strings.TrimSuffix(header("k", 10238), "\n") + "\r\n\r\n\x00", nil, nil},
		{"header over limit", Limits{}, "SEND\n" + header("k", 10239) + "\n\x00",
			ErrHeaderTooLong, []string{"maxHeaderLine 10240", `"k:vvv`}},
		{"headers at limit", Limits{}, "SEND\n" + strings.Repeat(header("k", 1), 1000) + "\n\x00", nil, nil},
		{"too many headers", Limits{}, "SEND\n" + strings.Repeat(header("k", 1), 1001) + "\n\x00",
			ErrTooManyHeaders, []string{"maxHeaders 1000"}},
		{"body at frame limit", Limits{MaxFrameSize: 28}, "SEND\ncontent-length:5\n\n" + "12345\x00", nil, nil},
		{"content-length plus headers over frame limit", Limits{MaxFrameSize: 27}, "SEND\ncontent-length:5\n\n12345\x00",
			ErrFrameTooLarge, []string{"content-length 5 plus 23 bytes", "maxFrameSize 27"}},
		{"content-length over frame limit", Limits{}, "SEND\ncontent-length:1000000000000\n\n",
			ErrFrameTooLarge, []string{"content-length 1000000000000 exceeds maxFrameSize 10485760"}},
		{"body without content-length at limit", Limits{MaxFrameSize: 11}, "SEND\n\n12345\x00", nil, nil},
		{"body without content-length over limit", Limits{MaxFrameSize: 10}, "SEND\n\n12345\x00",
			ErrFrameTooLarge, []string{"without content-length", "maxFrameSize 10"}},
		{"headers over frame limit", Limits{MaxFrameSize: 20}, "SEND\n" + header("k", 20) + "\n\x00",
			ErrFrameTooLarge, []string{"command and headers exceed maxFrameSize 20"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewReader(strings.NewReader(tt.in), tt.lim).Read()
			if tt.sentinel == nil {
				require.NoError(t, err)
				require.NotNil(t, f)
				return
			}
			require.Nil(t, f)
			requireFrameError(t, err, tt.sentinel, tt.mentions...)
		})
	}
}

func TestFrameErrorMessage(t *testing.T) {
	_, err := NewReader(strings.NewReader("SEND\ncontent-length:1000000000000\n\n"), Limits{}).Read()
	require.EqualError(t, err, "stomp: frame too large: content-length 1000000000000 exceeds maxFrameSize 10485760")
	require.EqualError(t, &FrameError{Err: ErrMissingNull}, ErrMissingNull.Error())
}

// allocated returns the bytes allocated while fn ran.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestHugeContentLengthAllocatesNothing(t *testing.T) {
	in := "SEND\ndestination:/queue/a\ncontent-length:1000000000000\n\n"
	var err error
	n := allocated(func() {
		_, err = NewReader(strings.NewReader(in), Limits{}).Read()
	})
	require.ErrorIs(t, err, ErrFrameTooLarge)
	require.Less(t, n, uint64(1<<20), "allocated %d bytes", n)
}

func TestBodyWithoutNullStopsAtLimit(t *testing.T) {
	src := &countingReader{prefix: []byte("SEND\ndestination:/queue/a\n\n"), n: 20 << 20, fill: 'x'}
	var err error
	n := allocated(func() {
		_, err = NewReader(src, Limits{MaxFrameSize: 1 << 20}).Read()
	})
	requireFrameError(t, err, ErrFrameTooLarge, "maxFrameSize 1048576")
	require.Less(t, src.served, int64(1<<20+64<<10), "read past the limit")
	require.Less(t, n, uint64(4<<20), "allocated %d bytes", n)
}

func TestLongHeaderLineStopsAtLimit(t *testing.T) {
	src := &countingReader{prefix: []byte("SEND\nk:"), n: 1 << 20, fill: 'x'}
	var err error
	n := allocated(func() {
		_, err = NewReader(src, Limits{MaxHeaderLine: 10240}).Read()
	})
	requireFrameError(t, err, ErrHeaderTooLong, "maxHeaderLine 10240")
	require.Less(t, src.served, int64(64<<10), "read past the limit")
	require.Less(t, n, uint64(256<<10), "allocated %d bytes", n)
}

// With a read buffer smaller than the line limit, long lines are assembled across ReadSlice
// calls, and still cut off at the limit.
func TestLongLinesAcrossReadBuffer(t *testing.T) {
	lim := Limits{MaxCommandLine: 40, MaxHeaderLine: 50}
	ok := strings.Repeat("C", 40) + "\r\n" + header("k", 48) + header("j", 30) + "\nbody\x00"
	r := newReaderSize(strings.NewReader(ok), lim, 16)
	f, err := r.Read()
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("C", 40), f.Command)
	require.Equal(t, []string{"k", strings.Repeat("v", 48), "j", strings.Repeat("v", 30)}, entries(f.Header))
	require.Equal(t, "body", string(f.Body))

	r = newReaderSize(strings.NewReader(strings.Repeat("C", 41)+"\n\n\x00"), lim, 16)
	_, err = r.Read()
	requireFrameError(t, err, ErrCommandTooLong)

	src := &countingReader{prefix: []byte("SEND\nk:"), n: 1 << 20, fill: 'x'}
	_, err = newReaderSize(src, lim, 16).Read()
	requireFrameError(t, err, ErrHeaderTooLong)
	require.Less(t, src.served, int64(200))

	// A body without content-length that spans many buffers.
	body := strings.Repeat("b", 1000)
	f, err = newReaderSize(strings.NewReader("SEND\n\n"+body+"\x00"), lim, 16).Read()
	require.NoError(t, err)
	require.Equal(t, body, string(f.Body))

	_, err = newReaderSize(strings.NewReader("SEND\n\n"+body+"\x00"), Limits{MaxFrameSize: 500}, 16).Read()
	requireFrameError(t, err, ErrFrameTooLarge)

	_, err = newReaderSize(io.MultiReader(strings.NewReader("SEND\n\n"+body)), lim, 16).Read()
	require.Equal(t, io.ErrUnexpectedEOF, err)
}

// SetMaxFrameSize holds the frames read after it to a smaller limit, named in its
// errors: a 9 MiB CONNECT before login is refused having read and allocated no more
// than the small limit and a read buffer, whether its content-length says so or its
// body just goes on; raised again, the same Reader takes big frames.
func TestSetMaxFrameSizeBeforeLogin(t *testing.T) {
	const small = 16 << 10
	for _, prefix := range []string{
		"CONNECT\nlogin:a\npasscode:b\ncontent-length:9437184\n\n",
		"CONNECT\nlogin:a\npasscode:b\n\n",
	} {
		src := &countingReader{prefix: []byte(prefix), n: 9 << 20, fill: 'x'}
		r := NewReader(src, Limits{})
		r.SetMaxFrameSize(small, "maxFrameSizeBeforeLogin")
		var err error
		n := allocated(func() { _, err = r.Read() })
		requireFrameError(t, err, ErrFrameTooLarge, "maxFrameSizeBeforeLogin 16384")
		require.LessOrEqual(t, src.served, int64(small+readBufferSize), "read past the limit")
		require.Less(t, n, uint64(small+readBufferSize+16<<10), "allocated %d bytes", n)
	}

	body := strings.Repeat("b", 1<<20)
	in := "CONNECT\nlogin:a\n\n\x00SEND\ndestination:/queue/a\n\n" + body + "\x00"
	r := NewReader(strings.NewReader(in), Limits{})
	r.SetMaxFrameSize(small, "maxFrameSizeBeforeLogin")
	f, err := r.Read()
	require.NoError(t, err)
	require.Equal(t, "CONNECT", f.Command)
	r.SetMaxFrameSize(0, "")
	f, err = r.Read()
	require.NoError(t, err)
	require.Len(t, f.Body, len(body))
	require.Equal(t, int64(defaultMaxFrameSize), r.lim.MaxFrameSize)
}
