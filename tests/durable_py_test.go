package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stompPyDurableScript is a stomp.py durable subscriber: CONNECT with client-id,
// SUBSCRIBE with activemq.subscriptionName and client-individual acks, as an ActiveMQ
// user writes it. "attach" subscribes (with a receipt) and leaves; "consume N" comes
// back, requires N messages in publish order, acknowledges each (the last with a
// receipt) and prints their bodies.
const stompPyDurableScript = `
import sys, threading, stomp

host, port = sys.argv[1].rsplit(":", 1)
phase = sys.argv[2]

class Collector(stomp.ConnectionListener):
    def __init__(self):
        self.msgs, self.receipts, self.errors = [], set(), []
        self.cond = threading.Condition()
    def on_message(self, frame):
        with self.cond:
            self.msgs.append(frame)
            self.cond.notify_all()
    def on_receipt(self, frame):
        with self.cond:
            self.receipts.add(frame.headers.get("receipt-id"))
            self.cond.notify_all()
    def on_error(self, frame):
        with self.cond:
            self.errors.append(frame.headers.get("message"))
            self.cond.notify_all()
    def wait(self, what, cond, timeout=10):
        with self.cond:
            if not self.cond.wait_for(lambda: cond() or self.errors, timeout):
                raise SystemExit("timed out waiting for %s (%d messages)" % (what, len(self.msgs)))
            if self.errors:
                raise SystemExit("ERROR from the broker: %s" % self.errors)

col = Collector()
conn = stomp.Connection12([(host, int(port))])
conn.set_listener("durable", col)
conn.connect(wait=True, headers={"client-id": "py-app"})
conn.subscribe("/topic/py.durable", id="d1", ack="client-individual",
               headers={"activemq.subscriptionName": "py-sub", "receipt": "attached"})
col.wait("the SUBSCRIBE receipt", lambda: "attached" in col.receipts)

if phase == "consume":
    n = int(sys.argv[3])
    col.wait("%d messages" % n, lambda: len(col.msgs) >= n)
    for f in col.msgs:
        h = f.headers
        assert h.get("subscription") == "d1", h
        assert h.get("destination") == "/topic/py.durable", h
        assert h.get("persistent") == "true", h
        assert "redelivered" not in h, h
    for i, f in enumerate(col.msgs):
        receipt = "acked" if i == len(col.msgs) - 1 else None
        conn.ack(f.headers["ack"], receipt=receipt)
    col.wait("the last ACK's receipt", lambda: "acked" in col.receipts)
    print("received " + ",".join(f.body for f in col.msgs))

conn.disconnect(receipt="bye")
print("stomp.py durable %s OK" % phase)
`

// TestDurableStompPy: stomp.py (Debian's python3-stomp) creates a durable subscription
// and leaves; go-stomp publishes persistent messages (and non-persistent ones, which are
// not kept); stomp.py comes back and receives the persistent ones in publish order, and
// its acknowledgements hold: a go-stomp consumer on the same subscription afterwards
// gets only what is published from then on.
func TestDurableStompPy(t *testing.T) {
	if _, err := os.Stat(systemPython); err != nil {
		t.Fatalf("%s is missing: install Debian's python3 and python3-stomp (.ci/run does)", systemPython)
	}
	b := startBroker(t, brokerConfig{})
	script := filepath.Join(t.TempDir(), "durable.py")
	require.NoError(t, os.WriteFile(script, []byte(stompPyDurableScript), 0o644))
	runPy := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(systemPython, append([]string{script, b.Addr}, args...)...).CombinedOutput()
		require.NoError(t, err, "stomp.py %v failed:\n%s\nbroker log:\n%s", args, out, b.Log())
		require.Contains(t, string(out), "stomp.py durable "+args[0]+" OK", string(out))
		return string(out)
	}

	runPy("attach")
	durAwaitFree(t, b.Addr, "py-app")
	p := dial(t, b.Addr)
	for i, body := range numbered("py", 0, 10) {
		goPublish(t, p, "/topic/py.durable", true, body)
		goPublish(t, p, "/topic/py.durable", false, numbered("not-kept", i, i+1)...)
	}

	out := runPy("consume", "10")
	assert.Contains(t, out, "received "+strings.Join(numbered("py", 0, 10), ",")+"\n")
	durAwaitFree(t, b.Addr, "py-app")

	c := durDial(t, b.Addr, "py-app")
	sub := goSubscribe(t, c, "/topic/py.durable", stomp.AckClientIndividual, "activemq.subscriptionName", "py-sub")
	syncSubscriptions(t, c)
	goPublish(t, p, "/topic/py.durable", true, "after-stomp-py")
	m := goExpect(t, sub, "after-stomp-py")[0]
	require.NoError(t, c.Ack(m))
	syncSubscriptions(t, c)
	expectNone(t, sub, 300*time.Millisecond)
}
