package tests

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"
)

// jmsClient is the raw STOMP 1.2 client of the JMS-semantics tests. A goroutine reads the
// connection into a channel, so a test can wait for a frame with a deadline, or make sure
// none comes, without a read timeout (which would end the frame reader for good). Every
// request asks for a receipt and waits for it; MESSAGE frames that arrive meanwhile are
// kept and handed out by next.
type jmsClient struct {
	t      testing.TB
	raw    *rawConn
	frames chan *frame.Frame // closed when the connection ends
	held   []*frame.Frame    // MESSAGE frames read while waiting for something else
	seq    int
}

// jmsDial connects with STOMP 1.2 (plus the given CONNECT headers).
func jmsDial(t testing.TB, addr string, headers ...string) *jmsClient {
	t.Helper()
	raw := dialRaw(t, addr)
	f := raw.connect(headers...)
	require.Equal(t, "CONNECTED", f.Command, "CONNECT refused: %s", f.Header.Get("message"))
	require.NoError(t, raw.nc.SetReadDeadline(time.Time{}))
	c := &jmsClient{t: t, raw: raw, frames: make(chan *frame.Frame, 256)}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		defer close(c.frames)
		for {
			f, err := raw.r.Read()
			if err != nil {
				return
			}
			if f == nil {
				continue // heart-beat
			}
			select {
			case c.frames <- f:
			case <-done:
				return
			}
		}
	}()
	return c
}

// read returns the next frame, or false if none came within d. The connection ending
// fails the test.
func (c *jmsClient) read(d time.Duration) (*frame.Frame, bool) {
	c.t.Helper()
	timer := time.NewTimer(max(d, 0))
	defer timer.Stop()
	select {
	case f, ok := <-c.frames:
		if !ok {
			c.t.Fatal("the broker closed the connection")
		}
		return f, true
	case <-timer.C:
		return nil, false
	}
}

// exchange sends f with a receipt and returns the broker's answer to it: its RECEIPT, or
// an ERROR carrying its receipt-id.
func (c *jmsClient) exchange(f *frame.Frame) *frame.Frame {
	c.t.Helper()
	c.seq++
	id := "r" + strconv.Itoa(c.seq)
	f.Header.Set("receipt", id)
	c.raw.send(f)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, ok := c.read(time.Until(deadline))
		if !ok {
			c.t.Fatalf("no answer to %s %v within 10s", f.Command, f.Header)
		}
		switch {
		case got.Command == "MESSAGE":
			c.held = append(c.held, got)
		case got.Header.Get("receipt-id") == id:
			return got
		default:
			c.t.Fatalf("unexpected %s %v while waiting for the receipt of %s", got.Command, got.Header, f.Command)
		}
	}
}

// do sends a frame and requires its RECEIPT.
func (c *jmsClient) do(command string, headers ...string) {
	c.t.Helper()
	got := c.exchange(frame.New(command, headers...))
	require.Equal(c.t, "RECEIPT", got.Command, "%s %v: %s", command, headers, got.Header.Get("message"))
}

// refused sends a frame and requires an ERROR answering it; it returns the ERROR.
func (c *jmsClient) refused(command string, headers ...string) *frame.Frame {
	c.t.Helper()
	got := c.exchange(frame.New(command, headers...))
	require.Equal(c.t, "ERROR", got.Command, "%s %v was accepted", command, headers)
	return got
}

// send sends a message and waits for its receipt (for a persistent one, until it is stored).
func (c *jmsClient) send(dest, body string, headers ...string) {
	c.t.Helper()
	f := frame.New("SEND", append([]string{"destination", dest}, headers...)...)
	f.Body = []byte(body)
	got := c.exchange(f)
	require.Equal(c.t, "RECEIPT", got.Command, "SEND to %s: %s", dest, got.Header.Get("message"))
}

// subscribe subscribes (ack auto unless headers say otherwise) and returns the
// subscription id once the broker has registered it.
func (c *jmsClient) subscribe(dest string, headers ...string) string {
	c.t.Helper()
	c.seq++
	id := "s" + strconv.Itoa(c.seq)
	c.do("SUBSCRIBE", append([]string{"id", id, "destination", dest}, headers...)...)
	return id
}

// sync proves that the broker has processed every frame this client sent before.
func (c *jmsClient) sync() {
	c.t.Helper()
	c.do("SEND", "destination", "/topic/jms.sync")
}

