package openwire

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Message bodies and properties as the 5.17 client encodes them:
//   - properties: a typed map (primitive.go), never compressed;
//   - TextMessage: a 32-bit length (-1 for null) and modified UTF-8;
//   - MapMessage: a typed map; StreamMessage: typed values one after another;
//   - BytesMessage, ObjectMessage (Java serialisation): the bytes.
// When Compressed is set (the connection's useCompression), the body is deflated with
// java.util.zip.Deflater's default zlib format (DeflaterOutputStream: compress/zlib here);
// a BytesMessage's compressed body is prefixed by its uncompressed length (4 bytes).

// MaxInflated bounds the size of a decompressed body (ActiveMQ's default maxFrameSize).
const MaxInflated = 100 << 20

// Properties decodes the message's typed properties (nil when there are none).
func (m *Message) Properties() (map[string]any, error) {
	if m.MarshalledProperties == nil {
		return nil, nil
	}
	return decodePrimitiveMap(m.MarshalledProperties, math.MaxInt32)
}

// SetProperties encodes p as the message's properties (nil removes them).
func (m *Message) SetProperties(p map[string]any) error {
	if p == nil {
		m.MarshalledProperties = nil
		return nil
	}
	b, err := appendPrimitiveMap(nil, p)
	if err != nil {
		return err
	}
	m.MarshalledProperties = b
	return nil
}

// Body returns the uncompressed body bytes (Content itself when not compressed).
func (m *Message) Body() ([]byte, error) {
	if !m.Compressed || m.Content == nil {
		return m.Content, nil
	}
	c := m.Content
	limit := int64(MaxInflated)
	if m.Type == TypeBytesMessage {
		if len(c) == 0 {
			return c, nil
		}
		if len(c) < 4 {
			return nil, fmt.Errorf("%w: compressed body of %d bytes", ErrMalformed, len(c))
		}
		// The 5.17 client deflates the whole buffer behind the body (up to its capacity,
		// zeros included); the length prefix says how much of it is the body.
		n := int64(binary.BigEndian.Uint32(c))
		if n > MaxInflated {
			return nil, fmt.Errorf("%w: body of %d bytes beyond %d", ErrMalformed, n, MaxInflated)
		}
		limit = n
		c = c[4:]
	}
	zr, err := zlib.NewReader(bytes.NewReader(c))
	if err != nil {
		return nil, fmt.Errorf("%w: compressed body: %v", ErrMalformed, err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%w: compressed body: %v", ErrMalformed, err)
	}
	if m.Type == TypeBytesMessage {
		if int64(len(out)) < limit {
			return nil, fmt.Errorf("%w: compressed body inflates to %d bytes, not %d", ErrMalformed, len(out), limit)
		}
		return out[:limit], nil
	}
	if len(out) > MaxInflated {
		return nil, fmt.Errorf("%w: body inflates beyond %d bytes", ErrMalformed, MaxInflated)
	}
	return out, nil
}

// SetBody sets the body bytes, deflated when compress is set.
func (m *Message) SetBody(b []byte, compress bool) {
	m.Compressed = compress
	if !compress || b == nil {
		m.Compressed = false
		m.Content = b
		return
	}
	var buf bytes.Buffer
	if m.Type == TypeBytesMessage {
		buf.Write(binary.BigEndian.AppendUint32(nil, uint32(len(b))))
	}
	zw := zlib.NewWriter(&buf)
	zw.Write(b) // writes to a bytes.Buffer cannot fail
	zw.Close()
	m.Content = buf.Bytes()
}

// Text decodes a TextMessage's body; ok is false for a null text.
func (m *Message) Text() (text string, ok bool, err error) {
	b, err := m.Body()
	if err != nil || b == nil {
		return "", false, err
	}
	r := primReader{b: b}
	n := r.i32()
	if r.err == nil && n == -1 {
		return "", false, nil
	}
	s := r.str(int(n))
	if r.err != nil {
		return "", false, r.err
	}
	return s, true, nil
}

// SetText sets a TextMessage's body.
func (m *Message) SetText(s string, compress bool) {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+mutf8Len(s)), uint32(mutf8Len(s)))
	m.SetBody(appendMUTF8(b, s), compress)
}

// MapBody decodes a MapMessage's body.
func (m *Message) MapBody() (map[string]any, error) {
	b, err := m.Body()
	if err != nil || b == nil {
		return nil, err
	}
	return decodePrimitiveMap(b, math.MaxInt32)
}

// SetMapBody sets a MapMessage's body.
func (m *Message) SetMapBody(v map[string]any, compress bool) error {
	b, err := appendPrimitiveMap(nil, v)
	if err != nil {
		return err
	}
	m.SetBody(b, compress)
	return nil
}

// StreamBody decodes a StreamMessage's body.
func (m *Message) StreamBody() ([]any, error) {
	b, err := m.Body()
	if err != nil || b == nil {
		return nil, err
	}
	return decodePrimitiveList(b)
}

// SetStreamBody sets a StreamMessage's body.
func (m *Message) SetStreamBody(v []any, compress bool) error {
	var b []byte
	for _, x := range v {
		var err error
		if b, err = appendPrimitive(b, x, 0); err != nil {
			return err
		}
	}
	if b == nil {
		b = []byte{}
	}
	m.SetBody(b, compress)
	return nil
}
