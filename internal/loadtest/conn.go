package loadtest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
)

const (
	// readBuffer is go-stomp's read buffer; because of a go-stomp bug
	// (ConnectWithContext builds the writer with ReadBufferSize) it is the
	// write buffer too.
	readBuffer = 64 << 10

	// readQueue is the capacity of go-stomp's frame channel from its reader
	// to its processing goroutine; a deeper queue lets the reader run ahead.
	// Client-ack consumers use ackQueue instead.
	readQueue = 1024

	// producerWriteQueue is the capacity of a producer's outgoing frame
	// channel; deep enough to pipeline, shallow enough that "sent" means
	// "about to be written".
	producerWriteQueue = 256

	// activemqMaxPrefetch is ActiveMQ's largest default prefetch (a
	// non-durable topic, Short.MAX_VALUE); see ackQueue.
	activemqMaxPrefetch = 32767

	// sendPoll is go-stomp's send timeout: how long Send waits for room on
	// its outgoing channel before it gives up; see producer.send.
	sendPoll = 250 * time.Millisecond

	// disconnectTimeout bounds the wait for a DISCONNECT receipt.
	disconnectTimeout = 5 * time.Second

	// clientIDRetry is the pause before connecting again with a client-id
	// the broker still holds; see retryTaken.
	clientIDRetry = 20 * time.Millisecond

	// durableName is the subscription name of every durable subscriber
	// (activemq.subscriptionName); their client-ids tell them apart.
	durableName = "sub"

	// durableSubID is the SUBSCRIBE id of a durable subscriber.
	durableSubID = "bench-durable"
)

// ackQueue is the capacity of both go-stomp channels of a client-ack
// consumer.
//
// Outgoing: go-stomp has one goroutine that both hands MESSAGE frames to the
// subscription and writes outgoing frames. If the consumer blocks in Ack on
// a full outgoing channel while that goroutine blocks handing it the next
// MESSAGE, neither moves again.
//
// Incoming: go-stomp's reader keeps draining the socket while the consumer
// lags. A broker whose writes to a consumer stall may stop reading that
// consumer's ACKs: ActiveMQ 5.17 holds the connection's transport lock
// while it writes a MESSAGE, so its reader waits for it.
//
// The broker never has more unacked messages out than the prefetch, so
// channels that hold one frame per prefetched message are never full.
func ackQueue(prefetch int) int {
	return max(prefetch, activemqMaxPrefetch) + 64
}

// client is one STOMP connection of a producer or consumer: go-stomp's
// client, or the load tool's own (w; see Options.Client). It keeps the
// socket so that a run can be torn down even when go-stomp is blocked:
// closing the socket fails every pending read, write and receipt wait
// inside the library.
type client struct {
	net      net.Conn
	stomp    *stomp.Conn // go-stomp; nil for the raw client
	w        *wire       // the raw client; nil for go-stomp
	writeCap int
}

// dial opens a STOMP connection, as clientID when not empty (see
// retryTaken). For go-stomp, readCap and writeCap are the capacities of
// its channels. ctx bounds the TCP connect and the CONNECT/CONNECTED
// exchange.
func dial(ctx context.Context, o Options, clientID string, readCap, writeCap int) (*client, error) {
	if o.Client == ClientRaw {
		w, err := dialWire(ctx, o, clientID, o.IdleTimeout)
		if err != nil {
			return nil, err
		}
		return &client{net: w.nc, w: w}, nil
	}
	return retryTaken(ctx, func() (*client, error) {
		return dialOnce(ctx, o, clientID, readCap, writeCap)
	})
}

// close closes the connection at once.
func (c *client) close() {
	if c.w != nil {
		c.w.close()
		return
	}
	c.net.Close()
}

// dials counts the connections dialTCP opened, to spread them over a list of
// addresses.
var dials atomic.Uint64

// dialTCP opens a socket to addr and returns it with the host for the
// CONNECT frame. addr may list several brokers (the nodes of a shared-mode
// cluster), comma-separated: each call takes the next, round-robin, so the
// consumers (dialed first) and the producers each spread over them.
func dialTCP(ctx context.Context, addr string) (nc net.Conn, host string, err error) {
	if list := strings.Split(addr, ","); len(list) > 1 {
		addr = strings.TrimSpace(list[(dials.Add(1)-1)%uint64(len(list))])
	}
	host, _, err = net.SplitHostPort(addr)
	if err != nil {
		return nil, "", err
	}
	var d net.Dialer
	nc, err = d.DialContext(ctx, "tcp", addr)
	return nc, host, err
}

func dialOnce(ctx context.Context, o Options, clientID string, readCap, writeCap int) (*client, error) {
	nc, host, err := dialTCP(ctx, o.Addr)
	if err != nil {
		return nil, err
	}
	// A broker that accepts the socket but never answers CONNECT would
	// hold the exchange forever; closing the socket ends it.
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()

	opts := []func(*stomp.Conn) error{
		stomp.ConnOpt.Host(host),
		stomp.ConnOpt.HeartBeat(0, 0),
		stomp.ConnOpt.Logger(discardLogger{}),
		stomp.ConnOpt.ReadBufferSize(readBuffer),
		stomp.ConnOpt.ReadChannelCapacity(readCap),
		stomp.ConnOpt.WriteChannelCapacity(writeCap),
		stomp.ConnOpt.MsgSendTimeout(sendPoll),
		stomp.ConnOpt.RcvReceiptTimeout(o.IdleTimeout),
		stomp.ConnOpt.DisconnectReceiptTimeout(disconnectTimeout),
	}
	if o.Version != "" {
		opts = append(opts, stomp.ConnOpt.AcceptVersion(stomp.Version(o.Version)))
	}
	if o.Login != "" || o.Passcode != "" {
		opts = append(opts, stomp.ConnOpt.Login(o.Login, o.Passcode))
	}
	if clientID != "" {
		opts = append(opts, stomp.ConnOpt.Header("client-id", clientID))
	}
	sc, err := stomp.ConnectWithContext(ctx, nc, opts...)
	if err != nil {
		nc.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return nil, err
	}
	return &client{net: nc, stomp: sc, writeCap: writeCap}, nil
}

