package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Backpressure as ActiveMQ users rely on it, with ordinary clients at their own pace and
// the default systemUsage (sendFailIfNoSpace false): a consumer that is behind holds the
// producer back, and nothing a live subscriber should get is dropped. Dropping (the
// pendingMessageLimitStrategy) and aborting (the slowConsumerStrategy) happen only when
// configured.

// bpBody is message i of a run: its number, padded to 256 bytes.
func bpBody(i int) []byte {
	b := []byte(fmt.Sprintf("%08d", i))
	return append(b, strings.Repeat("x", 256-len(b))...)
}

// bpNumber reads the number of a bpBody.
func bpNumber(t testing.TB, body []byte) int {
	t.Helper()
	n, err := strconv.Atoi(string(body[:8]))
	require.NoError(t, err, "body %q", body)
	return n
}

// goProduce sends n non-persistent messages 0..n-1 to dest with go-stomp, without
// receipts (a client's fastest pace), then one SEND with a receipt; it counts what it
// handed to the client and reports the first error on errs.
func goProduce(c *stomp.Conn, dest string, n int, sent *atomic.Int64, errs chan<- error) {
	for i := range n {
		if err := c.Send(dest, "text/plain", bpBody(i)); err != nil {
			errs <- fmt.Errorf("send %d: %w", i, err)
			return
		}
		sent.Add(1)
	}
	errs <- c.Send(dest, "text/plain", []byte("end"), stomp.SendOpt.Receipt)
}

// goConsumeInOrder reads n numbered messages from sub and requires each to be the next.
func goConsumeInOrder(t testing.TB, sub *stomp.Subscription, n int, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for want := 0; want < n; want++ {
		select {
		case m, ok := <-sub.C:
			require.True(t, ok, "subscription closed after %d of %d messages", want, n)
			require.NoError(t, m.Err, "after %d of %d messages", want, n)
			require.Equal(t, want, bpNumber(t, m.Body), "messages arrive in order, none missing")
		case <-deadline:
			t.Fatalf("only %d of %d messages arrived within %v", want, n, within)
		}
	}
}

// destStat is one destination of GET /stats.
type destStat struct {
	Name        string
	Pending     int
	Consumers   int
	Enqueued    int64
	Dequeued    int64
	MemoryBytes int64
	Dropped     int64
	Aborted     int64
}

