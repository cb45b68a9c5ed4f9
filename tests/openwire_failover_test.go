package tests

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/pgtest"
)

// The failover tests: ActiveMQ's Java client on a failover: URL against our broker
// restarted (SIGTERM), killed -9, or replaced by the jdbc standby that takes the store
// lock over, while it sends and receives. The scenarios are OwFailover.java's; the test
// steers them through stdin and follows their output as it is printed.

// owLive is a scenario running in its own JVM.
type owLive struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	cancel context.CancelFunc
	done   chan struct{}
	err    error

	stdout, stderr logOutput
}

// startOWLive starts scenario against url with opts, without waiting for it; it is
// killed when the test ends if it still runs.
func startOWLive(t testing.TB, url, scenario string, opts ...string) *owLive {
	t.Helper()
	cp := owClasspath(t)
	ctx, cancel := context.WithTimeout(context.Background(), owRunTimeout)
	args := append([]string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", cp, "OwClient", scenario, url}, opts...)
	l := &owLive{t: t, cancel: cancel, done: make(chan struct{})}
	l.cmd = exec.CommandContext(ctx, javaBinary(), args...)
	l.cmd.Stdout, l.cmd.Stderr = &l.stdout, &l.stderr
	var err error
	l.stdin, err = l.cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, l.cmd.Start())
	go func() {
		l.err = l.cmd.Wait()
		close(l.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-l.done
		if t.Failed() {
			t.Logf("OwClient %s output:\n%s\nstderr:\n%s", scenario, l.output().stdout, l.errOutput())
		}
	})
	return l
}

func (l *owLive) output() owResult { return parseOW(l.stdout.String()) }

func (l *owLive) errOutput() string { return l.stderr.String() }

// waitFor waits up to d for cond to hold of the output so far; the scenario ending
// first, or the deadline, fails the test.
func (l *owLive) waitFor(d time.Duration, what string, cond func(owResult) bool) owResult {
	l.t.Helper()
	deadline := time.Now().Add(d)
	for {
		r := l.output()
		if cond(r) {
			return r
		}
		select {
		case <-l.done:
			if r := l.output(); cond(r) {
				return r
			}
			l.t.Fatalf("OwClient ended (%v) before %s:\n%s\nstderr:\n%s", l.err, what, l.output().stdout, l.errOutput())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("no %s within %v:\n%s", what, d, l.output().stdout)
		}
	}
}

// tell writes word on the scenario's stdin.
func (l *owLive) tell(word string) {
	l.t.Helper()
	_, err := io.WriteString(l.stdin, word+"\n")
	require.NoError(l.t, err)
}

// wait waits for the scenario to end, which must be a success, and returns its output.
func (l *owLive) wait() owResult {
	l.t.Helper()
	select {
	case <-l.done:
	case <-time.After(owRunTimeout):
		l.t.Fatalf("OwClient still running after %v", owRunTimeout)
	}
	require.NoError(l.t, l.err, "OwClient:\n%s\nstderr:\n%s", l.output().stdout, l.errOutput())
	r := l.output()
	l.t.Logf("OwClient:\n%s", strings.TrimRight(r.stdout, "\n"))
	return r
}

// intOf is the last value of key as a number (-1 if none).
func (r owResult) intOf(key string) int {
	n, err := strconv.Atoi(r.get(key))
	if err != nil {
		return -1
	}
	return n
}

// resumedAll reports whether every one of names printed "resumed" at least n times.
func resumedAll(r owResult, n int, names ...string) bool {
	for _, name := range names {
		got := 0
		for _, v := range r.all("resumed") {
			if strings.HasPrefix(v, name+"/") {
				got++
			}
		}
		if got < n {
			return false
		}
	}
	return true
}

// failoverURL is the client's URL for the OpenWire addresses: reconnect attempts every
// 50 ms at first and no more than 500 ms apart, in the order given.
func failoverURL(addrs ...string) string {
	for i, a := range addrs {
		addrs[i] = "tcp://" + a
	}
	return "failover:(" + strings.Join(addrs, ",") + ")?randomize=false&initialReconnectDelay=50&maxReconnectDelay=500"
}

// fixedOpenWire returns brokerConfig.Extra for an OpenWire connector on a fixed port
// (the failover client's URL names it; a restarted broker listens there again), and
// its address.
func fixedOpenWire(t testing.TB) (extra, addr string) {
	t.Helper()
	port, err := freeLoopbackPort()
	require.NoError(t, err)
	addr = "127.0.0.1:" + strconv.Itoa(port)
	return fmt.Sprintf("  - {name: openwire, uri: \"tcp://%s\"}\n", addr), addr
}

