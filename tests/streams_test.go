package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Stream destinations, end to end: topics under s.> are streams (type: stream) in the
// real broker binary, written by go-stomp producers and read by go-stomp and raw STOMP
// 1.2 clients (jmsClient, which sees receipts of ACKs and ERROR frames).

// streamEngine is where a test's streams live: its name, and the streams section of
// the broker's configuration that selects it.
type streamEngine struct {
	name    string
	section string
	seeds   []string // Kafka's addresses (kafka only)
}

// embeddedStreams is the embedded log, flushed per batch.
var embeddedStreams = streamEngine{name: "embedded", section: "streams:\n  flush: batch\n  segmentBytes: 256kb\n"}

// kafkaStreams starts an in-process Kafka of three brokers (kfake) for the test and
// returns the engine on it: topics prefixed amq., a 3 s group session.
func kafkaStreams(t testing.TB) streamEngine {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.GroupMinSessionTimeout(time.Second))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return streamEngine{name: "kafka", seeds: c.ListenAddrs(), section: fmt.Sprintf(
		"streams:\n  engine: kafka\n  kafka:\n    seedBrokers: [%s]\n    topicPrefix: amq.\n    sessionTimeout: 3s\n",
		strings.Join(c.ListenAddrs(), ", "))}
}

// forEachEngine runs f as a subtest per stream engine: the embedded log and Kafka.
func forEachEngine(t *testing.T, f func(t *testing.T, eng streamEngine)) {
	t.Run("embedded", func(t *testing.T) { f(t, embeddedStreams) })
	t.Run("kafka", func(t *testing.T) { f(t, kafkaStreams(t)) })
}

// streamBroker starts the broker with the topics s.> as streams of parts partitions in
// the embedded log, flushed per batch, keeping its data in dataDir ("" for a fresh one).
func streamBroker(t testing.TB, parts int, dataDir string, extra ...string) *brokerProc {
	t.Helper()
	return engineBroker(t, embeddedStreams, parts, dataDir, extra...)
}

// engineBroker is streamBroker on the engine eng.
func engineBroker(t testing.TB, eng streamEngine, parts int, dataDir string, extra ...string) *brokerProc {
	t.Helper()
	return startBroker(t, engineBrokerConfig(eng, parts, dataDir, extra...))
}

func streamBrokerConfig(parts int, dataDir string, extra ...string) brokerConfig {
	return engineBrokerConfig(embeddedStreams, parts, dataDir, extra...)
}

func engineBrokerConfig(eng streamEngine, parts int, dataDir string, extra ...string) brokerConfig {
	return brokerConfig{DataDir: dataDir, Extra: fmt.Sprintf(
		"%sdestinationPolicy:\n  - topic: \"s.>\"\n    type: stream\n    partitions: %d\n%s",
		eng.section, parts, strings.Join(extra, ""))}
}

// streamSend sends bodies to dest with persistent:true, which makes the broker answer
// them in order, and a receipt on the last: once it returns every one is stored.
func streamSend(t testing.TB, c *stomp.Conn, dest string, bodies []string, headers ...string) {
	t.Helper()
	for i, b := range bodies {
		opts := []func(*frame.Frame) error{stomp.SendOpt.Header("persistent", "true")}
		for j := 0; j+1 < len(headers); j += 2 {
			opts = append(opts, stomp.SendOpt.Header(headers[j], headers[j+1]))
		}
		if i == len(bodies)-1 {
			opts = append(opts, stomp.SendOpt.Receipt)
		}
		require.NoError(t, c.Send(dest, "text/plain", []byte(b), opts...))
	}
}

// streamPos is where a MESSAGE frame says its message is.
type streamPos struct{ part, off int }

func posOf(t testing.TB, h interface{ Get(string) string }) streamPos {
	t.Helper()
	p, err1 := strconv.Atoi(h.Get("x-stream-partition"))
	o, err2 := strconv.Atoi(h.Get("x-stream-offset"))
	require.NoError(t, err1, "x-stream-partition")
	require.NoError(t, err2, "x-stream-offset")
	return streamPos{p, o}
}

// TestStreamOffsetForms: every x-stream-offset form. Times are those of the appends by
// the broker's clock; the producer's timestamp header rides along to consumers but does
// not place a message in time (it says two hours ago here, for messages sent now).
func TestStreamOffsetForms(t *testing.T) {
	forEachEngine(t, testStreamOffsetForms)
}

