package tests

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/stompclient"
)

// manyQueues are the queues of TestMigrateManyQueues: 60, five of them with messages.
func manyQueues() (names []string, counts map[string]int) {
	counts = map[string]int{"MANY.Q03": 300, "MANY.Q17": 50, "MANY.Q31": 1000, "MANY.Q44": 7, "MANY.Q58": 120}
	for i := range 60 {
		names = append(names, fmt.Sprintf("MANY.Q%02d", i))
	}
	return names, counts
}

// migCreateQueues makes the source create the queues (a consumer subscribes to each),
// so that it announces them, empty.
func migCreateQueues(t testing.TB, addr string, queues []string) {
	t.Helper()
	ctx := ctxTimeout(t, 60*time.Second)
	c, err := stompclient.Dial(ctx, stompURL(t, addr), stompclient.Options{})
	require.NoError(t, err)
	defer c.Close()
	for i, q := range queues {
		require.NoError(t, c.Subscribe(ctx, stompclient.Subscription{ID: strconv.Itoa(i), Destination: "/queue/" + q}))
	}
	require.NoError(t, c.Disconnect(ctx))
}

// migPresend puts on the target, at addr, copies of the first n messages of queue on
// the source (browsed), each with the source's message-id as its duplicate id: what a
// run interrupted between the target's receipt and the source's ack leaves behind.
func migPresend(t testing.TB, source, addr, queue string, n int) {
	t.Helper()
	ctx := ctxTimeout(t, 60*time.Second)
	b, err := stompclient.Dial(ctx, stompURL(t, source), stompclient.Options{})
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, b.Subscribe(ctx, stompclient.Subscription{Destination: "/queue/" + queue, Browser: true}))
	dst, err := stompclient.Dial(ctx, stompURL(t, addr), stompclient.Options{})
	require.NoError(t, err)
	defer dst.Close()
	for range n {
		f, err := b.Receive(ctx)
		require.NoError(t, err)
		require.Empty(t, f.Header.Get("browser"), "the source holds fewer than %d messages", n)
		h := &frame.Header{}
		for i := range f.Header.Len() {
			k, v := f.Header.GetAt(i)
			switch k {
			case "message-id", "destination", "subscription", "ack", "redelivered", "content-length", "receipt":
			default:
				h.Add(k, v)
			}
		}
		h.Add("_AMQ_DUPL_ID", f.Header.Get(frame.MessageId))
		_, err = dst.Send("/queue/"+queue, h, f.Body, true)
		require.NoError(t, err)
		_, err = dst.AwaitReceipt(ctx)
		require.NoError(t, err)
	}
	require.NoError(t, dst.Disconnect(ctx))
}

// TestMigrateManyQueues fills an ActiveMQ 5.17 with 60 queues, 55 of them empty and
// five with messages, one of which our broker already holds three of (an interrupted
// run), and moves them all with broker migrate's defaults (4 queues at a time, --idle
// 2s). Every message is on our broker exactly once and gone from the source; the empty
// queues were told by a browse, without waiting: the run made one --idle wait per queue
// with messages (at the end of its drain) and none for the empty ones; the summary
// lists each queue with what moved and what was skipped as a duplicate.
func TestMigrateManyQueues(t *testing.T) {
	amq := startActiveMQ(t, amqPersistentXML(t.TempDir()))
	ours, adminURL := adminBroker(t, brokerConfig{Adapter: "kahaDB: {}"})
	names, counts := manyQueues()
	var empty []string
	for _, q := range names {
		if counts[q] == 0 {
			empty = append(empty, q)
		}
	}
	migCreateQueues(t, amq, empty)
	exp := time.Now().Add(2 * time.Hour).UnixMilli()
	msgs := map[string][]migMsg{}
	for q, n := range counts {
		msgs[q] = migMessages(q, n, q == "MANY.Q44", exp)
		migFill(t, amq, q, msgs[q])
	}
	const dups = 3
	migPresend(t, amq, ours.Addr, "MANY.Q31", dups)
	start := sourceCutoff()

	began := time.Now()
	cmd := exec.Command(brokerBin, "migrate", "--from", "stomp://"+amq, "--to", "stomp://"+ours.Addr,
		"--admin", adminURL, "--progress", "0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("migrate of %d queues (%d empty) in %s:\n%s", len(names), len(empty), time.Since(began).Round(100*time.Millisecond), out)

	// The summary: a row per queue (queue, moved, duplicates, ...), and the waits.
	for _, q := range names {
		dup := "0"
		if q == "MANY.Q31" {
			dup = strconv.Itoa(dups)
		}
		assert.Regexp(t, `(?m)^\s*`+regexp.QuoteMeta(q)+`\s+`+regexp.QuoteMeta(thousandsOf(counts[q]))+`\s+`+dup+`\s`, string(out))
	}
	assert.Regexp(t, `(?m)^\s*total\s+`+regexp.QuoteMeta(thousandsOf(1477))+`\s+3\s`, string(out))
	assert.Contains(t, string(out), fmt.Sprintf("waits: %d queue(s) found empty by a browse, without waiting; %d wait(s) of --idle 2s",
		len(empty), len(counts)))

	for q, ms := range msgs {
		checkMoved(t, q, ms, migDrain(t, ours.Addr, q, len(ms)), start)
		migDrain(t, amq, q, 0)
	}
}
