// Package stomp is the STOMP 1.0/1.1/1.2 session: it turns client frames into calls on a
// broker.Conn and writes MESSAGE, RECEIPT and ERROR frames back. The frame codec is the
// leaf internal/stompcodec (the client tools use it too); listening and connection
// limits are in package transport.
//
// Each connection has two goroutines: a reader that only parses frames (with the limits
// enforced by stompcodec.Reader), and the session's owner, which handles frames, writes
// everything, and is the only goroutine that touches the session's state.
//
// Errors follow ActiveMQ (see the README): problems that break the protocol (a malformed
// or oversized frame, an unknown command, a frame before CONNECT, a failed CONNECT, a
// missed heart-beat) get an ERROR frame and the connection is closed; recoverable ones
// (an unknown ack id, subscription or transaction, a missing destination) get an ERROR
// with the receipt-id if one was asked and the connection stays open.
package stomp

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-stomp/stomp/v3/frame"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/internal/stompcodec"
)

// ServerName is sent in CONNECTED's server header.
const ServerName = "activemq-go/0.1"

// Config holds a connector's per-connection settings.
type Config struct {
	Limits stompcodec.Limits
	// MaxFrameSizeBeforeLogin bounds the frames read until a CONNECT succeeds
	// (default DefaultMaxFrameSizeBeforeLogin, never more than Limits.MaxFrameSize):
	// a client that has not logged in cannot make the broker hold a big frame.
	MaxFrameSizeBeforeLogin int64
	// PreLoginLog tells whether the log line of a frame refused for
	// MaxFrameSizeBeforeLogin may go out now, and how many were held back (the
	// connector's loglimit.Limit.Allow: once a minute); nil lets every one out.
	PreLoginLog func(now time.Time) (ok bool, heldBack int)
	// LoggedIn, when set, is called once the connection's CONNECT has succeeded.
	LoggedIn func()

	ConnectTimeout   time.Duration    // time allowed to send CONNECT; 0: 30s, negative: no limit
	HeartBeatGrace   float64          // read timeout = client's beat interval × this; default 1.5
	DefaultHeartBeat [2]time.Duration // used when CONNECT has no heart-beat header
	MinHeartBeat     time.Duration    // floor for both directions; default 100ms
	WriteTimeout     time.Duration    // a client that takes no data for this long is dropped; default 60s
	// NoFrameEOL ends frames at their NUL, without the LF that ActiveMQ writes after it on
	// a stream: for WebSocket, where ActiveMQ sends each frame as a message ending at the
	// NUL.
	NoFrameEOL bool
	// Protocol is what the broker's metrics count the connections under (STOMP over
	// WebSocket or not).
	Protocol broker.Protocol
	Logger   *slog.Logger
	// Connector names the transport connector, shown to operators with each
	// connection.
	Connector string
}

// DefaultMaxFrameSizeBeforeLogin is Config.MaxFrameSizeBeforeLogin's default: room for
// a CONNECT with a long login and passcode (a token), far from the 10 MiB a frame may
// have once the client has logged in.
const DefaultMaxFrameSizeBeforeLogin = 16 << 10

// logEvery lets every log line out.
func logEvery(time.Time) (bool, int) { return true, 0 }

