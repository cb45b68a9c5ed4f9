package tests

import (
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	ow "github.com/activemq-go/broker/internal/openwire"
)

// The limits and bad input of an OpenWire connector, as on STOMP: a command over the
// connector's frame limit, a malformed command, a connection over maximumConnections,
// a client silent past maxInactivityDuration and one that never sends WireFormatInfo
// each lose their connection (logged once), while another OpenWire client and a STOMP
// client carry on and nothing the broker accepted is lost.

// owRawConn speaks OpenWire command by command: a client that misbehaves on purpose.
type owRawConn struct {
	t  testing.TB
	nc net.Conn
	r  *ow.Reader
	w  *ow.Writer
	id int32 // the last command id
}

func dialOWRaw(t testing.TB, addr string) *owRawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	initial := ow.Initial(ow.Version, 0)
	return &owRawConn{t: t, nc: nc, r: ow.NewReader(nc, initial), w: ow.NewWriter(nc, initial)}
}

// read returns the next command but keep-alives, failing the test after 10 s.
func (c *owRawConn) read() ow.Command {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		cmd, err := c.r.Read()
		require.NoError(c.t, err)
		if _, ok := cmd.(*ow.KeepAliveInfo); !ok {
			return cmd
		}
	}
}

func (c *owRawConn) write(cmd ow.Command) {
	c.t.Helper()
	require.NoError(c.t, c.w.Write(cmd))
}

// request sends cmd with the next command id, asking for a response, and returns it.
func (c *owRawConn) request(cmd ow.Request) ow.Command {
	c.t.Helper()
	c.id++
	*cmd.Base() = ow.BaseCommand{CommandID: c.id, ResponseRequired: true}
	c.write(cmd)
	return c.read()
}

// handshake exchanges WireFormatInfo (the broker's comes first) offering the
// inactivity duration, no initial delay and the loose encoding, and reads BrokerInfo.
func (c *owRawConn) handshake(inactivity time.Duration) {
	c.t.Helper()
	theirs, ok := c.read().(*ow.WireFormatInfo)
	require.True(c.t, ok, "the broker's first command is not WireFormatInfo")
	ours := ow.NewWireFormatInfo(ow.Format{Version: ow.Version, MaxInactivityDuration: inactivity.Milliseconds()})
	c.write(ours)
	f, err := ow.Negotiate(ours, theirs)
	require.NoError(c.t, err)
	c.r.SetFormat(f)
	c.w.SetFormat(f)
	_, ok = c.read().(*ow.BrokerInfo)
	require.True(c.t, ok, "no BrokerInfo after the handshake")
}

// connect handshakes and opens the connection as clientID.
func (c *owRawConn) connect(clientID string, inactivity time.Duration) {
	c.t.Helper()
	c.handshake(inactivity)
	resp := c.request(&ow.ConnectionInfo{ConnectionID: &ow.ConnectionID{Value: "ID:" + clientID}, ClientID: clientID})
	require.IsType(c.t, &ow.Response{}, resp, "ConnectionInfo answered with %#v", resp)
}

// sendText sends a persistent text message to the queue synchronously and requires
// the broker's Response: the broker has it.
func (c *owRawConn) sendText(queue, text string) {
	c.t.Helper()
	pid := &ow.ProducerID{ConnectionID: "ID:raw", SessionID: 1, Value: 1}
	m := &ow.Message{Type: ow.TypeTextMessage, ProducerID: pid, Persistent: true, Priority: 4,
		Destination: &ow.Destination{Type: ow.TypeQueue, Name: queue},
		MessageID:   &ow.MessageID{ProducerID: pid, ProducerSequenceID: int64(c.id + 1)}}
	m.SetText(text, false)
	resp := c.request(m)
	require.IsType(c.t, &ow.Response{}, resp, "send answered with %#v", resp)
}

// expectClosed requires the broker to end the connection within d and returns what it
// wrote before (a ConnectionError, keep-alives).
func (c *owRawConn) expectClosed(d time.Duration) []ow.Command {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	var got []ow.Command
	for {
		cmd, err := c.r.Read()
		if err != nil {
			var ne net.Error
			require.False(c.t, errors.As(err, &ne) && ne.Timeout(), "connection still open after %v; got %d commands", d, len(got))
			return got
		}
		got = append(got, cmd)
	}
}

// connectionErrors are the exceptions of the ConnectionErrors among cmds.
func connectionErrors(cmds []ow.Command) []string {
	var out []string
	for _, cmd := range cmds {
		if ce, ok := cmd.(*ow.ConnectionError); ok && ce.Exception != nil {
			out = append(out, ce.Exception.Class+": "+ce.Exception.Message)
		}
	}
	return out
}

