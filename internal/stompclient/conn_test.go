package stompclient

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/stompcodec"
)

// peer is the server side of one connection of a fake broker.
type peer struct {
	t  *testing.T
	nc net.Conn
	r  *stompcodec.Reader
	w  *stompcodec.Writer
}

func (p *peer) read() *frame.Frame {
	for {
		f, err := p.r.Read()
		if err != nil {
			p.t.Errorf("fake broker: read: %v", err)
			return frame.New("EOF")
		}
		if f != nil {
			return f
		}
	}
}

func (p *peer) write(command string, kv ...string) {
	p.writeBody(command, nil, kv...)
}

func (p *peer) writeBody(command string, body []byte, kv ...string) {
	f := frame.New(command, kv...)
	f.Body = body
	if err := p.w.WriteFrame(f); err != nil {
		p.t.Errorf("fake broker: write: %v", err)
	}
	if err := p.w.Flush(); err != nil {
		p.t.Errorf("fake broker: flush: %v", err)
	}
}

// fakeBroker accepts one connection on 127.0.0.1:0 and runs script on it in a goroutine;
// it returns the URL to dial (as user u, password hunter2) and a channel closed when
// the script returned.
func fakeBroker(t *testing.T, script func(p *peer)) (*URL, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		defer nc.Close()
		script(&peer{t: t, nc: nc, r: stompcodec.NewReader(nc, stompcodec.Limits{}), w: stompcodec.NewWriter(nc, 0)})
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return &URL{Scheme: SchemeSTOMP, Host: "127.0.0.1", Port: port, Login: "u", Passcode: "hunter2", HasLogin: true}, done
}

// accept reads CONNECT and answers CONNECTED with version.
func (p *peer) accept(version string) *frame.Frame {
	f := p.read()
	assert.Equal(p.t, frame.CONNECT, f.Command)
	p.write(frame.CONNECTED, frame.Version, version, frame.Server, "fake/1")
	p.r.SetVersion(version)
	p.w.SetVersion(version)
	return f
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestConnect: CONNECT carries the login, passcode, client-id and no heart-beats; the
// negotiated version and server come from CONNECTED.
func TestConnect(t *testing.T) {
	got := make(chan *frame.Frame, 1)
	u, done := fakeBroker(t, func(p *peer) {
		got <- p.accept(stompcodec.V11)
		f := p.read()
		assert.Equal(t, frame.DISCONNECT, f.Command)
		p.write(frame.RECEIPT, frame.ReceiptId, f.Header.Get(frame.Receipt))
	})
	c, err := Dial(ctxT(t), u, Options{ClientID: "tool"})
	require.NoError(t, err)
	assert.Equal(t, stompcodec.V11, c.Version())
	assert.Equal(t, "fake/1", c.Server())
	f := <-got
	assert.Equal(t, "u", f.Header.Get(frame.Login))
	assert.Equal(t, "hunter2", f.Header.Get(frame.Passcode))
	assert.Equal(t, "tool", f.Header.Get("client-id"))
	assert.Equal(t, "0,0", f.Header.Get(frame.HeartBeat))
	assert.Equal(t, "1.0,1.1,1.2", f.Header.Get(frame.AcceptVersion))
	require.NoError(t, c.Disconnect(ctxT(t)))
	<-done
}

// TestConnectRefused: an ERROR in answer to CONNECT is a *BrokerError with its message,
// and the error names the URL without the password.
func TestConnectRefused(t *testing.T) {
	u, _ := fakeBroker(t, func(p *peer) {
		p.read()
		p.write(frame.ERROR, frame.Message, "User name [u] or password is invalid.")
	})
	_, err := Dial(ctxT(t), u, Options{})
	var be *BrokerError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "User name [u] or password is invalid.", be.Message)
	assert.Equal(t, "connect stomp://u:xxxxx@"+u.Addr()+": broker refused: User name [u] or password is invalid.", err.Error())
}

// TestConnectTimeout: a broker that never answers CONNECT fails Dial after the timeout.
func TestConnectTimeout(t *testing.T) {
	u, _ := fakeBroker(t, func(p *peer) {
		p.read()
		_, _ = p.nc.Read(make([]byte, 1)) // until the client gives up
	})
	// The ctx's deadline would end Dial too, with the same error: it is set far beyond
	// the 200ms Timeout, and the bound, half of it, tells which of the two ended Dial
	// however busy the machine (issue 27).
	const ctxLimit = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), ctxLimit)
	defer cancel()
	start := time.Now()
	_, err := Dial(ctx, u, Options{Timeout: 200 * time.Millisecond})
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), ctxLimit/2, "Dial waited for its ctx, not for Options.Timeout")
}

// TestSendPipelinesReceipts: sends do not wait for their receipts, which the fake
// broker holds back until it has read all of them.
func TestSendPipelinesReceipts(t *testing.T) {
	const n = 50
	u, done := fakeBroker(t, func(p *peer) {
		p.accept(stompcodec.V12)
		var ids []string
		for range n {
			f := p.read()
			assert.Equal(t, frame.SEND, f.Command)
			assert.Equal(t, "/queue/x", f.Header.Get(frame.Destination))
			assert.Equal(t, "v:1", f.Header.Get("k"), "escaped and unescaped")
			assert.Equal(t, "4", f.Header.Get(frame.ContentLength))
			assert.Equal(t, "b\x00dy", string(f.Body))
			ids = append(ids, f.Header.Get(frame.Receipt))
		}
		for _, id := range ids {
			p.write(frame.RECEIPT, frame.ReceiptId, id)
		}
		f := p.read()
		assert.Equal(t, frame.DISCONNECT, f.Command)
		p.write(frame.RECEIPT, frame.ReceiptId, f.Header.Get(frame.Receipt))
	})
	c, err := Dial(ctxT(t), u, Options{})
	require.NoError(t, err)
	h := frame.NewHeader("k", "v:1")
	for i := range n {
		_, err := c.Send("/queue/x", h, []byte("b\x00dy"), true)
		require.NoError(t, err)
		assert.Equal(t, i+1, c.Outstanding())
	}
	for range n {
		_, err := c.AwaitReceipt(ctxT(t))
		require.NoError(t, err)
	}
	assert.Zero(t, c.Outstanding())
	require.NoError(t, c.Disconnect(ctxT(t)))
	<-done
}

