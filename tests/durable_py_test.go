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

// stompPyCollector is the listener the stomp.py durable scripts share: it collects
// MESSAGEs, RECEIPT ids and ERROR messages, and wait(what, cond) waits for cond, failing
// the script on an ERROR (unless errors_ok) or after timeout seconds.
const stompPyCollector = `
import sys, threading, stomp

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
    def wait(self, what, cond, timeout=10, errors_ok=False):
        with self.cond:
            if not self.cond.wait_for(lambda: cond() or (self.errors and not errors_ok), timeout):
                raise SystemExit("timed out waiting for %s (%d messages)" % (what, len(self.msgs)))
            if self.errors and not errors_ok:
                raise SystemExit("ERROR from the broker: %s" % self.errors)
`

// stompPyDurableScript is a stomp.py durable subscriber: CONNECT with client-id,
// SUBSCRIBE with activemq.subscriptionName and client-individual acks, as an ActiveMQ
// user writes it. "attach" subscribes (with a receipt) and leaves; "consume N" comes
// back, requires N messages in publish order, acknowledges each (the last with a
// receipt) and prints their bodies.
const stompPyDurableScript = stompPyCollector + `

host, port = sys.argv[1].rsplit(":", 1)
phase = sys.argv[2]

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

// stompPyPhases writes script (a stomp.py program taking the broker's address and a
// phase) and returns a runner of its phases: each must exit 0 and print
// "stomp.py <name> <phase> OK"; the runner returns the output.
func stompPyPhases(t *testing.T, b *brokerProc, name, script string) func(args ...string) string {
	t.Helper()
	requirePython(t)
	path := filepath.Join(t.TempDir(), name+".py")
	require.NoError(t, os.WriteFile(path, []byte(script), 0o644))
	return func(args ...string) string {
		t.Helper()
		out, err := exec.Command(systemPython, append([]string{path, b.Addr}, args...)...).CombinedOutput()
		require.NoError(t, err, "stomp.py %v failed:\n%s\nbroker log:\n%s", args, out, b.Log())
		require.Contains(t, string(out), "stomp.py "+name+" "+args[0]+" OK", string(out))
		return string(out)
	}
}

// TestDurableStompPy: stomp.py (Debian's python3-stomp) creates a durable subscription
// and leaves; go-stomp publishes persistent messages (and non-persistent ones, which are
// not kept); stomp.py comes back and receives the persistent ones in publish order, and
// its acknowledgements hold: a go-stomp consumer on the same subscription afterwards
// gets only what is published from then on.
func TestDurableStompPy(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	runPy := stompPyPhases(t, b, "durable", stompPyDurableScript)

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

// stompPyRabbitScript is a stomp.py client written for RabbitMQ: no client-id on
// CONNECT, a durable subscription named by its id (SUBSCRIBE durable:true,
// auto-delete:false). "attach" subscribes (with a receipt) and leaves; "consume N" comes
// back on a new connection, requires N messages in publish order, not flagged
// redelivered, acknowledges them and prints their bodies; "busy" attaches, then requires
// a second connection's SUBSCRIBE with the same id to be refused; "delete" attaches and
// deletes the subscription with UNSUBSCRIBE id + durable:true + auto-delete:false (with
// a receipt), as RabbitMQ's clients do.
const stompPyRabbitScript = stompPyCollector + `

host, port = sys.argv[1].rsplit(":", 1)
phase = sys.argv[2]
DURABLE = {"durable": "true", "auto-delete": "false"}

def attach():
    col = Collector()
    conn = stomp.Connection12([(host, int(port))])
    conn.set_listener("rabbit", col)
    conn.connect(wait=True)  # no client-id: RabbitMQ clients send none
    conn.subscribe("/topic/py.rabbit", id="rabbit-sub", ack="client-individual",
                   headers=dict(DURABLE, receipt="attached"))
    col.wait("the SUBSCRIBE receipt", lambda: "attached" in col.receipts)
    return conn, col

conn, col = attach()
if phase == "consume":
    n = int(sys.argv[3])
    col.wait("%d messages" % n, lambda: len(col.msgs) >= n)
    for f in col.msgs:
        h = f.headers
        assert h.get("subscription") == "rabbit-sub", h
        assert h.get("destination") == "/topic/py.rabbit", h
        assert "redelivered" not in h, h
    for i, f in enumerate(col.msgs):
        conn.ack(f.headers["ack"], receipt="acked" if i == len(col.msgs) - 1 else None)
    col.wait("the last ACK's receipt", lambda: "acked" in col.receipts)
    print("received " + ",".join(f.body for f in col.msgs))
elif phase == "busy":
    other = Collector()
    c2 = stomp.Connection12([(host, int(port))])
    c2.set_listener("other", other)
    c2.connect(wait=True)
    c2.subscribe("/topic/py.rabbit", id="rabbit-sub", ack="client-individual",
                 headers=dict(DURABLE, receipt="second"))
    other.wait("the refusal", lambda: other.errors, errors_ok=True)
    print("second attach refused: %s" % other.errors[0])
    c2.disconnect()
elif phase == "delete":
    conn.unsubscribe("rabbit-sub", headers=dict(DURABLE, receipt="deleted"))
    col.wait("the UNSUBSCRIBE receipt", lambda: "deleted" in col.receipts)

conn.disconnect(receipt="bye")
print("stomp.py rabbit %s OK" % phase)
`

// TestDurableRabbitMQStyleWithoutClientID: a RabbitMQ client (stomp.py, no client-id
// on CONNECT) subscribes with durable:true and auto-delete:false: the subscription id
// alone names the subscription. It survives the disconnect, keeps the persistent
// messages sent while it is away (not the non-persistent ones), and a new connection,
// again without a client-id, reattaches it by the same id and gets them in order. While
// attached, another connection cannot attach it too. An UNSUBSCRIBE with the same
// headers deletes it: nothing is kept for it afterwards.
func TestDurableRabbitMQStyleWithoutClientID(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	runPy := stompPyPhases(t, b, "rabbit", stompPyRabbitScript)
	const topic = "/topic/py.rabbit"
	p := dial(t, b.Addr)

	runPy("attach")
	for i, body := range numbered("kept", 0, 5) {
		goPublish(t, p, topic, true, body)
		goPublish(t, p, topic, false, numbered("not-kept", i, i+1)...)
	}
	out := runPy("consume", "5")
	assert.Contains(t, out, "received "+strings.Join(numbered("kept", 0, 5), ",")+"\n")

	out = runPy("busy")
	assert.Contains(t, out, "second attach refused: Durable consumer is in use")

	goPublish(t, p, topic, true, "before-delete")
	runPy("delete")
	goPublish(t, p, topic, true, "after-delete")
	// A new subscription of that id: nothing of the deleted one's is kept for it.
	c := dial(t, b.Addr)
	sub := goSubscribe(t, c, topic, stomp.AckClientIndividual, "id", "rabbit-sub", "durable", "true", "auto-delete", "false")
	syncSubscriptions(t, c)
	expectNone(t, sub, 300*time.Millisecond)
}
