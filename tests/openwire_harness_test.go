package tests

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The OpenWire tests drive a broker with ActiveMQ's own Java client (5.17, Debian's
// package activemq) through the Java program of testdata/openwire (OwClient, one
// subcommand per scenario), compiled once per test binary. Each test runs its scenario against every target of
// owTargets: ActiveMQ 5.17 now, whose results are the expectations; our broker is
// added as a target when it speaks OpenWire, and must print the same.

// owJars are the client's class path: the client, the JMS 1.1 API, its buffers, its
// logging API bound to nothing (the client logs nothing a test reads), and the J2EE
// management API the client's statistics classes name.
var owJars = []string{
	"/usr/share/java/activemq-client.jar",
	"/usr/share/java/geronimo-jms_1.1_spec.jar",
	"/usr/share/java/hawtbuf.jar",
	"/usr/share/java/slf4j-api.jar",
	"/usr/share/java/slf4j-nop.jar",
	"/usr/share/java/geronimo-j2ee-management-1.1-spec.jar",
}

const (
	owSources = "testdata/openwire/*.java"
	// owRunTimeout bounds one scenario's JVM; the program's own waits are bounded by
	// its receive timeout (10 s by default), several of which a scenario may spend.
	owRunTimeout = 2 * time.Minute
)

// owCompiled is OwClient compiled once per test binary, into a directory removed when
// the tests end.
var owCompiled javaBuild

// javaBuild is Java sources compiled once per test binary.
type javaBuild struct {
	once sync.Once
	dir  string
	err  error
}

// compile compiles sources (a glob) with the class path cp on first use, into a
// directory removed when the tests end, and returns that directory.
func (b *javaBuild) compile(sources string, cp []string) (string, error) {
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "owclient-")
		if err != nil {
			b.err = err
			return
		}
		onExit(func() { _ = os.RemoveAll(dir) })
		files, err := filepath.Glob(sources)
		if err != nil || len(files) == 0 {
			b.err = fmt.Errorf("no Java sources %s (%v)", sources, err)
			return
		}
		args := append([]string{"-d", dir, "-cp", strings.Join(cp, ":")}, files...)
		out, err := exec.Command(javacBinary(), args...).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("compiling %s: %w\n%s", sources, err, out)
			return
		}
		b.dir = dir
	})
	return b.dir, b.err
}

