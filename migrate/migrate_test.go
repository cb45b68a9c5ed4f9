package migrate

import (
	"testing"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		p, name string
		want    bool
	}{
		{"ORDERS", "ORDERS", true},
		{"ORDERS", "ORDERS.EU", false},
		{"ORDERS.*", "ORDERS.EU", true},
		{"ORDERS.*", "ORDERS.EU.FR", false},
		{"ORDERS.*", "ORDERS", false},
		{"ORDERS.>", "ORDERS.EU.FR", true},
		{"ORDERS.>", "ORDERS.EU", true},
		{"ORDERS.>", "ORDERS", false},
		{"*.DLQ", "ActiveMQ.DLQ", true},
		{">", "ActiveMQ.DLQ", true},
		{"A.*.C", "A.B.C", true},
		{"A.*.C", "A.B.D", false},
	} {
		assert.Equal(t, c.want, Match(c.p, c.name), "%s ~ %s", c.p, c.name)
	}
}

func TestSelect(t *testing.T) {
	found := []string{"ActiveMQ.DLQ", "DLQ.ORDERS", "ORDERS.EU", "ORDERS.US", "PRICES"}
	got, err := Select(found, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"ORDERS.EU", "ORDERS.US", "PRICES", "ActiveMQ.DLQ", "DLQ.ORDERS"}, got, "dead-letter queues last")
	got, err = Select(found, []string{"ORDERS.*", "/queue/NEW", "queue://PRICES", "ORDERS.EU", "ActiveMQ.DLQ"})
	require.NoError(t, err)
	assert.Equal(t, []string{"NEW", "ORDERS.EU", "ORDERS.US", "PRICES", "ActiveMQ.DLQ"}, got)
	for _, bad := range []string{"", "/topic/T", "topic://T"} {
		_, err = Select(found, []string{bad})
		assert.ErrorIs(t, err, ErrPattern, "%q", bad)
	}
}

// TestSendHeaders: the SEND keeps the message's own headers, drops the source's
// delivery headers, and carries the source message-id as the duplicate id (replacing
// one the message had).
func TestSendHeaders(t *testing.T) {
	m := frame.New(frame.MESSAGE,
		"destination", "/queue/Q", "message-id", "ID:src-1", "subscription", "migrate", "ack", "7",
		"redelivered", "true", "JMSXDeliveryCount", "2", "redelivery-count", "1", "content-length", "3",
		"persistent", "true", "priority", "9", "expires", "1796158274040", "timestamp", "1796154674171",
		"type", "t", "correlation-id", "c", "reply-to", "/queue/r", "content-type", "application/octet-stream",
		"original-destination", "/queue/ORIG", "x-app", "v", DuplicateIDHeader, "producer-id")
	h := sendHeaders(m)
	want := []string{"persistent", "true", "priority", "9", "expires", "1796158274040", "timestamp", "1796154674171",
		"type", "t", "correlation-id", "c", "reply-to", "/queue/r", "content-type", "application/octet-stream",
		"original-destination", "/queue/ORIG", "x-app", "v", DuplicateIDHeader, "ID:src-1"}
	var got []string
	for i := range h.Len() {
		k, v := h.GetAt(i)
		got = append(got, k, v)
	}
	assert.Equal(t, want, got)
}

func TestParseDurable(t *testing.T) {
	d, err := ParseDurable("app-1:feed@/topic/PRICES.EU")
	require.NoError(t, err)
	assert.Equal(t, Durable{ClientID: "app-1", Name: "feed", Topic: "PRICES.EU"}, d)
	d, err = ParseDurable("app:a:b@c@/topic/T?selector=kind = 'a' AND x > 1")
	require.NoError(t, err)
	assert.Equal(t, Durable{ClientID: "app", Name: "a:b@c", Topic: "T", Selector: "kind = 'a' AND x > 1"}, d)
	assert.Equal(t, "app:a:b@c@/topic/T?selector=kind = 'a' AND x > 1", d.String())
	for _, bad := range []string{"", "app@/topic/T", ":n@/topic/T", "app:@/topic/T", "app:n@/queue/T",
		"app:n@/topic/", "app:n@/topic/T.>", "app:n@/topic/T?selector="} {
		_, err := ParseDurable(bad)
		assert.Error(t, err, "%q", bad)
	}
}
