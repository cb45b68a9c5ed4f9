package openwire

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"strconv"

	"github.com/activemq-go/broker/broker"
	ow "github.com/activemq-go/broker/internal/openwire"
)

// handle processes one client command.
func (c *conn) handle(ctx context.Context, cmd ow.Command) {
	if c.bc == nil {
		if _, ok := cmd.(*ow.ConnectionControl); ok {
			// A failover: client's first command on a reconnect, before it replays its
			// ConnectionInfo (FailoverTransport.restoreTransport, "fault tolerant"):
			// nothing for the broker to do, as later.
			return
		}
		info, ok := cmd.(*ow.ConnectionInfo)
		if !ok {
			c.log.Debug("openwire command before ConnectionInfo", slog.String("type", typeName(cmd)))
			c.b.CountRejected(broker.RejectProtocol)
			c.connectionError("java.lang.IllegalStateException", "expected ConnectionInfo, got "+typeName(cmd))
			return
		}
		c.onConnection(ctx, info)
		c.loginHandled()
		return
	}
	var err error
	switch cmd := cmd.(type) {
	case *ow.Message:
		c.onMessage(ctx, cmd)
		return
	case *ow.MessageAck:
		c.onAck(ctx, cmd)
		return
	case *ow.MessagePull:
		err = c.onPull(cmd)
	case *ow.SessionInfo:
		if cmd.SessionID == nil {
			err = errNoID("SessionInfo", "session")
			break
		}
		c.session(cmd.SessionID.String())
	case *ow.ConsumerInfo:
		err = c.onConsumer(ctx, cmd)
	case *ow.ProducerInfo:
		err = c.onProducer(cmd)
	case *ow.TransactionInfo:
		err = c.onTransaction(ctx, cmd)
	case *ow.RemoveInfo:
		err = c.onRemove(ctx, cmd)
	case *ow.DestinationInfo:
		err = c.onDestination(cmd)
	case *ow.RemoveSubscriptionInfo:
		err = c.bc.Unsubscribe(ctx, broker.UnsubscribeRequest{DurableName: cmd.SubscriptionName, DurableStyle: broker.DurableActiveMQ})
	case *ow.KeepAliveInfo:
		if cmd.ResponseRequired {
			_ = c.write(&ow.KeepAliveInfo{})
		}
		return
	case *ow.ShutdownInfo:
		c.closing = true
		return
	case *ow.ConnectionInfo:
		err = &broker.Error{Message: "the connection is already open", Err: errAlreadyConnected}
	case *ow.ConsumerControl:
		c.onConsumerControl(cmd)
	case *ow.FlushCommand, *ow.ControlCommand, *ow.ConnectionControl, *ow.ProducerAck, *ow.WireFormatInfo, *ow.BrokerInfo:
		// Nothing for a broker to do.
	default:
		err = &broker.Error{Message: "unsupported command " + typeName(cmd)}
	}
	if err != errAnswered {
		c.respond(cmd, err)
	}
}

// errAnswered: the handler answered the command itself.
var errAnswered = errors.New("openwire: answered")

var errAlreadyConnected = errors.New("openwire: already connected")

// errNoID answers a command without the id it is about (the codec lets a null id
// through; Java's client never sends one).
func errNoID(command, what string) error {
	return &broker.Error{Message: command + " without a " + what + " id"}
}

// respond answers cmd, if it asked for an answer: a Response, or an ExceptionResponse
// for err. An error nobody waits for is logged.
func (c *conn) respond(cmd ow.Command, err error) {
	req, ok := cmd.(ow.Request)
	if !ok || !req.Base().ResponseRequired {
		if err != nil {
			c.log.Debug("openwire request failed", slog.String("type", typeName(cmd)), slog.Any("err", err))
		}
		return
	}
	_ = c.write(response(req.Base().CommandID, err))
}

// response is the answer to the command id: a Response, or an ExceptionResponse for err.
func response(id int32, err error) ow.Command {
	if err == nil {
		return &ow.Response{CorrelationID: id}
	}
	return &ow.ExceptionResponse{Response: ow.Response{CorrelationID: id}, Exception: exception(err)}
}