// logCount counts the broker's log lines that contain s.
func logCount(b *brokerProc, s string) int { return strings.Count(b.Log(), s) }

// requireLoggedOnce waits for the broker to log a line containing s and requires there
// to be one only.
func requireLoggedOnce(t testing.TB, b *brokerProc, s string) {
	t.Helper()
	eventually(t, 10*time.Second, "the log line "+s, func() bool { return logCount(b, s) > 0 })
	require.Equal(t, 1, logCount(b, s), "log lines %q:\n%s", s, b.Log())
}

// stompStillWorks requires a round trip through the broker's STOMP connector.
func stompStillWorks(t testing.TB, addr, queue string) {
	t.Helper()
	c := dial(t, addr)
	sub, err := c.Subscribe("/queue/"+queue, stomp.AckAuto)
	require.NoError(t, err)
	require.NoError(t, c.Send("/queue/"+queue, "text/plain", []byte("stomp carries on"), stomp.SendOpt.Receipt))
	receive(t, sub, "stomp carries on")
}

// stompDrain reads what the queue holds, in order, up to the end marker it sends.
func stompDrain(t testing.TB, addr, queue string) []string {
	t.Helper()
	c := dial(t, addr)
	require.NoError(t, c.Send("/queue/"+queue, "text/plain", []byte("end"), stomp.SendOpt.Receipt))
	sub, err := c.Subscribe("/queue/"+queue, stomp.AckAuto)
	require.NoError(t, err)
	var got []string
	for {
		select {
		case m := <-sub.C:
			require.NoError(t, m.Err)
			if string(m.Body) == "end" {
				return got
			}
			got = append(got, string(m.Body))
		case <-time.After(10 * time.Second):
			t.Fatalf("no end marker on /queue/%s after %q", queue, got)
		}
	}
}

// owLimitsInactivity is the limits broker's maxInactivityDuration: long enough that a
// client's keep-alives (a third of it) arrive under -race on a loaded machine.
const owLimitsInactivity = 2 * time.Second

// startOWLimitsBroker starts our broker with a STOMP connector and two OpenWire ones:
// "openwire" with a 64 KiB frame limit, owLimitsInactivity and a one-second connect
// timeout, "limited" with room for two connections.
func startOWLimitsBroker(t testing.TB) (b *brokerProc, stompAddr, owAddr, limitedAddr string) {
	t.Helper()
	b = startSecBroker(t, secBroker{Open: true, Connectors: []string{
		"stomp", "stomp://127.0.0.1:0",
		"openwire", "tcp://127.0.0.1:0?wireFormat.maxFrameSize=65536&wireFormat.maxInactivityDuration=" +
			itoaMs(owLimitsInactivity) + "&transport.connectAttemptTimeout=1000",
		"limited", "nio://127.0.0.1:0?maximumConnections=2",
	}})
	return b, b.connectorAddr("stomp"), b.connectorAddr("openwire"), b.connectorAddr("limited")
}

