package tests

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"
)

// The admin listener's bulk operations are atomic against the store: the broker is
// killed with SIGKILL while one runs over 50,000 persistent messages (most of them
// paged out to the journal: the queue's memory limit holds a few thousand), and after
// a restart nothing is lost and nothing is there twice.

const crashMessages = 50000

// crashConfig is a kahaDB broker in dir whose queues hold about 1 MiB in memory.
func crashConfig(dir string) brokerConfig {
	return brokerConfig{Adapter: "kahaDB: {}", DataDir: dir, Extra: "destinationPolicy:\n  - queue: \">\"\n    memoryLimit: 1mb\n"}
}

// fillQueue sends n persistent messages m<i> to dest, pipelined, with a receipt on the
// last: every one is stored when it returns.
func fillQueue(t testing.TB, addr, dest string, n int) {
	t.Helper()
	c := dial(t, addr)
	for i := 0; i < n; i++ {
		opts := []func(*frame.Frame) error{stomp.SendOpt.Header("persistent", "true")}
		if i == n-1 {
			opts = append(opts, stomp.SendOpt.Receipt)
		}
		require.NoError(t, c.Send(dest, "text/plain", []byte(fmt.Sprintf("m%06d", i)), opts...))
	}
}

// startOperation posts path on the admin listener at base in the background: the
// broker is killed before it answers.
func startOperation(base, path, body string) {
	go func() {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err == nil {
			_ = resp.Body.Close()
		}
	}()
}

// awaitTight waits, polling without pause, until cond holds: the kill must follow the
// moment closely.
func awaitTight(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
	}
}

// TestAdminPurgeSurvivesKill9: a purge killed halfway leaves all of the queue's
// messages or none.
func TestAdminPurgeSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	b, base := adminBroker(t, crashConfig(dir))
	fillQueue(t, b.Addr, "/queue/big", crashMessages)
	a := newAPI(t, base)
	require.EqualValues(t, crashMessages, a.messagesOf("/queue/big"))

	startOperation(base, "/api/queues/big/purge", "")
	awaitTight(t, "the purge starting", func() bool { return strings.Contains(b.Log(), `msg="purge started"`) })
	// Somewhere in the purge (it takes about half a second here): any moment must do.
	time.Sleep(time.Duration(rand.IntN(500)) * time.Millisecond)
	b.Kill()
	purgedBefore := strings.Contains(b.Log(), "op=purge")

	b, base = adminBroker(t, crashConfig(dir))
	a = newAPI(t, base)
	left := a.messagesOf("/queue/big")
	t.Logf("after the kill: %d of %d messages left (the purge had answered: %v)", left, crashMessages, purgedBefore)
	if left != 0 {
		require.EqualValues(t, crashMessages, left, "a purge is all or nothing")
		require.False(t, purgedBefore, "the purge answered, and its messages came back")
		require.Len(t, consumeOnce(t, b.Addr, map[string]int64{"/queue/big": left}), crashMessages)
	}
}

// consumeOnce consumes the given number of messages of each queue and returns their
// bodies; a body delivered twice fails the test.
func consumeOnce(t testing.TB, addr string, queues map[string]int64) map[string]bool {
	t.Helper()
	seen := make(map[string]bool, crashMessages)
	c := dial(t, addr)
	for dest, n := range queues {
		sub, err := c.Subscribe(dest, stomp.AckAuto, stomp.SubscribeOpt.Header("activemq.prefetchSize", "1000"))
		require.NoError(t, err)
		for range n {
			body := string(recv(t, sub).Body)
			require.False(t, seen[body], "%s delivered twice", body)
			seen[body] = true
		}
		unsubscribe(t, sub)
	}
	return seen
}

// storedIn is the number of messages of dest the store holds, from GET /stats.
func storedIn(a *api, dest string) int64 {
	var st struct {
		Destinations []struct {
			Name   string
			Stored int64
		} `json:"destinations"`
	}
	a.get("/stats", &st)
	for _, d := range st.Destinations {
		if d.Name == dest {
			return d.Stored
		}
	}
	return 0
}

// TestAdminMoveSurvivesKill9: a move killed halfway leaves every message in exactly one
// of its source and its target: consumers of both get each once.
func TestAdminMoveSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	b, base := adminBroker(t, crashConfig(dir))
	fillQueue(t, b.Addr, "/queue/from", crashMessages)
	a := newAPI(t, base)

	startOperation(base, "/api/queues/from/move", `{"to":"/queue/to"}`)
	awaitTight(t, "the move's first chunk stored", func() bool { return storedIn(a, "/queue/to") > 0 })
	b.Kill()

	b, base = adminBroker(t, crashConfig(dir))
	a = newAPI(t, base)
	from, to := a.messagesOf("/queue/from"), a.messagesOf("/queue/to")
	t.Logf("after the kill: %d messages in the source, %d in the target", from, to)
	require.EqualValues(t, crashMessages, from+to, "every message in one place")
	require.Positive(t, to)

	seen := consumeOnce(t, b.Addr, map[string]int64{"/queue/from": from, "/queue/to": to})
	require.Len(t, seen, crashMessages)
	require.Zero(t, a.messagesOf("/queue/from")+a.messagesOf("/queue/to"))
}
