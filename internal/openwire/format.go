package openwire

import (
	"bytes"
	"fmt"
	"math"
)

// Versions of the wire format this package speaks. ActiveMQ 5.15 to 5.18 clients send 12;
// 10 and 11 have the same layout for every command here; 6 to 9 lack a few fields (the
// message id's text view, ConsumerInfo's client id, JMSXGroupFirstForConsumer since 10;
// ConnectionInfo's client IP and ConnectionControl's token since 8; MessageAck's poison
// cause since 7), which are then neither read nor written.
const (
	Version    = 12
	MinVersion = 6
)

// magic starts every WireFormatInfo.
var magic = []byte("ActiveMQ")

// Format is the negotiated wire format of one connection.
type Format struct {
	Version            int
	TightEncoding      bool
	SizePrefixDisabled bool
	Cache              bool
	CacheSize          int // slots per direction when Cache is on
	StackTrace         bool
	TCPNoDelay         bool
	// MaxFrameSize bounds every frame read (and written); 0 means no limit.
	MaxFrameSize int64
	// MaxInactivityDuration (ms) is the inactivity monitor's read timeout; 0 disables it.
	MaxInactivityDuration             int64
	MaxInactivityDurationInitialDelay int64
}

// cacheSlots is the number of marshalling cache slots per direction.
func (f *Format) cacheSlots() int {
	if f.CacheSize <= 0 {
		return defaultCacheSize
	}
	return f.CacheSize
}

// Initial is the format both sides use until WireFormatInfo has been exchanged: loose
// encoding, size prefix, no cache, the given version and frame limit.
func Initial(version int, maxFrameSize int64) Format {
	return Format{Version: version, MaxFrameSize: maxFrameSize}
}

// WireFormatInfo opens a connection from each side: its magic, the highest version the
// side speaks and its options as a typed map (TightEncodingEnabled, CacheEnabled,
// CacheSize, SizePrefixDisabled, StackTraceEnabled, TcpNoDelayEnabled, MaxFrameSize,
// MaxInactivityDuration, MaxInactivityDurationInitalDelay, ProviderName, ...).
type WireFormatInfo struct {
	Magic      []byte
	Version    int32
	Properties map[string]any
}

func (*WireFormatInfo) DataType() byte { return TypeWireFormatInfo }

// NewWireFormatInfo describes f as the options a side offers.
func NewWireFormatInfo(f Format) *WireFormatInfo {
	p := map[string]any{
		"TightEncodingEnabled":             f.TightEncoding,
		"SizePrefixDisabled":               f.SizePrefixDisabled,
		"CacheEnabled":                     f.Cache,
		"CacheSize":                        int32(f.CacheSize),
		"StackTraceEnabled":                f.StackTrace,
		"TcpNoDelayEnabled":                f.TCPNoDelay,
		"MaxInactivityDuration":            f.MaxInactivityDuration,
		"MaxInactivityDurationInitalDelay": f.MaxInactivityDurationInitialDelay,
	}
	if f.MaxFrameSize > 0 {
		p["MaxFrameSize"] = f.MaxFrameSize
	} else {
		p["MaxFrameSize"] = int64(math.MaxInt64)
	}
	return &WireFormatInfo{Magic: magic, Version: int32(f.Version), Properties: p}
}

// Valid reports whether the magic is ActiveMQ's.
func (w *WireFormatInfo) Valid() bool { return bytes.Equal(w.Magic, magic) }

func (w *WireFormatInfo) flag(name string) bool {
	v, _ := w.Properties[name].(bool)
	return v
}

func (w *WireFormatInfo) long(name string) int64 {
	switch v := w.Properties[name].(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	}
	return 0
}

// Format reads the options w offers.
func (w *WireFormatInfo) Format() Format {
	return Format{
		Version:                           int(w.Version),
		TightEncoding:                     w.flag("TightEncodingEnabled"),
		SizePrefixDisabled:                w.flag("SizePrefixDisabled"),
		Cache:                             w.flag("CacheEnabled"),
		CacheSize:                         int(w.long("CacheSize")),
		StackTrace:                        w.flag("StackTraceEnabled"),
		TCPNoDelay:                        w.flag("TcpNoDelayEnabled"),
		MaxFrameSize:                      w.long("MaxFrameSize"),
		MaxInactivityDuration:             w.long("MaxInactivityDuration"),
		MaxInactivityDurationInitialDelay: w.long("MaxInactivityDurationInitalDelay"),
	}
}

func (w *WireFormatInfo) marshal(e *encoder) {
	if len(w.Magic) != len(magic) {
		e.fail("magic of %d bytes", len(w.Magic))
		return
	}
	e.raw(w.Magic)
	e.i32(w.Version)
	var props []byte
	if w.Properties != nil {
		var err error
		if props, err = appendPrimitiveMap(nil, w.Properties); err != nil {
			e.fail("%v", err)
		}
	}
	e.bytes(props)
}

// maxWireFormatProperties is ActiveMQ's MAX_PROPERTY_SIZE for this map.
const maxWireFormatProperties = 4096

func (w *WireFormatInfo) unmarshal(d *decoder) {
	w.Magic = bytes.Clone(d.take(len(magic)))
	w.Version = d.i32()
	if props := d.bytes(); props != nil && d.err == nil {
		m, err := decodePrimitiveMap(props, maxWireFormatProperties)
		if err != nil {
			d.fail("wire format properties: %v", err)
			return
		}
		w.Properties = m
	}
}

// Negotiate returns the format both sides use after exchanging WireFormatInfo, as
// ActiveMQ's OpenWireFormat.renegotiateWireFormat computes it: the lower version and frame
// limit, each boolean option on only if both sides enable it, the smaller cache; the
// inactivity durations are the smaller (0 disables monitoring). It fails when the peer's
// magic is wrong or its version is below MinVersion.
func Negotiate(ours, theirs *WireFormatInfo) (Format, error) {
	if !theirs.Valid() {
		return Format{}, fmt.Errorf("%w: bad magic %q", ErrVersion, theirs.Magic)
	}
	o, t := ours.Format(), theirs.Format()
	f := Format{
		Version:                           int(minPositive(int64(o.Version), int64(t.Version))),
		MaxFrameSize:                      minPositive(o.MaxFrameSize, t.MaxFrameSize),
		StackTrace:                        o.StackTrace && t.StackTrace,
		TCPNoDelay:                        o.TCPNoDelay && t.TCPNoDelay,
		Cache:                             o.Cache && t.Cache,
		TightEncoding:                     o.TightEncoding && t.TightEncoding,
		SizePrefixDisabled:                o.SizePrefixDisabled && t.SizePrefixDisabled,
		MaxInactivityDuration:             min(o.MaxInactivityDuration, t.MaxInactivityDuration),
		MaxInactivityDurationInitialDelay: min(o.MaxInactivityDurationInitialDelay, t.MaxInactivityDurationInitialDelay),
	}
	if f.Version < MinVersion {
		return Format{}, fmt.Errorf("%w: version %d below %d", ErrVersion, f.Version, MinVersion)
	}
	if f.Version > Version {
		f.Version = Version
	}
	if f.Cache {
		f.CacheSize = min(o.CacheSize, t.CacheSize)
		if f.CacheSize <= 0 {
			f.CacheSize = defaultCacheSize
		}
		if f.CacheSize > math.MaxInt16 {
			f.CacheSize = math.MaxInt16
		}
	}
	return f, nil
}

// minPositive is ActiveMQ's min: the smaller of two values, ignoring one that is not
// positive.
func minPositive(a, b int64) int64 {
	if a < b && a > 0 || b <= 0 {
		return a
	}
	return b
}