// owStage bounds each wait of the failover tests for the client: a reconnect, a
// hundred sends, under the race detector on a busy machine.
var owStage = raceScaled(30 * time.Second)

// TestOpenWireFailoverRestart: a failover client's producer sends persistent messages
// synchronously while its consumer (another connection) receives them; the broker
// (kahaDB) is restarted under them, with SIGTERM or kill -9. Both connections resume,
// the producer carries on, the consumer is resubscribed and receives again: nothing a
// send returned from is lost, and nothing is duplicated but redelivered-flagged copies
// of messages the consumer had been sent.
func TestOpenWireFailoverRestart(t *testing.T) {
	for _, how := range []string{"sigterm", "kill-9"} {
		t.Run(how, func(t *testing.T) {
			bc, addr := kahaDBOpenWire(t)
			b := startBroker(t, bc)
			logOnFailure(t, &b)
			l := startOWLive(t, failoverURL(addr), "failover-flow", "dest="+owName(t, "q"), "consume=true", "wait=20000")
			at := l.waitFor(owStage, "100 sends returned", func(r owResult) bool { return r.intOf("returned") >= 100 }).intOf("returned")
			if how == "sigterm" {
				b.Stop()
			} else {
				b.Kill()
			}
			b = startBroker(t, bc)
			l.waitFor(owStage, "both connections resumed and 100 more sends", func(r owResult) bool {
				return resumedAll(r, 1, "producer", "consumer") && r.intOf("returned") >= at+100
			})
			l.tell("stop")
			r := l.wait()
			assert.Empty(t, r.all("consumer_stalled"), "the consumer stopped receiving after the restart")
			assert.Empty(t, r.all("send_error"))
			assert.Equal(t, 0, r.intOf("lost"), "sends that returned were lost")
			assert.Equal(t, r.intOf("sent"), r.intOf("received"))
			assert.Equal(t, r.intOf("dup_flagged"), r.intOf("duplicates"), "duplicates not flagged redelivered")
			t.Logf("%s at %d: sent %s, received %s, duplicates %s (flagged %s), redelivered %s",
				how, at, r.get("sent"), r.get("received"), r.get("duplicates"), r.get("dup_flagged"), r.get("redelivered"))
		})
	}
}

// kahaDBOpenWire is the configuration of a broker on kahaDB with an OpenWire connector
// on a fixed port (restarts reopen the store and listen there again), and that port's
// address.
func kahaDBOpenWire(t testing.TB) (brokerConfig, string) {
	extra, addr := fixedOpenWire(t)
	return brokerConfig{Adapter: "kahaDB: {}", DataDir: t.TempDir(), Extra: extra}, addr
}

// logOnFailure logs what *b (the broker running last) logged if the test fails.
func logOnFailure(t testing.TB, b **brokerProc) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the broker's log:\n%s", (*b).Log())
		}
	})
}

// TestOpenWireFailoverTransaction: a transacted session's transaction is open when the
// broker restarts under its failover: connection. As ActiveMQ 5.17 does (the same
// scenario against it, restarted the same ways, prints the same): a transaction that
// took a message is rolled back, and the client's commit throws
// TransactionRolledBackException; the retry gets that message again, flagged
// redelivered, and commits. One that only sent is replayed by the client on the new
// connection and commits.
func TestOpenWireFailoverTransaction(t *testing.T) {
	for _, tc := range []struct {
		name string
		take bool
		kill bool
		want map[string]string
	}{
		{"takes/kill-9", true, true, map[string]string{"tx_received": "in", "commit": "TransactionRolledBackException",
			"retry_received": "in redelivered=true", "retry": "ok", "out": "out", "in_left": ""}},
		{"sends-only/sigterm", false, false, map[string]string{"tx_received": "none", "commit": "ok", "out": "out", "in_left": "in"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bc, addr := kahaDBOpenWire(t)
			b := startBroker(t, bc)
			logOnFailure(t, &b)
			l := startOWLive(t, failoverURL(addr), "failover-tx", "dest="+owName(t, "tx"), "take="+strconv.FormatBool(tc.take), "wait=60000")
			l.waitFor(owStage, "the open transaction", func(r owResult) bool { return r.get("tx_open") == "1" })
			if tc.kill {
				b.Kill()
			} else {
				b.Stop()
			}
			b = startBroker(t, bc)
			l.waitFor(owStage, "the reconnect", func(r owResult) bool { return resumedAll(r, 1, "tx") })
			l.tell("continue")
			assertOW(t, l.wait(), tc.want)
		})
	}
}

