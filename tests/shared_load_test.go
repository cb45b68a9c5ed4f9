package tests

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"
)

// sharedLedger records what a shared-mode load run's clients saw: what was receipted
// to producers, delivered to consumers (on which node, flagged or not, when), whose
// ACK was sent (on which nodes) and acknowledged with a RECEIPT.
type sharedLedger struct {
	mu        sync.Mutex
	receipted map[string]bool
	delivered map[string][]sharedDelivery
	ackSent   map[string][]int
	acked     map[string]int
}

type sharedDelivery struct {
	node        int
	redelivered bool
	at          time.Time
}

func newSharedLedger() *sharedLedger {
	return &sharedLedger{receipted: map[string]bool{}, delivered: map[string][]sharedDelivery{},
		ackSent: map[string][]int{}, acked: map[string]int{}}
}

// settled reports whether the receipted message b is done with: acknowledged with a
// RECEIPT, or its ACK went to the node killed (killed, 0 for none) whose RECEIPT never
// came. The broker may have committed such an ACK before it died (the message is gone,
// as acknowledged) or not (the message comes back redelivered, and is acknowledged on
// a survivor): the client cannot tell which, and either keeps at-least-once. The
// caller holds l.mu.
func (l *sharedLedger) settled(b string, killed int) bool {
	if l.acked[b] > 0 {
		return true
	}
	for _, node := range l.ackSent[b] {
		if node == killed {
			return true
		}
	}
	return false
}

func (l *sharedLedger) count() (receipted, acked int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.receipted), len(l.acked)
}

// sharedProducer sends n persistent messages "<node>-<i>" to dest through addr, each
// waiting for its RECEIPT, until done or the connection fails (the node was killed).
func sharedProducer(t *testing.T, addr string, node, n int, dest string, l *sharedLedger, wg *sync.WaitGroup) {
	c := dialRaw(t, addr)
	require.Equal(t, "CONNECTED", c.connect().Command)
	wg.Go(func() {
		for i := range n {
			body := fmt.Sprintf("%d-%d", node, i)
			f := frame.New("SEND", "destination", dest, "persistent", "true", "receipt", body)
			f.Body = []byte(body)
			if c.w.WriteFrame(f) != nil || c.w.Flush() != nil {
				return
			}
			r, err := c.readWithin(20 * time.Second)
			if err != nil {
				return
			}
			if r.Command != "RECEIPT" || r.Header.Get("receipt-id") != body {
				t.Errorf("node %d: %s for SEND %s: %s", node, r.Command, body, r.Header.Get("message"))
				return
			}
			l.mu.Lock()
			l.receipted[body] = true
			l.mu.Unlock()
		}
	})
}

// sharedAcker consumes dest through addr with client-individual acknowledgements, each
// waiting for its RECEIPT, until stop is closed or the connection fails. With holdAfter
// above 0 it acknowledges only its first holdAfter messages and holds the rest.
func sharedAcker(t *testing.T, addr string, node int, dest string, l *sharedLedger, stop chan struct{}, wg *sync.WaitGroup, holdAfter int) {
	s := newSharedConsumer(t, addr, dest, 10)
	wg.Go(func() {
		pending := map[string]string{} // receipt id -> body
		seen := 0
		for {
			var f *frame.Frame
			select {
			case <-stop:
				return
			case f = <-s.frames:
			}
			if f == nil {
				return // the connection ended
			}
			switch f.Command {
			case "MESSAGE":
				body := string(f.Body)
				l.mu.Lock()
				l.delivered[body] = append(l.delivered[body], sharedDelivery{node, f.Header.Get("redelivered") == "true", time.Now()})
				l.mu.Unlock()
				if seen++; holdAfter > 0 && seen > holdAfter {
					continue // held unacknowledged (its prefetch fills)
				}
				id := "a-" + f.Header.Get("ack")
				pending[id] = body
				l.mu.Lock()
				l.ackSent[body] = append(l.ackSent[body], node)
				l.mu.Unlock()
				if s.c.w.WriteFrame(frame.New("ACK", "id", f.Header.Get("ack"), "receipt", id)) != nil || s.c.w.Flush() != nil {
					return
				}
			case "RECEIPT":
				body := pending[f.Header.Get("receipt-id")]
				delete(pending, f.Header.Get("receipt-id"))
				l.mu.Lock()
				l.acked[body]++
				l.mu.Unlock()
			default:
				t.Errorf("node %d: %s %s", node, f.Command, f.Header.Get("message"))
				return
			}
		}
	})
}

