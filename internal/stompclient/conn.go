// Package stompclient is the STOMP client of the command-line tools (broker send,
// consume, browse): it dials a URL (stomp://, stomp+ssl://, ws://, wss://), connects,
// sends with pipelined receipts, subscribes, browses and acknowledges, and reports an
// ERROR frame the broker sends at any point as a *BrokerError carrying its message.
//
// It uses go-stomp's frame types and the broker's own codec (which bounds what it reads)
// rather than go-stomp's Conn, which holds its lock while it waits for a receipt (one
// round trip, and for a persistent message one store sync, per message sent), drops the
// ERROR frame that answers a SEND without a receipt (it closes the connection and the
// message is lost), and writes a frame over 4 KiB in several writes (several WebSocket
// messages, which ActiveMQ's WebSocket transport cannot read). Here every frame leaves in
// one write: over WebSocket, one message per frame, text when it is valid UTF-8 and
// binary otherwise.
//
// A Conn is used by one goroutine; only Close may be called from another (to interrupt
// a blocked operation).
package stompclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/go-stomp/stomp/v3/frame"

	"github.com/activemq-go/broker/internal/stompcodec"
)

// Defaults of Options.
const (
	DefaultTimeout      = 15 * time.Second
	DefaultMaxFrameSize = 64 << 20
)

// inCapacity is how many frames the reader hands over before it waits: more than the
// receipts a sender keeps outstanding (MaxOutstanding), so the reader never waits for a
// sender that waits for the broker.
const inCapacity = 1024

// MaxOutstanding is the most receipts a caller should have outstanding at once; more
// could fill the read queue while the caller is blocked writing.
const MaxOutstanding = inCapacity / 2

// errorWait bounds how long a failed write waits for the read side to say why (the
// ERROR frame that came before the broker closed the connection).
const errorWait = 2 * time.Second

// Options are how Dial connects.
type Options struct {
	// TLS configures stomp+ssl and wss connections; nil verifies the broker against
	// the system's roots. Its ServerName defaults to the URL's host.
	TLS *tls.Config
	// ClientID is sent as CONNECT's client-id (durable topic subscriptions need one).
	ClientID string
	// Timeout bounds connecting: the dial, the TLS and WebSocket handshakes and the
	// CONNECT/CONNECTED exchange. Default DefaultTimeout.
	Timeout time.Duration
	// MaxFrameSize is the largest frame read. Default DefaultMaxFrameSize.
	MaxFrameSize int64
}

// Conn is a connected STOMP session.
type Conn struct {
	u       *URL
	nc      net.Conn
	r       *stompcodec.Reader
	buf     bytes.Buffer
	w       *stompcodec.Writer // encodes into buf
	version string
	server  string

	in   chan *frame.Frame // frames read, in order; closed when the read side ends
	dead chan struct{}     // closed when the read side ended, after rerr is set
	rerr error
	quit chan struct{} // closed by Close
	once sync.Once

	held        []*frame.Frame // MESSAGE frames read while waiting for a receipt
	outstanding map[string]struct{}
	nextID      uint64
}

// Dial connects to u and completes CONNECT. Errors name the URL (without its password);
// a refused CONNECT is a *BrokerError.
func Dial(ctx context.Context, u *URL, o Options) (*Conn, error) {
	c, err := dial(ctx, u, o)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", u, err)
	}
	return c, nil
}