// retryTaken calls dial until it succeeds, fails for another reason than
// a client-id in use (which only a CONNECT with a client-id meets), or ctx
// ends. A broker may hold a client-id for a
// moment after it answered the DISCONNECT of the connection that had it:
// this project's broker releases it only once that session has ended, just
// after the receipt.
func retryTaken[C any](ctx context.Context, dial func() (C, error)) (C, error) {
	for {
		c, err := dial()
		if err == nil || !clientIDTaken(err) {
			return c, err
		}
		t := time.NewTimer(clientIDRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return c, fmt.Errorf("%w (%w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// clientIDTaken reports whether err is a broker's refusal of a CONNECT
// whose client-id is in use, in the words of ActiveMQ and this project's
// broker: "Client: <id> already connected from ...".
func clientIDTaken(err error) bool {
	return strings.Contains(err.Error(), "already connected")
}

// subscribe subscribes to dest, to the durable subscription of the
// connection's client-id when durable. The caller must start draining the
// subscription before calling confirm. The raw client returns no
// subscription: its consumer reads the connection itself.
func (c *client) subscribe(o Options, mode stomp.AckMode, durable bool) (*stomp.Subscription, error) {
	var hs []string
	if durable {
		hs = append(hs, "activemq.subscriptionName", durableName)
	}
	if o.Prefetch > 0 {
		hs = append(hs, "activemq.prefetchSize", strconv.Itoa(o.Prefetch))
	}
	if o.Selector != "" {
		hs = append(hs, "selector", o.Selector)
	}
	more, err := parseHeaders(o.ConsumerHeaders)
	if err != nil {
		return nil, err
	}
	hs = append(hs, more...)
	if c.w != nil {
		id := "bench"
		if durable {
			id = durableSubID
		}
		return nil, c.w.put(func(b []byte) []byte {
			b = append(b, frame.SUBSCRIBE...)
			b = c.w.appendHeader(b, frame.Destination, o.subscribed())
			b = c.w.appendHeader(b, frame.Id, id)
			b = c.w.appendHeader(b, frame.Ack, mode.String())
			for i := 0; i+1 < len(hs); i += 2 {
				b = c.w.appendHeader(b, hs[i], hs[i+1])
			}
			return append(b, "\n\n\x00"...)
		})
	}
	var opts []func(*frame.Frame) error
	if durable {
		opts = append(opts, stomp.SubscribeOpt.Id(durableSubID))
	}
	for i := 0; i+1 < len(hs); i += 2 {
		opts = append(opts, stomp.SubscribeOpt.Header(hs[i], hs[i+1]))
	}
	return c.stomp.Subscribe(o.subscribed(), mode, opts...)
}

// confirm waits until the broker has processed every frame sent before it,
// with a receipted no-op: BEGIN and ABORT of an empty transaction.
func (c *client) confirm(ctx context.Context) error {
	stop := context.AfterFunc(ctx, c.close)
	defer stop()
	var err error
	if c.w != nil {
		err = c.w.put(func(b []byte) []byte {
			return append(b, "BEGIN\ntransaction:bench-confirm\n\n\x00"...)
		})
		if err == nil {
			err = c.w.request(frame.New(frame.ABORT, frame.Transaction, "bench-confirm"))
		}
	} else {
		var tx *stomp.Transaction
		if tx, err = c.stomp.BeginWithError(); err == nil {
			err = tx.AbortWithReceipt()
		}
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return err
}

// disconnect says DISCONNECT and waits for its receipt when that cannot
// block, then closes the socket. It returns the error of the DISCONNECT,
// which carries the message of an ERROR frame the broker sent earlier.
func (c *client) disconnect() error {
	if c.w != nil {
		return c.w.disconnect()
	}
	defer c.net.Close()
	// go-stomp puts DISCONNECT on the outgoing channel without a timeout
	// while holding the lock its processing goroutine needs to exit, so
	// only try when there is room. Nothing else is added meanwhile: the
	// caller has stopped sending, and a consumer acks at most one more.
	if c.stomp.Stats().CurrentWriteChanSize+1 >= c.writeCap {
		return nil
	}
	return c.stomp.Disconnect()
}

// discardLogger silences go-stomp: everything it would log reaches the run
// as an error value anyway.
type discardLogger struct{}

func (discardLogger) Debugf(string, ...any)   {}
func (discardLogger) Infof(string, ...any)    {}
func (discardLogger) Warningf(string, ...any) {}
func (discardLogger) Errorf(string, ...any)   {}
func (discardLogger) Debug(string)            {}
func (discardLogger) Info(string)             {}
func (discardLogger) Warning(string)          {}
func (discardLogger) Error(string)            {}