// completion returns the callback of a request the broker completes later: it queues
// the answer if cmd asked for one.
func (c *conn) completion(cmd ow.Command) func(error) {
	req, ok := cmd.(ow.Request)
	if !ok || !req.Base().ResponseRequired {
		return c.unanswered
	}
	id := req.Base().CommandID
	return func(err error) { c.answer(response(id, err)) }
}

// logFailed logs the failure of a request nobody waits for (conn.unanswered: one
// callback for every such request of the connection, made once).
func (c *conn) logFailed(err error) {
	if err != nil {
		c.log.Debug("openwire request failed", slog.Any("err", err))
	}
}

// exception is the Java exception the client throws for err, as ActiveMQ names them.
func exception(err error) *ow.Throwable {
	class := "javax.jms.JMSException"
	switch {
	case errors.Is(err, broker.ErrNotAuthenticated), errors.Is(err, broker.ErrNotAuthorized):
		class = "java.lang.SecurityException"
	case errors.Is(err, broker.ErrClientIDInUse):
		class = "javax.jms.InvalidClientIDException"
	case errors.Is(err, broker.ErrInvalidDestination):
		class = "javax.jms.InvalidDestinationException"
	case errors.Is(err, broker.ErrInvalidSelector):
		class = "javax.jms.InvalidSelectorException"
	case errors.Is(err, broker.ErrMemoryFull), errors.Is(err, broker.ErrStoreFull),
		errors.Is(err, broker.ErrTooManyDestinations), errors.Is(err, broker.ErrTooManySubscriptions),
		errors.Is(err, broker.ErrTooManyTransactions), errors.Is(err, broker.ErrTooManyDurableSubscriptions):
		class = "javax.jms.ResourceAllocationException"
	case errors.Is(err, errXA):
		class = "javax.transaction.xa.XAException"
	}
	msg := err.Error()
	var be *broker.Error
	if errors.As(err, &be) {
		msg = be.Message
	}
	return &ow.Throwable{Class: class, Message: msg}
}

// onConnection opens the broker connection for the client's ConnectionInfo.
func (c *conn) onConnection(ctx context.Context, info *ow.ConnectionInfo) {
	bc, err := c.b.Connect(ctx, broker.ConnectInfo{
		ClientID: info.ClientID, Login: info.UserName, HasLogin: info.UserName != "", Passcode: info.Password,
		RemoteAddr: c.nc.RemoteAddr().String(), PeerCertificates: peerCertificates(c.nc),
		Protocol: broker.ProtocolOpenWire, Connector: c.cfg.Connector,
		Version: strconv.Itoa(c.w.Format().Version), MessageIDs: true,
		Resumes: connectionID(info),
	})
	if errors.Is(err, broker.ErrLoginThrottled) {
		// Too many failed logins from this address wait out their delay: no answer.
		c.closing = true
		return
	}
	if err != nil {
		c.respond(info, err)
		_ = c.bw.Flush()
		c.closing = true
		return
	}
	c.bc, c.clientID, c.connID = bc, info.ClientID, connectionID(info)
	c.respond(info, nil)
}

// connectionID is the client's id of its connection ("" if it sent none).
func connectionID(info *ow.ConnectionInfo) string {
	if info.ConnectionID == nil {
		return ""
	}
	return info.ConnectionID.Value
}

// peerCertificates returns the client's verified TLS certificate chain, leaf first, or
// nil.
func peerCertificates(nc net.Conn) []*x509.Certificate {
	tc, ok := nc.(*tls.Conn)
	if !ok {
		return nil
	}
	st := tc.ConnectionState()
	if len(st.VerifiedChains) == 0 {
		return nil
	}
	return st.VerifiedChains[0]
}

// session returns the broker session of the client's session id.
func (c *conn) session(id string) *broker.Session {
	s := c.sessions[id]
	if s == nil {
		s = c.bc.Session(id)
		c.sessions[id] = s
	}
	return s
}

