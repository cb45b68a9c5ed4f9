package tests

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Streams on Kafka across broker nodes: two broker processes on 127.0.0.1 share one
// in-process Kafka of three brokers (kfake, started by kafkaStreams in this test
// process). The cases every engine passes are in streams_test.go (forEachEngine).

// TestStreamKafkaTwoNodes: a message published on one node is read on the other, by a
// reader from first and by a live reader; a consumer group with a member on each node
// shares the partitions, each message delivered once.
func TestStreamKafkaTwoNodes(t *testing.T) {
	eng := kafkaStreams(t)
	n1 := engineBroker(t, eng, 4, "")
	n2 := engineBroker(t, eng, 4, "")

	const cross = "/topic/s.cross"
	live := jmsDial(t, n2.Addr)
	liveSub := live.subscribe(cross, "x-stream-offset", "next")
	msgs := numbered("c", 0, 40)
	streamSend(t, dial(t, n1.Addr), cross, msgs)
	readAllFromFirst(t, n2.Addr, cross, len(msgs))
	got := map[string]int{}
	for range msgs {
		got[string(live.next(liveSub).Body)]++
	}
	requireExactlyOnce(t, got, msgs)

	const span = "/topic/s.span"
	room := []string{"x-stream-offset", "first", "activemq.prefetchSize", "200"} // consumeGroup acknowledges at the end
	a := joinGroup(t, n1.Addr, span, "G", room...)
	b := joinGroup(t, n2.Addr, span, "G", room...)
	batch := numbered("g", 0, 200)
	streamSend(t, dial(t, n1.Addr), span, batch)
	got, parts := consumeGroup(t, len(batch), a, b)
	requireExactlyOnce(t, got, batch)
	requireDisjoint(t, parts, 4)
	require.Len(t, parts[0], 2, "the member on node 1 has half the partitions")
	require.Len(t, parts[1], 2, "the member on node 2 has the other half")
}

// TestStreamKafkaInterop: a record a Kafka client writes to a stream's topic with its
// default partitioner (murmur2 of the key, the Java producer's) reaches STOMP
// subscribers, with a message-id made of its coordinates, and a STOMP SEND with the same
// partition-key lands in the same partition, after it.
func TestStreamKafkaInterop(t *testing.T) {
	eng := kafkaStreams(t)
	b := engineBroker(t, eng, 6, "")
	const dest = "/topic/s.interop"
	r := jmsDial(t, b.Addr)
	sub := r.subscribe(dest, "x-stream-offset", "first") // opens the stream: its topic exists
	cl, err := kgo.NewClient(kgo.SeedBrokers(eng.seeds...))
	require.NoError(t, err)
	defer cl.Close()
	rec := &kgo.Record{Topic: "amq.s.interop", Key: []byte("alice"), Value: []byte("from-kafka"),
		Headers: []kgo.RecordHeader{{Key: "origin", Value: []byte("kgo")}}}
	require.NoError(t, cl.ProduceSync(ctxTimeout(t, 10*time.Second), rec).FirstErr())
	streamSend(t, dial(t, b.Addr), dest, []string{"from-stomp"}, "partition-key", "alice")

	m1, m2 := r.next(sub), r.next(sub)
	require.Equal(t, "from-kafka", string(m1.Body))
	require.Equal(t, "kgo", m1.Header.Get("origin"), "record headers are message headers")
	require.Equal(t, streamPos{int(rec.Partition), 0}, posOf(t, m1.Header))
	require.Equal(t, fmt.Sprintf("ID:stream:s.interop:%d:0", rec.Partition), m1.Header.Get("message-id"))
	require.Equal(t, "from-stomp", string(m2.Body))
	require.Equal(t, streamPos{int(rec.Partition), 1}, posOf(t, m2.Header), "the key's partition, Kafka's")
}

// keyedSend sends messages from to to (bodies "k<key>:<n>", key n%keys as
// partition-key) with persistent:true and a receipt on the last, and returns the
// bodies: once it returns every one is acknowledged by Kafka.
func keyedSend(t testing.TB, c *stomp.Conn, dest string, from, to, keys int) []string {
	t.Helper()
	var bodies []string
	for i := from; i < to; i++ {
		key := "k" + strconv.Itoa(i%keys)
		body := fmt.Sprintf("%s:%04d", key, i)
		opts := []func(*frame.Frame) error{stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Header("partition-key", key)}
		if i == to-1 {
			opts = append(opts, stomp.SendOpt.Receipt)
		}
		require.NoError(t, c.Send(dest, "text/plain", []byte(body), opts...))
		bodies = append(bodies, body)
	}
	return bodies
}

// keyedSeen is what one consumer saw: per key the sequence numbers in arrival order.
type keyedSeen map[string][]int

func (s keyedSeen) add(body string) {
	k, n, _ := strings.Cut(body, ":")
	num, _ := strconv.Atoi(n)
	s[k] = append(s[k], num)
}

// requireKeyOrder requires each key's messages to have come in order.
func requireKeyOrder(t testing.TB, who string, s keyedSeen) {
	t.Helper()
	for k, ns := range s {
		for i := 1; i < len(ns); i++ {
			require.Greater(t, ns[i], ns[i-1], "%s: key %s out of order: %v", who, k, ns)
		}
	}
}

