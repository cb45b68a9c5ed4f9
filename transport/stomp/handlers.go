package stomp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-stomp/stomp/v3/frame"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/internal/stompcodec"
)

func protocolError(msg string) error { return &broker.Error{Message: msg, Fatal: true} }
func requestError(msg string) error  { return &broker.Error{Message: msg} }

// handle processes one client frame.
func (s *session) handle(ctx context.Context, f *frame.Frame) {
	if s.closing {
		return
	}
	receipt := f.Header.Get("receipt")
	if s.conn == nil {
		switch f.Command {
		case "CONNECT", "STOMP":
			s.onConnect(ctx, f)
		default:
			s.fail(protocolError("expected CONNECT or STOMP frame, got "+printable(f.Command)), receipt)
		}
		return
	}
	var err error
	switch f.Command {
	case "SEND":
		err = s.onSend(ctx, f, receipt)
		if err != nil && s.hold(f, err) {
			return
		}
	case "SUBSCRIBE":
		err = s.onSubscribe(ctx, f, receipt)
	case "UNSUBSCRIBE":
		err = s.onUnsubscribe(ctx, f, receipt)
	case "ACK":
		err = s.onAck(ctx, f, receipt, true)
	case "NACK":
		err = s.onAck(ctx, f, receipt, false)
	case "BEGIN":
		err = s.conn.Begin(f.Header.Get("transaction"))
		s.reply(receipt, err)
		return
	case "COMMIT":
		err = s.onCommit(ctx, f, receipt)
	case "ABORT":
		err = s.conn.Abort(f.Header.Get("transaction"))
		s.reply(receipt, err)
		return
	case "DISCONNECT":
		s.onDisconnect(receipt)
		return
	case "CONNECT", "STOMP":
		err = protocolError("already connected")
	case "CONNECTED", "MESSAGE", "RECEIPT", "ERROR":
		err = protocolError(f.Command + " is a server frame; a client must not send it")
	default:
		err = protocolError("Unknown STOMP action: " + printable(f.Command))
	}
	if err != nil {
		s.reply(receipt, err)
	}
}

// reply answers a frame that completed synchronously: its RECEIPT (if asked) or ERROR,
// in order behind any frame still waiting for the store.
func (s *session) reply(receipt string, err error) {
	if err == nil && receipt == "" {
		return
	}
	if len(s.pending) == 0 {
		if err != nil {
			s.writeError(err, receipt)
		} else {
			s.writeReceipt(receipt)
		}
		return
	}
	_, done := s.track(receipt, false)
	done(err)
}

func (s *session) onConnect(ctx context.Context, f *frame.Frame) {
	defer s.connectedOnce.Do(func() { close(s.connected) })
	version, err := stompcodec.NegotiateVersion(f.Header.Get("accept-version"))
	if err != nil {
		ef := frame.New("ERROR", "version", stompcodec.Supported, "content-type", "text/plain",
			"message", "Supported protocol versions are "+stompcodec.Supported)
		ef.Body = []byte("Supported protocol versions are " + stompcodec.Supported + "\n")
		_ = s.w.WriteFrame(ef)
		s.closing, s.fatal = true, true
		return
	}
	cx, cy := s.cfg.DefaultHeartBeat[0], s.cfg.DefaultHeartBeat[1]
	if hb, ok := f.Header.Contains("heart-beat"); ok {
		if cx, cy, err = parseHeartBeat(hb); err != nil {
			s.fail(protocolError(err.Error()), "")
			return
		}
	}
	login, hasLogin := f.Header.Contains("login")
	conn, err := s.b.Connect(ctx, broker.ConnectInfo{
		ClientID:         f.Header.Get("client-id"),
		Login:            login,
		HasLogin:         hasLogin,
		Passcode:         f.Header.Get("passcode"),
		RemoteAddr:       s.nc.RemoteAddr().String(),
		PeerCertificates: peerCertificates(s.nc),
		Protocol:         s.cfg.Protocol,
		Connector:        s.cfg.Connector,
		Version:          version,
	})
	s.refused = err != nil
	if errors.Is(err, broker.ErrLoginThrottled) {
		// Too many failed logins from this address are waiting out their delay: no
		// answer, so that guessing in parallel gains nothing.
		s.closing, s.fatal = true, true
		return
	}
	if err != nil {
		s.fail(asFatal(err), "")
		return
	}
	s.conn = conn
	s.sess = conn.Session("")
	s.version = version
	s.w.SetVersion(version)
	s.r.SetVersion(version)
	// Logged in: the connector's frame limit from the next frame on (the reader
	// waits for s.connected before reading it).
	s.r.SetMaxFrameSize(s.cfg.Limits.MaxFrameSize, "")
	if s.cfg.LoggedIn != nil {
		s.cfg.LoggedIn()
	}

	// The client sends every cx and wants beats every cy. We agree (as ActiveMQ does),
	// with a floor so a tiny value cannot make us spin.
	// The reader may already be blocked with the CONNECT deadline: move it now.
	var readEvery time.Duration
	if cx > 0 {
		readEvery = max(cx, s.cfg.MinHeartBeat)
		to := time.Duration(float64(readEvery) * s.cfg.HeartBeatGrace)
		s.readTimeout.Store(int64(to))
		s.setReadDeadline(time.Now().Add(to))
	} else {
		s.readTimeout.Store(0)
		s.setReadDeadline(time.Time{})
	}
	if cy > 0 {
		s.sendEvery = max(cy, s.cfg.MinHeartBeat)
	}
	reply := frame.New("CONNECTED",
		"version", version,
		"heart-beat", itoa(s.sendEvery.Milliseconds())+","+itoa(readEvery.Milliseconds()),
		"server", ServerName,
		"session", conn.ID,
	)
	if id, ok := f.Header.Contains("request-id"); ok {
		reply.Header.Add("response-id", id)
		reply.Header.Add("receipt-id", id)
	}
	_ = s.w.WriteFrame(reply)
}