// onMessage sends a producer's message. A synchronous send (ResponseRequired) is
// answered once the broker has it (stored, for a persistent one); an asynchronous one
// of a producer with a window gets its ProducerAck then.
func (c *conn) onMessage(ctx context.Context, m *ow.Message) {
	dests, err := c.sendDestinations(m.Destination)
	if err != nil {
		c.respond(m, &broker.Error{Message: err.Error(), Err: broker.ErrInvalidDestination})
		return
	}
	msg, err := toMessage(m)
	if err != nil {
		c.respond(m, &broker.Error{Message: err.Error()})
		return
	}
	done := c.completion(m)
	if !m.ResponseRequired && m.ProducerID != nil {
		if p := c.producers[*m.ProducerID]; p != nil && p.window > 0 {
			ack := &ow.ProducerAck{ProducerID: m.ProducerID, Size: wireSize(m)}
			failed := done
			done = func(err error) {
				failed(err)
				c.answer(ack)
			}
		}
	}
	err = c.bc.Send(ctx, dests, msg, txKey(m.TransactionID), done)
	if err != nil && !c.hold(m, err) {
		done(err)
	}
}

// sendDestinations is toDestinations for a send, reusing the last result when a
// producer sends to the same destination again (the names are only read).
func (c *conn) sendDestinations(d *ow.Destination) ([]broker.Destination, error) {
	if d != nil && c.sendDests != nil && *d == c.sendDest {
		return c.sendDests, nil
	}
	dests, err := toDestinations(d)
	if err != nil {
		return nil, err
	}
	c.sendDest, c.sendDests = *d, dests
	return dests, nil
}

// wireSize is the size ActiveMQ counts a message at against a producer window
// (Message.getSize(): a minimum of 1 KiB plus its body and properties).
func wireSize(m *ow.Message) int32 {
	return int32(1024 + len(m.Content) + len(m.MarshalledProperties))
}

// txKey names a transaction for the broker; "" for none.
func txKey(id ow.TransactionID) string {
	if id == nil {
		return ""
	}
	return id.String()
}

var errXA = errors.New("openwire: XA transactions are not supported")

// onTransaction begins, commits or rolls back a local transaction. A commit is answered
// once its store batch is durable (errAnswered).
func (c *conn) onTransaction(ctx context.Context, t *ow.TransactionInfo) error {
	if _, xa := t.TransactionID.(*ow.XATransactionID); xa {
		return &broker.Error{Message: "XA transactions are not supported by this broker: use local (transacted session) transactions", Err: errXA}
	}
	id := txKey(t.TransactionID)
	switch t.Type {
	case ow.TxBegin:
		return c.bc.Begin(id)
	case ow.TxCommitOnePhase:
		if err := c.bc.Commit(ctx, id, c.completion(t)); err != nil {
			return err
		}
		return errAnswered
	case ow.TxRollback:
		return c.bc.Abort(id)
	case ow.TxEnd:
		return nil
	}
	return &broker.Error{Message: "transaction operation " + strconv.Itoa(int(t.Type)) + " is XA's, which this broker does not support", Err: errXA}
}

// onRemove closes a consumer, session, producer or the connection.
func (c *conn) onRemove(ctx context.Context, r *ow.RemoveInfo) error {
	switch id := r.ObjectID.(type) {
	case *ow.ConsumerID:
		cons := c.consumerOf(id)
		if cons == nil {
			return nil
		}
		return c.removeConsumer(ctx, cons, r.LastDeliveredSequenceID)
	case *ow.SessionID:
		sid := id.String()
		if s := c.sessions[sid]; s != nil {
			// The session's consumers, with what its client says it delivered of them
			// (the highest of its consumers'), then whatever the session still holds.
			for _, cons := range c.consumers {
				if cons.session == sid {
					if err := c.removeConsumer(ctx, cons, r.LastDeliveredSequenceID); err != nil {
						return err
					}
				}
			}
			for _, p := range c.producers {
				if p.id.SessionID == id.Value && p.id.ConnectionID == id.ConnectionID {
					c.dropProducer(p.id)
				}
			}
			s.Close()
			delete(c.sessions, sid)
		}
	case *ow.ProducerID:
		c.dropProducer(id)
	case *ow.ConnectionID:
		// The broker connection ends now (what the client held goes back); the socket
		// stays for the client's ShutdownInfo, which follows, as with ActiveMQ.
		c.bc.Close()
	}
	return nil
}

