package tests

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/stompclient"
)

// broker migrate --durable against the real ActiveMQ 5.17: durable subscriptions'
// backlogs move into exactly those subscriptions of our broker, once each, also when the
// tool is killed -9 halfway and run again.

// migDurable is a durable subscription of the test: client-id, name, selector.
type migDurable struct{ clientID, name, selector string }

func (d migDurable) flag(topic string) string {
	s := d.clientID + ":" + d.name + "@/topic/" + topic
	if d.selector != "" {
		s += "?selector=" + d.selector
	}
	return s
}

// durableConn connects to addr as d's client-id and subscribes d to topic.
func durableConn(t testing.TB, ctx context.Context, addr, topic string, d migDurable) *stompclient.Conn {
	t.Helper()
	c, err := stompclient.Dial(ctx, stompURL(t, addr), stompclient.Options{ClientID: d.clientID})
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(ctx, stompclient.Subscription{Destination: "/topic/" + topic, DurableName: d.name,
		Selector: d.selector, Ack: "client-individual", Prefetch: 500}))
	return c
}

// migDurableDrain receives what d holds on topic at addr: n messages, then the fence
// published after them (the fence matches every selector of the test).
func migDurableDrain(t testing.TB, addr, topic string, d migDurable, n int) []*frame.Frame {
	t.Helper()
	ctx := ctxTimeout(t, 120*time.Second)
	c := durableConn(t, ctx, addr, topic, d)
	defer c.Close()
	p, err := stompclient.Dial(ctx, stompURL(t, addr), stompclient.Options{})
	require.NoError(t, err)
	defer p.Close()
	_, err = p.Send("/topic/"+topic, hdrs("fence", "true", "kind", "a", "persistent", "true"), []byte("fence"), true)
	require.NoError(t, err)
	_, err = p.AwaitReceipt(ctx)
	require.NoError(t, err)
	got := make([]*frame.Frame, 0, n)
	for {
		f, err := c.Receive(ctx)
		require.NoError(t, err, "%s: %d of %d received", d.name, len(got), n)
		require.NoError(t, c.Ack(f))
		if f.Header.Get("fence") == "true" {
			break
		}
		got = append(got, f)
	}
	require.Len(t, got, n, "durable subscription %s:%s", d.clientID, d.name)
	require.NoError(t, c.Disconnect(ctx))
	return got
}

// TestMigrateDurablesFromActiveMQ: two durable subscriptions of one ActiveMQ topic (one
// with a selector) hold backlogs; our broker has a third subscription of that topic.
// broker migrate --durable is killed -9 halfway through the first, then run again for
// both: each of the two holds exactly its backlog here, once, in order, with headers
// and binary bodies; the third got nothing; the sources are empty.
func TestMigrateDurablesFromActiveMQ(t *testing.T) {
	amq := startActiveMQ(t, amqPersistentXML(t.TempDir()))
	ours, adminURL := adminBroker(t, brokerConfig{Adapter: "kahaDB: {}"})
	const topic = "MIG.T"
	feed := migDurable{clientID: "mig-c1", name: "feed"}
	audit := migDurable{clientID: "mig-c2", name: "audit", selector: "kind = 'a'"}
	other := migDurable{clientID: "mig-c3", name: "other"}
	ctx := ctxTimeout(t, 5*time.Minute)
	for _, d := range []migDurable{feed, audit} { // on the source, then offline
		c := durableConn(t, ctx, amq, topic, d)
		require.NoError(t, c.Disconnect(ctx))
		c.Close()
	}
	c := durableConn(t, ctx, ours.Addr, topic, other) // ours only, offline
	require.NoError(t, c.Disconnect(ctx))
	c.Close()

	const n = 6000
	ms := make([]migMsg, n)
	for i := range ms {
		kind := "a"
		if i%2 == 1 {
			kind = "b"
		}
		body := []byte("message " + strconv.Itoa(i))
		if i%5 == 0 {
			body = []byte{0, byte(i), 0xff, 0xfe, byte(i >> 8)}
		}
		ms[i] = migMsg{seq: i, body: body, headers: []string{"seq", strconv.Itoa(i), "kind", kind, "persistent", "true",
			"type", "tick", "correlation-id", "c-" + strconv.Itoa(i), "x-custom", "v" + strconv.Itoa(i*3)}}
	}
	p, err := stompclient.Dial(ctx, stompURL(t, amq), stompclient.Options{})
	require.NoError(t, err)
	for _, m := range ms {
		h := &frame.Header{}
		for i := 0; i+1 < len(m.headers); i += 2 {
			h.Add(m.headers[i], m.headers[i+1])
		}
		_, err := p.Send("/topic/"+topic, h, m.body, true)
		require.NoError(t, err)
		for p.Outstanding() >= 256 {
			_, err := p.AwaitReceipt(ctx)
			require.NoError(t, err)
		}
	}
	require.NoError(t, p.Disconnect(ctx))
	p.Close()
	start := sourceCutoff()

	from, to := "stomp://"+amq, "stomp://"+ours.Addr
	args := func(idle string) []string {
		return []string{"migrate", "--from", from, "--to", to, "--admin", adminURL, "--idle", idle,
			"--durable", feed.flag(topic), "--durable", audit.flag(topic)}
	}
	migrateKilled(t, n, "durable mig-c1:feed", args("1s")...)

	// ActiveMQ frees the dead tool's client-id once it noticed the connection closed.
	var r cliResult
	eventually(t, 30*time.Second, "migrate to run again", func() bool {
		r = runCLI(t, "", nil, append(args(resumeIdle), "--progress", "0")...)
		return r.Code == 0 || !strings.Contains(r.Stderr, "already connected")
	})
	require.Equal(t, 0, r.Code, "migrate again:\n%s\n%s", r.Stdout, r.Stderr)
	t.Logf("second run:\n%s", r.Stdout)

	check := func(d migDurable, want []migMsg) {
		got := migDurableDrain(t, ours.Addr, topic, d, len(want))
		ids := map[string]bool{}
		for i, f := range got {
			w := want[i]
			require.Equal(t, w.header("seq"), f.Header.Get("seq"), "%s: message %d out of order", d.name, i)
			for _, k := range []string{"kind", "type", "correlation-id", "x-custom"} {
				require.Equal(t, w.header(k), f.Header.Get(k), "%s seq %d header %s", d.name, w.seq, k)
			}
			require.Equal(t, "true", f.Header.Get("persistent"))
			require.True(t, bytes.Equal(w.body, f.Body), "%s seq %d: body differs", d.name, w.seq)
			ts, err := strconv.ParseInt(f.Header.Get("timestamp"), 10, 64)
			require.NoError(t, err)
			require.Less(t, ts, start, "%s seq %d: the source's timestamp", d.name, w.seq)
			id := f.Header.Get("_AMQ_DUPL_ID")
			require.True(t, strings.HasPrefix(id, "ID:") && !ids[id], "%s seq %d: _AMQ_DUPL_ID %q", d.name, w.seq, id)
			ids[id] = true
		}
	}
	check(feed, ms)
	var as []migMsg
	for _, m := range ms {
		if m.header("kind") == "a" {
			as = append(as, m)
		}
	}
	check(audit, as)
	migDurableDrain(t, ours.Addr, topic, other, 0) // the topic's other subscriber got none of it
	migDurableDrain(t, amq, topic, feed, 0)        // the sources are empty
	migDurableDrain(t, amq, topic, audit, 0)
}

