package tests

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/require"
)

// TestDeepQueueBoundedMemory queues 2 million 1 KiB persistent messages with no consumer,
// then drains them completely and in order, and requires the broker's peak RSS (VmHWM)
// to stay under 256 MiB throughout (issue 16's bound for 10M stored: the index costs next
// to nothing per stored message and the window is memoryLimit; 204-210 MiB measured). It
// measures the broker built without -race: the race detector multiplies memory use
// several times and makes the run many times slower.
func TestDeepQueueBoundedMemory(t *testing.T) {
	const n = 2_000_000
	const limit = 256 << 20
	b := startBroker(t, brokerConfig{Adapter: "kahaDB: {}", Plain: true})

	start := time.Now()
	prod := dialRaw(t, b.Addr)
	require.Equal(t, "CONNECTED", prod.connect().Command)
	body := bytes.Repeat([]byte("x"), 1024)
	for i := 0; i < n; i++ {
		f := frame.New("SEND", "destination", "/queue/deep", "persistent", "true", "seq", strconv.Itoa(i))
		f.Body = body
		if i == n-1 {
			f.Header.Add("receipt", "last")
		}
		require.NoError(t, prod.w.WriteFrame(f))
		if i%256 == 255 {
			require.NoError(t, prod.w.Flush())
		}
	}
	require.NoError(t, prod.w.Flush())
	for {
		f, err := prod.readWithin(5 * time.Minute)
		require.NoError(t, err)
		if f.Command == "RECEIPT" {
			break
		}
		require.NotEqual(t, "ERROR", f.Command, f.Header.Get("message"))
	}
	queued := time.Since(start)
	rssQueued := peakRSS(t, b)

	start = time.Now()
	cons := dialRaw(t, b.Addr)
	require.Equal(t, "CONNECTED", cons.connect().Command)
	cons.send(frame.New("SUBSCRIBE", "id", "s", "destination", "/queue/deep", "ack", "auto"))
	for i := 0; i < n; i++ {
		f, err := cons.readWithin(time.Minute)
		require.NoError(t, err, "after %d messages", i)
		require.Equal(t, "MESSAGE", f.Command)
		if got := f.Header.Get("seq"); got != strconv.Itoa(i) {
			t.Fatalf("message %d: got seq %s", i, got)
		}
	}
	drained := time.Since(start)
	peak := peakRSS(t, b)
	t.Logf("2M x 1 KiB persistent: queued in %v (%.0f msgs/s), drained in order in %v (%.0f msgs/s); peak RSS %d MiB (after queueing %d MiB)",
		queued.Round(time.Millisecond), n/queued.Seconds(), drained.Round(time.Millisecond), n/drained.Seconds(), peak>>20, rssQueued>>20)
	require.Less(t, peak, int64(limit), "peak RSS %d MiB", peak>>20)
}

// peakRSS reads the broker process's peak resident set size (VmHWM) in bytes.
func peakRSS(t testing.TB, b *brokerProc) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", b.cmd.Process.Pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			kb, err := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}
