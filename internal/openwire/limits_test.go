package openwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allocated returns the bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A budget far below every absurd length below, and far above what decoding a small frame
// allocates (the bufio.Reader's 4 KiB, the command).
const allocBudget = 256 << 10

// looseFrame prefixes body (type byte and fields) with its size.
func looseFrame(body ...[]byte) []byte {
	b := bytes.Join(body, nil)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// connectionControlToken is a loose ConnectionControl whose token claims n bytes and has
// only a few.
func connectionControlToken(n uint32) []byte {
	return bytes.Join([][]byte{
		{TypeConnectionControl}, be32(1), {0},
		{0, 0, 0, 0, 0}, // close, exit, faultTolerant, resume, suspend
		{0, 0, 0},       // connectedBrokers, reconnectTo: null; rebalance
		{1}, be32(n), {1, 2, 3},
	}, nil)
}

func TestLimits(t *testing.T) {
	loose := Format{Version: Version, MaxFrameSize: 1 << 20}
	read := func(f Format, data []byte) (err error) {
		n := allocated(func() { _, err = NewReader(bytes.NewReader(data), f).Read() })
		assert.Less(t, n, uint64(allocBudget), "decoding allocated %d bytes", n)
		return err
	}

	t.Run("frame size above the limit", func(t *testing.T) {
		err := read(loose, be32(1<<30))
		var fse *FrameSizeError
		require.ErrorAs(t, err, &fse)
		assert.ErrorIs(t, err, ErrFrameTooLarge)
		assert.Equal(t, int64(1<<30), fse.Size)
		assert.Equal(t, int64(1<<20), fse.Max)
	})
	t.Run("frame size without a limit, frame never sent", func(t *testing.T) {
		unlimited := loose
		unlimited.MaxFrameSize = 0
		var err error
		n := allocated(func() { _, err = NewReader(bytes.NewReader(be32(1<<31-1)), unlimited).Read() })
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.Less(t, n, uint64(4<<20), "a 2 GiB claim allocated %d bytes", n)
	})
	t.Run("negative frame size", func(t *testing.T) {
		assert.ErrorIs(t, read(loose, be32(0x80000000)), ErrMalformed)
	})
	t.Run("byte array beyond the frame", func(t *testing.T) {
		assert.ErrorIs(t, read(loose, looseFrame(connectionControlToken(1<<31-1))), ErrMalformed)
	})
	t.Run("byte array beyond the limit without a size prefix", func(t *testing.T) {
		noPrefix := loose
		noPrefix.SizePrefixDisabled = true
		assert.ErrorIs(t, read(noPrefix, connectionControlToken(1<<31-1)), ErrFrameTooLarge)
	})
	t.Run("byte array within the limit without a size prefix, never sent", func(t *testing.T) {
		noPrefix := loose
		noPrefix.SizePrefixDisabled = true
		noPrefix.MaxFrameSize = 1 << 30
		var err error
		n := allocated(func() { _, err = NewReader(bytes.NewReader(connectionControlToken(1<<29)), noPrefix).Read() })
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.Less(t, n, uint64(4<<20), "a 512 MiB claim allocated %d bytes", n)
	})
	t.Run("string beyond the frame", func(t *testing.T) {
		// ControlCommand: command id, response required, then a present string of 65535 bytes.
		assert.ErrorIs(t, read(loose, looseFrame([]byte{TypeControlCommand}, be32(1), []byte{0, 1, 0xff, 0xff, 'x'})), ErrMalformed)
	})
	t.Run("boolean stream beyond the frame", func(t *testing.T) {
		tight := loose
		tight.TightEncoding = true
		assert.ErrorIs(t, read(tight, looseFrame([]byte{TypeKeepAliveInfo, 0x80, 0xff, 0xff})), ErrMalformed)
	})
	t.Run("object array beyond the frame", func(t *testing.T) {
		// SessionInfo is short; ConnectionInfo's broker path claims 32767 ids.
		frame := looseFrame([]byte{TypeConnectionInfo}, be32(1), []byte{0, 0, 0, 0, 0, 1, 0x7f, 0xff, 0})
		assert.ErrorIs(t, read(loose, frame), ErrMalformed)
	})
	t.Run("unknown type", func(t *testing.T) {
		assert.ErrorIs(t, read(loose, looseFrame([]byte{TypeBlobMessage})), ErrUnknownType)
	})
	t.Run("exception causes nested without end", func(t *testing.T) {
		f := loose
		f.StackTrace = true
		body := [][]byte{{TypeExceptionResponse}, be32(1), {0}, be32(2)}
		for i := 0; i < 1000; i++ {
			body = append(body, []byte{1, 0, 0, 0, 0}) // present, null class, null message, no stack
		}
		assert.ErrorIs(t, read(f, looseFrame(body...)), ErrMalformed)
	})
	t.Run("cache index out of range", func(t *testing.T) {
		f := loose
		f.Cache, f.CacheSize = true, 16
		// SessionInfo whose session id is "cached at slot 300".
		assert.ErrorIs(t, read(f, looseFrame([]byte{TypeSessionInfo}, be32(1), []byte{0, 0, 1, 0x2c})), ErrMalformed)
	})
	t.Run("property map size", func(t *testing.T) {
		m := &Message{Type: TypeTextMessage, MarshalledProperties: be32(1<<31 - 1)}
		var err error
		n := allocated(func() { _, err = m.Properties() })
		assert.ErrorIs(t, err, ErrMalformed)
		assert.Less(t, n, uint64(allocBudget))
	})
	t.Run("property byte array and string lengths", func(t *testing.T) {
		for _, props := range [][]byte{
			bytes.Join([][]byte{be32(1), {0, 1, 'k', primBytes}, be32(1<<31 - 1)}, nil),
			bytes.Join([][]byte{be32(1), {0, 1, 'k', primBigString}, be32(1<<31 - 1)}, nil),
			bytes.Join([][]byte{be32(1), {0, 1, 'k', primList}, be32(1<<31 - 1)}, nil),
		} {
			m := &Message{Type: TypeTextMessage, MarshalledProperties: props}
			var err error
			n := allocated(func() { _, err = m.Properties() })
			assert.ErrorIs(t, err, ErrMalformed)
			assert.Less(t, n, uint64(allocBudget))
		}
	})
	t.Run("compressed body that inflates without end", func(t *testing.T) {
		m := &Message{Type: TypeTextMessage}
		m.SetBody(make([]byte, MaxInflated+1), true)
		_, err := m.Body()
		assert.ErrorIs(t, err, ErrMalformed)
	})
	t.Run("frame too large to write", func(t *testing.T) {
		m := &Message{Type: TypeBytesMessage, Content: make([]byte, 2<<20)}
		err := NewWriter(io.Discard, loose).Write(m)
		var fse *FrameSizeError
		assert.True(t, errors.As(err, &fse))
	})
}