func parseHeartBeat(v string) (time.Duration, time.Duration, error) {
	a, b, ok := strings.Cut(v, ",")
	if !ok {
		return 0, 0, errInvalidHeartBeat(v)
	}
	x, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 31)
	y, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 31)
	if err1 != nil || err2 != nil {
		return 0, 0, errInvalidHeartBeat(v)
	}
	return time.Duration(x) * time.Millisecond, time.Duration(y) * time.Millisecond, nil
}

func errInvalidHeartBeat(v string) error {
	return protocolError("Invalid heart-beat header: " + strconv.Quote(v))
}

func asFatal(err error) error {
	if be, ok := err.(*broker.Error); ok {
		c := *be
		c.Fatal = true
		return &c
	}
	return protocolError(err.Error())
}

func (s *session) onSend(ctx context.Context, f *frame.Frame, receipt string) error {
	destHdr, ok := f.Header.Contains("destination")
	if !ok || destHdr == "" {
		return requestError("SEND received without a destination header")
	}
	dests, err := s.sendDestinations(destHdr)
	if err != nil {
		return err
	}
	m, err := messageFromSend(f)
	if err != nil {
		return err
	}
	tx := f.Header.Get("transaction")
	if receipt == "" && (!m.Persistent || tx != "") {
		// Nothing to wait for: a failure is reported by the returned error.
		return s.conn.Send(ctx, dests, m, tx, discard)
	}
	c, done := s.track(receipt, false)
	if err := s.conn.Send(ctx, dests, m, tx, done); err != nil {
		s.untrack(c)
		return err
	}
	return nil
}

func discard(error) {}

// sendDestinations parses a SEND's destination header, reusing the last result when a
// producer sends to the same destination again (the parsed names are only read).
func (s *session) sendDestinations(h string) ([]broker.Destination, error) {
	if s.sendDests != nil && h == s.sendDest {
		return s.sendDests, nil
	}
	dests, err := broker.ParseDestinations(h)
	if err != nil {
		return nil, err
	}
	s.sendDest, s.sendDests = h, dests
	return dests, nil
}

// untrack drops the last tracked completion (its frame was refused synchronously).
func (s *session) untrack(c *completion) {
	if n := len(s.pending); n > 0 && s.pending[n-1] == c {
		s.pending = s.pending[:n-1]
		if c.sub {
			s.holdForSub--
		}
	}
}

