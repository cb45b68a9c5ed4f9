package tests

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	ow "github.com/activemq-go/broker/internal/openwire"
)

// rawOW is an OpenWire connection driven command by command (the codec, no Java).
type rawOW struct {
	t  *testing.T
	nc net.Conn
	r  *ow.Reader
	w  *ow.Writer
	id int32
}

// dialOW connects to addr, negotiates the format and opens the connection (ConnectionInfo).
func dialOW(t *testing.T, addr string) *rawOW {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(30*time.Second)))
	initial := ow.Initial(ow.Version, 0)
	c := &rawOW{t: t, nc: nc, r: ow.NewReader(bufio.NewReader(nc), initial), w: ow.NewWriter(nc, initial)}
	cmd, err := c.r.Read()
	require.NoError(t, err)
	theirs, ok := cmd.(*ow.WireFormatInfo)
	require.True(t, ok, "the broker's first command: %T", cmd)
	ours := ow.NewWireFormatInfo(ow.Format{Version: ow.Version, TightEncoding: true, Cache: true, CacheSize: 1024})
	require.NoError(t, c.w.Write(ours))
	f, err := ow.Negotiate(ours, theirs)
	require.NoError(t, err)
	c.r.SetFormat(f)
	c.w.SetFormat(f)
	c.request(&ow.ConnectionInfo{ConnectionID: &ow.ConnectionID{Value: "ID:raw-" + t.Name()}})
	return c
}

// request sends cmd asking for an answer and returns the answer (the commands before it,
// BrokerInfo and advisories, skipped).
func (c *rawOW) request(cmd ow.Request) ow.Command {
	c.t.Helper()
	c.id++
	*cmd.Base() = ow.BaseCommand{CommandID: c.id, ResponseRequired: true}
	require.NoError(c.t, c.w.Write(cmd))
	for {
		got, err := c.r.Read()
		require.NoError(c.t, err, "the answer to %T", cmd)
		switch r := got.(type) {
		case *ow.Response:
			if r.CorrelationID == c.id {
				return r
			}
		case *ow.ExceptionResponse:
			if r.CorrelationID == c.id {
				return r
			}
		}
	}
}

// TestOpenWireNullIDs: commands whose consumer, producer or session id is null (the
// codec allows it; no Java client sends one) are answered, an exception where the id is
// what the command is about (a session's, consumer's or producer's Info), and the broker
// goes on serving that connection and others.
// Before, a null consumer id in an acknowledgement or a pull, or a null session,
// consumer or producer id in their Info, took the broker down (nil dereference).
func TestOpenWireNullIDs(t *testing.T) {
	b := startOpenWireBroker(t)
	c := dialOW(t, b.OpenWireAddr())
	assert.IsType(t, &ow.Response{}, c.request(&ow.MessageAck{AckType: ow.AckStandard, LastMessageID: &ow.MessageID{TextView: "ID:x-1"}}))
	assert.IsType(t, &ow.Response{}, c.request(&ow.MessagePull{Timeout: -1}))
	assert.IsType(t, &ow.ExceptionResponse{}, c.request(&ow.ProducerInfo{}))
	assert.IsType(t, &ow.ExceptionResponse{}, c.request(&ow.SessionInfo{}))
	assert.IsType(t, &ow.ExceptionResponse{}, c.request(&ow.ConsumerInfo{Destination: &ow.Destination{Type: ow.TypeQueue, Name: "q"}, PrefetchSize: 10}))
	assert.IsType(t, &ow.Response{}, c.request(&ow.SessionInfo{SessionID: &ow.SessionID{ConnectionID: "ID:raw", Value: 1}}))
	assert.False(t, b.Exited(), "the broker is running")
	other := dialOW(t, b.OpenWireAddr())
	assert.IsType(t, &ow.Response{}, other.request(&ow.SessionInfo{SessionID: &ow.SessionID{ConnectionID: "ID:raw2", Value: 1}}))
}