// failoverCounts checks the end of a failover-flow run without consumer on the broker
// at url: every send that returned is stored, drained once (lost 0); it returns the
// drain's result, whose duplicates are the failover transport's resends of sends in
// flight at a crash that the broker had stored.
func failoverCounts(t *testing.T, l *owLive, url, dest string) (flow, drain owResult) {
	t.Helper()
	l.tell("stop")
	flow = l.wait()
	require.Empty(t, flow.all("send_error"))
	drain = runOW(t, url, "drain-count", "dest="+dest, "n="+flow.get("sent"))
	assert.Equal(t, "0", drain.get("lost"), "sends that returned were lost")
	assert.Equal(t, "0", drain.get("extra"), "messages of sends that never returned")
	return flow, drain
}

// TestOpenWireFailoverKill9Counted: a failover: producer sends persistent messages
// synchronously while the broker (kahaDB) is killed -9 and restarted three times under
// it. Every send that returned is in the queue afterwards.
func TestOpenWireFailoverKill9Counted(t *testing.T) {
	const kills = 3
	bc, addr := kahaDBOpenWire(t)
	b := startBroker(t, bc)
	logOnFailure(t, &b)
	dest := owName(t, "q")
	l := startOWLive(t, failoverURL(addr), "failover-flow", "dest="+dest, "every=10")
	at := 0
	for k := 1; k <= kills; k++ {
		at = l.waitFor(owStage, fmt.Sprintf("%d sends returned", at+150), func(r owResult) bool {
			return resumedAll(r, k-1, "producer") && r.intOf("returned") >= at+150
		}).intOf("returned")
		b.Kill()
		b = startBroker(t, bc)
	}
	l.waitFor(owStage, "the last reconnect and 150 more sends", func(r owResult) bool {
		return resumedAll(r, kills, "producer") && r.intOf("returned") >= at+150
	})
	flow, drain := failoverCounts(t, l, "tcp://"+addr, dest)
	t.Logf("%d kills: %s sends returned; drained %s: lost %s, duplicates %s, redelivered %s",
		kills, flow.get("sent"), drain.get("drained"), drain.get("lost"), drain.get("duplicates"), drain.get("redelivered"))
}

// TestOpenWireFailoverJDBCStandby: jdbc master/standby on one PostgreSQL, the client's
// failover list naming both (the standby listens only once it holds the lock). The
// master is killed -9 while a failover: producer sends persistent messages
// synchronously; the standby takes the lock over, the client carries on with it, and
// every send that returned is there.
func TestOpenWireFailoverJDBCStandby(t *testing.T) {
	srv := pgtest.Shared(t)
	adapter := jdbcAdapter(t, srv, srv.CreateDB(t, "owfailover"), 500*time.Millisecond)
	mExtra, mAddr := fixedOpenWire(t)
	sExtra, sAddr := fixedOpenWire(t)
	master := startBroker(t, brokerConfig{Adapter: adapter, Extra: mExtra})
	logOnFailure(t, &master)
	require.Contains(t, master.Log(), logMaster)
	standby := spawnBroker(t, brokerConfig{Adapter: adapter, Extra: sExtra})
	logOnFailure(t, &standby)
	eventually(t, 10*time.Second, "the standby to find the lock held", func() bool {
		return strings.Contains(standby.Log(), logLeaseHeldBy) || standby.Exited()
	})
	requireStandby(t, standby)

	dest := owName(t, "q")
	l := startOWLive(t, failoverURL(mAddr, sAddr), "failover-flow", "dest="+dest, "every=10")
	at := l.waitFor(owStage, "150 sends returned", func(r owResult) bool { return r.intOf("returned") >= 150 }).intOf("returned")
	master.Kill()
	require.NoError(t, standby.WaitListening(owStage), "the standby did not take over")
	l.waitFor(owStage, "the reconnect to the standby and 150 more sends", func(r owResult) bool {
		return resumedAll(r, 1, "producer") && r.intOf("returned") >= at+150
	})
	flow, drain := failoverCounts(t, l, "tcp://"+sAddr, dest)
	t.Logf("master killed at %d: %s sends returned; drained %s from the standby: lost %s, duplicates %s",
		at, flow.get("sent"), drain.get("drained"), drain.get("lost"), drain.get("duplicates"))
}
