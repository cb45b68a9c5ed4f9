package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/require"
)

// TestDuplicateDetectionSurvivesKill9: N persistent messages with duplicate-detection
// ids (_AMQ_DUPL_ID) and receipts; the broker is killed with SIGKILL and restarted, and
// the producer sends all of them again (its retry after a crash): the queue still holds
// each once. Then half are consumed (ACKs with receipts), the broker is killed again,
// and all N sent again: the consumed half do not come back, the rest are there once.
func TestDuplicateDetectionSurvivesKill9(t *testing.T) {
	for _, a := range durableAdapters {
		t.Run(a.name, func(t *testing.T) {
			const n = 200
			adapter, dir := a.store(t), t.TempDir()
			sendAll := func(addr string) {
				c, err := stomp.Dial("tcp", addr, stomp.ConnOpt.Logger(quietLogger{}))
				require.NoError(t, err)
				for i := range n {
					require.NoError(t, c.Send("/queue/dedup", "text/plain", []byte(fmt.Sprintf("m-%d", i)), stomp.SendOpt.Receipt,
						stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Header("_AMQ_DUPL_ID", fmt.Sprintf("run-%d", i))))
				}
				// The end of what the queue holds: a message with no id, always taken.
				require.NoError(t, c.Send("/queue/dedup", "text/plain", []byte("end"), stomp.SendOpt.Receipt, stomp.SendOpt.Header("persistent", "true")))
				require.NoError(t, c.Disconnect())
			}
			// take consumes up to max messages that are not "end" (max < 0: until "end"),
			// acknowledging each with a receipt, and returns their bodies.
			take := func(addr string, max int) []string {
				c, err := stomp.Dial("tcp", addr, stomp.ConnOpt.Logger(quietLogger{}))
				require.NoError(t, err)
				defer c.MustDisconnect()
				sub, err := c.Subscribe("/queue/dedup", stomp.AckClientIndividual, stomp.SubscribeOpt.Header("activemq.prefetchSize", "1"))
				require.NoError(t, err)
				var got []string
				for max < 0 || len(got) < max {
					var m *stomp.Message
					select {
					case m = <-sub.C:
					case <-time.After(30 * time.Second):
						t.Fatalf("no message within 30s after %d", len(got))
					}
					require.NoError(t, m.Err)
					tx := c.Begin()
					require.NoError(t, tx.Ack(m))
					require.NoError(t, tx.CommitWithReceipt())
					if string(m.Body) == "end" {
						if max < 0 {
							break
						}
						continue
					}
					got = append(got, string(m.Body))
				}
				return got
			}

			b := startBroker(t, brokerConfig{Adapter: adapter, DataDir: dir})
			sendAll(b.Addr)
			b.Kill()
			b = startBroker(t, brokerConfig{Adapter: adapter, DataDir: dir})
			sendAll(b.Addr) // every id was stored before the crash: all duplicates
			first := take(b.Addr, n/2)
			b.Kill()
			b = startBroker(t, brokerConfig{Adapter: adapter, DataDir: dir})
			sendAll(b.Addr) // the consumed half too is a duplicate
			// The queue holds: end (1st run), end (2nd run), the rest, end (3rd run); take
			// drops the ends and stops at the one after the rest.
			rest := take(b.Addr, -1)
			rest = append(rest, take(b.Addr, -1)...)
			rest = append(rest, take(b.Addr, -1)...)

			seen := map[string]int{}
			for _, body := range append(first, rest...) {
				seen[body]++
			}
			for i := range n {
				require.Equal(t, 1, seen[fmt.Sprintf("m-%d", i)], "m-%d delivered once (first half %d, rest %d)", i, len(first), len(rest))
			}
			require.Len(t, seen, n)
		})
	}
}