// javacBinary is Debian's javac of Java 17 (beside its java), else javac on PATH.
func javacBinary() string {
	if p := filepath.Join(filepath.Dir(amqJava17), "javac"); fileExists(p) {
		return p
	}
	if p, err := exec.LookPath("javac"); err == nil {
		return p
	}
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// owClasspath returns the class path that runs OwClient, compiling it on first use. A
// missing JDK or jar fails the test with what to install: these tests never skip.
func owClasspath(t testing.TB) string {
	t.Helper()
	if javaBinary() == "" || javacBinary() == "" {
		t.Fatalf("no java or javac: install Debian's package openjdk-17-jdk-headless (.ci/run does)")
	}
	for _, jar := range owJars {
		if !fileExists(jar) {
			t.Fatalf("%s is missing: install Debian's package activemq (it pulls the client's jars; .ci/run does)", jar)
		}
	}
	dir, err := owCompiled.compile(owSources, owJars)
	if err != nil {
		t.Fatal(err)
	}
	return dir + ":" + strings.Join(owJars, ":")
}

// owResult is what one scenario printed: its key=value lines, by key in order.
type owResult struct {
	values map[string][]string
	keys   []string // first appearance order
	stdout string
}

// get is the last value printed for key, "" if none.
func (r owResult) get(key string) string {
	v := r.values[key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func (r owResult) all(key string) []string { return r.values[key] }

// parseOW reads OwClient's output: key=value lines (a backslash escapes a newline or
// itself in the value).
func parseOW(out string) owResult {
	r := owResult{values: map[string][]string{}, stdout: out}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		v = strings.NewReplacer(`\\`, `\`, `\n`, "\n").Replace(v)
		if _, seen := r.values[k]; !seen {
			r.keys = append(r.keys, k)
		}
		r.values[k] = append(r.values[k], v)
	}
	return r
}

// runOW runs scenario against the broker at url with opts (key=value) and returns its
// results; a failed run fails the test with its stdout and stderr.
func runOW(t testing.TB, url, scenario string, opts ...string) owResult {
	t.Helper()
	return runOWJVM(t, nil, url, scenario, opts...)
}

// runOWJVM is runOW with more options for the JVM (-Dkey=value: the client's TLS
// trust and key stores).
func runOWJVM(t testing.TB, jvm []string, url, scenario string, opts ...string) owResult {
	t.Helper()
	return startOW(t, jvm, url, scenario, opts...)()
}

// startOW starts scenario as runOWJVM runs it and returns at once; wait, called from
// the test's goroutine, waits for its end and returns its results.
func startOW(t testing.TB, jvm []string, url, scenario string, opts ...string) (wait func() owResult) {
	t.Helper()
	return startJavaOW(t, jvm, owClasspath(t), "OwClient", url, scenario, opts...)
}

// runJavaOW runs scenario of the Java program main (OwClient or a program on its
// entry point) with the class path cp.
func runJavaOW(t testing.TB, cp, main, url, scenario string, opts ...string) owResult {
	t.Helper()
	return startJavaOW(t, nil, cp, main, url, scenario, opts...)()
}

// startJavaOW starts scenario of the Java program main with the class path cp and the
// JVM options jvm, and returns at once; wait, called from the test's goroutine, waits
// for its end and returns its results.
func startJavaOW(t testing.TB, jvm []string, cp, main, url, scenario string, opts ...string) (wait func() owResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), owRunTimeout)
	t.Cleanup(cancel)
	// The JIT's first tier and the serial collector: a short client run starts faster.
	args := append([]string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}, jvm...)
	args = append(append(args, "-cp", cp, main, scenario, url), opts...)
	cmd := exec.CommandContext(ctx, javaBinary(), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s %s: %v", main, scenario, err)
	}
	return func() owResult {
		t.Helper()
		defer cancel()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s %s %s %v: %v after %.1fs\nstdout:\n%s\nstderr:\n%s", main, scenario, url, opts, err, time.Since(began).Seconds(), stdout.String(), stderr.String())
		}
		r := parseOW(stdout.String())
		t.Logf("%s %s (%.1fs):\n%s", main, scenario, time.Since(began).Seconds(), strings.TrimRight(r.stdout, "\n"))
		return r
	}
}

// owSeq numbers the destinations of the OpenWire tests: a shared ActiveMQ outlives a
// test (and -count runs it again on the same broker).
var owSeq atomic.Int64

// owName is a destination or client name of this test's own.
func owName(t testing.TB, what string) string {
	return fmt.Sprintf("OW.%s.%s.%d", strings.NewReplacer("/", ".", " ", "_").Replace(t.Name()), what, owSeq.Add(1))
}

// owBroker is one broker the OpenWire scenarios run against.
type owBroker struct {
	URL   string // the client's broker URL: tcp://127.0.0.1:PORT
	Stomp string // the same broker's STOMP address, for the interop tests
	// Output is what the broker logged so far, shown when a test fails.
	Output func() string
}

// owTarget is a broker the OpenWire tests hold to ActiveMQ's behaviour, with what is
// allowed to differ.
type owTarget struct {
	name  string
	start func(t testing.TB) owBroker
	// brokerName is what ActiveMQConnection.getBrokerName() returns.
	brokerName string
	// xa is what the xa scenario prints first: "committed" where XA transactions work,
	// "refused" where the broker refuses them with an exception.
	xa string
	// unflaggedRetake: a rolled-back delivery to a consumer that closes right after may
	// come again neither flagged redelivered nor counted (ActiveMQ's broker, when the
	// client's close reaches it before the rollback's redelivery is counted).
	unflaggedRetake bool
	// stompAdds are the headers the target's STOMP MESSAGE frames carry beyond
	// ActiveMQ's (ours: the delivery count, the group headers, and content-length on
	// every frame; README's "Differences from ActiveMQ").
	stompAdds []string
}

// owUser and owPassword log a client in on every target (a user of the broker's
// authentication, which also lets anonymous clients in): the userid scenario's.
const owUser, owPassword = "app", "app-secret"

// amqOpenWireXML is the ActiveMQ of the OpenWire tests: OpenWire and STOMP connectors;
// the scheduler (AMQ_SCHEDULED_DELAY); simple authentication with one user that lets
// anonymous clients in too, and JMSXUserID populated.
const amqOpenWireXML = `<?xml version="1.0" encoding="UTF-8"?>
<beans xmlns="http://www.springframework.org/schema/beans"
       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
       xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans.xsd
                           http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="ow-e2e" persistent="false" useJmx="false"
          schedulerSupport="true" populateJMSXUserID="true">
    <plugins>
      <simpleAuthenticationPlugin anonymousAccessAllowed="true">
        <users>
          <authenticationUser username="` + owUser + `" password="` + owPassword + `" groups="users"/>
        </users>
      </simpleAuthenticationPlugin>
    </plugins>
    <transportConnectors>
      <transportConnector name="openwire" uri="tcp://127.0.0.1:` + amqOpenWirePort + `"/>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:` + amqStompPort + `"/>
    </transportConnectors>
  </broker>
</beans>
`

// owTargets are the brokers of the OpenWire tests.
func owTargets() []owTarget {
	return []owTarget{{
		name: "activemq",
		start: func(t testing.TB) owBroker {
			a := sharedActiveMQ(t, amqOpenWireXML)
			return owBroker{URL: "tcp://" + a.OpenWireAddr, Stomp: a.StompAddr, Output: a.Output}
		},
		brokerName:      "ow-e2e",
		xa:              "committed",
		unflaggedRetake: true,
	}, {
		name: "ours",
		start: func(t testing.TB) owBroker {
			b := startOpenWireBroker(t)
			return owBroker{URL: "tcp://" + b.OpenWireAddr(), Stomp: b.Addr, Output: b.Log}
		},
		brokerName: "ow-e2e",
		xa:         "refused",
		stompAdds:  []string{"JMSXDeliveryCount", "redelivery-count", "JMSXGroupID", "JMSXGroupSeq", "JMSXGroupFirstForConsumer", "content-length"},
	}}
}

// ourOpenWireYAML is our broker configured as amqOpenWireXML configures ActiveMQ.
const ourOpenWireYAML = `broker:
  brokerName: ow-e2e
  dataDirectory: %s
  populateJMSXUserID: true
persistenceAdapter:
  memory: {}
transportConnectors:
  - {name: stomp, uri: "stomp://127.0.0.1:0"}
  - {name: openwire, uri: "tcp://127.0.0.1:0"}
plugins:
  simpleAuthentication:
    anonymousAccessAllowed: true
    users:
      - {username: ` + owUser + `, password: ` + owPassword + `, groups: [users]}
`

// startOpenWireBroker starts our broker for the OpenWire tests (ourOpenWireYAML, and
// extra YAML after it).
func startOpenWireBroker(t testing.TB, extra ...string) *brokerProc {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "broker.yaml")
	cfg := fmt.Sprintf(ourOpenWireYAML, filepath.Join(dir, "data")) + strings.Join(extra, "")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return startBrokerFile(t, path, filepath.Join(dir, "data"))
}

// forEachOWTarget runs f as a subtest per target, with the target's broker.
func forEachOWTarget(t *testing.T, f func(t *testing.T, tg owTarget, b owBroker)) {
	for _, tg := range owTargets() {
		t.Run(tg.name, func(t *testing.T) {
			b := tg.start(t)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("%s's output so far:\n%s", tg.name, b.Output())
				}
			})
			f(t, tg, b)
		})
	}
}

// run runs scenario against b with a destination (dest) and a run tag (run) of this
// test's own; opts come after them and so override them.
func (b owBroker) run(t testing.TB, scenario string, opts ...string) owResult {
	t.Helper()
	return runOW(t, b.URL, scenario, append([]string{"dest=" + owName(t, scenario), "run=" + owName(t, "run")}, opts...)...)
}
