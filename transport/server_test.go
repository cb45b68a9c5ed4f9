package transport

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/internal/stompcodec"
	"github.com/activemq-go/broker/persistence/memstore"
)

// startServer runs an in-process broker and STOMP server on 127.0.0.1:0, so the race
// detector sees the session and dispatch goroutines.
func startServer(t *testing.T, c Connector) (*Server, *broker.Broker, string) {
	t.Helper()
	b, err := broker.New(context.Background(), broker.Options{Name: "t", Store: memstore.New()})
	require.NoError(t, err)
	srv := NewServer(b, nil)
	c.Addr = "127.0.0.1:0"
	if c.Name == "" {
		c.Name = "stomp"
	}
	require.NoError(t, srv.Listen([]Connector{c}))
	return srv, b, srv.Addrs()[0].String()
}

func shutdown(t *testing.T, srv *Server, b *broker.Broker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, srv.Shutdown(ctx))
	require.NoError(t, b.Close())
}

type quiet struct{}

func (quiet) Debugf(string, ...interface{})   {}
func (quiet) Infof(string, ...interface{})    {}
func (quiet) Warningf(string, ...interface{}) {}
func (quiet) Errorf(string, ...interface{})   {}
func (quiet) Debug(string)                    {}
func (quiet) Info(string)                     {}
func (quiet) Warning(string)                  {}
func (quiet) Error(string)                    {}

// TestManyClientsConcurrently: producers with receipts, consumers in every ack mode, a
// topic subscriber, all at once over real sockets; every queue message arrives exactly
// once and the topic subscriber sees all of them.
func TestManyClientsConcurrently(t *testing.T) {
	srv, b, addr := startServer(t, Connector{})
	defer shutdown(t, srv, b)
	const producers, perProducer = 4, 500
	total := producers * perProducer

	topicConn, err := stomp.Dial("tcp", addr, stomp.ConnOpt.Logger(quiet{}))
	require.NoError(t, err)
	defer topicConn.Disconnect()
	tsub, err := topicConn.Subscribe("/topic/all", stomp.AckAuto)
	require.NoError(t, err)
	// go-stomp does not wait for SUBSCRIBE: a receipted frame behind it proves the broker
	// registered the subscription before anything is published.
	require.NoError(t, topicConn.Send("/queue/sync", "", nil, stomp.SendOpt.Receipt))

	var mu sync.Mutex
	seen := map[string]int{}
	var cwg sync.WaitGroup
	stop := make(chan struct{})
	for i, mode := range []stomp.AckMode{stomp.AckAuto, stomp.AckClient, stomp.AckClientIndividual} {
		conn, err := stomp.Dial("tcp", addr, stomp.ConnOpt.Logger(quiet{}))
		require.NoError(t, err)
		sub, err := conn.Subscribe("/queue/work", mode, stomp.SubscribeOpt.Header("activemq.prefetchSize", fmt.Sprint(10*(i+1))))
		require.NoError(t, err)
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			defer conn.Disconnect()
			for {
				select {
				case m := <-sub.C:
					if m.Err != nil {
						t.Errorf("subscription: %v", m.Err)
						return
					}
					mu.Lock()
					seen[string(m.Body)]++
					mu.Unlock()
					if m.ShouldAck() {
						assert.NoError(t, conn.Ack(m))
					}
				case <-stop:
					return
				}
			}
		}()
	}
	var pwg sync.WaitGroup
	for p := 0; p < producers; p++ {
		pwg.Add(1)
		go func(p int) {
			defer pwg.Done()
			conn, err := stomp.Dial("tcp", addr, stomp.ConnOpt.Logger(quiet{}))
			if !assert.NoError(t, err) {
				return
			}
			defer conn.Disconnect()
			for i := 0; i < perProducer; i++ {
				opts := []func(*frame.Frame) error{}
				if i%10 == 0 {
					opts = append(opts, stomp.SendOpt.Receipt)
				}
				body := []byte(fmt.Sprintf("%d-%d", p, i))
				assert.NoError(t, conn.Send("/queue/work,/topic/all", "text/plain", body, opts...))
			}
		}(p)
	}
	pwg.Wait()
	topicGot := 0
	deadline := time.After(20 * time.Second)
	for topicGot < total {
		select {
		case m := <-tsub.C:
			require.NoError(t, m.Err)
			topicGot++
		case <-deadline:
			t.Fatalf("topic subscriber got %d of %d", topicGot, total)
		}
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == total
	}, 20*time.Second, 10*time.Millisecond)
	close(stop)
	cwg.Wait()
	for k, n := range seen {
		assert.Equal(t, 1, n, "message %s", k)
	}
}

// TestShutdownClosesConnectionsAndReturns: Shutdown stops accepting and ends sessions;
// their clients see the connection end.
func TestShutdownClosesConnectionsAndReturns(t *testing.T) {
	srv, b, addr := startServer(t, Connector{})
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer nc.Close()
	w := stompcodec.NewWriter(nc, 0)
	require.NoError(t, w.WriteFrame(frameConnect()))
	require.NoError(t, w.Flush())
	r := stompcodec.NewReader(nc, stompcodec.Limits{})
	f, err := r.Read()
	require.NoError(t, err)
	require.Equal(t, "CONNECTED", f.Command)

	shutdown(t, srv, b)
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(5*time.Second)))
	for {
		f, err := r.Read()
		if err != nil {
			break
		}
		if f != nil {
			assert.Equal(t, "ERROR", f.Command)
		}
	}
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "still accepting after Shutdown")
}
