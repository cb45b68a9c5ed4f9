package pgshared_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/pgstore/pgshared"
)

// crashLease is the lease timeout of TestCrashedProcess's nodes: three times testLease,
// so that the test reads the killed node's leases before the reaper can return them
// however busy the machine.
const crashLease = 3 * testLease

// crashOptions are testOptions with crashLease.
func crashOptions(dsn, id string) pgshared.Options {
	o := testOptions(dsn, id)
	o.LeaseTimeout = crashLease
	return o
}

// Environment of the helper process.
const (
	helperDSN   = "PGSHARED_HELPER_DSN"
	helperNode  = "PGSHARED_HELPER_NODE"
	helperQueue = "queue://CRASH"
	helperBatch = 10
)

// TestHelperProcess is the consumer node of TestCrashedProcess when the test binary
// is started with PGSHARED_HELPER_DSN set: once its node is open and listening it
// writes "R 0"; it claims batches, writes "C id redeliveries" for each claimed
// message, acknowledges the batch, then writes "A id" (or "L id" for a lost lease).
// A line "hold" on its stdin parks it before its next claim (it writes "H 0" as it
// parks) until a line "go"; a line "freeze" makes it keep the next batch it claims
// unacknowledged (it writes "Z 0" after the batch's claims) until it is killed; the end
// of its stdin stops it once a claim comes back empty, and it closes the node. Run normally, it returns at once.
func TestHelperProcess(t *testing.T) {
	dsn := os.Getenv(helperDSN)
	if dsn == "" {
		return
	}
	n, err := pgshared.Open(context.Background(), crashOptions(dsn, os.Getenv(helperNode)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if !n.WaitListening(context.Background()) {
		os.Exit(2)
	}
	ctl := newControl()
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			switch sc.Text() {
			case "hold":
				ctl.hold()
			case "go":
				ctl.run()
			case "freeze":
				ctl.freeze()
			}
		}
		ctl.end()
	}()
	_, _ = io.WriteString(os.Stdout, "R 0\n")
	os.Exit(consume(n, ctl, os.Stdout, 20*time.Millisecond))
}

// control steers a consumer: hold parks it before its next claim until run; freeze
// makes it keep its next batch unacknowledged; end stops it once a claim comes back
// empty.
type control struct {
	mu     sync.Mutex
	resume chan struct{} // while held: closed by run
	frozen bool
	stop   chan struct{}
	once   sync.Once
}

func (c *control) freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen = true
}

func (c *control) isFrozen() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frozen
}

func newControl() *control { return &control{stop: make(chan struct{})} }

func (c *control) hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resume == nil {
		c.resume = make(chan struct{})
	}
}

func (c *control) run() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resume != nil {
		close(c.resume)
		c.resume = nil
	}
}

func (c *control) end() { c.once.Do(func() { close(c.stop) }) }

// park waits while the consumer is held, after writing "H 0" to w.
func (c *control) park(w io.Writer) {
	c.mu.Lock()
	resume := c.resume
	c.mu.Unlock()
	if resume == nil {
		return
	}
	_, _ = io.WriteString(w, "H 0\n")
	select {
	case <-resume:
	case <-c.stop:
	}
}

// consume claims and acknowledges as ctl says, reporting to w; work is the time a
// batch takes to process between its claim and its ack (the window a kill hits). An
// empty claim waits for a notification (a poll at the latest). It returns the exit
// code.
func consume(n *pgshared.Node, ctl *control, w io.Writer, work time.Duration) int {
	ctx := context.Background()
	for {
		ctl.park(w)
		cs, err := n.Claim(ctx, helperQueue, helperBatch)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		if len(cs) == 0 {
			select {
			case <-ctl.stop:
				if err := n.Close(); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return 4
				}
				return 0
			case <-n.Notifications():
			}
			continue
		}
		var b strings.Builder
		for _, c := range cs {
			fmt.Fprintf(&b, "C %d %d\n", c.Lease.ID, c.Redeliveries)
		}
		_, _ = io.WriteString(w, b.String())
		if ctl.isFrozen() {
			// The batch in flight when the test kills this process.
			_, _ = io.WriteString(w, "Z 0\n")
			<-ctl.stop
			return 6
		}
		time.Sleep(work)
		lost, err := n.Ack(ctx, leases(cs))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 5
		}
		b.Reset()
		isLost := map[int64]bool{}
		for _, l := range lost {
			isLost[l.ID] = true
		}
		for _, c := range cs {
			tag := "A"
			if isLost[c.Lease.ID] {
				tag = "L"
			}
			fmt.Fprintf(&b, "%s %d\n", tag, c.Lease.ID)
		}
		_, _ = io.WriteString(w, b.String())
	}
}

