package tests

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"
)

// TestDurableReconnectStorm: durable subscribers of several client-ids reconnect in a
// storm (connect, attach, take a few messages, leave with DISCONNECT or by dropping the
// socket) while a producer publishes persistent and non-persistent messages to their
// topic and GET /stats is polled, under an offline pending limit (which drops messages
// for the offline ones) and a fast offline-timeout sweep. The broker is race-built (see
// harness_test.go): any data race between the subscribers' attach and detach, the
// publisher, the sweep and the stats fails the test. Afterwards every subscription is
// still there, and each gets what is published from then on.
func TestDurableReconnectStorm(t *testing.T) {
	const (
		topic     = "/topic/storm"
		clients   = 4
		rounds    = 15
		statsEnvs = "BROKER_BROKER_STATSADDRESS=127.0.0.1:0"
	)
	b := startBrokerKeys(t, brokerConfig{
		Env:   []string{statsEnvs},
		Extra: "destinationPolicy:\n  - topic: \">\"\n    maxPendingMessages: 20\n    offlineDurableSubscriberTimeout: 1h\n",
	}, "offlineDurableSubscriberTaskSchedule: 10ms")
	stats := statsAddr(t, b)

	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		errMu    sync.Mutex
		errs     []error
		sent     atomic.Int64
		polled   atomic.Int64
		attached atomic.Int64
	)
	fail := func(err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
	}

	// The producer: until the storm ends, persistent and non-persistent messages, every
	// tenth with a receipt (so that it does not run far ahead of the broker).
	wg.Add(1)
	go func() {
		defer wg.Done()
		p, err := stomp.Dial("tcp", b.Addr, stomp.ConnOpt.Logger(quietLogger{}))
		if err != nil {
			fail(fmt.Errorf("producer: %w", err))
			return
		}
		defer func() { _ = p.Disconnect() }()
		for i := 0; !stop.Load(); i++ {
			var opts []func(*frame.Frame) error
			if i%2 == 0 {
				opts = append(opts, stomp.SendOpt.Header("persistent", "true"))
			}
			if i%10 == 0 {
				opts = append(opts, stomp.SendOpt.Receipt)
			}
			if err := p.Send(topic, "text/plain", []byte("m-"+strconv.Itoa(i)), opts...); err != nil {
				fail(fmt.Errorf("producer: send %d: %w", i, err))
				return
			}
			sent.Add(1)
		}
	}()

	// The stats poller.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			resp, err := http.Get("http://" + stats + "/stats")
			if err != nil {
				fail(fmt.Errorf("GET /stats: %w", err))
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				fail(fmt.Errorf("GET /stats: %s", resp.Status))
				return
			}
			polled.Add(1)
		}
	}()

	// The subscribers: each client-id attaches and leaves rounds times.
	var subs sync.WaitGroup
	for c := 0; c < clients; c++ {
		subs.Add(1)
		go func(clientID string) {
			defer subs.Done()
			for r := 0; r < rounds; r++ {
				if err := stormRound(b.Addr, topic, clientID, r); err != nil {
					fail(fmt.Errorf("%s round %d: %w", clientID, r, err))
					return
				}
				attached.Add(1)
			}
		}("storm-" + strconv.Itoa(c))
	}
	subs.Wait()
	stop.Store(true)
	wg.Wait()
	require.Empty(t, errs)
	t.Logf("%d attaches, %d messages sent, %d stats polls", attached.Load(), sent.Load(), polled.Load())
	require.Positive(t, polled.Load(), "the stats were never read during the storm")

	// Every subscription survived the storm and gets what is published now.
	p := jmsDial(t, b.Addr)
	var all []jmsSub
	for c := 0; c < clients; c++ {
		cid := "storm-" + strconv.Itoa(c)
		durAwaitFree(t, b.Addr, cid)
		sc := durConnect(t, b.Addr, cid)
		id := durAttach(sc, topic, "sub", "ack", "auto")
		sc.drain(id, 200*time.Millisecond) // the backlog kept while it was away
		all = append(all, jmsSub{sc, id})
	}
	durPublish(p, topic, true, []string{"after-storm"})
	for _, s := range all {
		durExpect(s.c, s.id, "after-storm")
	}
}

// stormRound is one visit of a durable subscriber: connect with clientID, attach to the
// subscription "sub", read a few messages, leave: every third round by dropping the
// socket, otherwise with DISCONNECT. It returns errors rather than failing the test: it
// runs in its own goroutine.
func stormRound(addr, topic, clientID string, round int) error {
	var c *stomp.Conn
	var err error
	// The previous visit's connection may still hold the client-id for a moment after a
	// dropped socket: retry while the broker says it is taken.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var nc net.Conn
		nc, err = net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return err
		}
		c, err = stomp.Connect(&closeWatch{Conn: nc, eof: make(chan struct{})},
			stomp.ConnOpt.Logger(quietLogger{}), stomp.ConnOpt.Host("localhost"),
			stomp.ConnOpt.Header("client-id", clientID))
		if err == nil {
			break
		}
		_ = nc.Close()
		if time.Now().After(deadline) {
			return fmt.Errorf("connect: %w", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A small prefetch: go-stomp reads the DISCONNECT receipt only once it has handed
	// the MESSAGEs before it to the subscription, whose channel holds a few.
	sub, err := c.Subscribe(topic, stomp.AckClientIndividual, stomp.SubscribeOpt.Header("activemq.subscriptionName", "sub"),
		stomp.SubscribeOpt.Header("activemq.prefetchSize", "3"))
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	timeout := time.After(20 * time.Millisecond)
read:
	for i := 0; i < 3; i++ {
		select {
		case m, ok := <-sub.C:
			if !ok {
				break read
			}
			if m.Err != nil {
				return fmt.Errorf("message: %w", m.Err)
			}
			if i%2 == 0 {
				if err := c.Ack(m); err != nil {
					return fmt.Errorf("ack: %w", err)
				}
			}
		case <-timeout:
			break read
		}
	}
	if round%3 == 2 {
		return c.MustDisconnect() // the socket goes without DISCONNECT
	}
	if err := c.Disconnect(); err != nil && !errors.Is(err, stomp.ErrAlreadyClosed) {
		return fmt.Errorf("disconnect: %w", err)
	}
	return nil
}