// TestSharedQueueKill9UnderLoad: three shared-mode nodes, a producer and a consumer on
// each; node 1 is killed -9 mid-stream. In the end every receipted message was
// acknowledged exactly once (or, once only, by an ACK to node 1 whose RECEIPT the kill
// cut off: the broker may have committed it, as a client cannot know); a redelivered message is one node 1 had (delivered there
// and not acknowledged, or claimed and not yet delivered: never delivered on another
// node before); redeliveries reach the survivors within the lease timeout and a
// reaper period (plus slack). The same run without the kill redelivers nothing.
func TestSharedQueueKill9UnderLoad(t *testing.T) {
	for _, kill := range []bool{true, false} {
		t.Run(map[bool]string{true: "kill-9", false: "control"}[kill], func(t *testing.T) {
			nodes := startSharedNodes(t, 3)
			const perProducer = 300
			dest := "/queue/shared.load"
			l := newSharedLedger()
			var producers, consumers sync.WaitGroup
			stop := make(chan struct{})
			for i, n := range nodes {
				hold := 0
				if kill && i == 0 {
					hold = 50 // node 1's consumer holds its prefetch when the node is killed
				}
				sharedAcker(t, n.Addr, i+1, dest, l, stop, &consumers, hold)
			}
			for i, n := range nodes {
				sharedProducer(t, n.Addr, i+1, perProducer, dest, l, &producers)
			}
			var killed time.Time
			killedNode := 0
			if kill {
				require.Eventually(t, func() bool {
					_, a := l.count()
					l.mu.Lock()
					defer l.mu.Unlock()
					held := 0
					for _, ds := range l.delivered {
						if ds[0].node == 1 {
							held++
						}
					}
					return a >= 150 && held >= 60
				}, 30*time.Second, 5*time.Millisecond)
				nodes[0].Kill()
				killed, killedNode = time.Now(), 1
			}
			producers.Wait()
			for deadline := time.Now().Add(30 * time.Second); ; {
				l.mu.Lock()
				var missing []string
				for b := range l.receipted {
					if !l.settled(b, killedNode) {
						missing = append(missing, fmt.Sprintf("%s %+v", b, l.delivered[b]))
					}
				}
				l.mu.Unlock()
				if len(missing) == 0 {
					break
				}
				require.True(t, time.Now().Before(deadline), "receipted, never acknowledged: %v", missing)
				time.Sleep(10 * time.Millisecond) // polling the consumers' ledger
			}
			close(stop)
			consumers.Wait()

			l.mu.Lock()
			defer l.mu.Unlock()
			if !kill {
				require.Len(t, l.receipted, 3*perProducer)
			} else {
				require.GreaterOrEqual(t, len(l.receipted), 2*perProducer, "the survivors' producers finished")
			}
			var redelivered int
			var last time.Duration
			for b, ds := range l.delivered {
				require.LessOrEqual(t, l.acked[b], 1, "%s acknowledged twice", b)
				for i, d := range ds {
					if !d.redelivered {
						require.Zero(t, i, "%s delivered again without the redelivered flag", b)
						continue
					}
					require.True(t, kill, "%s redelivered in the control run", b)
					redelivered++
					last = max(last, d.at.Sub(killed))
					for _, before := range ds[:i] {
						require.Equal(t, 1, before.node, "%s redelivered after a delivery on node %d", b, before.node)
					}
					require.NotEqual(t, 1, d.node)
				}
			}
			cutOff := 0
			for b := range l.receipted {
				if l.acked[b] == 0 {
					require.True(t, l.settled(b, killedNode), "%s", b)
					cutOff++
					continue
				}
				require.Equal(t, 1, l.acked[b], "%s", b)
			}
			if kill {
				require.Positive(t, redelivered, "node 1's consumer held messages when it was killed")
				require.Less(t, last, sharedTakeoverLimit(), "redelivered %v after the kill", last)
				t.Logf("%d receipted, %d redelivered, the last %v after the kill (lease %v, reaper %v); %d acknowledged on node 1 with the RECEIPT cut off",
					len(l.receipted), redelivered, last.Round(time.Millisecond), sharedLease, sharedReaper, cutOff)
			}
		})
	}
}
