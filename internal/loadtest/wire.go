package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
)

const (
	// wireReadBuffer is the read buffer of a raw connection.
	wireReadBuffer = 64 << 10

	// wireMaxOut is how many encoded bytes may wait for the flusher before
	// put blocks: about 170 bench SENDs of 256 B, as deep as go-stomp's
	// producer channel, so that "sent" still means "about to be written".
	wireMaxOut = 64 << 10

	// wireReceipts is the capacity of the channel of receipt-ids read; a
	// connection waits for at most a couple at a time.
	wireReceipts = 16

	// errorBodyMax is how much of an ERROR frame's body is kept for the
	// error when the frame has no message header.
	errorBodyMax = 512
)

// Kinds of frame a raw connection reads.
type frameKind uint8

const (
	kindOther frameKind = iota
	kindMessage
	kindReceipt
	kindError
	kindConnected
)

// inFrame is what a raw connection keeps of the frame it read last: its kind
// and the few headers the load tool uses, first occurrence of each, as they
// came on the wire (escaped: the bench values need no escaping, and ack and
// message ids go back to the broker exactly as they came). The slices are
// valid until the next read.
type inFrame struct {
	kind frameKind
	// bench headers of a MESSAGE
	run, p, seq, ts []byte
	// what an ACK names: ack (1.2), message-id and subscription (1.0, 1.1)
	ack, messageID, subscription []byte
	receiptID, message, version  []byte
	body                         []byte // the start of an ERROR frame's body
}

// wire is a STOMP connection the load tool drives frame by frame, its
// default client (Options.Client "raw"). Frames are encoded straight into an
// outgoing buffer that one flusher goroutine writes whenever it holds
// anything, so a pipelining producer's SENDs leave in few large writes, and
// MESSAGE frames are parsed in place, keeping only the headers the bench
// uses. go-stomp's client writes every frame with a system call of its own
// and passes every frame through two goroutines and a fully decoded header
// list; on a two-core machine its share of the CPU caps the rate a run can
// show.
//
// Frames are read by one goroutine: a consumer's own, or pump for the
// producers and the set-up connections, which subscribe to nothing.
// RECEIPT frames are handed to await, an ERROR frame or a failed read ends
// the connection for every waiter.
type wire struct {
	nc      net.Conn
	br      *bufio.Reader
	version string // negotiated: "1.0", "1.1" or "1.2"
	timeout time.Duration

	in      inFrame
	scratch []byte // backing store of in's header values

	mu       sync.Mutex
	hasData  *sync.Cond
	hasSpace *sync.Cond
	out      []byte // encoded frames waiting for the flusher
	werr     error  // sticky: the connection cannot be written any more

	receipts chan string
	nextID   int // receipt ids; owned by whoever sends
	dead     chan struct{}
	deadOnce sync.Once
	rerr     error // why the read side ended; set before dead closes
	stop     func() bool
}

// errWireClosed fails a put on a connection the load tool closed.
var errWireClosed = errors.New("connection closed")

// dialWire connects as clientID (when not empty; see retryTaken). ctx
// bounds the TCP connect and the CONNECT/CONNECTED exchange; timeout bounds
// every receipt wait after it.
func dialWire(ctx context.Context, o Options, clientID string, timeout time.Duration) (*wire, error) {
	return retryTaken(ctx, func() (*wire, error) { return dialWireOnce(ctx, o, clientID, timeout) })
}

func dialWireOnce(ctx context.Context, o Options, clientID string, timeout time.Duration) (*wire, error) {
	nc, host, err := dialTCP(ctx, o.Addr)
	if err != nil {
		return nil, err
	}
	w := &wire{
		nc:       nc,
		br:       bufio.NewReaderSize(nc, wireReadBuffer),
		version:  "1.0",
		timeout:  timeout,
		scratch:  make([]byte, 0, 4096),
		receipts: make(chan string, wireReceipts),
		dead:     make(chan struct{}),
	}
	w.hasData, w.hasSpace = sync.NewCond(&w.mu), sync.NewCond(&w.mu)
	// A broker that accepts the socket but never answers CONNECT would
	// hold the exchange forever; closing the socket ends it.
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()

	if _, err := nc.Write(appendConnect(make([]byte, 0, 256), o, host, clientID)); err != nil {
		nc.Close()
		return nil, connectErr(ctx, err)
	}
	kind, err := w.readFrame()
	switch {
	case err != nil:
	case kind == kindError:
		err = w.errorFrame()
	case kind != kindConnected:
		err = errors.New("unexpected frame in answer to CONNECT")
	}
	if err != nil {
		nc.Close()
		return nil, connectErr(ctx, err)
	}
	if v := string(w.in.version); v == "1.1" || v == "1.2" {
		w.version = v
	}
	go w.flush()
	return w, nil
}

