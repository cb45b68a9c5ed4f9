package tests

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The load tool (broker bench) against the real broker binary, with each of its STOMP
// clients: it exits 0 only when every message arrived exactly once, so these runs check
// the client and the broker together.

func runBench(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(brokerBin, append([]string{"bench", "--progress", "0", "--idle-timeout", "20s"}, args...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "bench %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

func TestBenchToolClients(t *testing.T) {
	b := startBroker(t, streamBrokerConfig(4, ""))
	for _, client := range []string{"raw", "go-stomp"} {
		t.Run(client, func(t *testing.T) {
			out := runBench(t, "--client", client, "--addr", b.Addr,
				"--producers", "3", "--consumers", "3", "--messages", "3000", "--persistent",
				"--receipts", "every", "--ack", "client-individual")
			assert.Contains(t, out, "received 3000 ")
			assert.Contains(t, out, "lost 0  duplicated 0")

			out = runBench(t, "--client", client, "--addr", b.Addr,
				"--destination", "/topic/s.bench-"+client, "--shared", "--consumers", "4",
				"--messages", "20000", "--consumer-header", "consumer-group=g")
			assert.Contains(t, out, "received 20000 ")

			out = runBench(t, "--client", client, "--addr", b.Addr, "--stomp-version", "1.1",
				"--topic", "--consumers", "2", "--messages", "2000", "--ack", "client")
			assert.Contains(t, out, "received 4000 ")
			assert.Contains(t, out, "out-of-order 0")
		})
	}
}
