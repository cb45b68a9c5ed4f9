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

// Environment of the helper process.
const (
	helperDSN   = "PGSHARED_HELPER_DSN"
	helperNode  = "PGSHARED_HELPER_NODE"
	helperQueue = "queue://CRASH"
	helperBatch = 10
)

// TestHelperProcess is the consumer node of TestCrashedProcess when the test binary
// is started with PGSHARED_HELPER_DSN set: it claims batches, writes "C id
// redeliveries" for each claimed message, acknowledges the batch, then writes "A id"
// (or "L id" for a lost lease), until its stdin ends; then it closes the node. Run
// normally, it returns at once.
func TestHelperProcess(t *testing.T) {
	dsn := os.Getenv(helperDSN)
	if dsn == "" {
		return
	}
	n, err := pgshared.Open(context.Background(), testOptions(dsn, os.Getenv(helperNode)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	os.Exit(consume(n, stop, os.Stdout, 20*time.Millisecond))
}

// consume claims and acknowledges until stop, reporting to w; work is the time a
// batch takes to process between its claim and its ack (the window a kill hits). It
// returns the exit code.
func consume(n *pgshared.Node, stop <-chan struct{}, w io.Writer, work time.Duration) int {
	ctx := context.Background()
	for {
		cs, err := n.Claim(ctx, helperQueue, helperBatch)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		if len(cs) == 0 {
			select {
			case <-stop:
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

	// fire is closed when victim reports a claim once killAt messages are
	// acknowledged: the moment to kill it, with a batch in flight.
	victim   string
	killAt   int
	fire     chan struct{}
	fireOnce sync.Once
}

func newLedger(victim string, killAt int) *ledger {
	return &ledger{claimed: map[string]map[int64]int{}, claimAt: map[int64]time.Time{}, acked: map[int64][]string{},
		victim: victim, killAt: killAt, fire: make(chan struct{})}
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
		if who == l.victim && len(l.acked) >= l.killAt {
			l.fireOnce.Do(func() { close(l.fire) })
		}
	case "A":
		l.acked[id] = append(l.acked[id], who)
	case "L":
		l.lost = append(l.lost, fmt.Sprintf("%s %d", who, id))
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
// this process while two producers send; with kill, the first process is killed -9
// as it reports a claim once a quarter of the messages are acknowledged. In the end every message sent is
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
	local := openNode(t, testOptions(dsn, "local"))
	led := newLedger("p1", total/4)

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

	stopLocal := make(chan struct{})
	localDone := make(chan int, 1)
	go func() { localDone <- consume(local, stopLocal, lineWriter{l: led, who: "local"}, 0) }()

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
		select {
		case <-led.fire:
		case <-time.After(60 * time.Second):
			t.Fatal("p1 claimed nothing after a quarter was acknowledged")
		}
		require.NoError(t, victim.cmd.Process.Kill())
		killedAt = time.Now()
		<-victim.done
		// Well within the lease timeout: the reaper has not returned them yet.
		msgsTable, _ := local.Tables()
		conn, err := pgx.Connect(ctx, dsn)
		require.NoError(t, err)
		rows, _ := conn.Query(ctx, "SELECT ID FROM "+msgsTable+" WHERE OWNER = 'p1'")
		held, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		require.NoError(t, conn.Close(ctx))
		require.Less(t, time.Since(killedAt), testLease/2, "the leases were read in time")
	}
	prod.Wait()
	waitFor(t, 60*time.Second, "every message consumed", func() bool {
		stats, err := local.Stats(ctx)
		return assert.NoError(t, err) && len(stats) == 0
	})
	require.NoError(t, other.stdin.Close())
	require.NoError(t, <-other.done, "p2 exits cleanly")
	close(stopLocal)
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
	require.Less(t, lastBack.Sub(killedAt), returnBound)
}