func (c Config) withDefaults() Config {
	if c.Limits.MaxFrameSize <= 0 {
		c.Limits.MaxFrameSize = stompcodec.DefaultLimits().MaxFrameSize
	}
	if c.MaxFrameSizeBeforeLogin <= 0 {
		c.MaxFrameSizeBeforeLogin = DefaultMaxFrameSizeBeforeLogin
	}
	c.MaxFrameSizeBeforeLogin = min(c.MaxFrameSizeBeforeLogin, c.Limits.MaxFrameSize)
	if c.PreLoginLog == nil {
		c.PreLoginLog = logEvery
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 30 * time.Second
	}
	if c.HeartBeatGrace < 1 {
		c.HeartBeatGrace = 1.5
	}
	if c.MinHeartBeat <= 0 {
		c.MinHeartBeat = 100 * time.Millisecond
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 60 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// maxInFlight bounds the frames of one connection whose outcome is still awaited
// (persistent SENDs in the store's group commit, receipts queued behind them).
const maxInFlight = 4096

// lingerTime is how long a connection that got a fatal ERROR is kept half-open so the
// client reads the ERROR before the socket goes away (STOMP spec: connection lingering).
const lingerTime = time.Second

type session struct {
	cfg Config
	nc  net.Conn
	b   *broker.Broker
	log *slog.Logger

	r *stompcodec.Reader
	w *stompcodec.Writer

	conn    *broker.Conn    // nil until CONNECT
	sess    *broker.Session // the connection's one JMS session (STOMP has no others)
	version string

	frames      chan *frame.Frame
	readErr     chan error
	readTimeout atomic.Int64 // ns; 0 = none
	// deadlineMu orders the reader's deadline updates with shutdownSocket's final one:
	// once readDone is set the reader leaves the deadline alone, so it cannot undo the
	// deadline that ends it.
	deadlineMu sync.Mutex
	readDone   bool
	// connected is closed once CONNECT is handled, so the reader's next read uses the
	// negotiated heart-beat timeout rather than the CONNECT deadline.
	connected     chan struct{}
	connectedOnce sync.Once

	sendEvery  time.Duration // heart-beats to the client; 0 = none
	lastWrite  time.Time
	lastWDL    time.Time
	pending    []*completion // frames whose outcome is still to be written, in frame order
	holdForSub int           // SUBSCRIBE receipts not yet written: hold MESSAGEs until then
	deliveries []*broker.Delivery
	browsers   map[string]bool // ids of browse subscriptions (SUBSCRIBE browser:true)
	// sendDest and sendDests are the destination header of the last SEND and its
	// parsed names, kept for the next SEND to the same destination.
	sendDest  string
	sendDests []broker.Destination

	// A SEND held by producer flow control (flowcontrol.go), the frames read behind it,
	// and the held SEND being sent again.
	held       *heldSend
	behind     []*frame.Frame
	retrying   *heldSend
	heldLogged time.Time

	closing bool
	fatal   bool
	// refused is set when the broker refused the CONNECT (and counted it);
	// lastReadErr is the reader's error: both say how a connection that never
	// connected ended, for the metrics (countRejected).
	refused     bool
	lastReadErr error
}

// completion is the outcome of one client frame that is written in frame order: a
// RECEIPT, or an ERROR if it failed.
type completion struct {
	mu      sync.Mutex
	done    bool
	err     error
	receipt string
	sub     bool
}

// Serve runs one STOMP connection until the client leaves, a fatal error, or ctx ends.
// It closes nc.
func Serve(ctx context.Context, nc net.Conn, b *broker.Broker, cfg Config) {
	cfg = cfg.withDefaults()
	s := &session{
		cfg:       cfg,
		nc:        nc,
		b:         b,
		log:       cfg.Logger.With(slog.String("remote", nc.RemoteAddr().String())),
		r:         stompcodec.NewReader(nc, cfg.Limits),
		w:         stompcodec.NewWriter(nc, 0),
		version:   stompcodec.V10,
		frames:    make(chan *frame.Frame, 64),
		readErr:   make(chan error, 1),
		connected: make(chan struct{}),
	}
	s.w.SetFrameEOL(!cfg.NoFrameEOL)
	s.r.SetMaxFrameSize(cfg.MaxFrameSizeBeforeLogin, "maxFrameSizeBeforeLogin")
	if cfg.ConnectTimeout > 0 {
		s.readTimeout.Store(int64(cfg.ConnectTimeout))
	}
	go s.readLoop()
	s.run(ctx)
}

// setReadDeadline sets the reader's deadline unless shutdownSocket has set the last one.
func (s *session) setReadDeadline(t time.Time) {
	s.deadlineMu.Lock()
	if !s.readDone {
		_ = s.nc.SetReadDeadline(t)
	}
	s.deadlineMu.Unlock()
}

// readLoop only parses. It refreshes the read deadline at most every quarter of the
// timeout, so a connection costs no timer update per frame.
func (s *session) readLoop() {
	var lastSet time.Time
	var lastTimeout int64
	for {
		if to := s.readTimeout.Load(); to > 0 {
			now := time.Now()
			if to != lastTimeout || now.Sub(lastSet) > time.Duration(to)/4 {
				s.setReadDeadline(now.Add(time.Duration(to)))
				lastSet, lastTimeout = now, to
			}
		} else if lastTimeout != 0 {
			s.setReadDeadline(time.Time{})
			lastTimeout = 0
		}
		f, err := s.r.Read()
		if err != nil {
			s.readErr <- err
			close(s.frames)
			return
		}
		if f == nil {
			continue // heart-beat
		}
		s.frames <- f
		if f.Command == "CONNECT" || f.Command == "STOMP" {
			<-s.connected
		}
	}
}

func (s *session) run(ctx context.Context) {
	var hb <-chan time.Time
	var ticker *time.Ticker
	defer func() {
		s.connectedOnce.Do(func() { close(s.connected) })
		if ticker != nil {
			ticker.Stop()
		}
		if s.conn != nil {
			s.conn.Close()
		} else {
			s.countRejected(ctx)
		}
		s.shutdownSocket()
	}()
	frames := s.frames
	for !s.closing {
		var wake, kicked <-chan struct{}
		if s.conn != nil {
			wake, kicked = s.conn.Wake(), s.conn.Kicked()
		}
		// A producer pipelining persistent SENDs is held back (its frames are not read)
		// while too many of them wait for the store, so its backlog cannot grow without
		// bound; TCP passes the back-pressure on.
		// A SEND held for room stops the reading the same way once frames pile up
		// behind it.
		in := frames
		if !s.reading() {
			in = nil
		}
		retry, expire := s.heldWake()
		select {
		case f, ok := <-in:
			if !ok {
				frames = nil
				continue
			}
			s.accept(ctx, f)
			// Take what else has arrived, so replies go out in one write.
			for i := 0; i < 64 && !s.closing && s.reading(); i++ {
				select {
				case f, ok := <-frames:
					if !ok {
						frames = nil
						i = 64
						continue
					}
					s.accept(ctx, f)
				default:
					i = 64
				}
			}
		case <-retry:
			s.retryHeld(ctx)
		case <-expire:
			s.retryHeld(ctx)
		case err := <-s.readErr:
			s.readFailed(err)
		case <-wake:
		case <-hb:
			if time.Since(s.lastWrite) >= s.sendEvery {
				if err := s.w.WriteHeartBeat(); err != nil {
					return
				}
			}
		case <-kicked:
			s.fail(&broker.Error{Message: s.conn.KickReason(), Fatal: true}, "")
		case <-ctx.Done():
			s.fail(&broker.Error{Message: "broker is shutting down", Fatal: true}, "")
		}
		if ticker == nil && s.sendEvery > 0 {
			ticker = time.NewTicker(s.sendEvery / 2)
			hb = ticker.C
		}
		if err := s.pump(); err != nil {
			s.writeFailed(err)
			return
		}
	}
}

// writeFailed ends a session whose socket could not be written: nothing more can reach
// the client.
func (s *session) writeFailed(err error) {
	s.log.Debug("closing connection: write failed", slog.Any("err", err))
	s.closing = true
}

// countRejected counts, for the broker's metrics, a connection that ends without having
// connected: a failed TLS handshake, or a protocol failure (no CONNECT in time, another
// frame first, an unsupported version, a bad frame). One the broker refused was counted
// by the broker; a client that leaves without a word, or a broker shutting down, is not
// counted.
func (s *session) countRejected(ctx context.Context) {
	if s.refused || ctx.Err() != nil {
		return
	}
	if tc, ok := s.nc.(*tls.Conn); ok && !tc.ConnectionState().HandshakeComplete {
		if s.lastReadErr != nil && !errors.Is(s.lastReadErr, io.EOF) {
			s.b.CountRejected(broker.RejectTLS)
		}
		return
	}
	if s.fatal {
		s.b.CountRejected(broker.RejectProtocol)
	}
}

// readFailed turns a reader error into the right ending.
func (s *session) readFailed(err error) {
	s.lastReadErr = err
	var fe *stompcodec.FrameError
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF):
		s.closing = true
	case errors.As(err, &fe) && s.conn == nil && errors.Is(err, stompcodec.ErrFrameTooLarge):
		s.logPreLoginRefusal(fe)
		s.fail(&broker.Error{Message: fe.Error(), Fatal: true}, "")
	case errors.As(err, &fe):
		s.log.Info("closing connection: bad frame", slog.String("reason", fe.Error()))
		s.fail(&broker.Error{Message: fe.Error(), Fatal: true}, "")
	case errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded):
		if s.conn == nil {
			s.log.Info("closing connection: no CONNECT in time", slog.Duration("timeout", s.cfg.ConnectTimeout))
			s.fail(&broker.Error{Message: "no CONNECT frame received in " + s.cfg.ConnectTimeout.String(), Fatal: true}, "")
		} else {
			s.log.Info("closing connection: heart-beat missed", slog.String("conn", s.conn.ID))
			s.fail(&broker.Error{Message: "heart-beat timeout: no data from the client in " + time.Duration(s.readTimeout.Load()).String(), Fatal: true}, "")
		}
	default:
		s.closing = true
	}
}

