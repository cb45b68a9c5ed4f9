package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Temporary destinations are a kind of their own: no /queue/ or /topic/ name reaches
// one, whatever its broker-wide name (<connection id>:NAME for STOMP's, the client's
// ID:... for OpenWire's), and only the connection that made it reads it.

// TestSecurityTempQueueByPlainName: connection A (user) makes a temporary queue and
// sends requests with reply-to naming it; connection B (system, who may read every
// queue) learns its broker-wide name from the reply-to a server reads and tries it as
// a queue name: SUBSCRIBE, browse and SEND to /queue/<that name> are refused with an
// ERROR (ActiveMQ would make an ordinary queue of that name instead), and B's wildcard
// subscriptions /queue/> and /queue/ID:> get none of the replies, which all go to A.
func TestSecurityTempQueueByPlainName(t *testing.T) {
	tg := oursTarget(startSecBroker(t, secBroker{}))
	server := tg.raw(t, "user")
	server.send(subscribeFrame("requests", "/topic/USERS.requests", "s1"))
	expectReceipt(t, server, "s1")

	a := tg.raw(t, "user")
	a.send(subscribeFrame("replies", "/temp-queue/replies", "a1"))
	expectReceipt(t, a, "a1")

	b := tg.raw(t, "system")
	b.send(subscribeFrame("all", "/queue/>", "b1"))
	expectReceipt(t, b, "b1")
	b.send(subscribeFrame("ids", "/queue/ID:>", "b2"))
	expectReceipt(t, b, "b2")

	const replies = 4
	for range replies {
		a.send(sendFrame("/topic/USERS.requests", "a-req", "request", "reply-to", "/temp-queue/replies"))
		expectReceipt(t, a, "a-req")
	}
	var replyTos []string
	for range replies {
		req := server.read()
		require.Equal(t, "MESSAGE", req.Command, "%v", req)
		replyTos = append(replyTos, req.Header.Get("reply-to"))
	}
	replyTo := replyTos[0]
	require.True(t, strings.HasPrefix(replyTo, "/remote-temp-queue/ID:"), "reply-to %q", replyTo)

	// B tries the queue by its plain name before any reply is sent.
	plain := "/queue/" + strings.TrimPrefix(replyTo, "/remote-temp-queue/")
	refused := plain + " names a temporary queue, which no queue name reaches: send to it as " + replyTo +
		"; only the connection that created it reads it"
	b.send(subscribeFrame("steal", plain, "b3"))
	expectError(t, b, refused, "b3")
	b.send(subscribeFrame("peek", plain, "b4", "browser", "true"))
	expectError(t, b, refused, "b4")
	b.send(sendFrame(plain, "b5", "forged reply"))
	expectError(t, b, refused, "b5")

	for _, to := range replyTos {
		require.Equal(t, replyTo, to)
		server.send(sendFrame(to, "s-rep", "reply"))
		expectReceipt(t, server, "s-rep")
	}

	for range replies {
		f := a.read()
		require.Equal(t, "MESSAGE", f.Command, "%v", f)
		assert.Equal(t, "reply", string(f.Body))
		assert.Equal(t, "replies", f.Header.Get("subscription"))
		assert.Equal(t, "/temp-queue/replies", f.Header.Get("destination"))
	}
	// A bounded wait for what must not come: the replies were all delivered to A above,
	// so anything B's wildcards were given is already on its way.
	for {
		f, err := b.readWithin(500 * time.Millisecond)
		if err != nil {
			break
		}
		t.Errorf("B got a frame meant for A's temporary queue: %v", f)
	}
}