func testStreamOffsetForms(t *testing.T, eng streamEngine) {
	b := engineBroker(t, eng, 1, "")
	prod := dial(t, b.Addr)
	start := time.Now()
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	claimed := ms(start.Add(-2 * time.Hour))
	const mid = "timestamp=<between the two sends>"
	cases := []struct {
		offset string
		want   []int // message numbers, also their offsets
	}{
		{"first", seq(0, 10)},
		{"next", nil},
		{"", nil},
		{"last", []int{9}},
		{"6", seq(6, 4)},
		{mid, seq(5, 5)},
		{"timestamp=" + ms(start.Add(-time.Hour)), seq(0, 10)},
		{"timestamp=" + ms(start.Add(time.Hour)), nil},
		{"1h", seq(0, 10)},
		{"90m", seq(0, 10)},
	}
	for i, tc := range cases {
		t.Run(tc.offset, func(t *testing.T) {
			dest := "/topic/s.forms" + strconv.Itoa(i)
			streamSend(t, prod, dest, numbered("m", 0, 5), "timestamp", claimed)
			// A millisecond boundary after the first five were appended (their RECEIPT
			// came) and before the next five are.
			between := time.Now().UnixMilli() + 1
			eventually(t, time.Second, "the clock to pass the boundary", func() bool { return time.Now().UnixMilli() > between })
			streamSend(t, prod, dest, numbered("m", 5, 10), "timestamp", claimed)
			offset := tc.offset
			if offset == mid {
				offset = "timestamp=" + strconv.FormatInt(between, 10)
			}
			c := dial(t, b.Addr)
			var hdrs []string
			if offset != "" {
				hdrs = []string{"x-stream-offset", offset}
			}
			sub := goSubscribe(t, c, dest, stomp.AckAuto, hdrs...)
			syncSubscriptions(t, c)
			for _, n := range tc.want {
				m := recv(t, sub)
				require.Equal(t, fmt.Sprintf("m-%02d", n), string(m.Body))
				require.Equal(t, streamPos{0, n}, posOf(t, m.Header))
				require.Equal(t, dest, m.Header.Get("destination"))
				require.Equal(t, "true", m.Header.Get("persistent"))
				require.NotEmpty(t, m.Header.Get("message-id"))
				require.Equal(t, claimed, m.Header.Get("timestamp"), "the producer's timestamp rides along")
			}
			// Then the live ones, whatever the start.
			streamSend(t, prod, dest, []string{"live"})
			m := recv(t, sub)
			require.Equal(t, "live", string(m.Body))
			require.Equal(t, streamPos{0, 10}, posOf(t, m.Header))
		})
	}
}