// logPreLoginRefusal logs a frame over MaxFrameSizeBeforeLogin, once a minute when
// the connector limits the line: clients that have not logged in could fill the log.
func (s *session) logPreLoginRefusal(fe *stompcodec.FrameError) {
	ok, more := s.cfg.PreLoginLog(time.Now())
	if !ok {
		return
	}
	s.log.Warn("frame refused before login: over the connector's maxFrameSizeBeforeLogin; logged once a minute",
		slog.String("connector", s.cfg.Connector), slog.Int64("maxFrameSizeBeforeLogin", s.cfg.MaxFrameSizeBeforeLogin),
		slog.String("reason", fe.Error()), slog.Int("refusedSinceLastLine", more))
}

// pump writes finished completions in frame order, then waiting MESSAGEs, and flushes.
func (s *session) pump() error {
	for len(s.pending) > 0 {
		c := s.pending[0]
		c.mu.Lock()
		done, err := c.done, c.err
		c.mu.Unlock()
		if !done {
			break
		}
		s.pending[0] = nil
		s.pending = s.pending[1:]
		if c.sub {
			s.holdForSub--
		}
		if err != nil {
			s.writeError(err, c.receipt)
		} else if c.receipt != "" {
			s.writeReceipt(c.receipt)
		}
	}
	if len(s.pending) == 0 {
		s.pending = nil
	}
	if s.conn != nil && !s.closing {
		for _, e := range s.conn.TakeNotices() {
			s.writeError(e, "")
		}
	}
	if s.conn != nil && s.holdForSub == 0 && !s.closing {
		var err error
		if s.deliveries, err = s.conn.Deliver(s.deliveries, 16, s.writeMessage); err != nil {
			return err
		}
	}
	if s.w.Buffered() > 0 {
		now := time.Now()
		if now.Sub(s.lastWDL) > time.Second {
			_ = s.nc.SetWriteDeadline(now.Add(s.cfg.WriteTimeout))
			s.lastWDL = now
		}
		s.lastWrite = now
		return s.w.Flush()
	}
	return nil
}

