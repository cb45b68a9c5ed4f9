package tests

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/require"
)

// storeSyncs reads broker_store_syncs_total of the broker's /metrics.
func storeSyncs(t testing.TB, a *api) float64 {
	t.Helper()
	status, body, _ := a.call("GET", "/metrics", "")
	require.Equal(t, http.StatusOK, status)
	n, ok := metricSum(string(body), "broker_store_syncs_total")
	require.True(t, ok, "no broker_store_syncs_total in /metrics")
	return n
}

// TestOneSyncPerPersistentMessage: a go-stomp producer sends persistent messages with a
// RECEIPT on each while a go-stomp consumer acknowledges each one (client-individual)
// without asking for a receipt, as a JMS-style application over STOMP does. Only the
// SENDs are promised durability; the ACKs ride the store's next sync, so the store
// syncs about once per message (it was twice: each ACK forced its own). Counted through
// /metrics, never timed.
func TestOneSyncPerPersistentMessage(t *testing.T) {
	// Bounds far above a round trip: the ACKs ride the SENDs' syncs, and none of the
	// count comes from the bound's timer (the defaults are 5 ms). Every SEND is written:
	// with concurrent store and dispatch, a message the consumer acknowledges before its
	// write began is never written, and how many are depends on timing.
	for _, adapter := range []string{
		"kahaDB: {journalAsyncSyncDelay: 2s, concurrentStoreAndDispatchQueues: false}",
		"bbolt: {asyncCommitDelay: 2s, concurrentStoreAndDispatchQueues: false}",
	} {
		t.Run(adapter[:strings.Index(adapter, ":")], func(t *testing.T) { oneSyncPerMessage(t, adapter) })
	}
}

func oneSyncPerMessage(t *testing.T, adapter string) {
	const n = 400
	b, base := adminBroker(t, brokerConfig{Adapter: adapter})
	a := newAPI(t, base)

	consumer := dial(t, b.Addr)
	sub, err := consumer.Subscribe("/queue/syncs", stomp.AckClientIndividual)
	require.NoError(t, err)
	producer := dial(t, b.Addr)
	// The SUBSCRIBE has no receipt in go-stomp: a first message proves it is in place.
	require.NoError(t, producer.Send("/queue/syncs", "text/plain", []byte("warm-up"), stomp.SendOpt.Receipt,
		stomp.SendOpt.Header("persistent", "true")))
	m := <-sub.C
	require.NoError(t, m.Err)
	require.NoError(t, consumer.Ack(m))
	// A receipted SEND carries the warm-up's ACK to disk before the count starts.
	require.NoError(t, producer.Send("/queue/syncs-barrier", "text/plain", nil, stomp.SendOpt.Receipt,
		stomp.SendOpt.Header("persistent", "true")))
	before := storeSyncs(t, a)

	acked := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			m := <-sub.C
			if m == nil || m.Err != nil {
				acked <- fmt.Errorf("message %d: %v", i, m)
				return
			}
			if err := consumer.Ack(m); err != nil {
				acked <- err
				return
			}
		}
		acked <- nil
	}()
	body := bytes.Repeat([]byte("x"), 256)
	for i := 0; i < n; i++ {
		require.NoError(t, producer.Send("/queue/syncs", "text/plain", body, stomp.SendOpt.Receipt,
			stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Header("seq", strconv.Itoa(i))))
	}
	select {
	case err := <-acked:
		require.NoError(t, err)
	case <-time.After(raceScaled(60 * time.Second)):
		t.Fatal("the consumer did not get every message")
	}
	syncs := storeSyncs(t, a) - before
	perMessage := syncs / n
	t.Logf("%d messages: %.0f syncs, %.2f per message", n, syncs, perMessage)
	// One per receipted SEND, less where the writer groups several; an ACK written in a
	// group of its own waits for the next SEND's sync. Before, every ACK forced a sync of
	// its own unless it happened to share a group with a SEND.
	require.LessOrEqual(t, perMessage, 1.25, "an ACK nobody waits for must not force a sync")
	require.GreaterOrEqual(t, perMessage, 0.75, "each receipted SEND is synced (a few share one)")
}

// TestOpenWireOneSyncPerPersistentMessage: the same through OpenWire with ActiveMQ's JMS
// client: a producer's persistent sends are synchronous (each waits for its sync), the
// auto-acknowledging consumer's MessageAcks ask for no response and force no sync of
// their own.
func TestOpenWireOneSyncPerPersistentMessage(t *testing.T) {
	const n = 300
	b, base := adminBroker(t, brokerConfig{
		Adapter: "kahaDB: {journalAsyncSyncDelay: 2s, concurrentStoreAndDispatchQueues: false}",
		Extra:   "  - name: openwire\n    uri: tcp://127.0.0.1:0\n",
	})
	a := newAPI(t, base)
	before := storeSyncs(t, a)
	r := runOW(t, "tcp://"+b.OpenWireAddr(), "load", "dest="+owName(t, "q"), "kind=queue", "persistent=true",
		"producers=1", "consumers=1", "messages="+strconv.Itoa(n), "size=256")
	assertOW(t, r, map[string]string{"lost": "0", "duplicates": "0"})
	syncs := storeSyncs(t, a) - before
	perMessage := syncs / n
	t.Logf("%d messages: %.0f syncs, %.2f per message (%s msgs/s)", n, syncs, perMessage, r.get("msgs_per_s"))
	require.LessOrEqual(t, perMessage, 1.25, "an acknowledgement nobody waits on must not force a sync")
	require.GreaterOrEqual(t, perMessage, 0.75, "each synchronous persistent send is synced (a few share one)")
}