func (s *session) onSubscribe(ctx context.Context, f *frame.Frame, receipt string) error {
	destHdr, ok := f.Header.Contains("destination")
	if !ok || destHdr == "" {
		return requestError("SUBSCRIBE received without a destination header")
	}
	id, ok := f.Header.Contains("id")
	if !ok || id == "" {
		if s.version != stompcodec.V10 {
			return requestError("SUBSCRIBE received without a subscription id")
		}
		id = destHdr
	}
	dest, err := broker.ParseDestination(destHdr)
	if err != nil {
		return err
	}
	req := broker.SubscribeRequest{ID: id, Dest: dest}
	switch mode := f.Header.Get("ack"); mode {
	case "", "auto":
		req.Mode = broker.AckAuto
	case "client":
		req.Mode = broker.AckClient
	case "client-individual":
		req.Mode = broker.AckClientIndividual
	default:
		return requestError("invalid ack mode " + strconv.Quote(mode) + ": use auto, client or client-individual")
	}
	if v, ok := f.Header.Contains("activemq.prefetchSize"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return requestError("invalid activemq.prefetchSize " + strconv.Quote(v) + ": a whole number from 0 (the default) to the destination's maxPrefetch")
		}
		// ActiveMQ cannot serve 0 over STOMP (the consumer would never get anything);
		// we treat it as "the default". The broker refuses one over maxPrefetch.
		req.Prefetch = int(min(n, math.MaxInt32+1))
	}
	req.DurableName, req.DurableStyle = durableName(f, id)
	req.StreamOffset = f.Header.Get(headerStreamOffset)
	req.ConsumerGroup = f.Header.Get(headerConsumerGroup)
	req.Selector = f.Header.Get("selector")
	if req.Exclusive, err = boolHeader(f, "activemq.exclusive"); err != nil {
		return err
	}
	if req.NoLocal, err = boolHeader(f, "activemq.noLocal"); err != nil {
		return err
	}
	if v, ok := f.Header.Contains("activemq.priority"); ok {
		p, err := strconv.Atoi(v)
		if err != nil || p < 0 || p > 127 {
			return requestError("invalid activemq.priority " + strconv.Quote(v) + ": an integer 0-127")
		}
		req.Priority = p
	}
	if browse, _ := boolHeader(f, "browser"); browse {
		return s.browse(ctx, req, receipt)
	}
	if _, err := s.sess.Subscribe(ctx, req); err != nil {
		return err
	}
	if receipt != "" {
		_, done := s.track(receipt, true)
		done(nil)
	}
	return nil
}

// durableName is the durable subscription a SUBSCRIBE or UNSUBSCRIBE names, and the
// convention it follows, in any of the forms clients of other brokers send: ActiveMQ's
// activemq.subscriptionName, Artemis' durable-subscription-name (and the older
// durable-subscriber-name), or RabbitMQ's durable:true (with auto-delete:false), where
// the subscription id is the name.
func durableName(f *frame.Frame, id string) (string, broker.DurableStyle) {
	for _, h := range []struct {
		name  string
		style broker.DurableStyle
	}{
		{"activemq.subscriptionName", broker.DurableActiveMQ},
		{"durable-subscription-name", broker.DurableArtemis},
		{"durable-subscriber-name", broker.DurableArtemis},
	} {
		if v, ok := f.Header.Contains(h.name); ok && v != "" {
			return v, h.style
		}
	}
	if d, _ := boolHeader(f, "durable"); d {
		if ad, _ := boolHeader(f, "auto-delete"); !ad {
			return id, broker.DurableRabbitMQ
		}
	}
	return "", broker.DurableActiveMQ
}

func boolHeader(f *frame.Frame, name string) (bool, error) {
	v, ok := f.Header.Contains(name)
	if !ok {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, requestError("invalid " + name + " " + strconv.Quote(v) + ": true or false")
	}
	return b, nil
}

func (s *session) onUnsubscribe(ctx context.Context, f *frame.Frame, receipt string) error {
	id, ok := f.Header.Contains("id")
	if !ok || id == "" {
		if s.version != stompcodec.V10 {
			return requestError("UNSUBSCRIBE received without a subscription id")
		}
		if id = f.Header.Get("destination"); id == "" {
			return requestError("UNSUBSCRIBE received without an id or destination")
		}
	}
	if s.browsers[id] {
		delete(s.browsers, id)
		s.reply(receipt, nil)
		return nil
	}
	req := broker.UnsubscribeRequest{ID: id}
	req.DurableName, req.DurableStyle = durableName(f, id)
	if err := s.conn.Unsubscribe(ctx, req); err != nil {
		return err
	}
	s.reply(receipt, nil)
	return nil
}

