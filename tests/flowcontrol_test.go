package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Producer flow control (systemUsage sendFailIfNoSpace: false, as ActiveMQ's default, and
// sendFailIfNoSpaceAfterTimeout): a SEND that finds no room waits for it instead of
// failing, while the broker serves everyone else.

func flowControlBroker(t *testing.T, usage string) *brokerProc {
	return startBroker(t, brokerConfig{Extra: `
systemUsage:
  ` + usage + `
destinationPolicy:
  - queue: "fc.>"
    memoryLimit: 4kb
`})
}

// sendAsync sends a non-persistent 1 KiB message numbered n with receipt "p<n>" and does
// not wait.
func sendAsync(c *jmsClient, dest string, n int) {
	f := frame.New("SEND", "destination", dest, "receipt", fmt.Sprintf("p%d", n))
	f.Body = []byte(fmt.Sprintf("%04d", n) + strings.Repeat("x", 1020))
	c.raw.send(f)
}

// answers reads frames for up to d after the last one and returns the RECEIPT and ERROR
// receipt-ids; MESSAGE frames are kept for next.
func answers(c *jmsClient, d time.Duration) (receipts, errs []string) {
	c.t.Helper()
	for {
		f, ok := c.read(d)
		if !ok {
			return receipts, errs
		}
		switch f.Command {
		case "RECEIPT":
			receipts = append(receipts, f.Header.Get("receipt-id"))
		case "ERROR":
			errs = append(errs, f.Header.Get("receipt-id")+": "+f.Header.Get("message"))
		case "MESSAGE":
			c.held = append(c.held, f)
		}
	}
}

func TestFlowControlHoldsProducerUntilRoom(t *testing.T) {
	b := flowControlBroker(t, "sendFailIfNoSpace: false")
	p := jmsDial(t, b.Addr)
	const n = 20
	for i := range n {
		sendAsync(p, "/queue/fc.a", i)
	}
	got, errs := answers(p, 300*time.Millisecond)
	require.Empty(t, errs, "a held producer gets no ERROR")
	require.NotEmpty(t, got, "the messages that fit are accepted")
	require.Less(t, len(got), n, "the rest wait for room")
	eventually(t, 5*time.Second, "the broker to log the held producer", func() bool {
		return strings.Contains(b.Log(), "producer held until there is room")
	})

	// Everyone else is served meanwhile.
	other := jmsDial(t, b.Addr)
	other.send("/queue/other", "hello")

	c := jmsDial(t, b.Addr)
	sub := c.subscribe("/queue/fc.a")
	for i := range n {
		assert.Equal(t, fmt.Sprintf("%04d", i), string(c.next(sub).Body[:4]), "in order, none lost")
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		more, errs := answers(p, time.Until(deadline)/10)
		require.Empty(t, errs)
		got = append(got, more...)
	}
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("p%d", i)
	}
	assert.Equal(t, want, got, "every SEND receipted, in order")
}

// A client that consumes with client acks on the connection it produces on frees the
// room its held SEND waits for: its ACKs pass the held SEND.
func TestFlowControlSameConnectionAcks(t *testing.T) {
	b := flowControlBroker(t, "sendFailIfNoSpace: false")
	c := jmsDial(t, b.Addr)
	sub := c.subscribe("/queue/fc.b", "ack", "client-individual", "activemq.prefetchSize", "2")
	const n = 30
	for i := range n {
		sendAsync(c, "/queue/fc.b", i)
	}
	receipts, messages := 0, 0
	deadline := time.Now().Add(10 * time.Second)
	for (receipts < n || messages < n) && time.Now().Before(deadline) {
		f, ok := c.read(time.Until(deadline))
		if !ok {
			break
		}
		switch f.Command {
		case "RECEIPT":
			receipts++
		case "MESSAGE":
			require.Equal(t, sub, f.Header.Get("subscription"))
			require.Equal(t, fmt.Sprintf("%04d", messages), string(f.Body[:4]), "in order")
			messages++
			c.raw.send(frame.New("ACK", "id", f.Header.Get("ack")))
		default:
			t.Fatalf("unexpected %s: %s", f.Command, f.Header.Get("message"))
		}
	}
	assert.Equal(t, n, receipts)
	assert.Equal(t, n, messages)
	assert.Contains(t, b.Log(), "producer held until there is room", "the SENDs did wait for room")
}

func TestFlowControlFailsAfterTimeout(t *testing.T) {
	b := flowControlBroker(t, "sendFailIfNoSpaceAfterTimeout: 300ms")
	p := jmsDial(t, b.Addr)
	start := time.Now()
	for i := range 10 {
		sendAsync(p, "/queue/fc.c", i)
	}
	var got, errs []string
	deadline := time.Now().Add(10 * time.Second)
	for len(got)+len(errs) < 10 && time.Now().Before(deadline) {
		r, e := answers(p, time.Until(deadline)/10)
		got, errs = append(got, r...), append(errs, e...)
	}
	require.NotEmpty(t, got)
	require.NotEmpty(t, errs, "the SENDs that found no room fail once the timeout is up")
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	assert.Contains(t, errs[0], "memory limit reached")
	// The ERROR is not fatal: the connection goes on.
	p.send("/queue/other", "still here")
}

// TestRefusedSendsLoggedOnceAMinute: with sendFailIfNoSpace: true, a flood of
// non-persistent SENDs that find no memory each get their ERROR, but the broker logs the
// refusals once a minute per connection, as it logs held producers, not once per SEND.
func TestRefusedSendsLoggedOnceAMinute(t *testing.T) {
	const line = "non-persistent message refused"
	b := flowControlBroker(t, "sendFailIfNoSpace: true")
	flood := func(p *jmsClient, dest string) (refused int) {
		const n = 200
		for i := range n {
			sendAsync(p, dest, i)
		}
		var got, errs []string
		deadline := time.Now().Add(20 * time.Second)
		for len(got)+len(errs) < n && time.Now().Before(deadline) {
			r, e := answers(p, time.Until(deadline)/10)
			got, errs = append(got, r...), append(errs, e...)
		}
		require.Equal(t, n, len(got)+len(errs), "every SEND answered")
		return len(errs)
	}
	p := jmsDial(t, b.Addr)
	refused := flood(p, "/queue/fc.flood")
	require.Greater(t, refused, 150, "a 4 KiB queue refuses most of 200 SENDs of 1 KiB")
	eventually(t, 5*time.Second, "the broker to log the refusals", func() bool {
		return strings.Contains(b.Log(), line)
	})
	refused += flood(p, "/queue/fc.flood2")
	assert.Equal(t, 1, strings.Count(b.Log(), line), "%d refused SENDs on one connection", refused)

	// Another connection gets its own line.
	flood(jmsDial(t, b.Addr), "/queue/fc.flood3")
	eventually(t, 5*time.Second, "a line for the second connection", func() bool {
		return strings.Count(b.Log(), line) >= 2
	})
	assert.Equal(t, 2, strings.Count(b.Log(), line))
}