// track registers a frame whose outcome is written in order and returns the callback
// that settles it from any goroutine.
func (s *session) track(receipt string, sub bool) (*completion, func(error)) {
	c := &completion{receipt: receipt, sub: sub}
	if sub {
		s.holdForSub++
	}
	s.pending = append(s.pending, c)
	conn := s.conn
	return c, func(err error) {
		c.mu.Lock()
		c.done, c.err = true, err
		c.mu.Unlock()
		if conn != nil {
			conn.Poke()
		}
	}
}

// fail writes an ERROR; a fatal one ends the session.
func (s *session) fail(err error, receipt string) {
	s.writeError(err, receipt)
}

func (s *session) writeError(err error, receipt string) {
	msg := err.Error()
	fatal := true
	var be *broker.Error
	if errors.As(err, &be) {
		fatal = be.Fatal
	}
	f := frame.New("ERROR", "message", oneLine(msg), "content-type", "text/plain")
	if receipt != "" {
		f.Header.Add("receipt-id", receipt)
	}
	f.Body = []byte(msg + "\n")
	f.Header.Add("content-length", itoa(int64(len(f.Body))))
	_ = s.w.WriteFrame(f)
	if fatal {
		s.closing = true
		s.fatal = true
	}
}

func (s *session) writeReceipt(id string) {
	_ = s.w.StartFrame("RECEIPT")
	_ = s.w.Header("receipt-id", id)
	_ = s.w.EndFrame(nil)
}

// shutdownSocket flushes and closes. After a fatal ERROR the write side is closed first
// and the socket lingers until the client closes or lingerTime passes, so the client
// can read the ERROR instead of getting a reset.
func (s *session) shutdownSocket() {
	_ = s.nc.SetWriteDeadline(time.Now().Add(lingerTime))
	_ = s.w.Flush()
	if s.fatal {
		if tc, ok := s.nc.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		s.finalReadDeadline(time.Now().Add(lingerTime))
	} else {
		s.finalReadDeadline(time.Now())
	}
	// Let the reader finish so it is not left blocked on the frames channel.
	for range s.frames {
	}
	_ = s.nc.Close()
}

// finalReadDeadline sets the deadline that ends the reader; it is never moved again.
func (s *session) finalReadDeadline(t time.Time) {
	s.deadlineMu.Lock()
	s.readDone = true
	_ = s.nc.SetReadDeadline(t)
	s.deadlineMu.Unlock()
}

func oneLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' || s[i] == '\r' {
			return s[:i]
		}
	}
	return s
}