// nextWithin returns the next MESSAGE for subscription sub, or nil if none came within d.
func (c *jmsClient) nextWithin(sub string, d time.Duration) *frame.Frame {
	c.t.Helper()
	for i, m := range c.held {
		if m.Header.Get("subscription") == sub {
			c.held = slices.Delete(c.held, i, i+1)
			return m
		}
	}
	deadline := time.Now().Add(d)
	for {
		f, ok := c.read(time.Until(deadline))
		if !ok {
			return nil
		}
		if f.Command != "MESSAGE" {
			c.t.Fatalf("unexpected %s %v while waiting for a message", f.Command, f.Header)
		}
		if f.Header.Get("subscription") == sub {
			return f
		}
		c.held = append(c.held, f)
	}
}

// next returns the next MESSAGE for sub within 10 s.
func (c *jmsClient) next(sub string) *frame.Frame {
	c.t.Helper()
	m := c.nextWithin(sub, 10*time.Second)
	if m == nil {
		c.t.Fatalf("no message for subscription %s within 10s", sub)
	}
	return m
}

// expectNone requires that sub gets nothing for d. Only meaningful after a receipt proved
// that the broker processed everything that could have produced a message.
func (c *jmsClient) expectNone(sub string, d time.Duration) {
	c.t.Helper()
	if m := c.nextWithin(sub, d); m != nil {
		c.t.Fatalf("unexpected message on %s: %v %q", sub, m.Header, m.Body)
	}
}

// drain returns what sub receives until it has been quiet for d. Like expectNone it is
// only meaningful after a receipt proved that everything that could produce a message
// was processed.
func (c *jmsClient) drain(sub string, d time.Duration) []*frame.Frame {
	c.t.Helper()
	var out []*frame.Frame
	for {
		m := c.nextWithin(sub, d)
		if m == nil {
			return out
		}
		out = append(out, m)
	}
}

func (c *jmsClient) ack(m *frame.Frame) {
	c.t.Helper()
	c.do("ACK", "id", m.Header.Get("ack"))
}

func (c *jmsClient) nack(m *frame.Frame) {
	c.t.Helper()
	c.do("NACK", "id", m.Header.Get("ack"))
}

// leave disconnects cleanly and waits until the broker has closed the connection, which
// it does only after the connection's subscriptions are gone.
func (c *jmsClient) leave() {
	c.t.Helper()
	c.do("DISCONNECT")
	c.awaitClose()
}

// drop closes the socket without DISCONNECT, as a crashed client does.
func (c *jmsClient) drop() {
	c.t.Helper()
	require.NoError(c.t, c.raw.nc.Close())
}

func (c *jmsClient) awaitClose() {
	c.t.Helper()
	timer := time.NewTimer(5 * time.Second)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-c.frames:
			if !ok {
				return
			}
		case <-timer.C:
			c.t.Fatal("the broker did not close the connection within 5s")
		}
	}
}

// browse runs a queue browser (SUBSCRIBE browser:true) and returns the messages it saw,
// requiring the browser:end marker after them.
func (c *jmsClient) browse(dest string, headers ...string) []*frame.Frame {
	c.t.Helper()
	id := c.subscribe(dest, append([]string{"browser", "true"}, headers...)...)
	var out []*frame.Frame
	for {
		m := c.next(id)
		if m.Header.Get("browser") == "end" {
			require.Empty(c.t, m.Body, "browser:end carries no body")
			break
		}
		out = append(out, m)
	}
	c.do("UNSUBSCRIBE", "id", id)
	return out
}

// jmsSub names one subscription of one client.
type jmsSub struct {
	c  *jmsClient
	id string
}

// jmsCollect reads n messages in all from subs, whichever gets them, within 10 s, and returns
// what each subscription got.
func jmsCollect(t testing.TB, n int, subs ...jmsSub) [][]*frame.Frame {
	t.Helper()
	got := make([][]*frame.Frame, len(subs))
	total := 0
	deadline := time.Now().Add(10 * time.Second)
	for total < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d messages arrived within 10s", total, n)
		}
		for i, s := range subs {
			if m := s.c.nextWithin(s.id, 5*time.Millisecond); m != nil {
				got[i] = append(got[i], m)
				total++
			}
		}
	}
	return got
}

// jmsBodies returns the bodies of ms as strings.
func jmsBodies(ms []*frame.Frame) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Body)
	}
	return out
}