// ledger collects what the consumers report.
type ledger struct {
	mu      sync.Mutex
	claimed map[string]map[int64]int // consumer -> id -> redeliveries
	claimAt map[int64]time.Time      // last claim of id
	acked   map[int64][]string       // id -> consumers that acknowledged it
	lost    []string
	marks   map[int]chan struct{}    // closed once that many messages are acknowledged
	reports map[string]chan struct{} // "R p1", "H p2": closed at that report
}

func newLedger() *ledger {
	return &ledger{claimed: map[string]map[int64]int{}, claimAt: map[int64]time.Time{}, acked: map[int64][]string{},
		marks: map[int]chan struct{}{}, reports: map[string]chan struct{}{}}
}

// acks returns a channel closed once n messages are acknowledged.
func (l *ledger) acks(n int) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := l.marks[n]
	if ch == nil {
		ch = make(chan struct{})
		l.marks[n] = ch
		if len(l.acked) >= n {
			close(ch)
		}
	}
	return ch
}

// report returns a channel closed once who reported tag ("R" ready, "H" held, "Z"
// claimed a batch it keeps).
func (l *ledger) report(who, tag string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reportLocked(tag + " " + who)
}

func (l *ledger) reportLocked(key string) chan struct{} {
	ch := l.reports[key]
	if ch == nil {
		ch = make(chan struct{})
		l.reports[key] = ch
	}
	return ch
}

func (l *ledger) Write(who string, line string) {
	f := strings.Fields(line)
	id, _ := strconv.ParseInt(f[1], 10, 64)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch f[0] {
	case "C":
		r, _ := strconv.Atoi(f[2])
		if l.claimed[who] == nil {
			l.claimed[who] = map[int64]int{}
		}
		l.claimed[who][id] = r
		l.claimAt[id] = time.Now()
	case "A":
		l.acked[id] = append(l.acked[id], who)
		if ch := l.marks[len(l.acked)]; ch != nil && len(l.acked[id]) == 1 {
			close(ch)
		}
	case "L":
		l.lost = append(l.lost, fmt.Sprintf("%s %d", who, id))
	case "R", "H", "Z":
		ch := l.reportLocked(f[0] + " " + who)
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
}

// await fails the test unless ch is closed within a minute.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("not within a minute: %s", what)
	}
}

// lineWriter feeds whole lines written to it to the ledger.
type lineWriter struct {
	l   *ledger
	who string
}

func (w lineWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimSpace(string(p)), "\n") {
		w.l.Write(w.who, line)
	}
	return len(p), nil
}

// TestCrashedProcess runs two consumer nodes as processes of their own and one in
// this process while two producers send, once both processes listen; with kill, the
// first process is killed -9 holding a batch it claimed once a quarter of the messages
// were acknowledged (the other consumers park on the way there, so that it must come),
// and the others go on. In the end every message sent is
// acknowledged exactly once, redelivered messages are only ones that were in flight
// on the killed process, and those reach a survivor within the lease timeout and a
// reaper period. Without kill, nothing is redelivered.
func TestCrashedProcess(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "control", true: "kill -9"}[kill], func(t *testing.T) {
			crashRun(t, kill)
		})
	}
}

