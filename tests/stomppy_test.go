package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// python3 with Debian's python3-stomp; .ci/run installs it. The system interpreter is
// used on purpose: Debian installs the module for it, not for other Pythons on PATH.
const systemPython = "/usr/bin/python3"

// stompPyScript sends with receipts, consumes with client-individual acks, checks a topic
// fan-out and a transaction, all through stomp.py, a second independent client.
const stompPyScript = `
import sys, threading, stomp

host, port = sys.argv[1].rsplit(":", 1)
port = int(port)

class Collector(stomp.ConnectionListener):
    def __init__(self):
        self.msgs, self.cond = [], threading.Condition()
    def on_message(self, frame):
        with self.cond:
            self.msgs.append(frame)
            self.cond.notify_all()
    def wait_for(self, n, timeout=10):
        with self.cond:
            ok = self.cond.wait_for(lambda: len(self.msgs) >= n, timeout)
        if not ok:
            raise SystemExit("timed out: %d of %d messages" % (len(self.msgs), n))

prod = stomp.Connection12([(host, port)])
prod.connect(wait=True)
for i in range(20):
    prod.send("/queue/py", "m%d" % i, headers={"persistent": "true", "x-app": "py"}, receipt="r%d" % i)

cons = stomp.Connection12([(host, port)])
col = Collector()
cons.set_listener("c", col)
cons.connect(wait=True)
cons.subscribe("/queue/py", id="1", ack="client-individual")
col.wait_for(20)
bodies = [f.body for f in col.msgs]
assert bodies == ["m%d" % i for i in range(20)], bodies
assert all(f.headers.get("x-app") == "py" for f in col.msgs)
for f in col.msgs:
    cons.ack(f.headers["ack"])

tcol = Collector()
t = stomp.Connection11([(host, port)])
t.set_listener("t", tcol)
t.connect(wait=True)
t.subscribe("/topic/py", id="t1", ack="auto", headers={"receipt": "sub"})
prod.begin("tx1")
prod.send("/topic/py", "in-tx", transaction="tx1")
prod.commit("tx1")
tcol.wait_for(1)
assert tcol.msgs[0].body == "in-tx"

for c in (prod, cons, t):
    c.disconnect()
print("stomp.py smoke OK")
`

// requirePython fails the test loudly when Debian's python3 with python3-stomp is
// missing: the stomp.py tests never skip.
func requirePython(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(systemPython); err != nil {
		t.Fatalf("%s is missing: install Debian's python3 and python3-stomp (.ci/run does)", systemPython)
	}
}

func TestStompPySmoke(t *testing.T) {
	requirePython(t)
	b := startBroker(t, brokerConfig{})
	script := filepath.Join(t.TempDir(), "smoke.py")
	require.NoError(t, os.WriteFile(script, []byte(stompPyScript), 0o644))
	out, err := exec.Command(systemPython, script, b.Addr).CombinedOutput()
	require.NoError(t, err, "stomp.py smoke failed:\n%s\nbroker log:\n%s", out, b.Log())
	require.True(t, strings.Contains(string(out), "stomp.py smoke OK"), string(out))
}
