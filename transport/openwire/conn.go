// Package openwire is the OpenWire session: it turns the commands of ActiveMQ's own
// client (ActiveMQConnectionFactory, tcp://, ssl://) into calls on the broker's session
// surface and writes dispatches, responses and keep-alives back. The command codec is
// the leaf internal/openwire; listening and connection limits are in package transport.
//
// Each connection has two goroutines, as STOMP's do: a reader that only decodes
// commands (with the frame limit checked before anything is allocated), and the
// owner, which handles them, writes everything and is the only goroutine that touches
// the connection's state. A command the broker answers later (a synchronous send, a
// commit, an acknowledgement that waits for the store) gets its Response once the
// broker's callback ran, queued for the owner to write.
//
// Errors follow ActiveMQ: a request that fails gets an ExceptionResponse naming the Java
// exception the client throws (JMSException, InvalidDestinationException,
// JMSSecurityException, InvalidClientIDException, ...), and the connection stays; a
// malformed or oversized command, a failed handshake or a missed inactivity deadline
// ends the connection, with a ConnectionError first when the client can still read it.
package openwire

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/activemq-go/broker/broker"
	ow "github.com/activemq-go/broker/internal/openwire"
)

// Config holds an OpenWire connector's per-connection settings.
type Config struct {
	// MaxFrameSize bounds every command read (wireFormat.maxFrameSize; ActiveMQ's
	// default 100 MiB); a larger one ends the connection before it is read.
	MaxFrameSize int64
	// MaxFrameSizeBeforeLogin bounds the commands read until the client's
	// ConnectionInfo is accepted (WireFormatInfo, ConnectionInfo; default
	// DefaultMaxFrameSizeBeforeLogin, never more than MaxFrameSize): a client that has
	// not logged in cannot make the broker hold a big frame.
	MaxFrameSizeBeforeLogin int64
	// PreLoginLog tells whether the log line of a command refused for
	// MaxFrameSizeBeforeLogin may go out now, and how many were held back (the
	// connector's loglimit.Limit.Allow: once a minute); nil lets every one out.
	PreLoginLog func(now time.Time) (ok bool, heldBack int)
	// LoggedIn, when set, is called once the client's ConnectionInfo is accepted.
	LoggedIn func()
	// MaxInactivityDuration is how long the connection may stay silent before it is
	// dropped (wireFormat.maxInactivityDuration; default 30 s, negative: never), and
	// InitialDelay how long that check waits after the handshake (default 10 s). The
	// client's own offer lowers them.
	MaxInactivityDuration time.Duration
	InitialDelay          time.Duration
	// ConnectTimeout bounds the handshake: the client's WireFormatInfo and
	// ConnectionInfo (default 30 s).
	ConnectTimeout time.Duration
	WriteTimeout   time.Duration // a client that takes no data for this long is dropped; default 60s
	Logger         *slog.Logger
	Connector      string // the transport connector's name, shown to operators
	// BrokerURL is what BrokerInfo tells the client it connected to.
	BrokerURL string
}

// DefaultMaxFrameSizeBeforeLogin is Config.MaxFrameSizeBeforeLogin's default: room
// for a Java client's WireFormatInfo and a ConnectionInfo with a long password.
const DefaultMaxFrameSizeBeforeLogin = 16 << 10

// logEvery lets every log line out.
func logEvery(time.Time) (bool, int) { return true, 0 }

