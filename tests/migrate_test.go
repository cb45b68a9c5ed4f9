package tests

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/stompclient"
)

// broker migrate against the real ActiveMQ 5.17 (persistent, KahaDB) as the source and
// our broker (kahaDB) as the target.

// amqPersistentXML is an ActiveMQ with KahaDB under dir, expired messages checked
// every 200ms (persistent ones go to ActiveMQ.DLQ, ActiveMQ's default strategy).
func amqPersistentXML(dir string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<beans xmlns="http://www.springframework.org/schema/beans"
       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
       xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans.xsd
                           http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="migrate-src" persistent="true" useJmx="false" dataDirectory="` + dir + `">
    <destinationPolicy>
      <policyMap>
        <policyEntries>
          <policyEntry queue=">" expireMessagesPeriod="200"/>
        </policyEntries>
      </policyMap>
    </destinationPolicy>
    <persistenceAdapter>
      <kahaDB directory="` + filepath.Join(dir, "kahadb") + `"/>
    </persistenceAdapter>
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:` + amqStompPort + `"/>
    </transportConnectors>
  </broker>
</beans>
`
}

// migMsg is a message the tests put on the source, and expect on the target.
type migMsg struct {
	seq     int
	headers []string // name, value, ...
	body    []byte
}

func (m migMsg) header(k string) string {
	for i := 0; i+1 < len(m.headers); i += 2 {
		if m.headers[i] == k {
			return m.headers[i+1]
		}
	}
	return ""
}

// migMessages are n messages for queue with every kind of header: persistent or not,
// priorities 0-9, an absolute expires on some, type, correlation-id, reply-to, groups,
// content-type, custom headers; binary bodies (NULs, invalid UTF-8) when binary.
func migMessages(queue string, n int, binary bool, expires int64) []migMsg {
	rng := rand.New(rand.NewPCG(uint64(len(queue)), uint64(n)))
	ms := make([]migMsg, n)
	for i := range ms {
		h := []string{
			"seq", strconv.Itoa(i),
			"priority", strconv.Itoa(i % 10),
			"type", "order",
			"correlation-id", fmt.Sprintf("corr-%s-%d", queue, i),
			"reply-to", "/queue/replies",
			"JMSXGroupID", "g" + strconv.Itoa(i%5),
			"JMSXGroupSeq", strconv.Itoa(i/5 + 1),
			"x-custom", "v" + strconv.Itoa(i*7),
			"x-colon", "a:b c",
		}
		if i%3 != 0 {
			h = append(h, "persistent", "true")
		}
		if i%4 == 0 {
			h = append(h, "expires", strconv.FormatInt(expires, 10))
		}
		var body []byte
		if binary {
			body = make([]byte, 1+rng.IntN(2000))
			for j := range body {
				body[j] = byte(rng.UintN(256))
			}
			body[0], body[len(body)/2] = 0, 0xff
			h = append(h, "content-type", "application/octet-stream")
		} else {
			body = []byte(fmt.Sprintf("message %d of %s", i, queue))
			h = append(h, "content-type", "text/plain")
		}
		ms[i] = migMsg{seq: i, headers: h, body: body}
	}
	return ms
}

func stompURL(t testing.TB, addr string) *stompclient.URL {
	t.Helper()
	u, err := stompclient.ParseURL("stomp://" + addr)
	require.NoError(t, err)
	return u
}

// migFill sends ms to the queue at addr, each with a receipt, many outstanding.
func migFill(t testing.TB, addr, queue string, ms []migMsg) {
	t.Helper()
	ctx := ctxTimeout(t, 120*time.Second)
	c, err := stompclient.Dial(ctx, stompURL(t, addr), stompclient.Options{})
	require.NoError(t, err)
	defer c.Close()
	for _, m := range ms {
		h := &frame.Header{}
		for i := 0; i+1 < len(m.headers); i += 2 {
			h.Add(m.headers[i], m.headers[i+1])
		}
		_, err := c.Send("/queue/"+queue, h, m.body, true)
		require.NoError(t, err)
		for c.Outstanding() >= 256 {
			_, err := c.AwaitReceipt(ctx)
			require.NoError(t, err)
		}
	}
	require.NoError(t, c.Disconnect(ctx))
}

// migDrain receives the n messages on the queue at addr, and then requires that
// nothing else is there: a fence message sent after them must come next.
func migDrain(t testing.TB, addr, queue string, n int) []*frame.Frame {
	t.Helper()
	ctx := ctxTimeout(t, 120*time.Second)
	c, err := stompclient.Dial(ctx, stompURL(t, addr), stompclient.Options{})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Subscribe(ctx, stompclient.Subscription{Destination: "/queue/" + queue, Prefetch: 500}))
	got := make([]*frame.Frame, 0, n)
	for len(got) < n {
		f, err := c.Receive(ctx)
		require.NoError(t, err, "queue %s: %d of %d received", queue, len(got), n)
		require.Empty(t, f.Header.Get("fence"), "queue %s: only %d of %d messages", queue, len(got), n)
		got = append(got, f)
	}
	_, err = c.Send("/queue/"+queue, hdrs("fence", "true", "priority", "0"), []byte("fence"), true)
	require.NoError(t, err)
	f, err := c.Receive(ctx)
	require.NoError(t, err)
	require.Equal(t, "true", f.Header.Get("fence"), "queue %s: more than the %d messages: seq %s", queue, n, f.Header.Get("seq"))
	require.NoError(t, c.Disconnect(ctx))
	return got
}

func hdrs(kv ...string) *frame.Header {
	h := &frame.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// migBrowseCount is the number of messages a browser sees on the queue at addr (ActiveMQ
// pages at most 400 to a browser).
func migBrowseCount(t testing.TB, addr, queue string) int {
	t.Helper()
	ctx := ctxTimeout(t, 30*time.Second)
	c, err := stompclient.Dial(ctx, stompURL(t, addr), stompclient.Options{})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Subscribe(ctx, stompclient.Subscription{Destination: "/queue/" + queue, Browser: true}))
	n := 0
	for {
		f, err := c.Receive(ctx)
		require.NoError(t, err)
		if f.Header.Get("browser") == "end" {
			return n
		}
		n++
	}
}

// checkMoved requires that got are exactly the messages want, each once, in order per
// priority level (and persistence, as ActiveMQ orders them), with their headers and bodies, the source's message-id in
// _AMQ_DUPL_ID and the source's timestamp (from before the move began).
func checkMoved(t testing.TB, queue string, want []migMsg, got []*frame.Frame, movedAfter int64) {
	t.Helper()
	require.Len(t, got, len(want), "queue %s", queue)
	seen := map[int]bool{}
	lastByPriority := map[string]int{}
	ids := map[string]bool{}
	for _, f := range got {
		seq, err := strconv.Atoi(f.Header.Get("seq"))
		require.NoError(t, err, "queue %s: %v", queue, f.Header)
		require.False(t, seen[seq], "queue %s: seq %d twice", queue, seq)
		seen[seq] = true
		w := want[seq]
		// ActiveMQ dispatches a queue's persistent messages before its non-persistent
		// ones (two cursors): the order it keeps is per priority and persistence.
		p := f.Header.Get("priority") + "/" + f.Header.Get("persistent")
		if last, ok := lastByPriority[p]; ok {
			require.Greater(t, seq, last, "queue %s: priority %s out of order", queue, p)
		}
		lastByPriority[p] = seq
		// JMSXGroupID and JMSXGroupSeq are not there: ActiveMQ's STOMP transport turns
		// them into the message's group fields on SEND and never writes them on a
		// MESSAGE, so no STOMP client of ActiveMQ can read them (docs/migration.md).
		for _, k := range []string{"priority", "type", "correlation-id", "reply-to", "x-custom", "x-colon", "content-type"} {
			require.Equal(t, w.header(k), f.Header.Get(k), "queue %s seq %d header %s: %v", queue, seq, k, f.Header)
		}
		require.Equal(t, w.header("persistent") == "true", f.Header.Get("persistent") == "true", "queue %s seq %d persistent", queue, seq)
		wantExp := w.header("expires")
		if wantExp == "" {
			wantExp = "0"
		}
		require.Equal(t, wantExp, f.Header.Get("expires"), "queue %s seq %d expires", queue, seq)
		ts, err := strconv.ParseInt(f.Header.Get("timestamp"), 10, 64)
		require.NoError(t, err)
		require.Positive(t, ts)
		require.Less(t, ts, movedAfter, "queue %s seq %d: the timestamp is the move's, not the source's", queue, seq)
		id := f.Header.Get("_AMQ_DUPL_ID")
		require.True(t, strings.HasPrefix(id, "ID:"), "queue %s seq %d: _AMQ_DUPL_ID %q is not ActiveMQ's message-id", queue, seq, id)
		require.False(t, ids[id], "queue %s: source id %s twice", queue, id)
		ids[id] = true
		require.True(t, bytes.Equal(w.body, f.Body), "queue %s seq %d: body differs (%d bytes, want %d)", queue, seq, len(f.Body), len(w.body))
	}
}

// TestMigrateFromActiveMQ fills a persistent ActiveMQ 5.17 with thousands of messages on
// several queues (every header kind, priorities, binary bodies) and its DLQ (expired
// messages), lists them with --dry-run (discovery through the advisory topic), moves them
// with broker migrate, and checks that our broker holds each exactly once with its
// headers, in order per priority level, and that the source's queues are empty.
func TestMigrateFromActiveMQ(t *testing.T) {
	amq := startActiveMQ(t, amqPersistentXML(t.TempDir()))
	ours := startBroker(t, brokerConfig{Adapter: "kahaDB: {}"})

	exp := time.Now().Add(2 * time.Hour).UnixMilli()
	queues := map[string][]migMsg{
		"MIG.A":   migMessages("MIG.A", 1500, false, exp),
		"MIG.B":   migMessages("MIG.B", 1000, false, exp),
		"MIG.BIN": migMessages("MIG.BIN", 800, true, exp),
	}
	for q, ms := range queues {
		migFill(t, amq, q, ms)
	}
	// The DLQ: persistent messages that expire go to ActiveMQ.DLQ.
	const expired = 40
	short := time.Now().Add(300 * time.Millisecond).UnixMilli()
	dead := migMessages("MIG.EXPIRE", expired, false, short)
	for i := range dead {
		dead[i].headers = append(dead[i].headers[:len(dead[i].headers):len(dead[i].headers)], "persistent", "true", "expires", strconv.FormatInt(short, 10))
	}
	migFill(t, amq, "MIG.EXPIRE", dead)
	eventually(t, 30*time.Second, "the expired messages in ActiveMQ.DLQ", func() bool {
		return migBrowseCount(t, amq, "ActiveMQ.DLQ") == expired
	})

	from := "stomp://" + amq
	to := "stomp://" + ours.Addr
	dry := cliOK(t, "", "migrate", "--from", from, "--to", to, "--dry-run", "--settle", "2s")
	t.Logf("dry run:\n%s", dry)
	for _, q := range []string{"MIG.A", "MIG.B", "MIG.BIN", "MIG.EXPIRE", "ActiveMQ.DLQ"} {
		assert.Contains(t, dry, "  "+q+"\n")
	}

	start := sourceCutoff()
	r := runCLI(t, "", nil, "migrate", "--from", from, "--to", to, "--settle", "2s", "--idle", "1s", "--progress", "200ms")
	require.Equal(t, 0, r.Code, "migrate:\n%s\n%s", r.Stdout, r.Stderr)
	t.Logf("migrate:\n%s", r.Stdout)
	for q := range queues {
		assert.Regexp(t, regexp.MustCompile(`(?m)^\s*`+regexp.QuoteMeta(q)+`\s+`+regexp.QuoteMeta(thousandsOf(len(queues[q])))+`\s`), r.Stdout)
	}

	for q, ms := range queues {
		checkMoved(t, q, ms, migDrain(t, ours.Addr, q, len(ms)), start)
		migDrain(t, amq, q, 0)
	}
	// The DLQ's messages keep their headers; ActiveMQ set their expiry to 0 when it
	// dead-lettered them, so they live on here.
	dlq := migDrain(t, ours.Addr, "ActiveMQ.DLQ", expired)
	seen := map[string]bool{}
	for _, f := range dlq {
		seen[f.Header.Get("seq")] = true
		assert.Equal(t, "order", f.Header.Get("type"))
		assert.Equal(t, "true", f.Header.Get("persistent"))
		assert.Equal(t, "/queue/MIG.EXPIRE", f.Header.Get("original-destination"), "a retry here sends it back")
	}
	assert.Len(t, seen, expired)
	migDrain(t, amq, "ActiveMQ.DLQ", 0)
}

// sourceCutoff returns a time, in milliseconds, later than every timestamp the source
// gave the messages filled so far and not later than any a move gives: it waits for the
// clock to leave the millisecond of the call (a message filled in that millisecond
// carries it).
func sourceCutoff() int64 {
	filled := time.Now().UnixMilli()
	for time.Now().UnixMilli() <= filled {
		runtime.Gosched()
	}
	return filled + 1
}

func thousandsOf(n int) string {
	s := strconv.Itoa(n)
	if len(s) > 3 {
		s = s[:len(s)-3] + "," + s[len(s)-3:]
	}
	return s
}

// TestMigrateKilledResumesExactlyOnce kills broker migrate with SIGKILL halfway through
// a queue, runs it again, and checks that our broker holds each message exactly once,
// in order, and that the source is empty. The messages sent but not yet acknowledged
// on the source when the tool died come again in the second run: our broker's
// duplicate detection (_AMQ_DUPL_ID) must drop them.
func TestMigrateKilledResumesExactlyOnce(t *testing.T) {
	amq := startActiveMQ(t, amqPersistentXML(t.TempDir()))
	ours := startBroker(t, brokerConfig{Adapter: "kahaDB: {}"})
	const n = 20000
	ms := migMessages("MIG.KILL", n, false, time.Now().Add(2*time.Hour).UnixMilli())
	for i := range ms { // one priority, all persistent: one order, the source's
		ms[i].headers[3] = "4"
		if ms[i].header("persistent") == "" {
			ms[i].headers = append(ms[i].headers, "persistent", "true")
		}
	}
	migFill(t, amq, "MIG.KILL", ms)
	start := sourceCutoff()

	from, to := "stomp://"+amq, "stomp://"+ours.Addr
	migrateKilled(t, n, "MIG.KILL", "migrate", "--from", from, "--to", to, "--queue", "MIG.KILL", "--idle", "1s")

	r := runCLI(t, "", nil, "migrate", "--from", from, "--to", to, "--queue", "MIG.KILL", "--idle", resumeIdle, "--progress", "0")
	require.Equal(t, 0, r.Code, "migrate again:\n%s\n%s", r.Stdout, r.Stderr)
	t.Logf("second run:\n%s", r.Stdout)

	got := migDrain(t, ours.Addr, "MIG.KILL", n)
	checkMoved(t, "MIG.KILL", ms, got, start)
	for i, f := range got {
		require.Equal(t, strconv.Itoa(i), f.Header.Get("seq"), "message %d out of order", i)
	}
	migDrain(t, amq, "MIG.KILL", 0)
}

// resumeIdle is the --idle of the run after a kill: ActiveMQ gives the killed tool's
// unacknowledged messages (and, behind them, the rest of the queue) to a new consumer
// only once it noticed the connection closed, which on a busy machine took over a
// second, and a run that hears nothing for its idle ends having moved nothing.
const resumeIdle = "15s"

// migrateKilled runs broker with args (a migrate) and kills it -9 once its progress
// lines say that a third of the n messages of what moved, whose label it names, were
// moved, and before all of them were.
func migrateKilled(t testing.TB, n int, what string, args ...string) {
	t.Helper()
	cmd := exec.Command(brokerBin, append(args, "--progress", "50ms")...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	progressRE := regexp.MustCompile(`^moved ` + regexp.QuoteMeta(what) + ` ([0-9,]+) `)
	sc := bufio.NewScanner(stderr)
	moved := 0
	for moved < n/3 && sc.Scan() {
		if m := progressRE.FindStringSubmatch(sc.Text()); m != nil {
			moved, _ = strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
		}
	}
	require.GreaterOrEqual(t, moved, n/3, "the tool ended before a third was moved: %v", sc.Err())
	require.Less(t, moved, n, "the tool moved everything before it could be killed")
	require.NoError(t, cmd.Process.Kill())
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	var exit *exec.ExitError
	require.True(t, errors.As(cmd.Wait(), &exit), "the tool was killed")
	t.Logf("killed after %d moved", moved)
}

// TestMigrateRate moves messages of 1 KiB from ActiveMQ 5.17 to our broker, both without
// the race detector, and logs the rate: 2,000 in the suite, MIGRATE_RATE_MESSAGES of them
// (100000 for the figure in docs/migration.md, which takes minutes) when that is set.
func TestMigrateRate(t *testing.T) {
	// A short run in the suite; MIGRATE_RATE_MESSAGES=100000 gives the figure.
	n, _ := strconv.Atoi(os.Getenv("MIGRATE_RATE_MESSAGES"))
	if n <= 0 {
		n = 2000
	}
	amq := startActiveMQ(t, amqPersistentXML(t.TempDir()))
	ours := startBroker(t, brokerConfig{Adapter: "kahaDB: {}", Plain: true})
	body := bytes.Repeat([]byte("x"), 1024)
	ms := make([]migMsg, n)
	for i := range ms {
		ms[i] = migMsg{seq: i, headers: []string{"persistent", "true", "seq", strconv.Itoa(i)}, body: body}
	}
	migFill(t, amq, "MIG.RATE", ms)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, plainBrokerBin(t), "migrate", "--from", "stomp://"+amq, "--to", "stomp://"+ours.Addr, "--queue", "MIG.RATE", "--idle", "1s", "--progress", "0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("migrate of %d messages of 1 KiB:\n%s", n, out)
	migDrain(t, ours.Addr, "MIG.RATE", n)
}