func itoaMs(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// TestOpenWireLimits: each way an OpenWire client can overstep costs it its connection
// and one log line, and nobody else notices: another OpenWire client and a STOMP client
// carry on, and what the broker accepted before stays.
func TestOpenWireLimits(t *testing.T) {
	b, stompAddr, owAddr, limitedAddr := startOWLimitsBroker(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker output:\n%s", b.Log())
		}
	})
	othersCarryOn := func(t *testing.T, queue string) {
		t.Helper()
		other := dialOWRaw(t, owAddr)
		other.connect(owName(t, "other"), 0)
		other.sendText(queue, "other carries on")
		stompStillWorks(t, stompAddr, owName(t, "stomp"))
	}

	t.Run("frame size", func(t *testing.T) {
		q := owName(t, "q")
		c := dialOWRaw(t, owAddr)
		c.connect(owName(t, "big"), 0)
		c.sendText(q, "accepted")
		// A frame header claiming 10 MiB: refused on the header, before anything is read
		// or allocated.
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], 10<<20)
		_, err := c.nc.Write(hdr[:])
		require.NoError(t, err)
		got := connectionErrors(c.expectClosed(10 * time.Second))
		assert.Equal(t, []string{"java.io.IOException: Frame size of 10485760 larger than max allowed 65536"}, got)
		requireLoggedOnce(t, b, "openwire command over the connector's maxFrameSize")

		// ActiveMQ's client learns the limit in the handshake and refuses such a message
		// itself, as with ActiveMQ, and carries on.
		r := runOW(t, "tcp://"+owAddr, "big", "dest="+q, "size=100000")
		assert.Equal(t, "JMSException: Frame size of 97 KB larger than max allowed 64 KB", r.get("big"))
		assert.Equal(t, "ok", r.get("after"))

		othersCarryOn(t, q)
		assert.Equal(t, []string{"accepted", "before", "after", "other carries on"}, stompDrain(t, stompAddr, q))
	})

	t.Run("malformed", func(t *testing.T) {
		q := owName(t, "q")
		c := dialOWRaw(t, owAddr)
		c.connect(owName(t, "garbage"), 0)
		c.sendText(q, "accepted")
		// A frame of a command type OpenWire does not have.
		_, err := c.nc.Write([]byte{0, 0, 0, 2, 0xee, 0})
		require.NoError(t, err)
		got := connectionErrors(c.expectClosed(10 * time.Second))
		require.Len(t, got, 1)
		assert.True(t, strings.HasPrefix(got[0], "java.io.IOException: "), "%q", got)
		requireLoggedOnce(t, b, "malformed openwire command")
		othersCarryOn(t, q)
		assert.Equal(t, []string{"accepted", "other carries on"}, stompDrain(t, stompAddr, q))
	})

	t.Run("maximum connections", func(t *testing.T) {
		q := owName(t, "q")
		first, second := dialOWRaw(t, limitedAddr), dialOWRaw(t, limitedAddr)
		first.connect(owName(t, "first"), 0)
		second.connect(owName(t, "second"), 0)
		// The third is closed before its handshake, as ActiveMQ closes it.
		third := dialOWRaw(t, limitedAddr)
		assert.Empty(t, third.expectClosed(10*time.Second))
		requireLoggedOnce(t, b, "connection refused: maximum connections reached")
		first.sendText(q, "first carries on")
		stompStillWorks(t, stompAddr, owName(t, "stomp"))
		// A slot freed is taken by ActiveMQ's client, whose failover transport retries
		// until the broker has let the closed connection go.
		require.NoError(t, second.nc.Close())
		r := runOW(t, "failover:(tcp://"+limitedAddr+")?initialReconnectDelay=20&useExponentialBackOff=false&maxReconnectAttempts=500",
			"connect", "dest="+owName(t, "java"), "client="+owName(t, "java"))
		assert.Equal(t, "hello", r.get("received"))
		assert.Equal(t, []string{"first carries on"}, stompDrain(t, stompAddr, q))
	})

	t.Run("inactivity", func(t *testing.T) {
		q := owName(t, "q")
		c := dialOWRaw(t, owAddr)
		c.connect(owName(t, "silent"), owLimitsInactivity)
		c.sendText(q, "accepted")
		// The broker's keep-alives come, then, with none from the client, the close.
		got := c.expectClosed(raceScaled(10 * owLimitsInactivity))
		require.NotEmpty(t, got)
		assert.IsType(t, &ow.KeepAliveInfo{}, got[0])
		requireLoggedOnce(t, b, "openwire client inactive past maxInactivityDuration")
		// ActiveMQ's client, silent longer than the inactivity duration, stays connected:
		// its inactivity monitor sends keep-alives after its initial delay.
		r := runOW(t, "tcp://"+owAddr, "idle", "dest="+owName(t, "idle"), "idle="+itoaMs(owLimitsInactivity*3/2))
		assert.Equal(t, "ok", r.get("after_idle"))
		assert.Equal(t, "after-idle/null", r.get("received"))
		othersCarryOn(t, q)
		assert.Equal(t, []string{"accepted", "other carries on"}, stompDrain(t, stompAddr, q))
	})

	t.Run("connect timeout", func(t *testing.T) {
		// No WireFormatInfo: the broker's own, then the close after the connect timeout.
		c := dialOWRaw(t, owAddr)
		got := c.expectClosed(raceScaled(20 * time.Second))
		require.Len(t, got, 1)
		assert.IsType(t, &ow.WireFormatInfo{}, got[0])
		requireLoggedOnce(t, b, "closing connection: no WireFormatInfo in time")
		// WireFormatInfo but no ConnectionInfo: the same deadline.
		c = dialOWRaw(t, owAddr)
		c.handshake(0)
		c.expectClosed(raceScaled(20 * time.Second))
		requireLoggedOnce(t, b, "closing connection: no ConnectionInfo in time")
		othersCarryOn(t, owName(t, "q"))
	})
}