func (c Config) withDefaults() Config {
	if c.MaxFrameSize <= 0 {
		c.MaxFrameSize = 100 << 20
	}
	if c.MaxFrameSizeBeforeLogin <= 0 {
		c.MaxFrameSizeBeforeLogin = DefaultMaxFrameSizeBeforeLogin
	}
	c.MaxFrameSizeBeforeLogin = min(c.MaxFrameSizeBeforeLogin, c.MaxFrameSize)
	if c.PreLoginLog == nil {
		c.PreLoginLog = logEvery
	}
	if c.MaxInactivityDuration == 0 {
		c.MaxInactivityDuration = 30 * time.Second
	}
	if c.InitialDelay <= 0 {
		c.InitialDelay = 10 * time.Second
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 30 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 60 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// conn is one OpenWire connection.
type conn struct {
	cfg Config
	nc  net.Conn
	b   *broker.Broker
	log *slog.Logger

	bw *bufio.Writer
	r  *ow.Reader
	w  *ow.Writer

	bc       *broker.Conn // nil until ConnectionInfo
	clientID string
	connID   string // the client's connection id

	cmds    chan ow.Command
	readErr chan error
	// maxFrameSize is the negotiated frame limit, the reader's once the client has
	// logged in. loggedIn is closed when the owner has handled the ConnectionInfo
	// (raising the reader's limit if it was accepted), or when the connection ends:
	// the reader waits for it after reading a ConnectionInfo.
	maxFrameSize int64
	loggedIn     chan struct{}
	loggedInOnce sync.Once

	// Answers to commands the broker completes later, written by the owner.
	mu    sync.Mutex
	ready []ow.Command

	sessions  map[string]*broker.Session
	consumers map[ow.ConsumerID]*consumer // by the client's consumer id
	bySub     map[string]*consumer        // by the ids of their subscriptions
	producers map[ow.ProducerID]*producer
	pulls     []*pull // MessagePulls waiting with a timeout

	// A send held by producer flow control and the commands read behind it.
	held       *heldSend
	retrying   *heldSend // the held send being sent again
	behind     []ow.Command
	heldLogged time.Time

	// monitorFrom is when the inactivity check starts: the handshake's end plus the
	// agreed initial delay, before which the client sends no keep-alives.
	monitorFrom time.Time

	// What dispatches reuse (convert.go): the dispatch and message being written, their
	// properties and text, and the producer ids and destinations messages name (they
	// repeat).
	out           wireMessage
	md            ow.MessageDispatch
	props         ow.PropertyEncoder
	text          []byte
	wireProducers map[ow.ProducerID]*ow.ProducerID
	wireDests     map[string]*ow.Destination

	// sendDest and sendDests are the destination of the last send and its broker
	// names, kept for the next send to the same destination.
	sendDest  ow.Destination
	sendDests []broker.Destination
	// unanswered is the callback of a request nobody waits for (logFailed).
	unanswered func(error)
	deliveries []*broker.Delivery
	lastWrite  time.Time // when pump last flushed
	closing    bool
}

// consumer is a client consumer: its subscriptions (one per destination it names: a
// composite destination has several) and what the client calls it.
type consumer struct {
	id      *ow.ConsumerID
	session string
	subs    []*broker.Subscription
	sent    uint64 // messages dispatched to it
	// delivered counts the messages the client reported delivered to its application
	// (delivered acks) that the broker has not seen settled: credit given ahead of the
	// acknowledgement, as ActiveMQ's prefetch extension does for transacted consumers,
	// taken back as they are settled.
	delivered int32
	pull      bool
	browser   bool
}

// producer is a client producer: its window, if it asked for ProducerAcks.
type producer struct {
	id     *ow.ProducerID
	window int32
}

// pull is a MessagePull still waiting for a message, until its deadline.
type pull struct {
	c        *consumer
	deadline time.Time
	sent     uint64 // the consumer's dispatch count when it was granted
}

// Serve runs one OpenWire connection until it ends or ctx is done; it closes nc.
func Serve(ctx context.Context, nc net.Conn, b *broker.Broker, cfg Config) {
	cfg = cfg.withDefaults()
	c := &conn{
		cfg: cfg, nc: nc, b: b, log: cfg.Logger.With(slog.String("remote", nc.RemoteAddr().String())),
		bw:        bufio.NewWriterSize(nc, 32<<10),
		cmds:      make(chan ow.Command, 64),
		readErr:   make(chan error, 1),
		loggedIn:  make(chan struct{}),
		sessions:  map[string]*broker.Session{},
		consumers: map[ow.ConsumerID]*consumer{},
		bySub:     map[string]*consumer{},
		producers: map[ow.ProducerID]*producer{},
	}
	c.unanswered = c.logFailed
	defer c.shutdown()
	if err := c.handshake(); err != nil {
		c.handshakeFailed(err)
		return
	}
	go c.read()
	c.loop(ctx)
}

// handshakeFailed logs and counts a connection that ended in its handshake, as STOMP's
// sessions count theirs: a failed TLS handshake (a plain-text client on ssl://), or no
// valid WireFormatInfo in time. A client that leaves without a word is not counted.
func (c *conn) handshakeFailed(err error) {
	quiet := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
	if tc, ok := c.nc.(*tls.Conn); ok && !tc.ConnectionState().HandshakeComplete {
		c.log.Debug("openwire TLS handshake failed", slog.Any("err", err))
		if !errors.Is(err, io.EOF) {
			c.b.CountRejected(broker.RejectTLS)
		}
		return
	}
	var tooBig *ow.FrameSizeError
	switch {
	case quiet:
		c.log.Debug("openwire handshake failed", slog.Any("err", err))
		return
	case errors.As(err, &tooBig):
		c.logPreLoginRefusal(tooBig)
	case isTimeout(err):
		c.log.Info("closing connection: no WireFormatInfo in time", slog.Duration("timeout", c.cfg.ConnectTimeout))
	default:
		c.log.Info("closing connection: openwire handshake failed", slog.Any("err", err))
	}
	c.b.CountRejected(broker.RejectProtocol)
}

// handshake exchanges WireFormatInfo (ours first, as ActiveMQ's broker does), agrees on
// the format, and sends BrokerInfo. The client's ConnectionInfo follows as a command.
func (c *conn) handshake() error {
	initial := ow.Initial(ow.Version, c.cfg.MaxFrameSize)
	c.r = ow.NewReader(bufio.NewReaderSize(c.nc, 32<<10), ow.Initial(ow.Version, c.cfg.MaxFrameSizeBeforeLogin))
	c.w = ow.NewWriter(c.bw, initial)
	inactivity := c.cfg.MaxInactivityDuration
	if inactivity < 0 {
		inactivity = 0
	}
	ours := ow.NewWireFormatInfo(ow.Format{
		Version: ow.Version, TightEncoding: true, Cache: true, CacheSize: 1024, TCPNoDelay: true,
		MaxFrameSize: c.cfg.MaxFrameSize, MaxInactivityDuration: inactivity.Milliseconds(),
		MaxInactivityDurationInitialDelay: c.cfg.InitialDelay.Milliseconds(),
	})
	_ = c.nc.SetDeadline(time.Now().Add(c.cfg.ConnectTimeout))
	if err := c.write(ours); err != nil {
		return err
	}
	if err := c.bw.Flush(); err != nil {
		return err
	}
	cmd, err := c.r.Read()
	if err != nil {
		return err
	}
	theirs, ok := cmd.(*ow.WireFormatInfo)
	if !ok {
		return errors.New("the first command is not WireFormatInfo")
	}
	f, err := ow.Negotiate(ours, theirs)
	if err != nil {
		return err
	}
	c.r.SetFormat(f)
	c.w.SetFormat(f)
	c.maxFrameSize = f.MaxFrameSize
	c.r.SetMaxFrameSize(min(f.MaxFrameSize, c.cfg.MaxFrameSizeBeforeLogin)) // until login
	if tc, ok := c.nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(f.TCPNoDelay)
	}
	c.cfg.MaxInactivityDuration = time.Duration(f.MaxInactivityDuration) * time.Millisecond
	// As ActiveMQ's inactivity monitor, on both sides, the check starts after the
	// initial delay: the client's keep-alives only then.
	c.monitorFrom = time.Now().Add(time.Duration(f.MaxInactivityDurationInitialDelay) * time.Millisecond)
	name := c.b.Name()
	if err := c.write(&ow.BrokerInfo{BrokerID: &ow.BrokerID{Value: "ID:" + name}, BrokerName: name, BrokerURL: c.cfg.BrokerURL}); err != nil {
		return err
	}
	if err := c.bw.Flush(); err != nil {
		return err
	}
	c.lastWrite = time.Now()
	_ = c.nc.SetWriteDeadline(time.Time{}) // the read deadline stays for ConnectionInfo
	return nil
}

// read decodes commands for the owner until the connection fails. The first, the
// client's ConnectionInfo, is read under the handshake's deadline; the later ones under
// the inactivity check's, which allows the initial delay first.
func (c *conn) read() {
	for first := true; ; first = false {
		if !first {
			if d := c.cfg.MaxInactivityDuration; d > 0 {
				_ = c.nc.SetReadDeadline(later(time.Now(), c.monitorFrom).Add(d))
			} else {
				_ = c.nc.SetReadDeadline(time.Time{})
			}
		}
		cmd, err := c.r.Read()
		if err != nil {
			c.readErr <- err
			return
		}
		c.cmds <- cmd
		if _, ok := cmd.(*ow.ConnectionInfo); ok {
			<-c.loggedIn // the next command is read with the limit the login sets
		}
	}
}

// loginHandled tells the reader that the ConnectionInfo it passed on is handled:
// accepted, the connector's frame limit applies from the next command on.
func (c *conn) loginHandled() {
	c.loggedInOnce.Do(func() {
		if c.bc != nil {
			c.r.SetMaxFrameSize(c.maxFrameSize)
			if c.cfg.LoggedIn != nil {
				c.cfg.LoggedIn()
			}
		}
		close(c.loggedIn)
	})
}

// logPreLoginRefusal logs a command over MaxFrameSizeBeforeLogin, once a minute when
// the connector limits the line: clients that have not logged in could fill the log.
func (c *conn) logPreLoginRefusal(tooBig *ow.FrameSizeError) {
	ok, more := c.cfg.PreLoginLog(time.Now())
	if !ok {
		return
	}
	c.log.Warn("frame refused before login: over the connector's maxFrameSizeBeforeLogin; logged once a minute",
		slog.String("connector", c.cfg.Connector), slog.Int64("maxFrameSizeBeforeLogin", tooBig.Max),
		slog.Int64("size", tooBig.Size), slog.Int("refusedSinceLastLine", more))
}

// loop is the owner: it handles commands, writes dispatches and answers, and keeps the
// connection alive, until the connection ends.
func (c *conn) loop(ctx context.Context) {
	tick := time.NewTicker(c.tickEvery())
	defer tick.Stop()
	var wake <-chan struct{}
	var kicked <-chan struct{}
	for !c.closing {
		if c.bc != nil {
			wake, kicked = c.bc.Wake(), c.bc.Kicked()
		}
		retry, expire := c.heldWake()
		cmds := c.cmds
		if !c.reading() {
			cmds = nil // the reader waits, and TCP holds the client back
		}
		select {
		case cmd := <-cmds:
			c.take(ctx, cmd)
			c.takeReady(ctx)
		case <-retry:
			c.retryHeld(ctx)
		case <-expire:
			c.retryHeld(ctx)
		case <-wake:
		case err := <-c.readErr:
			c.readFailed(err)
			return
		case <-kicked:
			c.connectionError("javax.jms.JMSException", c.bc.KickReason())
			return
		case now := <-tick.C:
			c.keepAlive(now)
			c.expirePulls(now)
		case <-ctx.Done():
			return
		}
		if len(c.pulls) > 0 {
			c.expirePulls(time.Now())
		}
		if err := c.pump(); err != nil {
			c.log.Debug("openwire write failed", slog.Any("err", err))
			return
		}
	}
}

// maxBurst bounds the commands handled between two writes of what they answer.
const maxBurst = 64

// take handles a command read, or keeps it behind a send that flow control holds.
func (c *conn) take(ctx context.Context, cmd ow.Command) {
	if c.held != nil {
		c.behind = append(c.behind, cmd)
		return
	}
	c.handle(ctx, cmd)
}

// takeReady handles the commands already read (up to maxBurst), so that what a burst of
// them answers or lets through (a consumer's acks free its prefetch) goes out in one
// write rather than one write per command.
func (c *conn) takeReady(ctx context.Context) {
	for n := 1; n < maxBurst && !c.closing && c.reading(); n++ {
		select {
		case cmd := <-c.cmds:
			c.take(ctx, cmd)
		default:
			return
		}
	}
}

// tickEvery is how often the owner checks keep-alives and pulls' deadlines.
func (c *conn) tickEvery() time.Duration {
	if d := c.cfg.MaxInactivityDuration; d > 0 && d/3 < time.Second {
		return max(d/3, 10*time.Millisecond)
	}
	return 100 * time.Millisecond
}

// keepAlive writes a KeepAliveInfo when nothing was written for a third of the
// inactivity duration, as ActiveMQ's inactivity monitor does.
func (c *conn) keepAlive(now time.Time) {
	if d := c.cfg.MaxInactivityDuration; d > 0 && now.Sub(c.lastWrite) >= d/3 {
		_ = c.write(&ow.KeepAliveInfo{})
	}
}

func (c *conn) readFailed(err error) {
	var tooBig *ow.FrameSizeError
	switch {
	case errors.As(err, &tooBig) && c.bc == nil:
		c.logPreLoginRefusal(tooBig)
		c.connectionError("java.io.IOException", "Frame size of "+itoa(tooBig.Size)+" larger than max allowed "+itoa(tooBig.Max)+" before login (maxFrameSizeBeforeLogin)")
	case errors.As(err, &tooBig):
		c.log.Warn("openwire command over the connector's maxFrameSize: connection closed",
			slog.Int64("size", tooBig.Size), slog.Int64("maxFrameSize", tooBig.Max))
		c.connectionError("java.io.IOException", "Frame size of "+itoa(tooBig.Size)+" larger than max allowed "+itoa(tooBig.Max))
	case errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed):
	case isTimeout(err) && c.bc == nil:
		c.log.Info("closing connection: no ConnectionInfo in time", slog.Duration("timeout", c.cfg.ConnectTimeout))
	case isTimeout(err):
		c.log.Info("openwire client inactive past maxInactivityDuration: connection closed",
			slog.Duration("maxInactivityDuration", c.cfg.MaxInactivityDuration))
	case errors.Is(err, ow.ErrMalformed) || errors.Is(err, ow.ErrUnknownType):
		c.log.Warn("malformed openwire command: connection closed", slog.Any("err", err))
		c.connectionError("java.io.IOException", err.Error())
	default:
		c.log.Debug("openwire read failed", slog.Any("err", err))
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// connectionError tells the client why its connection ends.
func (c *conn) connectionError(class, msg string) {
	ce := &ow.ConnectionError{Exception: &ow.Throwable{Class: class, Message: msg}}
	if c.connID != "" {
		ce.ConnectionID = &ow.ConnectionID{Value: c.connID}
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	if c.write(ce) == nil {
		_ = c.bw.Flush()
	}
	c.closing = true
}

// write encodes one command into the buffer.
func (c *conn) write(cmd ow.Command) error {
	return c.w.Write(cmd)
}

// answer queues cmd from any goroutine for the owner to write.
func (c *conn) answer(cmd ow.Command) {
	c.mu.Lock()
	c.ready = append(c.ready, cmd)
	c.mu.Unlock()
	if c.bc != nil {
		c.bc.Poke()
	}
}

// pump writes the answers that are ready and the deliveries waiting, then flushes.
func (c *conn) pump() error {
	c.mu.Lock()
	ready := c.ready
	c.ready = nil
	c.mu.Unlock()
	for _, cmd := range ready {
		if err := c.write(cmd); err != nil {
			return err
		}
	}
	if c.bc != nil && !c.closing {
		var err error
		if c.deliveries, err = c.bc.Deliver(c.deliveries, 16, c.dispatch); err != nil {
			return err
		}
		for _, e := range c.bc.TakeNotices() {
			c.log.Debug("broker notice for an openwire client", slog.String("message", e.Message))
		}
	}
	if c.bw.Buffered() > 0 {
		c.lastWrite = time.Now()
		_ = c.nc.SetWriteDeadline(c.lastWrite.Add(c.cfg.WriteTimeout))
		return c.bw.Flush()
	}
	return nil
}

// shutdown closes the broker connection (what the client held unacknowledged goes
// back) and the socket.
func (c *conn) shutdown() {
	c.loggedInOnce.Do(func() { close(c.loggedIn) }) // a reader waiting for the login ends
	if c.bc != nil {
		c.bc.Close()
	}
	_ = c.nc.Close()
	// The reader ends with the socket; drain what it may still hand over.
	go func() {
		for {
			select {
			case <-c.cmds:
			case <-c.readErr:
				return
			case <-time.After(time.Minute):
				return
			}
		}
	}()
}
