package tests

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoreUsageLimit: with sendFailIfNoSpace: true, past systemUsage.storeUsage
// persistent SENDs get an ERROR (with the receipt-id), the broker logs it, the
// connection stays open, non-persistent messages still flow, and everything accepted
// before is still delivered.
func TestStoreUsageLimit(t *testing.T) {
	b := startBroker(t, brokerConfig{
		Adapter: "kahaDB: {journalMaxFileLength: 256kb}",
		Extra:   "systemUsage: {storeUsage: 1mb, sendFailIfNoSpace: true}\n",
	})
	rc := dialRaw(t, b.Addr)
	require.Equal(t, "CONNECTED", rc.connect().Command)
	body := bytes.Repeat([]byte("x"), 8<<10)
	accepted := 0
	var refusal *frame.Frame
	for i := 0; i < 2000 && refusal == nil; i++ {
		f := frame.New("SEND", "destination", "/queue/full", "persistent", "true", "receipt", strconv.Itoa(i))
		f.Body = body
		rc.send(f)
		got := rc.read()
		switch got.Command {
		case "RECEIPT":
			accepted++
		case "ERROR":
			refusal = got
		}
	}
	require.NotNil(t, refusal, "no ERROR after %d × 8 KiB persistent messages with storeUsage 1mb", accepted)
	assert.Contains(t, refusal.Header.Get("message"), "store is full")
	assert.NotEmpty(t, refusal.Header.Get("receipt-id"))
	eventually(t, 5*time.Second, "the log line", func() bool { return bytes.Contains([]byte(b.Log()), []byte("persistent store is full")) })

	rc.send(frame.New("SEND", "destination", "/queue/full", "receipt", "np"))
	require.Equal(t, "RECEIPT", rc.read().Command, "non-persistent messages still flow")
	rc.send(frame.New("SUBSCRIBE", "id", "s", "destination", "/queue/full"))
	for i := 0; i <= accepted; i++ {
		m := rc.read()
		require.Equal(t, "MESSAGE", m.Command)
	}
}

// TestTransactionSizeLimit: a transaction may hold at most systemUsage.maxTransactionSize
// bytes until COMMIT; past it the SEND gets an ERROR, the transaction stays usable.
func TestTransactionSizeLimit(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: "systemUsage: {maxTransactionSize: 64kb}\n"})
	rc := dialRaw(t, b.Addr)
	require.Equal(t, "CONNECTED", rc.connect().Command)
	rc.send(frame.New("BEGIN", "transaction", "t", "receipt", "b"))
	require.Equal(t, "RECEIPT", rc.read().Command)
	body := bytes.Repeat([]byte("y"), 10<<10)
	sent := 0
	var refusal *frame.Frame
	for i := 0; i < 20 && refusal == nil; i++ {
		f := frame.New("SEND", "destination", "/queue/tx", "transaction", "t", "receipt", strconv.Itoa(i))
		f.Body = body
		rc.send(f)
		if got := rc.read(); got.Command == "ERROR" {
			refusal = got
		} else {
			sent++
		}
	}
	require.NotNil(t, refusal)
	assert.Contains(t, refusal.Header.Get("message"), "maxTransactionSize")
	assert.Equal(t, 6, sent, "6 × 10 KiB fit in 64 KiB")
	rc.send(frame.New("COMMIT", "transaction", "t", "receipt", "c"))
	require.Equal(t, "RECEIPT", rc.read().Command)
	rc.send(frame.New("SUBSCRIBE", "id", "s", "destination", "/queue/tx"))
	for i := 0; i < sent; i++ {
		require.Equal(t, "MESSAGE", rc.read().Command)
	}
}
