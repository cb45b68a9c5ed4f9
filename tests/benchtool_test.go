package tests

import (
	"encoding/json"
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

// TestBenchToolConnects: the connect scenario against the real broker, which has no
// authentication: every connect is accepted, which fails a run that expects refusals.
func TestBenchToolConnects(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	out := runBench(t, "--addr", b.Addr, "--connects", "200", "--producers", "4", "--json")
	assert.Contains(t, out, "broker bench: addr="+b.Addr+" connects=200 producers=4\n")
	assert.Contains(t, out, "connects 200 in ")
	assert.Contains(t, out, "ok 200  refused 0  errors 0\n")
	var got struct {
		OK      int64   `json:"ok"`
		Refused int64   `json:"refused"`
		Errors  int64   `json:"errors"`
		Rate    float64 `json:"connect_rate"`
	}
	line := out[strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")+1:]
	require.NoError(t, json.Unmarshal([]byte(line), &got), out)
	assert.Equal(t, int64(200), got.OK)
	assert.Zero(t, got.Refused+got.Errors)
	assert.Positive(t, got.Rate)

	cmd := exec.Command(brokerBin, "bench", "--progress", "0", "--addr", b.Addr,
		"--connects", "20", "--producers", "2", "--stomp-version", "1.2", "--login", "nobody", "--passcode", "wrong",
		"--expect-refused")
	fail, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", fail)
	assert.NotZero(t, exit.ExitCode())
	assert.Contains(t, string(fail), "ok 20  refused 0  errors 0\n")
	assert.Contains(t, string(fail), "connects accepted, refusal expected: 20 of 20")
	assert.NotContains(t, string(fail), "wrong", "no passcode in the report")
}