func dial(ctx context.Context, u *URL, o Options) (*Conn, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxFrameSize <= 0 {
		o.MaxFrameSize = DefaultMaxFrameSize
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	nc, err := dialTransport(ctx, u, o)
	if err != nil {
		return nil, err
	}
	// A broker that accepts the socket but never answers CONNECT would hold the
	// exchange forever; closing the socket ends it.
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
	c, err := handshake(nc, u, o)
	if !stop() {
		if err == nil {
			_ = nc.Close()
		}
		return nil, fmt.Errorf("no CONNECTED: %w", ctx.Err())
	}
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	go c.readLoop()
	return c, nil
}

func handshake(nc net.Conn, u *URL, o Options) (*Conn, error) {
	lim := stompcodec.DefaultLimits()
	lim.MaxFrameSize = o.MaxFrameSize
	c := &Conn{
		u:           u,
		nc:          nc,
		r:           stompcodec.NewReader(nc, lim),
		in:          make(chan *frame.Frame, inCapacity),
		dead:        make(chan struct{}),
		quit:        make(chan struct{}),
		outstanding: map[string]struct{}{},
	}
	c.w = stompcodec.NewWriter(&c.buf, 4096)
	if u.WebSocket() {
		c.w.SetFrameEOL(false) // one frame a message, ending at its NUL, as ActiveMQ's
	}
	connect := frame.New(frame.CONNECT,
		frame.AcceptVersion, "1.0,1.1,1.2",
		frame.Host, u.Host,
		frame.HeartBeat, "0,0")
	if u.HasLogin {
		connect.Header.Add(frame.Login, u.Login)
		connect.Header.Add(frame.Passcode, u.Passcode)
	}
	if o.ClientID != "" {
		connect.Header.Add("client-id", o.ClientID)
	}
	if err := c.write(connect); err != nil {
		return nil, err
	}
	f, err := c.readDirect()
	if err != nil {
		return nil, err
	}
	switch f.Command {
	case frame.CONNECTED:
	case frame.ERROR:
		return nil, brokerError(f)
	default:
		return nil, fmt.Errorf("%w: %s in answer to CONNECT", ErrProtocol, f.Command)
	}
	c.version = stompcodec.V10
	if v := f.Header.Get(frame.Version); v == stompcodec.V11 || v == stompcodec.V12 {
		c.version = v
	}
	c.server = f.Header.Get(frame.Server)
	c.r.SetVersion(c.version)
	c.w.SetVersion(c.version)
	return c, nil
}

// readDirect reads the next frame, skipping heart-beats, before the read loop runs.
func (c *Conn) readDirect() (*frame.Frame, error) {
	for {
		f, err := c.r.Read()
		if err != nil {
			return nil, readError(err)
		}
		if f != nil {
			return f, nil
		}
	}
}

// Version is the negotiated STOMP version: "1.0", "1.1" or "1.2".
func (c *Conn) Version() string { return c.version }

// Server is the server header of CONNECTED.
func (c *Conn) Server() string { return c.server }

// readLoop hands every frame read to in, until the connection ends or an ERROR frame
// arrives; rerr says which.
func (c *Conn) readLoop() {
	defer close(c.in)
	defer close(c.dead)
	for {
		f, err := c.r.Read()
		switch {
		case err != nil:
			select {
			case <-c.quit:
				c.rerr = ErrClosed
			default:
				c.rerr = readError(err)
			}
			return
		case f == nil: // heart-beat
			continue
		case f.Command == frame.ERROR:
			c.rerr = brokerError(f)
			return
		}
		select {
		case c.in <- f:
		case <-c.quit:
			c.rerr = ErrClosed
			return
		}
	}
}

func readError(err error) error {
	var fe *stompcodec.FrameError
	switch {
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w by the broker", ErrClosed)
	case errors.As(err, &fe):
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	return fmt.Errorf("%w: %w", ErrClosed, err)
}

// write encodes fs and writes them in one write.
func (c *Conn) write(fs ...*frame.Frame) error {
	c.buf.Reset()
	for _, f := range fs {
		if err := c.w.WriteFrame(f); err != nil {
			return err
		}
	}
	if err := c.w.Flush(); err != nil {
		return err
	}
	if _, err := c.nc.Write(c.buf.Bytes()); err != nil {
		return c.writeFailed(err)
	}
	return nil
}

// writeFailed returns why the read side ended, if it ends soon after a failed write: a
// broker closes the connection after an ERROR frame, which explains the failure better
// than the write's broken pipe.
func (c *Conn) writeFailed(err error) error {
	t := time.NewTimer(errorWait)
	defer t.Stop()
	select {
	case <-c.dead:
		var be *BrokerError
		if errors.As(c.rerr, &be) {
			return be
		}
	case <-c.quit:
	case <-t.C:
	}
	return fmt.Errorf("%w: %w", ErrClosed, err)
}

// Err returns why the connection ended (a *BrokerError for an ERROR frame), or nil while
// it lives. It does not wait.
func (c *Conn) Err() error {
	select {
	case <-c.dead:
		return c.rerr
	default:
		return nil
	}
}

// next returns the next frame read.
func (c *Conn) next(ctx context.Context) (*frame.Frame, error) {
	select {
	case f, ok := <-c.in:
		if !ok {
			return nil, c.rerr
		}
		return f, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Conn) receiptID() string {
	c.nextID++
	return strconv.FormatUint(c.nextID, 10)
}

// Send writes a SEND of body to dest with the headers h (nil for none; content-length
// and receipt are the client's own). With receipt it asks for a receipt and returns its
// id: AwaitReceipt reports its arrival. It does not wait for the broker.
func (c *Conn) Send(dest string, h *frame.Header, body []byte, receipt bool) (string, error) {
	f := frame.New(frame.SEND, frame.Destination, dest)
	if h != nil {
		for i := range h.Len() {
			k, v := h.GetAt(i)
			f.Header.Add(k, v)
		}
	}
	f.Header.Set(frame.ContentLength, strconv.Itoa(len(body)))
	f.Body = body
	var id string
	if receipt {
		id = c.receiptID()
		f.Header.Set(frame.Receipt, id)
		c.outstanding[id] = struct{}{}
	}
	if err := c.write(f); err != nil {
		delete(c.outstanding, id)
		return "", err
	}
	return id, nil
}

// Outstanding is the number of receipts asked for and not yet received.
func (c *Conn) Outstanding() int { return len(c.outstanding) }

// AwaitReceipt waits for the next RECEIPT and returns its receipt-id. MESSAGE frames
// read meanwhile are kept for Receive.
func (c *Conn) AwaitReceipt(ctx context.Context) (string, error) {
	for {
		f, err := c.next(ctx)
		if err != nil {
			return "", err
		}
		switch f.Command {
		case frame.RECEIPT:
			id := f.Header.Get(frame.ReceiptId)
			delete(c.outstanding, id)
			return id, nil
		case frame.MESSAGE:
			c.held = append(c.held, f)
		}
	}
}

// awaitReceiptOf waits for the receipt id.
func (c *Conn) awaitReceiptOf(ctx context.Context, id string) error {
	for {
		got, err := c.AwaitReceipt(ctx)
		if err != nil || got == id {
			return err
		}
	}
}

// Subscription is what Subscribe asks for.
type Subscription struct {
	ID          string // the subscription id; default "1"
	Destination string
	Ack         string // auto (the default), client or client-individual
	Selector    string // a JMS selector
	// Prefetch is sent as activemq.prefetchSize when positive: how many messages the
	// broker may dispatch before they are acknowledged.
	Prefetch int
	// DurableName makes a durable topic subscription (activemq.subscriptionName); the
	// connection needs a client-id (Options.ClientID).
	DurableName string
	// Browser subscribes with browser:true: the broker sends what waits on the queue,
	// then a MESSAGE with the header browser:end, and removes nothing.
	Browser bool
	// Headers are added to the SUBSCRIBE (x-stream-offset, consumer-group, ...).
	Headers *frame.Header
}

// Subscribe sends SUBSCRIBE and waits for its receipt.
func (c *Conn) Subscribe(ctx context.Context, s Subscription) error {
	if s.ID == "" {
		s.ID = "1"
	}
	f := frame.New(frame.SUBSCRIBE, frame.Id, s.ID, frame.Destination, s.Destination)
	if s.Ack != "" {
		f.Header.Add(frame.Ack, s.Ack)
	}
	if s.Selector != "" {
		f.Header.Add("selector", s.Selector)
	}
	if s.Prefetch > 0 {
		f.Header.Add("activemq.prefetchSize", strconv.Itoa(s.Prefetch))
	}
	if s.DurableName != "" {
		f.Header.Add("activemq.subscriptionName", s.DurableName)
	}
	if s.Browser {
		f.Header.Add("browser", "true")
	}
	if s.Headers != nil {
		for i := range s.Headers.Len() {
			k, v := s.Headers.GetAt(i)
			f.Header.Add(k, v)
		}
	}
	id := c.receiptID()
	f.Header.Add(frame.Receipt, id)
	if err := c.write(f); err != nil {
		return err
	}
	return c.awaitReceiptOf(ctx, id)
}

// Receive returns the next MESSAGE frame.
func (c *Conn) Receive(ctx context.Context) (*frame.Frame, error) {
	if len(c.held) > 0 {
		f := c.held[0]
		c.held[0] = nil
		c.held = c.held[1:]
		return f, nil
	}
	for {
		f, err := c.next(ctx)
		if err != nil {
			return nil, err
		}
		switch f.Command {
		case frame.MESSAGE:
			return f, nil
		case frame.RECEIPT:
			delete(c.outstanding, f.Header.Get(frame.ReceiptId))
		}
	}
}

// Ack acknowledges ms, MESSAGEs of a client or client-individual subscription, in one
// write.
func (c *Conn) Ack(ms ...*frame.Frame) error {
	if len(ms) == 0 {
		return nil
	}
	fs := make([]*frame.Frame, len(ms))
	for i, m := range ms {
		fs[i] = c.ackFrame(m)
	}
	return c.write(fs...)
}

// ackFrame is the ACK of m as the negotiated version says: by its ack header in 1.2, by
// message-id and subscription before.
func (c *Conn) ackFrame(m *frame.Frame) *frame.Frame {
	switch c.version {
	case stompcodec.V12:
		return frame.New(frame.ACK, frame.Id, m.Header.Get(frame.Ack))
	case stompcodec.V11:
		return frame.New(frame.ACK, frame.MessageId, m.Header.Get(frame.MessageId), frame.Subscription, m.Header.Get(frame.Subscription))
	}
	return frame.New(frame.ACK, frame.MessageId, m.Header.Get(frame.MessageId))
}

// Disconnect sends DISCONNECT with a receipt, waits for it and closes the connection.
// The broker handles frames in order, so the receipt also says that everything sent
// before was handled; an ERROR frame that came first is returned.
//
// The messages acks, if any, are acknowledged first, in the same write as the
// DISCONNECT, so that the broker has little time to dispatch what the acknowledgements
// make room for before it reads the DISCONNECT (what it does dispatch goes back to the
// queue flagged redelivered).
func (c *Conn) Disconnect(ctx context.Context, acks ...*frame.Frame) error {
	defer c.Close()
	if err := c.Err(); err != nil {
		return err
	}
	id := c.receiptID()
	fs := make([]*frame.Frame, 0, len(acks)+1)
	for _, m := range acks {
		fs = append(fs, c.ackFrame(m))
	}
	if err := c.write(append(fs, frame.New(frame.DISCONNECT, frame.Receipt, id))...); err != nil {
		return err
	}
	return c.awaitReceiptOf(ctx, id)
}

// Close closes the connection at once. It may be called from any goroutine, more than
// once.
func (c *Conn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.quit)
		err = c.nc.Close()
	})
	return err
}
