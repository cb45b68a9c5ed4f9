package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// phpStompScript drives the broker with PHP's PECL stomp extension (Debian's php-stomp),
// a STOMP 1.0 client written in C: it sends n messages, then subscribes and reads them
// back. They are already queued when the subscription starts, so the broker writes
// them together and the client gets several MESSAGE frames in one read. That client
// takes the byte after each NUL for the EOL that ActiveMQ always writes there: without
// it, it eats the first byte of the next frame and never returns a MESSAGE again.
// The acks (STOMP 1.0, by message-id) are checked by a second consumer that must find
// the queue empty.
const phpStompScript = `<?php
$addr = $argv[1];
$n = (int)$argv[2];
function fail($why) { fwrite(STDERR, $why . "\n"); exit(1); }

$p = new Stomp("tcp://$addr");
for ($i = 0; $i < $n; $i++) {
    $h = array("persistent" => "true", "x-php" => "p$i");
    if ($i == $n - 1) { $h["receipt"] = "sent"; }
    if (!$p->send("/queue/php", "m$i", $h)) { fail("send $i failed"); }
}

$c = new Stomp("tcp://$addr");
$c->setReadTimeout(2);
$c->subscribe("/queue/php", array("ack" => "client", "activemq.prefetchSize" => "1000"));
$got = array();
$deadline = microtime(true) + 15;
while (count($got) < $n && microtime(true) < $deadline) {
    $f = $c->readFrame();
    if ($f === false) { continue; }
    if ($f->command !== "MESSAGE") { fail("frame " . count($got) . ": got command " . var_export($f->command, true) . ", want MESSAGE"); }
    $i = count($got);
    if ($f->body !== "m$i" || $f->headers["x-php"] !== "p$i") {
        fail("message $i: body " . var_export($f->body, true) . ", x-php " . var_export($f->headers["x-php"] ?? null, true));
    }
    $got[] = $f;
}
if (count($got) < $n) { fail("received " . count($got) . " of $n messages"); }
foreach ($got as $i => $f) {
    $h = ($i == $n - 1) ? array("receipt" => "acked") : array();
    if (!$c->ack($f, $h)) { fail("ack $i failed"); }
}
unset($c);

$d = new Stomp("tcp://$addr");
$d->setReadTimeout(1);
$d->subscribe("/queue/php", array("ack" => "client"));
if ($d->hasFrame()) {
    $f = $d->readFrame();
    fail("queue not empty after the acks: " . var_export($f, true));
}
echo "php-stomp OK $n\n";
`

// TestPHPStompReadsBatchedMessages runs phpStompScript with Debian's php-cli and php-stomp
// (.ci/run installs both) against the real binary.
func TestPHPStompReadsBatchedMessages(t *testing.T) {
	php, err := exec.LookPath("php")
	if err != nil {
		t.Fatalf("php is missing: install Debian's php-cli and php-stomp (.ci/run does): %v", err)
	}
	if out, err := exec.Command(php, "-r", `exit(class_exists("Stomp") ? 0 : 1);`).CombinedOutput(); err != nil {
		t.Fatalf("PHP has no Stomp class: install Debian's php-stomp (.ci/run does): %v\n%s", err, out)
	}
	b := startBroker(t, brokerConfig{})
	script := filepath.Join(t.TempDir(), "batched.php")
	require.NoError(t, os.WriteFile(script, []byte(phpStompScript), 0o644))
	out, err := exec.CommandContext(ctxTimeout(t, 60*time.Second), php, script, b.Addr, "50").CombinedOutput()
	require.NoError(t, err, "php-stomp script failed:\n%s\nbroker log:\n%s", out, b.Log())
	require.True(t, strings.Contains(string(out), "php-stomp OK 50"), string(out))
}