// appendConnect appends the CONNECT frame of o to host, as clientID when not
// empty: the versions o offers, no heart-beats, login and passcode when
// either is set.
func appendConnect(b []byte, o Options, host, clientID string) []byte {
	versions := "1.0,1.1,1.2"
	if o.Version != "" {
		versions = o.Version
	}
	// CONNECT headers are never escaped.
	b = append(b, "CONNECT\naccept-version:"...)
	b = append(b, versions...)
	b = appendRawHeader(b, "host", host)
	b = appendRawHeader(b, "heart-beat", "0,0")
	if o.Login != "" || o.Passcode != "" {
		b = appendRawHeader(b, "login", o.Login)
		b = appendRawHeader(b, "passcode", o.Passcode)
	}
	if clientID != "" {
		b = appendRawHeader(b, "client-id", clientID)
	}
	return append(b, "\n\n\x00"...)
}

func connectErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return err
}

// put appends one frame, encoded by add, to the outgoing buffer and wakes
// the flusher. It waits while wireMaxOut bytes wait already, and fails once
// the connection can no longer be written.
func (w *wire) put(add func([]byte) []byte) error {
	w.mu.Lock()
	for len(w.out) >= wireMaxOut && w.werr == nil {
		w.hasSpace.Wait()
	}
	if err := w.werr; err != nil {
		w.mu.Unlock()
		return err
	}
	w.out = add(w.out)
	w.mu.Unlock()
	w.hasData.Signal()
	return nil
}

// flush writes what put queued, everything queued meanwhile in one write,
// until a write fails or the connection is closed.
func (w *wire) flush() {
	var spare []byte
	for {
		w.mu.Lock()
		for len(w.out) == 0 && w.werr == nil {
			w.hasData.Wait()
		}
		if w.werr != nil {
			w.mu.Unlock()
			return
		}
		buf := w.out
		w.out = spare[:0]
		w.mu.Unlock()
		w.hasSpace.Broadcast()
		_, err := w.nc.Write(buf)
		spare = buf
		if err != nil {
			w.stopWriting(err)
			return
		}
	}
}

// stopWriting makes every later put fail with err (unless one failed
// already) and wakes everyone waiting on the outgoing side.
func (w *wire) stopWriting(err error) {
	w.mu.Lock()
	if w.werr == nil {
		w.werr = err
	}
	w.mu.Unlock()
	w.hasData.Broadcast()
	w.hasSpace.Broadcast()
}

// close closes the connection at once: nothing queued is written.
func (w *wire) close() {
	w.stopWriting(errWireClosed)
	w.nc.Close()
}

// fail ends the connection for its users after a failed read or an ERROR frame: every
// receipt waiter gets err, and every later put fails.
func (w *wire) fail(err error) {
	w.deadOnce.Do(func() {
		w.rerr = err
		close(w.dead)
	})
	w.stopWriting(err)
}

// pump reads frames until the connection ends, for a connection that
// subscribes to nothing: it hands receipts over and ends at an ERROR frame.
func (w *wire) pump() {
	for {
		kind, err := w.readFrame()
		if err == nil {
			err = w.control(kind)
		}
		if err != nil {
			w.fail(err)
			return
		}
	}
}

// control handles a frame other than a MESSAGE: a RECEIPT goes to the
// receipt waiters, an ERROR becomes the returned error, anything else is
// ignored.
func (w *wire) control(kind frameKind) error {
	switch kind {
	case kindReceipt:
		select {
		case w.receipts <- string(w.in.receiptID):
		default: // nobody asked for so many
		}
	case kindError:
		return w.errorFrame()
	}
	return nil
}

// errorFrame turns the ERROR frame just read into an error with its message.
func (w *wire) errorFrame() error {
	return fmt.Errorf("ERROR: %s", w.errorMessage())
}

// errorMessage is the message header of the ERROR frame just read, or the
// start of its body when it has none.
func (w *wire) errorMessage() string {
	msg := unescapeValue(w.in.message, w.version)
	if msg == "" {
		msg = string(bytes.TrimSpace(w.in.body))
	}
	return msg
}

// newReceipt returns a fresh receipt id.
func (w *wire) newReceipt() string {
	w.nextID++
	return "bench-" + strconv.Itoa(w.nextID)
}

// await waits for the RECEIPT of id. It fails when the connection ended
// first (with the broker's ERROR message if it sent one), or after the
// connection's timeout.
func (w *wire) await(id string) error {
	t := time.NewTimer(w.timeout)
	defer t.Stop()
	for {
		select {
		case got := <-w.receipts:
			if got == id {
				return nil
			}
		case <-w.dead:
			// The broker may have answered and closed at once (DISCONNECT).
			for {
				select {
				case got := <-w.receipts:
					if got == id {
						return nil
					}
				default:
					return w.rerr
				}
			}
		case <-t.C:
			return fmt.Errorf("no RECEIPT %s within %s", id, w.timeout)
		}
	}
}

// request sends a frame with a receipt and waits for it. The frame's header
// values are escaped for the negotiated version.
func (w *wire) request(f *frame.Frame) error {
	id := w.newReceipt()
	err := w.put(func(b []byte) []byte {
		b = append(b, f.Command...)
		for i := range f.Header.Len() {
			k, v := f.Header.GetAt(i)
			b = w.appendHeader(b, k, v)
		}
		b = w.appendHeader(b, frame.Receipt, id)
		return append(b, "\n\n\x00"...)
	})
	if err == nil {
		err = w.await(id)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", f.Command, err)
	}
	return nil
}

