// Package stompcodec reads and writes STOMP 1.0, 1.1 and 1.2 frames on a byte stream.
//
// It is a leaf: frames in, frames out. It knows nothing about sessions, destinations or the
// broker, and it uses go-stomp's frame.Frame and frame.Header only as the in-memory
// representation of a frame.
//
// # Wire format
//
//	frame   = command EOL *( header EOL ) EOL *OCTET NUL *( EOL )
//	EOL     = [CR] LF
//	header  = name ":" value
//
// The rules the Reader implements:
//
//   - EOL is LF or CRLF in every version. A trailing CR is stripped from command and header
//     lines even in 1.0 and 1.1, where the spec allows only LF; ActiveMQ is lenient here too.
//   - A bare EOL where a command is expected is a heart-beat. Read consumes one and returns
//     (nil, nil) so the caller can refresh liveness. EOLs after a frame's NUL are heart-beats
//     in the same way.
//   - The command is the whole first line. It must not be empty. The Reader does not check it
//     against the list of STOMP commands; the session does that.
//   - A header line is split at its first ':'. Every entry is kept in wire order, so
//     frame.Header.Get returns the first occurrence, as the spec requires.
//   - Header decoding depends on the version (see Reader.SetVersion). 1.0: no unescaping, and
//     names and values are trimmed of surrounding whitespace and control bytes like Java's
//     String.trim, as ActiveMQ does in 1.0 mode only. 1.1: \n, \c and \\ are decoded. 1.2:
//     \r as well. Any other escape, including a lone trailing backslash, is a fatal
//     ErrUndefinedEscape. Headers of CONNECT, STOMP and CONNECTED frames are never
//     unescaped, as the spec exempts them from escaping. A Reader starts in 1.0, so the
//     headers of the CONNECT frame are trimmed, as in ActiveMQ; after it the Reader switches
//     to the negotiated version by itself.
//   - If content-length is present (first occurrence), it must be a non-negative decimal
//     integer; exactly that many body bytes are read, NULs included, and the next byte must be
//     NUL. Without content-length the body runs to the first NUL. Unlike ActiveMQ, the header
//     is honoured on every frame, not only on SEND and MESSAGE.
//
// The Writer encodes with the mirror rules: 1.0 has no escapes, so LF and CR in names and
// values are replaced by spaces and the frame cannot be broken; 1.1 escapes \, LF and ':'; 1.2
// also escapes CR. 1.1 has no escape for CR, so a CR passes through unchanged except at the end
// of a value, where a reader would take it for part of the EOL; there it becomes a space.
// CONNECT, STOMP and CONNECTED frames are never escaped and use the 1.0 replacement rule. The
// Writer adds no content-length of its own: the caller decides, and must add one when a body
// contains NUL. Every frame ends with NUL and LF, as ActiveMQ writes them on a stream (some
// clients expect that LF; see Writer.SetFrameEOL, which a WebSocket connection uses to end
// frames at the NUL as ActiveMQ does there).
//
// # Limits
//
// Limits caps the command line (1024 bytes), one header line (10240 bytes), the number of
// headers (1000) and the whole frame (10 MiB: command line, header lines with their EOLs, and
// body). The defaults follow ActiveMQ's StompWireFormat, except that ActiveMQ allows 100 MiB
// of data. Every limit is checked before the memory it guards is allocated: a
// content-length larger than the remaining budget fails before the body buffer exists, a body
// without content-length grows gradually and fails as soon as it passes the limit, and an
// over-long line is detected while holding at most the limit plus one read buffer.
//
// # Why not go-stomp's Reader and Writer
//
// go-stomp's frame.Reader allocates whatever content-length claims before checking any limit,
// so one header line can make the broker allocate gigabytes, and it accepts undefined escapes
// that the spec says are fatal. Its frame.Writer escapes identically in every version, escapes
// CONNECTED (which the spec forbids), and flushes after every frame, which defeats the batching
// of many MESSAGE frames into one write that a busy broker relies on. This package writes into
// a buffer that is flushed only when the caller says so, and has a streaming API that writes a
// MESSAGE without allocating a frame.Frame.
//
// # Performance
//
// Lines are read with bufio.Reader.ReadSlice, common command and header names are interned,
// all header values of a frame share one string allocation (when the header block is small,
// see Reader.Read), and a body with content-length is allocated once at its exact size.
package stompcodec