// onProducer registers a producer: with the broker, which authorizes and announces a
// producer of one destination, and here, for its window.
func (c *conn) onProducer(p *ow.ProducerInfo) error {
	if p.ProducerID == nil {
		return &broker.Error{Message: "ProducerInfo without a producer id"}
	}
	var dest *broker.Destination
	if p.Destination != nil {
		ds, err := toDestinations(p.Destination)
		if err != nil {
			return &broker.Error{Message: err.Error(), Err: broker.ErrInvalidDestination}
		}
		if len(ds) == 1 { // a composite destination's producer is announced by nobody
			dest = &ds[0]
		}
	}
	if err := c.bc.AddProducer(producerID(p.ProducerID), dest, p.WindowSize); err != nil {
		return err
	}
	c.producers[*p.ProducerID] = &producer{id: p.ProducerID, window: p.WindowSize}
	return nil
}

// dropProducer forgets a producer, here and with the broker.
func (c *conn) dropProducer(id *ow.ProducerID) {
	delete(c.producers, *id)
	c.bc.RemoveProducer(producerID(id))
}

func producerID(id *ow.ProducerID) broker.ProducerID {
	return broker.ProducerID{Session: id.SessionID, Value: id.Value}
}

// removeConsumer removes cons and its subscriptions. What they hold unacknowledged goes
// back to its queues; of that, what was dispatched after the message of broker sequence
// id lastDelivered (the client's last given to its application: a delivery tag, see
// dispatch) the client only prefetched, and it goes back as never delivered, as
// ActiveMQ's broker reads a RemoveInfo's lastDeliveredSequenceId.
func (c *conn) removeConsumer(ctx context.Context, cons *consumer, lastDelivered int64) error {
	c.dropConsumer(cons)
	req := broker.UnsubscribeRequest{}
	if lastDelivered != ow.LastDeliveredUnknown {
		tag := uint64(max(lastDelivered, 0)) // unset (-1): nothing was delivered
		req.Delivered = &tag
	}
	for _, sub := range cons.subs {
		req.ID = sub.ID
		if err := c.bc.Unsubscribe(ctx, req); err != nil {
			return err
		}
	}
	return nil
}

// dropConsumer forgets a consumer and its waiting pulls.
func (c *conn) dropConsumer(cons *consumer) {
	delete(c.consumers, *cons.id)
	for _, s := range cons.subs {
		delete(c.bySub, s.ID)
	}
	c.dropPulls(cons)
}

// dropPulls forgets the waiting pulls of cons.
func (c *conn) dropPulls(cons *consumer) {
	kept := c.pulls[:0]
	for _, p := range c.pulls {
		if p.c != cons {
			kept = append(kept, p)
		}
	}
	c.pulls = kept
}

// onDestination creates or deletes a temporary destination; other destinations need no
// creating (the first use creates them).
func (c *conn) onDestination(d *ow.DestinationInfo) error {
	if d.Destination == nil || !d.Destination.IsTemporary() {
		return nil
	}
	bd, err := toDestination(d.Destination)
	if err != nil {
		return &broker.Error{Message: err.Error(), Err: broker.ErrInvalidDestination}
	}
	bd.Remote = false
	if d.OperationType == ow.DestRemove {
		return c.bc.DeleteTemp(bd)
	}
	return c.bc.CreateTemp(bd)
}

func typeName(cmd ow.Command) string {
	if cmd == nil {
		return "nil"
	}
	return strconv.Itoa(int(cmd.DataType()))
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