// TestErrorOfSendWithoutReceipt: the ERROR frame answering a SEND that asked for no
// receipt is reported by Err and by Disconnect, with its message: go-stomp's client
// would drop it.
func TestErrorOfSendWithoutReceipt(t *testing.T) {
	refused := make(chan struct{})
	u, _ := fakeBroker(t, func(p *peer) {
		p.accept(stompcodec.V12)
		p.read()
		p.writeBody(frame.ERROR, []byte("detail"), frame.Message, "User u is not authorized to write to: queue://x")
		close(refused)
		// A DISCONNECT may follow (unanswered: the client stopped reading), or not (the
		// client saw the ERROR first).
		_, _ = p.nc.Read(make([]byte, 1024))
	})
	c, err := Dial(ctxT(t), u, Options{})
	require.NoError(t, err)
	_, err = c.Send("/queue/x", nil, []byte("x"), false)
	require.NoError(t, err)
	<-refused
	err = c.Disconnect(ctxT(t))
	var be *BrokerError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "broker refused: User u is not authorized to write to: queue://x", err.Error())
	assert.Equal(t, "detail", be.Detail)
	assert.Equal(t, err, c.Err())
}

// TestSubscribeReceiveAck: MESSAGE frames that come before the SUBSCRIBE's receipt are
// kept for Receive, in order; ACK names a message as the version says.
func TestSubscribeReceiveAck(t *testing.T) {
	for _, version := range []string{stompcodec.V10, stompcodec.V11, stompcodec.V12} {
		t.Run(version, func(t *testing.T) {
			acks := make(chan *frame.Frame, 2)
			u, done := fakeBroker(t, func(p *peer) {
				p.accept(version)
				sub := p.read()
				assert.Equal(t, frame.SUBSCRIBE, sub.Command)
				assert.Equal(t, "client-individual", sub.Header.Get(frame.Ack))
				assert.Equal(t, "a > 1", sub.Header.Get("selector"))
				assert.Equal(t, "7", sub.Header.Get("activemq.prefetchSize"))
				assert.Equal(t, "d", sub.Header.Get("activemq.subscriptionName"))
				assert.Equal(t, "first", sub.Header.Get("x-stream-offset"))
				id := sub.Header.Get(frame.Id)
				for i := range 2 {
					s := strconv.Itoa(i)
					p.writeBody(frame.MESSAGE, []byte("m"+s), frame.Subscription, id, frame.MessageId, "ID:"+s, frame.Ack, "a"+s)
				}
				p.write(frame.RECEIPT, frame.ReceiptId, sub.Header.Get(frame.Receipt))
				acks <- p.read()
				acks <- p.read()
			})
			c, err := Dial(ctxT(t), u, Options{})
			require.NoError(t, err)
			defer c.Close()
			require.NoError(t, c.Subscribe(ctxT(t), Subscription{
				Destination: "/topic/t", Ack: "client-individual", Selector: "a > 1", Prefetch: 7,
				DurableName: "d", Headers: frame.NewHeader("x-stream-offset", "first"),
			}))
			for i := range 2 {
				m, err := c.Receive(ctxT(t))
				require.NoError(t, err)
				assert.Equal(t, "m"+strconv.Itoa(i), string(m.Body))
				require.NoError(t, c.Ack(m))
			}
			<-done
			for i := range 2 {
				a := <-acks
				s := strconv.Itoa(i)
				assert.Equal(t, frame.ACK, a.Command)
				switch version {
				case stompcodec.V12:
					assert.Equal(t, "a"+s, a.Header.Get(frame.Id))
				case stompcodec.V11:
					assert.Equal(t, "ID:"+s, a.Header.Get(frame.MessageId))
					assert.Equal(t, "1", a.Header.Get(frame.Subscription))
				default:
					assert.Equal(t, "ID:"+s, a.Header.Get(frame.MessageId))
				}
			}
		})
	}
}

// TestCloseInterruptsReceive: Close from another goroutine ends a Receive with
// ErrClosed.
func TestCloseInterruptsReceive(t *testing.T) {
	u, _ := fakeBroker(t, func(p *peer) {
		p.accept(stompcodec.V12)
		_, _ = p.nc.Read(make([]byte, 1))
	})
	c, err := Dial(ctxT(t), u, Options{})
	require.NoError(t, err)
	time.AfterFunc(50*time.Millisecond, func() { _ = c.Close() })
	_, err = c.Receive(ctxT(t))
	assert.ErrorIs(t, err, ErrClosed)
	_, err = c.Send("/queue/x", nil, nil, false)
	assert.ErrorIs(t, err, ErrClosed)
	assert.NoError(t, c.Close(), "a second Close")
}

// TestBrokerClosesConnection: the connection ending without an ERROR is ErrClosed.
func TestBrokerClosesConnection(t *testing.T) {
	u, _ := fakeBroker(t, func(p *peer) { p.accept(stompcodec.V12) })
	c, err := Dial(ctxT(t), u, Options{})
	require.NoError(t, err)
	_, err = c.Receive(ctxT(t))
	assert.ErrorIs(t, err, ErrClosed)
	assert.False(t, errors.As(err, new(*BrokerError)))
}