// TestStreamKafkaNodeKilled: a consumer group has a member on each of two nodes; node
// 1 is killed -9 in the middle of the stream. Its partitions go to the member on node
// 2 once Kafka's group session (3 s here) expires; it resumes them at the committed
// offsets: every receipted message is seen, each key in order, and a message is seen
// twice only if node 1 delivered it without its ACK being committed (the uncommitted
// window).
func TestStreamKafkaNodeKilled(t *testing.T) {
	eng := kafkaStreams(t)
	n1 := engineBroker(t, eng, 4, "")
	n2 := engineBroker(t, eng, 4, "")
	const dest = "/topic/s.kill"
	const keys = 32
	a := joinGroup(t, n1.Addr, dest, "G", "x-stream-offset", "first")
	b := joinGroup(t, n2.Addr, dest, "G", "x-stream-offset", "first")
	prod := dial(t, n2.Addr)
	sent := keyedSend(t, prod, dest, 0, 300, keys)

	seenA, seenB := keyedSeen{}, keyedSeen{}
	countA, countB := map[string]int{}, map[string]int{}
	ackedA := map[string]bool{} // the ACK's RECEIPT came: committed in Kafka
	partsB := map[int]bool{}
	take := func(m groupMember, seen keyedSeen, count map[string]int) (*frame.Frame, bool) {
		f := m.c.nextWithin(m.sub, 5*time.Millisecond)
		if f == nil {
			return nil, false
		}
		seen.add(string(f.Body))
		count[string(f.Body)]++
		return f, true
	}
	// Both members read and acknowledge until node 1 has acknowledged a good part of
	// its share and the stream is not over.
	deadline := time.Now().Add(20 * time.Second)
	for len(ackedA) < 40 || len(countB) < 40 || len(countA)+len(countB) < 100 {
		require.True(t, time.Now().Before(deadline), "the members did not get going: %d on node 1, %d on node 2", len(countA), len(countB))
		if f, ok := take(a, seenA, countA); ok {
			a.c.ack(f)
			ackedA[string(f.Body)] = true
		}
		if f, ok := take(b, seenB, countB); ok {
			partsB[posOf(t, f.Header).part] = true
			b.c.ack(f)
		}
	}
	require.NotEmpty(t, partsB, "node 2 holds partitions")
	// Node 1 may have handed out more than the test read; they count as unseen.
	n1.Kill()
	killed := time.Now()

	more := keyedSend(t, prod, dest, 300, 400, keys)
	sent = append(sent, more...)
	var recovery time.Duration
	deadline = time.Now().Add(30 * time.Second)
	for {
		missing := 0
		for _, s := range sent {
			if countA[s]+countB[s] == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d receipted messages never seen after the kill", missing)
		if f, ok := take(b, seenB, countB); ok {
			if p := posOf(t, f.Header).part; !partsB[p] && recovery == 0 {
				recovery = time.Since(killed)
			}
			b.c.ack(f)
		}
	}
	require.NotZero(t, recovery, "node 2 took node 1's partitions over")

	dups := 0
	for s, n := range countB {
		require.Equal(t, 1, n, "node 2 delivered %s once", s)
		if countA[s] > 0 {
			dups++
			require.False(t, ackedA[s], "%s was committed by node 1, yet came again", s)
		}
	}
	requireKeyOrder(t, "node 1", seenA)
	requireKeyOrder(t, "node 2", seenB)
	t.Logf("kafka streams: kill -9 of node 1 to the first message of its partitions on node 2: %v (group session timeout 3s); "+
		"%d messages seen on both nodes (delivered by node 1, ACK not committed)", recovery.Round(time.Millisecond), dups)
}

// TestStreamKafkaThroughput measures persistent SENDs to a stream on Kafka (kfake in
// this process, three brokers; the broker built without -race): pipelined on one
// connection with a receipt on the last, and with a receipt on every SEND from four
// producers. kfake is a functional fake, so these are plumbing figures (the broker and
// franz-go on one machine), not Kafka's speed.
func TestStreamKafkaThroughput(t *testing.T) {
	eng := kafkaStreams(t)
	cfg := engineBrokerConfig(eng, 4, "")
	cfg.Plain = true
	b := startBroker(t, cfg)
	const dest = "/topic/s.speed"
	streamSend(t, dial(t, b.Addr), dest, []string{"warm-up"})

	const n = 4000
	c := dial(t, b.Addr)
	start := time.Now()
	streamSend(t, c, dest, numbered("p", 0, n))
	el := time.Since(start)
	t.Logf("kafka streams: %d pipelined persistent SENDs (receipt on the last), 1 producer: %.0f msgs/s", n, float64(n)/el.Seconds())

	const producers, per = 4, 250
	conns := make([]*stomp.Conn, producers)
	for i := range conns {
		conns[i] = dial(t, b.Addr)
	}
	errs := make(chan error, producers)
	var wg sync.WaitGroup
	start = time.Now()
	for i, pc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range per {
				if err := pc.Send(dest, "text/plain", fmt.Appendf(nil, "r%d-%d", i, j),
					stomp.SendOpt.Header("persistent", "true"), stomp.SendOpt.Receipt); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	el = time.Since(start)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	t.Logf("kafka streams: %d persistent SENDs with a receipt each, %d producers: %.0f msgs/s",
		producers*per, producers, float64(producers*per)/el.Seconds())
	readAllFromFirst(t, b.Addr, dest, 1+n+producers*per)
}
