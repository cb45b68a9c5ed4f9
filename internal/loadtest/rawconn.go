package loadtest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
)

// rawConn is a STOMP connection driven frame by frame, for the set-up and
// clean-up of the durable scenario: every request carries a receipt and
// waits for it. go-stomp cannot do either step. It routes the RECEIPT of a
// receipted SUBSCRIBE to the subscription, which then closes (see the
// package comment), and it sends UNSUBSCRIBE only for a subscription of its
// own connection, while deleting a durable subscription must name one that
// no connection holds.
type rawConn struct {
	nc       net.Conn
	r        *frame.Reader
	w        *frame.Writer
	timeout  time.Duration // per request
	receipts int
	stop     func() bool // releases the context watch
}

// dialRaw connects as clientID (see retryTaken); timeout bounds every
// request.
func dialRaw(ctx context.Context, o Options, clientID string, timeout time.Duration) (*rawConn, error) {
	return retryTaken(ctx, func() (*rawConn, error) { return dialRawOnce(ctx, o, clientID, timeout) })
}

func dialRawOnce(ctx context.Context, o Options, clientID string, timeout time.Duration) (*rawConn, error) {
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", o.Addr)
	if err != nil {
		return nil, err
	}
	c := &rawConn{
		nc:      nc,
		r:       frame.NewReader(nc),
		w:       frame.NewWriter(nc),
		timeout: timeout,
		stop:    context.AfterFunc(ctx, func() { nc.Close() }),
	}
	versions := "1.0,1.1,1.2"
	if o.Version != "" {
		versions = o.Version
	}
	f := frame.New(frame.CONNECT,
		frame.AcceptVersion, versions,
		frame.Host, host,
		frame.HeartBeat, "0,0",
		"client-id", clientID)
	if o.Login != "" || o.Passcode != "" {
		f.Header.Add(frame.Login, o.Login)
		f.Header.Add(frame.Passcode, o.Passcode)
	}
	reply, err := c.exchange(ctx, f, "")
	if err == nil && reply.Command != frame.CONNECTED {
		err = fmt.Errorf("unexpected %s frame in answer to CONNECT", reply.Command)
	}
	if err != nil {
		c.abort()
		return nil, err
	}
	return c, nil
}

// request sends f with a receipt and waits for it.
func (c *rawConn) request(ctx context.Context, f *frame.Frame) error {
	c.receipts++
	id := "bench-" + strconv.Itoa(c.receipts)
	f.Header.Set(frame.Receipt, id)
	_, err := c.exchange(ctx, f, id)
	return err
}

// exchange writes f and returns the RECEIPT with receipt-id receipt or,
// when receipt is empty, the first frame other than a MESSAGE. An ERROR
// frame is returned as an error with its message.
func (c *rawConn) exchange(ctx context.Context, f *frame.Frame, receipt string) (*frame.Frame, error) {
	fail := func(err error) (*frame.Frame, error) {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return nil, err
	}
	if err := c.nc.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return fail(err)
	}
	if err := c.w.Write(f); err != nil {
		return fail(err)
	}
	for {
		reply, err := c.r.Read()
		if err != nil {
			return fail(fmt.Errorf("%s: %w", f.Command, err))
		}
		switch {
		case reply == nil, reply.Command == frame.MESSAGE: // heart-beat; nothing asked for
		case reply.Command == frame.ERROR:
			return fail(fmt.Errorf("%s: ERROR: %s", f.Command, reply.Header.Get(frame.Message)))
		case receipt == "":
			return reply, nil
		case reply.Command == frame.RECEIPT && reply.Header.Get(frame.ReceiptId) == receipt:
			return reply, nil
		}
	}
}

// close says DISCONNECT, waits for its receipt, and closes the socket.
func (c *rawConn) close(ctx context.Context) error {
	defer c.abort()
	return c.request(ctx, frame.New(frame.DISCONNECT))
}

// abort closes the socket.
func (c *rawConn) abort() {
	c.stop()
	c.nc.Close()
}