func seq(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

func TestStreamBadOffsetKeepsServing(t *testing.T) {
	forEachEngine(t, testStreamBadOffsetKeepsServing)
}

func testStreamBadOffsetKeepsServing(t *testing.T, eng streamEngine) {
	b := engineBroker(t, eng, 2, "")
	c := jmsDial(t, b.Addr)
	for _, bad := range []string{"yesterday", "-3", "timestamp=soon", "-1h"} {
		e := c.refused("SUBSCRIBE", "id", "x", "destination", "/topic/s.bad", "x-stream-offset", bad)
		msg := e.Header.Get("message")
		require.Contains(t, msg, "x-stream-offset")
		require.Contains(t, msg, strconv.Quote(bad))
		require.Contains(t, msg, "first, last, next")
		require.Contains(t, msg, "timestamp=")
	}
	// The same connection, and the broker, go on.
	sub := c.subscribe("/topic/s.bad", "x-stream-offset", "first")
	c.send("/topic/s.bad", "after")
	require.Equal(t, "after", string(c.next(sub).Body))
	other := jmsDial(t, b.Addr)
	sub2 := other.subscribe("/topic/s.bad", "x-stream-offset", "0")
	require.Equal(t, "after", string(other.next(sub2).Body))
}

// groupMember is one consumer of a consumer group, on its own connection.
type groupMember struct {
	c   *jmsClient
	sub string
}

func joinGroup(t testing.TB, addr, dest, group string, headers ...string) groupMember {
	t.Helper()
	c := jmsDial(t, addr)
	return groupMember{c, c.subscribe(dest, append([]string{"consumer-group", group, "ack", "client-individual"}, headers...)...)}
}

// consumeGroup receives n messages in all from the members, then acknowledges each
// with a receipt, and returns who got what: bodies, and partitions per member. A member
// holds what it received until then: its prefetch (100 unless it asks) must allow.
func consumeGroup(t testing.TB, n int, members ...groupMember) (map[string]int, []map[int]bool) {
	t.Helper()
	subs := make([]jmsSub, len(members))
	for i, m := range members {
		subs[i] = jmsSub{m.c, m.sub}
	}
	got := map[string]int{}
	parts := make([]map[int]bool, len(members))
	for i, ms := range jmsCollect(t, n, subs...) {
		parts[i] = map[int]bool{}
		for _, m := range ms {
			got[string(m.Body)]++
			parts[i][posOf(t, m.Header).part] = true
			members[i].c.ack(m)
		}
	}
	return got, parts
}

func requireExactlyOnce(t testing.TB, got map[string]int, want []string) {
	t.Helper()
	for _, w := range want {
		require.Equal(t, 1, got[w], "message %s", w)
	}
	require.Len(t, got, len(want))
}

func requireDisjoint(t testing.TB, parts []map[int]bool, total int) {
	t.Helper()
	seen := map[int]int{}
	for i, ps := range parts {
		for p := range ps {
			require.NotContains(t, seen, p, "partition %d read by members %d and %d", p, seen[p], i)
			seen[p] = i
		}
	}
	require.LessOrEqual(t, len(seen), total)
}

func TestStreamConsumerGroupSharesAndRebalances(t *testing.T) {
	forEachEngine(t, testStreamConsumerGroupSharesAndRebalances)
}

func testStreamConsumerGroupSharesAndRebalances(t *testing.T, eng streamEngine) {
	b := engineBroker(t, eng, 8, "")
	prod := dial(t, b.Addr)
	const dest = "/topic/s.group"
	room := []string{"activemq.prefetchSize", "300"} // consumeGroup acknowledges at the end
	a := joinGroup(t, b.Addr, dest, "G", room...)
	bm := joinGroup(t, b.Addr, dest, "G", room...)

	batch1 := numbered("one", 0, 200)
	streamSend(t, prod, dest, batch1)
	got, parts := consumeGroup(t, len(batch1), a, bm)
	requireExactlyOnce(t, got, batch1)
	requireDisjoint(t, parts, 8)
	require.Len(t, parts[0], 4, "an even share each")
	require.Len(t, parts[1], 4)

	// A third member: its SUBSCRIBE returns once it holds its partitions.
	c := joinGroup(t, b.Addr, dest, "G", room...)
	batch2 := numbered("two", 0, 300)
	streamSend(t, prod, dest, batch2)
	got, parts = consumeGroup(t, len(batch2), a, bm, c)
	requireExactlyOnce(t, got, batch2)
	requireDisjoint(t, parts, 8)
	require.NotEmpty(t, parts[2], "the new member reads")

	// One leaves: the others take its partitions over where it stopped.
	a.c.do("UNSUBSCRIBE", "id", a.sub)
	batch3 := numbered("three", 0, 200)
	streamSend(t, prod, dest, batch3)
	got, parts = consumeGroup(t, len(batch3), bm, c)
	requireExactlyOnce(t, got, batch3)
	requireDisjoint(t, parts, 8)
	require.Equal(t, 8, len(parts[0])+len(parts[1]), "every partition is read")
}

func TestStreamPartitionKeyOrder(t *testing.T) {
	forEachEngine(t, testStreamPartitionKeyOrder)
}

func testStreamPartitionKeyOrder(t *testing.T, eng streamEngine) {
	b := engineBroker(t, eng, 4, "")
	prod := dial(t, b.Addr)
	const dest = "/topic/s.keys"
	keys := []string{"alice", "bob", "carol", "dave", "erin", "frank"}
	for i := 0; i < 120; i++ {
		k := keys[i%len(keys)]
		hdr := "partition-key"
		if i%2 == 1 {
			hdr = "JMSXGroupID" // the fallback key
			k = keys[i%len(keys)]
		}
		streamSend(t, prod, dest, []string{fmt.Sprintf("%s:%03d", k, i)}, hdr, k)
	}
	c := dial(t, b.Addr)
	sub := goSubscribe(t, c, dest, stomp.AckAuto, "x-stream-offset", "first")
	partOf := map[string]int{}
	last := map[string]int{}
	for i := 0; i < 120; i++ {
		m := recv(t, sub)
		k, n, _ := strings.Cut(string(m.Body), ":")
		num, _ := strconv.Atoi(n)
		pos := posOf(t, m.Header)
		if p, ok := partOf[k]; ok {
			require.Equal(t, p, pos.part, "key %s in one partition", k)
			require.Greater(t, num, last[k], "key %s in order", k)
		}
		partOf[k], last[k] = pos.part, num
	}
	require.Len(t, partOf, len(keys))
}

// TestStreamGroupResumes: a group resumes each partition at its first unacknowledged
// message after a reconnect, a clean restart and a kill -9; the stream keeps every
// message through both restarts.
func TestStreamGroupResumes(t *testing.T) {
	forEachEngine(t, testStreamGroupResumes)
}

func testStreamGroupResumes(t *testing.T, eng streamEngine) {
	dir := t.TempDir()
	b := engineBroker(t, eng, 4, dir)
	const dest = "/topic/s.resume"
	const perPart = 25
	all := numbered("r", 0, 4*perPart)
	streamSend(t, dial(t, b.Addr), dest, all)

	// Each round acknowledges, per partition, the messages below ackBelow, and expects
	// those from the previous round's mark on.
	round := func(addr string, from, ackBelow int, offset string) {
		t.Helper()
		m := joinGroup(t, addr, dest, "G", "x-stream-offset", offset)
		n := 4 * (perPart - from)
		got := 0
		for got < n {
			f := m.c.next(m.sub)
			pos := posOf(t, f.Header)
			require.GreaterOrEqual(t, pos.off, from, "partition %d resumed at %d", pos.part, from)
			if pos.off < ackBelow {
				m.c.ack(f)
			}
			got++
		}
		m.c.expectNone(m.sub, 100*time.Millisecond)
		m.c.leave()
	}
	round(b.Addr, 0, 10, "first")
	round(b.Addr, 10, 15, "last") // reconnect: the committed offset wins over x-stream-offset

	b.Stop() // SIGTERM
	b = engineBroker(t, eng, 4, dir)
	round(b.Addr, 15, 20, "next")
	readAllFromFirst(t, b.Addr, dest, len(all))

	b.Kill() // kill -9: every ACK answered with a receipt is committed
	b = engineBroker(t, eng, 4, dir)
	round(b.Addr, 20, 25, "first")
	readAllFromFirst(t, b.Addr, dest, len(all))
}

// readAllFromFirst requires a new subscriber reading from first to get n messages, each
// partition in offset order.
func readAllFromFirst(t testing.TB, addr, dest string, n int) {
	t.Helper()
	c := jmsDial(t, addr)
	sub := c.subscribe(dest, "x-stream-offset", "first")
	next := map[int]int{}
	for i := 0; i < n; i++ {
		pos := posOf(t, c.next(sub).Header)
		require.Equal(t, next[pos.part], pos.off, "partition %d in order, none missing", pos.part)
		next[pos.part]++
	}
	c.expectNone(sub, 100*time.Millisecond)
}

func TestStreamStatsAndSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	env := []string{"BROKER_BROKER_STATSADDRESS=127.0.0.1:0"}
	cfg := streamBrokerConfig(3, dir)
	cfg.Env = env
	b := startBroker(t, cfg)
	streamSend(t, dial(t, b.Addr), "/topic/s.stats", numbered("x", 0, 30))
	b.Stop()
	b = startBroker(t, cfg)
	var addr string
	eventually(t, 10*time.Second, "the stats listener", func() bool {
		m := statsRE.FindStringSubmatch(b.Log())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	resp, err := http.Get("http://" + addr + "/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st struct {
		Destinations []struct {
			Name       string
			Enqueued   int64
			Stored     int64
			Partitions []struct{ Partition, Oldest, Next int64 }
		} `json:"destinations"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	found := false
	for _, d := range st.Destinations {
		if d.Name != "/topic/s.stats" {
			continue
		}
		found = true
		require.Equal(t, int64(30), d.Enqueued)
		require.Equal(t, int64(30), d.Stored)
		require.Len(t, d.Partitions, 3)
	}
	require.True(t, found, "a stream known from before the restart is in /stats")
	readAllFromFirst(t, b.Addr, "/topic/s.stats", 30)
}

// TestStreamSendInTransactionIsRefused: a stream append cannot be part of a COMMIT
// atomically (the stream log is not the store), so a transacted SEND to a stream, alone
// or in a composite destination, gets an ERROR that says so; the connection and the
// transaction go on, and nothing reaches the stream or the other destinations.
func TestStreamSendInTransactionIsRefused(t *testing.T) {
	forEachEngine(t, testStreamSendInTransactionIsRefused)
}

func testStreamSendInTransactionIsRefused(t *testing.T, eng streamEngine) {
	b := engineBroker(t, eng, 2, "")
	c := jmsDial(t, b.Addr)
	c.do("BEGIN", "transaction", "tx1")
	for _, dest := range []string{"/topic/s.tx", "/queue/tx.plain,/topic/s.tx"} {
		e := c.refused("SEND", "destination", dest, "transaction", "tx1", "persistent", "true")
		require.Contains(t, e.Header.Get("message"), "stream destinations do not take part in transactions")
		require.Contains(t, e.Header.Get("message"), "/topic/s.tx")
	}
	c.send("/queue/tx.plain", "in-tx", "transaction", "tx1")
	c.do("COMMIT", "transaction", "tx1")

	// Outside a transaction the same SEND works.
	c.send("/topic/s.tx", "plain", "persistent", "true")
	r := jmsDial(t, b.Addr)
	sub := r.subscribe("/topic/s.tx", "x-stream-offset", "first")
	require.Equal(t, "plain", string(r.next(sub).Body))
	r.expectNone(sub, 100*time.Millisecond)
	q := r.subscribe("/queue/tx.plain")
	require.Equal(t, "in-tx", string(r.next(q).Body))
	r.expectNone(q, 100*time.Millisecond)
}