// browse answers a queue browser (SUBSCRIBE browser:true): the queue's waiting messages
// as MESSAGE frames, then ActiveMQ's end marker, a MESSAGE with browser:end. Nothing is
// consumed; the subscription id stays taken until UNSUBSCRIBE.
func (s *session) browse(ctx context.Context, req broker.SubscribeRequest, receipt string) error {
	if s.browsers[req.ID] {
		return requestError("subscription id " + strconv.Quote(req.ID) + " is already in use on this connection")
	}
	if err := s.conn.SubscriptionRoom(len(s.browsers)); err != nil {
		return err
	}
	msgs, err := s.conn.Browse(ctx, req.Dest, req.Selector, broker.DefaultBrowsePageSize)
	if err != nil {
		return err
	}
	s.reply(receipt, nil)
	if s.browsers == nil {
		s.browsers = map[string]bool{}
	}
	s.browsers[req.ID] = true
	dest := req.Dest.String()
	for _, m := range msgs {
		if err := s.writeMessageFields(m, dest, req.ID, "", false, m.RedeliveryCount+1, false, nil); err != nil {
			s.writeFailed(err)
			return nil
		}
	}
	_ = s.w.StartFrame("MESSAGE")
	_ = s.w.Header("subscription", req.ID)
	_ = s.w.Header("destination", dest)
	_ = s.w.Header("message-id", "0")
	_ = s.w.Header("browser", "end")
	_ = s.w.Header("content-length", "0")
	if err := s.w.EndFrame(nil); err != nil { // the writer's errors are sticky
		s.writeFailed(err)
	}
	return nil
}

func (s *session) onAck(ctx context.Context, f *frame.Frame, receipt string, ack bool) error {
	what := "ACK"
	if !ack {
		what = "NACK"
		if s.version == stompcodec.V10 {
			return requestError("NACK received but connection is in v1.0 mode")
		}
	}
	var ref broker.AckRef
	if id, ok := f.Header.Contains("id"); ok && s.version == stompcodec.V12 {
		tag, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			return requestError("Unexpected " + what + " received for message-id [" + id + "]")
		}
		ref = broker.AckRef{Tag: tag, HasTag: true}
	} else {
		ref.MessageID = f.Header.Get("message-id")
		ref.SubID = f.Header.Get("subscription")
		switch {
		case ref.MessageID == "" && s.version == stompcodec.V12:
			return requestError(what + " received without an id header")
		case ref.MessageID == "":
			return requestError(what + " received without a message-id header")
		case ref.SubID == "" && s.version == stompcodec.V11:
			return requestError(what + " received without a subscription header")
		}
	}
	req := broker.SettleRequest{Ref: ref, Kind: broker.SettleStandard, Tx: f.Header.Get("transaction"),
		Unanswered: receipt == ""} // without a receipt it rides the store's next sync
	if !ack {
		req.Kind = broker.SettlePoison
	}
	c, done := s.track(receipt, false)
	if err := s.conn.Settle(ctx, req, done); err != nil {
		s.untrack(c)
		return err
	}
	return nil
}

func (s *session) onCommit(ctx context.Context, f *frame.Frame, receipt string) error {
	c, done := s.track(receipt, false)
	if err := s.conn.Commit(ctx, f.Header.Get("transaction"), done); err != nil {
		s.untrack(c)
		return err
	}
	return nil
}

// onDisconnect ends the session in order: frames still waiting for the store finish,
// the broker connection is closed (unacknowledged messages go back, the client-id is
// free), and only then the RECEIPT goes out, so a client that got it may reconnect with
// the same client-id at once.
func (s *session) onDisconnect(receipt string) {
	s.closing = true // no MESSAGE after DISCONNECT: auto-acked ones would be lost
	deadline := time.Now().Add(5 * time.Second)
	for len(s.pending) > 0 && time.Now().Before(deadline) {
		if err := s.pump(); err != nil {
			break
		}
		if len(s.pending) > 0 {
			select {
			case <-s.conn.Wake():
			case <-time.After(time.Until(deadline)):
			}
		}
	}
	s.conn.Close()
	if receipt != "" {
		_, done := s.track(receipt, false)
		done(nil)
	}
	_ = s.pump()
}

func printable(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.QuoteToASCII(s)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// peerCertificates returns the client's verified TLS certificate chain, leaf first, or
// nil: on a plain connection, when the client sent no certificate, or when it was not
// verified against the connector's trust store.
func peerCertificates(nc net.Conn) []*x509.Certificate {
	var st tls.ConnectionState
	switch c := nc.(type) {
	case *tls.Conn:
		st = c.ConnectionState()
	case interface{ TLSState() *tls.ConnectionState }: // WebSocket over TLS
		p := c.TLSState()
		if p == nil {
			return nil
		}
		st = *p
	default:
		return nil
	}
	if len(st.VerifiedChains) == 0 {
		return nil
	}
	return st.VerifiedChains[0]
}