// disconnect says DISCONNECT, waits for its receipt, and closes the
// connection.
func (w *wire) disconnect() error {
	defer w.close()
	return w.request(frame.New(frame.DISCONNECT))
}

// appendHeader appends "\nname:value" with name and value escaped for the
// negotiated version (1.0 has no escapes: line breaks become spaces).
func (w *wire) appendHeader(b []byte, name, value string) []byte {
	b = append(b, '\n')
	b = appendEscaped(b, name, w.version)
	b = append(b, ':')
	return appendEscaped(b, value, w.version)
}

// appendRawHeader appends "\nname:value" as it is.
func appendRawHeader(b []byte, name, value string) []byte {
	b = append(b, '\n')
	b = append(b, name...)
	b = append(b, ':')
	return append(b, value...)
}

func appendEscaped(b []byte, s, version string) []byte {
	for i := range len(s) {
		c := s[i]
		switch {
		case version == "1.0" && (c == '\n' || c == '\r'):
			b = append(b, ' ')
		case version == "1.0":
			b = append(b, c)
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == ':':
			b = append(b, `\c`...)
		case c == '\r' && version == "1.2":
			b = append(b, `\r`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// unescapeValue decodes a header value read on the wire; an undefined escape
// is kept as it is (the value only goes into an error message).
func unescapeValue(v []byte, version string) string {
	if version == "1.0" || bytes.IndexByte(v, '\\') < 0 {
		return string(v)
	}
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' || i+1 == len(v) {
			out = append(out, v[i])
			continue
		}
		i++
		switch v[i] {
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 'c':
			out = append(out, ':')
		case '\\':
			out = append(out, '\\')
		default:
			out = append(out, '\\', v[i])
		}
	}
	return string(out)
}

// readFrame reads the next frame, skipping heart-beats, into w.in and
// returns its kind.
func (w *wire) readFrame() (frameKind, error) {
	w.in = inFrame{}
	w.scratch = w.scratch[:0]
	var line []byte
	var err error
	for len(line) == 0 {
		if line, err = w.readLine(); err != nil {
			return 0, err
		}
	}
	switch string(line) {
	case "MESSAGE":
		w.in.kind = kindMessage
	case "RECEIPT":
		w.in.kind = kindReceipt
	case "ERROR":
		w.in.kind = kindError
	case "CONNECTED":
		w.in.kind = kindConnected
	}
	length := -1
	for {
		if line, err = w.readLine(); err != nil {
			return 0, err
		}
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return 0, fmt.Errorf("header line without a colon: %.64q", line)
		}
		name, value := line[:colon], line[colon+1:]
		switch string(name) {
		case "content-length":
			if length < 0 {
				n, err := strconv.Atoi(string(value))
				if err != nil || n < 0 {
					return 0, fmt.Errorf("bad content-length %.32q", value)
				}
				length = n
			}
		case hdrRun:
			w.keep(&w.in.run, value)
		case hdrP:
			w.keep(&w.in.p, value)
		case hdrSeq:
			w.keep(&w.in.seq, value)
		case hdrTS:
			w.keep(&w.in.ts, value)
		case "ack":
			w.keep(&w.in.ack, value)
		case "message-id":
			w.keep(&w.in.messageID, value)
		case "subscription":
			w.keep(&w.in.subscription, value)
		case "receipt-id":
			w.keep(&w.in.receiptID, value)
		case "message":
			w.keep(&w.in.message, value)
		case "version":
			w.keep(&w.in.version, value)
		}
	}
	return w.in.kind, w.skipBody(length)
}

// keep copies a header value into the scratch buffer unless an earlier
// occurrence of the header was kept.
func (w *wire) keep(dst *[]byte, v []byte) {
	if *dst != nil {
		return
	}
	start := len(w.scratch)
	w.scratch = append(w.scratch, v...)
	*dst = w.scratch[start:len(w.scratch):len(w.scratch)]
}

// readLine returns the next line without its EOL (LF or CRLF).
func (w *wire) readLine() ([]byte, error) {
	line, err := w.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = w.br.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil {
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// skipBody reads past the body and its NUL: length bytes, or up to the first
// NUL when length is negative. The start of an ERROR frame's body is kept.
func (w *wire) skipBody(length int) error {
	if length >= 0 {
		if w.in.kind == kindError {
			n := min(length, errorBodyMax)
			b, err := w.br.Peek(n)
			if err != nil {
				return err
			}
			w.keep(&w.in.body, b)
		}
		if _, err := w.br.Discard(length); err != nil {
			return err
		}
		nul, err := w.br.ReadByte()
		if err != nil {
			return err
		}
		if nul != 0 {
			return fmt.Errorf("no NUL after a body of content-length %d", length)
		}
		return nil
	}
	for {
		chunk, err := w.br.ReadSlice(0)
		if err == nil {
			chunk = chunk[:len(chunk)-1] // the NUL
		}
		if w.in.kind == kindError && len(w.in.body) < errorBodyMax {
			w.in.body = append(w.in.body, chunk[:min(len(chunk), errorBodyMax-len(w.in.body))]...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}