// TestMigrateDurableAgainLeavesTargetBacklog: broker migrate --durable run again and
// again (as after interruptions, or while the source still refuses the client-id) leaves
// what the target's subscription already holds alone: none of it is delivered to the
// tool, so none of it counts a redelivery, and none reaches the dead-letter queue past
// maximumRedeliveries (6). The source here is another broker of ours.
func TestMigrateDurableAgainLeavesTargetBacklog(t *testing.T) {
	src := startBroker(t, brokerConfig{})
	ours, adminURL := adminBroker(t, brokerConfig{Adapter: "kahaDB: {}"})
	const topic, n = "MIG.AGAIN", 150
	feed := migDurable{clientID: "mig-a1", name: "feed"}
	ctx := ctxTimeout(t, 2*time.Minute)
	for _, addr := range []string{src.Addr, ours.Addr} {
		c := durableConn(t, ctx, addr, topic, feed)
		require.NoError(t, c.Disconnect(ctx))
		c.Close()
	}
	p, err := stompclient.Dial(ctx, stompURL(t, ours.Addr), stompclient.Options{})
	require.NoError(t, err)
	for i := range n {
		_, err := p.Send("/topic/"+topic, hdrs("seq", strconv.Itoa(i), "persistent", "true"), []byte("m"), true)
		require.NoError(t, err)
	}
	for p.Outstanding() > 0 {
		_, err := p.AwaitReceipt(ctx)
		require.NoError(t, err)
	}
	require.NoError(t, p.Disconnect(ctx))
	p.Close()

	for range 8 { // more runs than maximumRedeliveries
		cliOK(t, "", "migrate", "--from", "stomp://"+src.Addr, "--to", "stomp://"+ours.Addr, "--admin", adminURL,
			"--idle", "200ms", "--progress", "0", "--durable", feed.flag(topic))
	}
	var dests []struct {
		Name     string `json:"name"`
		Messages int64  `json:"messages"`
	}
	newAPI(t, adminURL).get("/api/destinations", &dests)
	for _, d := range dests {
		require.False(t, strings.Contains(d.Name, "DLQ") && d.Messages > 0, "dead-lettered: %+v", d)
	}
	got := migDurableDrain(t, ours.Addr, topic, feed, n)
	for i, f := range got {
		require.Equal(t, strconv.Itoa(i), f.Header.Get("seq"), "message %d out of order", i)
		require.Empty(t, f.Header.Get("redelivered"), "seq %d was given to the tool", i)
	}
}
