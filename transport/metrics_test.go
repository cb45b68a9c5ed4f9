package transport

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/persistence/memstore"
)

// waitFor polls cond until it holds or 10s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readUntilClosed reads what the server sends until it closes the connection.
func readUntilClosed(t *testing.T, nc net.Conn) string {
	t.Helper()
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	var b strings.Builder
	r := bufio.NewReader(nc)
	for {
		line, err := r.ReadString(0)
		b.WriteString(line)
		if err != nil {
			return b.String()
		}
	}
}

// The transport counts the connections it refuses: over the connector's
// maxConnections (limit), with another frame than CONNECT first (protocol).
func TestMetricsRejectedConnections(t *testing.T) {
	srv, b, addr := startServer(t, Connector{MaxConnections: 1})
	defer shutdown(t, srv, b)

	c, err := stomp.Dial("tcp", addr)
	require.NoError(t, err)
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	assert.Contains(t, readUntilClosed(t, nc), "maximum connections")
	nc.Close()
	assert.EqualValues(t, 1, b.Management().Counters().Rejected[broker.RejectLimit])
	require.NoError(t, c.Disconnect())

	// The slot is free once the session of c has ended: until then a connection is
	// refused for the limit again.
	refusals := 0
	for {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, err = nc.Write([]byte("SEND\ndestination:/queue/a\n\nx\x00"))
		require.NoError(t, err)
		out := readUntilClosed(t, nc)
		nc.Close()
		require.Contains(t, out, "ERROR")
		if !strings.Contains(out, "maximum connections") {
			break
		}
		refusals++
		require.Less(t, refusals, 1000, "the slot was never freed")
	}
	waitFor(t, "protocol rejection counted", func() bool { return b.Management().Counters().Rejected[broker.RejectProtocol] == 1 })
	st := b.Management().Counters()
	assert.EqualValues(t, 1+refusals, st.Rejected[broker.RejectLimit])
	assert.EqualValues(t, 0, st.Rejected[broker.RejectTLS])
	assert.EqualValues(t, 1, st.Opened[broker.ProtocolSTOMP])
}

// selfSigned is a TLS certificate for 127.0.0.1.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// A client that speaks plain STOMP to a TLS connector fails the handshake: counted
// with reason tls. One that connects and leaves without a word is not counted.
func TestMetricsRejectedTLS(t *testing.T) {
	srv, b, addr := startServer(t, Connector{TLS: &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}})
	defer shutdown(t, srv, b)
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	_, err = nc.Write([]byte("CONNECT\naccept-version:1.2\n\n\x00"))
	require.NoError(t, err)
	readUntilClosed(t, nc)
	nc.Close()
	waitFor(t, "tls rejection counted", func() bool { return b.Management().Counters().Rejected[broker.RejectTLS] == 1 })

	quietConn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	quietConn.Close()
	tc, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	require.NoError(t, err)
	c, err := stomp.Connect(tc)
	require.NoError(t, err)
	require.NoError(t, c.Disconnect())
	waitFor(t, "the TLS client's connection closed", func() bool { return b.Management().Counters().Closed[broker.ProtocolSTOMP] == 1 })
	assert.EqualValues(t, 1, b.Management().Counters().Rejected[broker.RejectTLS])
	assert.EqualValues(t, 0, b.Management().Counters().Rejected[broker.RejectProtocol])
}

// A connection over a WebSocket connector counts under protocol stomp_ws.
func TestMetricsWebSocketProtocol(t *testing.T) {
	srv, b, addr := startServer(t, Connector{WebSocket: true})
	defer shutdown(t, srv, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/", &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}})
	require.NoError(t, err)
	defer ws.CloseNow()
	require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte("CONNECT\naccept-version:1.2\nhost:/\n\n\x00")))
	_, msg, err := ws.Read(ctx)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(msg), "CONNECTED"), "%q", msg)
	st := b.Management().Counters()
	assert.Equal(t, [management.NumProtocols]int64{0, 1}, st.Connections)
	assert.Equal(t, [management.NumProtocols]int64{0, 1}, st.Opened)
}

// A SEND held by producer flow control shows in producers_blocked while it waits and is
// counted in sends_blocked; once a consumer makes room it goes through.
func TestMetricsProducerBlocked(t *testing.T) {
	b, err := broker.New(context.Background(), broker.Options{Name: "t", Store: memstore.New(), MemoryUsage: 64 << 10, NoSpaceWait: -1})
	require.NoError(t, err)
	srv := NewServer(b, nil)
	require.NoError(t, srv.Listen([]Connector{{Name: "stomp", Addr: "127.0.0.1:0"}}))
	defer shutdown(t, srv, b)
	addr := srv.Addrs()[0].String()

	p, err := stomp.Dial("tcp", addr)
	require.NoError(t, err)
	defer p.Disconnect()
	body := make([]byte, 8<<10)
	go func() {
		for range 20 { // 160 KiB into 64 KiB: the producer is held
			if p.Send("/queue/full", "text/plain", body) != nil {
				return
			}
		}
	}()
	waitFor(t, "the producer held", func() bool { return b.Management().Counters().ProducersBlocked == 1 })
	assert.EqualValues(t, 1, b.Management().Counters().SendsBlocked)

	c, err := stomp.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Disconnect()
	sub, err := c.Subscribe("/queue/full", stomp.AckAuto)
	require.NoError(t, err)
	for range 20 {
		select {
		case m := <-sub.C:
			require.NoError(t, m.Err)
		case <-time.After(10 * time.Second):
			t.Fatal("not every message arrived")
		}
	}
	waitFor(t, "the producer released", func() bool { return b.Management().Counters().ProducersBlocked == 0 })
	assert.GreaterOrEqual(t, b.Management().Counters().SendsBlocked, int64(1))
	assert.EqualValues(t, 20, b.Management().Counters().Received[broker.ProtocolSTOMP], "a held SEND counts once")
}