func crashRun(t *testing.T, kill bool) {
	const total = 4000
	dsn := newDB(t)
	ctx := context.Background()
	local := openNode(t, crashOptions(dsn, "local"))
	led := newLedger()

	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		done  chan error
	}
	start := func(node string) *proc {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperDSN+"="+dsn, helperNode+"="+node)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		p := &proc{cmd: cmd, stdin: stdin, done: make(chan error, 1)}
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				led.Write(node, sc.Text())
			}
			p.done <- cmd.Wait()
		}()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return p
	}
	victim, other := start("p1"), start("p2")
	for _, who := range []string{"p1", "p2"} {
		await(t, led.report(who, "R"), who+" started")
	}

	ctl := newControl()
	localDone := make(chan int, 1)
	go func() { localDone <- consume(local, ctl, lineWriter{l: led, who: "local"}, 0) }()

	var (
		sentMu sync.Mutex
		sent   = map[int64]bool{}
		prod   sync.WaitGroup
	)
	for p := range 2 {
		prod.Add(1)
		go func() {
			defer prod.Done()
			for i := 0; i < total/2; i += 20 {
				msgs := make([]*persistence.Message, 20)
				for j := range msgs {
					msgs[j] = msg(helperQueue, p*total+i+j, 4)
				}
				if err := local.Send(ctx, msgs); err != nil {
					t.Error(err)
					return
				}
				sentMu.Lock()
				for _, m := range msgs {
					sent[int64(m.Seq)] = true
				}
				sentMu.Unlock()
			}
		}()
	}

	var (
		killedAt time.Time
		held     []int64 // the victim's leases in the table when it died
	)
	if kill {
		// The kill point is reached whatever the consumers' speeds: from an eighth
		// acknowledged, p2 is parked (local waits until it is), and from a quarter
		// local is too, so that p1 alone claims what is left until it is killed.
		await(t, led.acks(total/8), "an eighth acknowledged")
		ctl.hold()
		_, err := io.WriteString(other.stdin, "hold\n")
		require.NoError(t, err)
		await(t, led.report("p2", "H"), "p2 parked")
		ctl.run()
		await(t, led.acks(total/4), "a quarter acknowledged")
		ctl.hold()
		conn, err := pgx.Connect(ctx, dsn)
		require.NoError(t, err)
		defer func() { require.NoError(t, conn.Close(ctx)) }()
		// The kill hits a batch in flight however late it comes: p1 keeps the next
		// batch it claims unacknowledged (a 20ms window between claim and ack was
		// missed by a busy machine's kill).
		_, err = io.WriteString(victim.stdin, "freeze\n")
		require.NoError(t, err)
		await(t, led.report("p1", "Z"), "p1 claimed a batch and keeps it")
		require.NoError(t, victim.cmd.Process.Kill())
		killedAt = time.Now()
		<-victim.done
		ctl.run()
		_, err = io.WriteString(other.stdin, "go\n")
		require.NoError(t, err)
		// Before the reaper could have returned them: no sooner than crashLease after
		// the victim's last heartbeat, which came at most a heartbeat period before
		// the kill (the connection is opened before the kill, so only the query counts).
		msgsTable, _ := local.Tables()
		rows, _ := conn.Query(ctx, "SELECT ID FROM "+msgsTable+" WHERE OWNER = 'p1'")
		held, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		require.Less(t, time.Since(killedAt), crashLease-testHeartbeat, "the leases were read in time")
	}
	prod.Wait()
	waitFor(t, 60*time.Second, "every message consumed", func() bool {
		stats, err := local.Stats(ctx)
		return assert.NoError(t, err) && len(stats) == 0
	})
	require.NoError(t, other.stdin.Close())
	require.NoError(t, <-other.done, "p2 exits cleanly")
	ctl.end()
	require.Zero(t, <-localDone)
	if !kill {
		require.NoError(t, victim.stdin.Close())
		require.NoError(t, <-victim.done, "p1 exits cleanly")
	}

	led.mu.Lock()
	defer led.mu.Unlock()
	require.Empty(t, led.lost, "acks reported lost")
	require.Len(t, sent, total)
	// In flight on the victim: claimed, never reported acknowledged, or leased to it
	// (claimed before it could report).
	inflight := map[int64]bool{}
	for _, id := range held {
		inflight[id] = true
	}
	for id := range led.claimed["p1"] {
		if len(led.acked[id]) == 0 || !slices.Contains(led.acked[id], "p1") {
			inflight[id] = true
		}
	}
	unreported := 0
	for id := range sent {
		switch by := led.acked[id]; {
		case len(by) > 1:
			t.Errorf("message %d acknowledged %d times: %v", id, len(by), by)
		case len(by) == 0:
			// The victim's ack committed, its report died with it.
			require.True(t, kill && inflight[id], "message %d never acknowledged", id)
			unreported++
		}
	}
	require.LessOrEqual(t, unreported, helperBatch)
	redelivered, lastBack := 0, time.Time{}
	for who, ids := range led.claimed {
		for id, r := range ids {
			if r == 0 {
				continue
			}
			redelivered++
			require.True(t, kill && who != "p1" && inflight[id],
				"message %d redelivered (%d) to %s but not in flight on a killed node", id, r, who)
			if at := led.claimAt[id]; at.After(lastBack) {
				lastBack = at
			}
		}
	}
	if !kill {
		require.Zero(t, redelivered)
		return
	}
	require.Equal(t, len(inflight)-unreported, redelivered, "every message in flight on the victim came back")
	require.NotZero(t, redelivered, "the kill hit no batch in flight")
	t.Logf("in flight on the killed node: %d (acks unreported: %d); all back on survivors %v after the kill",
		len(inflight), unreported, lastBack.Sub(killedAt))
	require.Less(t, lastBack.Sub(killedAt), crashLease+testReaper+margin)
}
