package tests

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTransactedScheduledSendSurvivesKill9: scheduled messages sent in a transaction are
// stored in the COMMIT's batch, so a broker killed with SIGKILL right after COMMIT's
// RECEIPT still delivers every one of them after a restart.
func TestTransactedScheduledSendSurvivesKill9(t *testing.T) {
	const n = 50
	eachDurableAdapter(t, func(t *testing.T, bc brokerConfig) {
		first := startBroker(t, bc)
		rc := dialRaw(t, first.Addr)
		require.Equal(t, "CONNECTED", rc.connect().Command)
		rc.send(frame.New("BEGIN", "transaction", "tx"))
		for i := 0; i < n; i++ {
			f := frame.New("SEND", "destination", "/queue/tx-sched", "transaction", "tx", "persistent", "true",
				"AMQ_SCHEDULED_DELAY", "500")
			f.Body = []byte(strconv.Itoa(i))
			rc.send(f)
		}
		rc.send(frame.New("COMMIT", "transaction", "tx", "receipt", "c"))
		got := rc.read()
		require.Equal(t, "RECEIPT", got.Command, "COMMIT: %s", got.Header.Get("message"))
		first.Kill()

		second := startBroker(t, bc)
		c := jmsDial(t, second.Addr)
		sub := c.subscribe("/queue/tx-sched")
		seen := map[string]bool{}
		for len(seen) < n {
			m := c.nextWithin(sub, 10*time.Second)
			require.NotNil(t, m, "only %d of %d transacted scheduled messages delivered after kill -9", len(seen), n)
			seen[string(m.Body)] = true
		}
	})
}

// TestSchedulerPagingEndToEnd: with schedulerMemoryLimit far below what the scheduled
// messages take, they wait in the store, survive a kill -9 (a restart reads only the
// soonest back) and are all delivered in the order of their due times.
func TestSchedulerPagingEndToEnd(t *testing.T) {
	const (
		n   = 120
		gap = 5 * time.Millisecond
	)
	body := strings.Repeat("x", 4<<10) // 120 × 4 KiB: about 8 times the limit
	// The restarted broker must be up before the first due time, with every job still
	// waiting. A machine too busy to send, kill and restart within the offset gets fresh
	// brokers and twice the offset: slowness lengthens the test, it does not fail it
	// (issue 27).
	var first, second *brokerProc
	for offset := 5 * time.Second; ; offset *= 2 {
		require.LessOrEqual(t, offset, 80*time.Second, "sending %d messages and restarting took over 40s", n)
		bc := brokerConfig{Adapter: "kahaDB: {}", DataDir: t.TempDir(), Extra: "systemUsage: {schedulerMemoryLimit: 64kb}\n"}
		first = startBroker(t, bc)
		c := jmsDial(t, first.Addr)
		start := time.Now().Add(offset)
		for _, i := range rand.Perm(n) {
			delay := max(time.Until(start.Add(time.Duration(i)*gap)), 0).Milliseconds()
			c.send("/queue/paged", strconv.Itoa(i)+":"+body, "persistent", "true", "AMQ_SCHEDULED_DELAY", strconv.FormatInt(delay, 10))
		}
		first.Kill()
		second = startBroker(t, bc)
		if time.Now().Before(start) {
			break
		}
		t.Logf("sending and restarting took over %v: again with twice that", offset)
	}
	c2 := jmsDial(t, second.Addr)
	sub := c2.subscribe("/queue/paged")
	// The broker counts a delay from when it gets the SEND, a little after the test
	// computed it: messages whose intended due times are a few gaps apart may swap. The
	// exact order is the unit tests' (TestSchedulerPagesJobs).
	const slack = 20 // gaps: 100ms
	seen := map[int]bool{}
	latest := -1
	for len(seen) < n {
		m := c2.next(sub)
		head, _, _ := bytes.Cut(m.Body, []byte(":"))
		i, err := strconv.Atoi(string(head))
		require.NoError(t, err)
		require.False(t, seen[i], "message %d delivered twice", i)
		seen[i] = true
		require.Greater(t, i, latest-slack, "message %d delivered after message %d", i, latest)
		latest = max(latest, i)
	}
	c2.sync()
	c2.expectNone(sub, 100*time.Millisecond)
	assert.Contains(t, second.Log()+first.Log(), "the later ones wait in the store")
}