func destStats(t testing.TB, addr, name string) destStat {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st struct {
		Destinations []destStat `json:"destinations"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	for _, d := range st.Destinations {
		if d.Name == name {
			return d
		}
	}
	return destStat{Name: name}
}

var statsEnv = []string{"BROKER_BROKER_STATSADDRESS=127.0.0.1:0"}

// TestTopicSubscriberBehindHoldsProducer: go-stomp on both ends. The subscriber stops
// reading; its prefetch fills, then the topic's memoryLimit, and the producer is held
// (not refused, nothing dropped). Once the subscriber reads again every message
// arrives, in order.
func TestTopicSubscriberBehindHoldsProducer(t *testing.T) {
	b := startBroker(t, brokerConfig{Env: statsEnv, Extra: `
destinationPolicy:
  - topic: "bp.>"
    prefetch: 50
    memoryLimit: 128kb
`})
	addr := statsAddr(t, b)
	// Enough to fill the sockets' buffers on both sides before the topic's memory.
	const n = 60000
	subConn := dial(t, b.Addr)
	sub, err := subConn.Subscribe("/topic/bp.prices", stomp.AckAuto)
	require.NoError(t, err)
	syncSubscriptions(t, subConn)

	prod := dial(t, b.Addr)
	var sent atomic.Int64
	errs := make(chan error, 1)
	go goProduce(prod, "/topic/bp.prices", n, &sent, errs)

	// The subscriber reads nothing yet: the producer must come to a stop, held.
	awaitLogLine(t, b, 30*time.Second, "producer held until there is room")
	eventually(t, 30*time.Second, "the topic's memory at its limit", func() bool {
		return destStats(t, addr, "/topic/bp.prices").MemoryBytes > 64<<10
	})
	held := sent.Load()
	assert.Less(t, held, int64(n), "the producer is held before it sent everything")

	goConsumeInOrder(t, sub, n, 2*time.Minute)
	require.NoError(t, <-errs, "the producer is never refused")
	m := <-sub.C
	require.Equal(t, "end", string(m.Body))
	st := destStats(t, addr, "/topic/bp.prices")
	assert.Zero(t, st.Dropped)
	eventually(t, 10*time.Second, "the topic's memory released", func() bool {
		return destStats(t, addr, "/topic/bp.prices").MemoryBytes == 0
	})
	t.Logf("producer held after %d of %d messages", held, n)
}

// TestTopicFanOutDefaultConfig: the scenario at the default configuration
// (no destination policy): 1 go-stomp producer, 1 go-stomp subscriber reading at its
// own pace; every message arrives.
func TestTopicFanOutDefaultConfig(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	const n = 50000
	subConn := dial(t, b.Addr)
	sub, err := subConn.Subscribe("/topic/fanout", stomp.AckAuto)
	require.NoError(t, err)
	syncSubscriptions(t, subConn)
	prod := dial(t, b.Addr)
	var sent atomic.Int64
	errs := make(chan error, 1)
	go goProduce(prod, "/topic/fanout", n, &sent, errs)
	goConsumeInOrder(t, sub, n, 3*time.Minute)
	require.NoError(t, <-errs)
	require.NotContains(t, b.Log(), "dropping")
}

// TestQueueTransientHoldsProducer: a non-persistent queue backlog past the queue's
// memoryLimit holds a go-stomp producer (ActiveMQ's default) instead of sending it an
// ERROR that would end its connection; a consumer that starts late gets everything.
func TestQueueTransientHoldsProducer(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: `
destinationPolicy:
  - queue: "bp.>"
    memoryLimit: 256kb
`})
	const n = 20000
	prod := dial(t, b.Addr)
	var sent atomic.Int64
	errs := make(chan error, 1)
	go goProduce(prod, "/queue/bp.work", n, &sent, errs)
	awaitLogLine(t, b, 30*time.Second, "producer held until there is room")
	held := sent.Load()
	assert.Less(t, held, int64(n))

	cons := dial(t, b.Addr)
	sub, err := cons.Subscribe("/queue/bp.work", stomp.AckAuto)
	require.NoError(t, err)
	goConsumeInOrder(t, sub, n, 2*time.Minute)
	require.NoError(t, <-errs, "the producer is never refused")
	m := <-sub.C
	require.Equal(t, "end", string(m.Body))
	t.Logf("producer held after %d of %d messages", held, n)
}

// TestSendFailIfNoSpaceTopic: with sendFailIfNoSpace: true (the fail-fast option) a
// SEND to a topic whose subscriber is behind past the memoryLimit gets an ERROR, and
// the connection goes on.
func TestSendFailIfNoSpaceTopic(t *testing.T) {
	b := startBroker(t, brokerConfig{Extra: `
systemUsage:
  sendFailIfNoSpace: true
destinationPolicy:
  - topic: "bp.>"
    prefetch: 10
    memoryLimit: 16kb
`})
	// A raw subscriber that never reads: its prefetch and socket buffers fill.
	slow := jmsDial(t, b.Addr)
	slow.subscribe("/topic/bp.ff", "ack", "client-individual")
	p := jmsDial(t, b.Addr)
	var refused string
	for i := 0; i < 100000 && refused == ""; i++ {
		f := frame.New("SEND", "destination", "/topic/bp.ff", "receipt", "r"+strconv.Itoa(i))
		f.Body = bpBody(i)
		p.raw.send(f)
		reply, ok := p.read(10 * time.Second)
		require.True(t, ok, "an answer to SEND %d", i)
		switch reply.Command {
		case "ERROR":
			refused = reply.Header.Get("message")
		case "RECEIPT":
		default:
			t.Fatalf("unexpected %s", reply.Command)
		}
	}
	require.Contains(t, refused, "Usage Manager memory limit reached on /topic/bp.ff")
	// The producer's connection stays usable.
	p.do("SEND", "destination", "/queue/bp.other")
}

// TestPendingMessageLimitDropsOldest: constantPendingMessageLimitStrategy keeps at most
// limit waiting messages for a subscriber that is behind; the producer is never held,
// the oldest are dropped and counted, and what arrives is the newest, in order.
func TestPendingMessageLimitDropsOldest(t *testing.T) {
	b := startBroker(t, brokerConfig{Env: statsEnv, Extra: `
destinationPolicy:
  - topic: "bp.>"
    prefetch: 10
    memoryLimit: 64kb
    pendingMessageLimitStrategy:
      constantPendingMessageLimitStrategy: {limit: 100}
`})
	addr := statsAddr(t, b)
	slow := jmsDial(t, b.Addr)
	slow.subscribe("/topic/bp.limited", "ack", "client-individual")
	p := jmsDial(t, b.Addr)
	const n = 3000
	sendNumbered(t, p, "/topic/bp.limited", n)
	st := destStats(t, addr, "/topic/bp.limited")
	require.Positive(t, st.Dropped)
	// The subscriber now reads and acknowledges everything it was kept.
	var got []int
	for {
		f, ok := slow.read(2 * time.Second)
		if !ok {
			break
		}
		require.Equal(t, "MESSAGE", f.Command)
		got = append(got, bpNumber(t, f.Body))
		slow.raw.send(frame.New("ACK", "id", f.Header.Get("ack")))
	}
	require.EqualValues(t, n, int64(len(got))+st.Dropped, "every message delivered or counted as dropped")
	assert.Equal(t, n-1, got[len(got)-1], "the newest is kept")
	for i := 1; i < len(got); i++ {
		require.Less(t, got[i-1], got[i], "in order")
	}
	assert.LessOrEqual(t, len(got), 10+100+10, "at most prefetch + limit kept (plus what was in flight)")
	awaitLogLine(t, b, 5*time.Second, "dropping its oldest waiting messages")
}

// sendNumbered pipelines n numbered SENDs to dest, each with a receipt, and requires
// every RECEIPT, in order: the producer is never refused nor held for good.
func sendNumbered(t testing.TB, p *jmsClient, dest string, n int) {
	t.Helper()
	for i := range n {
		f := frame.New("SEND", "destination", dest, "receipt", "r"+strconv.Itoa(i))
		f.Body = bpBody(i)
		p.raw.send(f)
	}
	for i := range n {
		reply, ok := p.read(30 * time.Second)
		require.True(t, ok, "no answer to SEND %d", i)
		require.Equal(t, "RECEIPT", reply.Command, "SEND %d: %s", i, reply.Header.Get("message"))
	}
}

// TestSlowConsumerAborted: abortSlowConsumerStrategy ends a subscription that stays
// behind, with an ERROR on its connection; the producer it held goes on.
func TestSlowConsumerAborted(t *testing.T) {
	for _, abortConn := range []bool{false, true} {
		t.Run("abortConnection="+strconv.FormatBool(abortConn), func(t *testing.T) {
			b := startBroker(t, brokerConfig{Env: statsEnv, Extra: fmt.Sprintf(`
destinationPolicy:
  - topic: "bp.>"
    prefetch: 10
    memoryLimit: 32kb
    slowConsumerStrategy:
      abortSlowConsumerStrategy: {abortConnection: %v, maxSlowDuration: 300ms, checkPeriod: 100ms}
`, abortConn)})
			addr := statsAddr(t, b)
			slow := jmsDial(t, b.Addr)
			slow.subscribe("/topic/bp.slow", "ack", "client-individual")
			p := jmsDial(t, b.Addr)
			sendNumbered(t, p, "/topic/bp.slow", 2000)
			var errFrame *frame.Frame
			for errFrame == nil {
				f, ok := slow.read(20 * time.Second)
				require.True(t, ok, "the slow subscriber gets an ERROR")
				if f.Command == "ERROR" {
					errFrame = f
				}
			}
			require.Contains(t, errFrame.Header.Get("message"), "slow consumer: subscription s1 on /topic/bp.slow")
			eventually(t, 10*time.Second, "the abort counted", func() bool {
				return destStats(t, addr, "/topic/bp.slow").Aborted == 1
			})
			if abortConn {
				eventually(t, 10*time.Second, "the slow subscriber's connection closed", func() bool {
					select {
					case _, ok := <-slow.frames:
						return !ok
					default:
						return false
					}
				})
			} else {
				// The connection goes on: a SEND with a receipt is answered.
				slow.do("SEND", "destination", "/queue/bp.after")
				assert.Zero(t, destStats(t, addr, "/topic/bp.slow").Consumers)
			}
		})
	}
}

// stompPyBackpressure publishes n messages with stomp.py (no receipts) to a destination
// whose consumer starts only once the producer is held, and checks that all arrive in
// order.
const stompPyBackpressure = `
import sys, threading, stomp

import os, time
host, port = sys.argv[1].rsplit(":", 1)
dest, n, held_file = sys.argv[2], int(sys.argv[3]), sys.argv[4]

def wait_held():
    deadline = time.time() + 60
    while not os.path.exists(held_file):
        if time.time() > deadline:
            raise SystemExit("the broker never held the producer")
        time.sleep(0.05)

class Collector(stomp.ConnectionListener):
    def __init__(self):
        self.n, self.bad, self.cond = 0, None, threading.Condition()
    def on_message(self, frame):
        # A subscriber that is behind: its receiving thread stops until the test
        # says the producer is held.
        wait_held()
        with self.cond:
            if self.n < n and frame.body != "%08d" % self.n and self.bad is None:
                self.bad = "message %d is %r" % (self.n, frame.body[:8])
            self.n += 1
            self.cond.notify_all()
        if "ack" in frame.headers and dest.startswith("/topic/"):
            cons.ack(frame.headers["ack"])
    def on_error(self, frame):
        with self.cond:
            self.bad = "ERROR: %s" % frame.headers.get("message")
            self.cond.notify_all()

col = Collector()
cons = stomp.Connection12([(host, int(port))])
cons.set_listener("c", col)
cons.connect(wait=True)
if dest.startswith("/topic/"):
    cons.subscribe(dest, id="1", ack="client-individual", headers={"activemq.prefetchSize": "50"})

prod = stomp.Connection12([(host, int(port))])
perr = []
class PErr(stomp.ConnectionListener):
    def on_error(self, frame):
        perr.append(frame.headers.get("message"))
prod.set_listener("p", PErr())
prod.connect(wait=True)
sent = [0]
def produce():
    for i in range(n):
        prod.send(dest, "%08d" % i)
        sent[0] += 1
    prod.send(dest, "end", receipt="end")
t = threading.Thread(target=produce)
t.start()
wait_held()
if dest.startswith("/queue/"):
    cons.subscribe(dest, id="1", ack="auto")
with col.cond:
    ok = col.cond.wait_for(lambda: col.n >= n + 1 or col.bad is not None, 120)
t.join(60)
if col.bad or perr:
    raise SystemExit("failed: %s %s" % (col.bad, perr))
if not ok:
    raise SystemExit("timed out: %d of %d" % (col.n, n + 1))
print("stomp.py backpressure OK, producer held after", sent[0])
`

// TestStompPyBackpressure: the same two scenarios with stomp.py on both ends.
func TestStompPyBackpressure(t *testing.T) {
	requirePython(t)
	for _, dest := range []string{"/topic/bp.py", "/queue/bp.py"} {
		t.Run(dest, func(t *testing.T) {
			b := startBroker(t, brokerConfig{Extra: `
destinationPolicy:
  - topic: "bp.>"
    memoryLimit: 64kb
  - queue: "bp.>"
    memoryLimit: 64kb
`})
			dir := t.TempDir()
			script := filepath.Join(dir, "bp.py")
			held := filepath.Join(dir, "held")
			require.NoError(t, os.WriteFile(script, []byte(stompPyBackpressure), 0o644))
			cmd := exec.Command(systemPython, script, b.Addr, dest, "20000", held)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			awaitLogLine(t, b, 60*time.Second, "producer held until there is room")
			require.NoError(t, os.WriteFile(held, nil, 0o644))
			select {
			case err := <-done:
				require.NoError(t, err, "stomp.py:\n%s\nbroker log:\n%s", out.String(), b.Log())
			case <-time.After(3 * time.Minute):
				_ = cmd.Process.Kill()
				t.Fatalf("stomp.py did not finish:\n%s", out.String())
			}
			require.Contains(t, out.String(), "stomp.py backpressure OK")
		})
	}
}
