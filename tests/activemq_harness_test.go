package tests

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The tests that hold our broker to ActiveMQ's behaviour run the real ActiveMQ 5.17 of
// Debian's package activemq (.ci/run installs it; it pulls a Java 17 runtime) as a child
// process of the test binary: a JVM started as Debian's /usr/bin/activemq starts it, on a
// temporary base directory, with the test's activemq.xml, a STOMP connector on a free
// loopback port and, when the XML asks for one (amqOpenWirePort), an OpenWire connector on
// another (the tests of ActiveMQ's own Java client, openwire_harness_test.go);
// useJmx="false" opens no JMX port.

const (
	// amqStompPort is the placeholder of the STOMP port in the XML given to
	// startActiveMQ: <transportConnector uri="stomp://127.0.0.1:@STOMP_PORT@"/>.
	amqStompPort = "@STOMP_PORT@"
	// amqOpenWirePort is the placeholder of the OpenWire port, optional:
	// <transportConnector uri="tcp://127.0.0.1:@OPENWIRE_PORT@"/>.
	amqOpenWirePort = "@OPENWIRE_PORT@"

	amqHome = "/usr/share/activemq"
	amqJar  = amqHome + "/bin/activemq.jar"
	// amqExtraLib is Debian's directory for more jars of every instance (it may not
	// exist); /usr/share/activemq/lib is activemq.home's lib, which activemq.jar adds
	// by itself.
	amqExtraLib = "/var/lib/activemq/lib/"
	amqJava17   = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"

	// amqStartTimeout bounds the JVM start up to a STOMP port that answers a CONNECT.
	amqStartTimeout = 90 * time.Second
)

// amqAdvisoryJars are what ActiveMQ's STOMP transport needs to send an advisory message
// (XStream, and Jettison for its JSON). The upstream distribution ships them in
// lib/optional; Debian's package installs them (libxstream-java, libjettison-java) but
// leaves them off the broker's class path, so the dispatch thread of a connection that
// subscribes to an advisory topic dies of a NoClassDefFoundError. Each test ActiveMQ
// gets them in its base's lib/optional, as the upstream distribution has them.
var amqAdvisoryJars = []string{"/usr/share/java/xstream.jar", "/usr/share/java/jettison.jar"}

// amqLog4j2 sends ActiveMQ's log to the console (the test keeps it for failure
// messages), warnings and errors only.
const amqLog4j2 = `rootLogger.level = WARN
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %-5p [%t] %c{1} - %m%n
`

// activeMQ is one ActiveMQ JVM started by the tests.
type activeMQ struct {
	StompAddr    string
	OpenWireAddr string        // "" unless the XML has amqOpenWirePort
	Started      time.Duration // from exec to a STOMP port that answers a CONNECT

	cmd    *exec.Cmd
	base   string
	out    logOutput // the JVM's stdout and stderr
	exited chan struct{}
	err    error // the JVM's exit, once exited is closed
}

// javaBinary is Debian's Java 17, else java on PATH, else "".
func javaBinary() string {
	if _, err := os.Stat(amqJava17); err == nil {
		return amqJava17
	}
	if p, err := exec.LookPath("java"); err == nil {
		return p
	}
	return ""
}

// requireActiveMQ fails the test loudly when Debian's ActiveMQ or Java is missing: the
// tests against ActiveMQ never skip.
func requireActiveMQ(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(amqJar); err != nil {
		t.Fatalf("%s is missing: install Debian's package activemq (apt-get install activemq; .ci/run does)", amqJar)
	}
	if javaBinary() == "" {
		t.Fatalf("no java: install Debian's package activemq, which pulls openjdk-17-jre-headless (.ci/run does)")
	}
}

// startActiveMQ runs ActiveMQ with xml as its activemq.xml, amqStompPort in it replaced
// by a free port, and returns the STOMP address once the port answers a CONNECT. The
// JVM is killed when the test ends; its output is in the test's log if the test failed.
func startActiveMQ(t testing.TB, xml string) (stompAddr string) {
	t.Helper()
	return startActiveMQInstance(t, xml).StompAddr
}

// startActiveMQInstance is startActiveMQ returning the instance: its OpenWire address
// too (OpenWireAddr, when the XML has amqOpenWirePort) and its output.
func startActiveMQInstance(t testing.TB, xml string) *activeMQ {
	t.Helper()
	requireActiveMQ(t)
	a, err := launchActiveMQ(xml)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ActiveMQ answered STOMP on %s %.1fs after the JVM was started", a.StompAddr, a.Started.Seconds())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ActiveMQ output:\n%s", a.Output())
		}
		if err := a.stop(); err != nil {
			t.Error(err)
		}
	})
	return a
}

// sharedAMQs are the ActiveMQ instances shared by the tests of this binary, by their
// XML; each is started on first use and stopped when the tests end (TestMain's onExit
// hooks).
var sharedAMQs struct {
	sync.Mutex
	byXML map[string]*sharedAMQ
}

type sharedAMQ struct {
	once sync.Once
	a    *activeMQ
	err  error
}

// sharedActiveMQ returns the ActiveMQ of this test binary for xml, started on the first
// call: tests that only read what they wrote themselves share one JVM start. It is
// stopped when the tests end.
func sharedActiveMQ(t testing.TB, xml string) *activeMQ {
	t.Helper()
	requireActiveMQ(t)
	sharedAMQs.Lock()
	if sharedAMQs.byXML == nil {
		sharedAMQs.byXML = map[string]*sharedAMQ{}
	}
	s := sharedAMQs.byXML[xml]
	if s == nil {
		s = &sharedAMQ{}
		sharedAMQs.byXML[xml] = s
	}
	sharedAMQs.Unlock()
	s.once.Do(func() {
		s.a, s.err = launchActiveMQ(xml)
		if s.err == nil {
			t.Logf("ActiveMQ (shared) answered STOMP on %s %.1fs after the JVM was started", s.a.StompAddr, s.a.Started.Seconds())
			a := s.a
			onExit(func() {
				if err := a.stop(); err != nil {
					fmt.Fprintln(os.Stderr, err)
				}
			})
		}
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.a
}

// launchActiveMQ starts the JVM and waits for its STOMP port. A port taken between
// choosing and binding it is retried with another.
func launchActiveMQ(xml string) (*activeMQ, error) {
	if !strings.Contains(xml, amqStompPort) {
		return nil, fmt.Errorf("activemq.xml has no %s placeholder for the STOMP port", amqStompPort)
	}
	for attempt := 1; ; attempt++ {
		a, err := launchActiveMQOnce(xml)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "Address already in use") {
			return a, err
		}
	}
}

func launchActiveMQOnce(xml string) (*activeMQ, error) {
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	base, err := os.MkdirTemp("", "activemq-e2e-")
	if err != nil {
		return nil, err
	}
	a := &activeMQ{StompAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), base: base, exited: make(chan struct{})}
	xml = strings.ReplaceAll(xml, amqStompPort, strconv.Itoa(port))
	if strings.Contains(xml, amqOpenWirePort) {
		owPort, err := freeLoopbackPort()
		if err != nil {
			_ = os.RemoveAll(base)
			return nil, err
		}
		a.OpenWireAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(owPort))
		xml = strings.ReplaceAll(xml, amqOpenWirePort, strconv.Itoa(owPort))
	}
	conf, data, tmp := filepath.Join(base, "conf"), filepath.Join(base, "data"), filepath.Join(base, "tmp")
	optional := filepath.Join(base, "lib", "optional")
	for _, d := range []string{conf, data, tmp, optional} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			_ = os.RemoveAll(base)
			return nil, err
		}
	}
	for _, jar := range amqAdvisoryJars {
		if _, err := os.Stat(jar); err == nil {
			if err := os.Symlink(jar, filepath.Join(optional, filepath.Base(jar))); err != nil {
				_ = os.RemoveAll(base)
				return nil, err
			}
		}
	}
	files := map[string]string{
		"activemq.xml":      xml,
		"log4j2.properties": amqLog4j2,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(conf, name), []byte(content), 0o600); err != nil {
			_ = os.RemoveAll(base)
			return nil, err
		}
	}

	// The flags of Debian's /usr/bin/activemq with activemq-options (as
	// /work/shared/tools/start-activemq.sh runs it), with a smaller heap; the JIT's
	// first tier only, which is what a short test run needs and starts faster.
	args := []string{
		"-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
		"-Dorg.apache.activemq.UseDedicatedTaskRunner=true",
		"--add-reads=java.xml=java.logging",
		"--add-opens", "java.base/java.security=ALL-UNNAMED",
		"--add-opens", "java.base/java.net=ALL-UNNAMED",
		"--add-opens", "java.base/java.lang=ALL-UNNAMED",
		"--add-opens", "java.base/java.util=ALL-UNNAMED",
		"--add-opens", "java.naming/javax.naming.spi=ALL-UNNAMED",
		"--add-opens", "java.rmi/sun.rmi.transport.tcp=ALL-UNNAMED",
		"--add-opens", "java.base/java.util.concurrent=ALL-UNNAMED",
		"--add-opens", "java.base/java.util.concurrent.atomic=ALL-UNNAMED",
		"-Dactivemq.classpath=" + conf + ":" + amqExtraLib,
		"-Dactivemq.home=" + amqHome,
		"-Dactivemq.base=" + base,
		"-Dactivemq.conf=" + conf,
		"-Dactivemq.data=" + data,
		"-Djava.io.tmpdir=" + tmp,
		"-jar", amqJar, "start", "xbean:file:" + filepath.Join(conf, "activemq.xml"),
	}
	a.cmd = exec.Command(javaBinary(), args...)
	a.cmd.Dir = base
	a.cmd.Stdout, a.cmd.Stderr = &a.out, &a.out
	// The JVM dies with the test binary even when TestMain's exit path is not reached
	// (a panic, go test's -timeout).
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	began := time.Now()
	if err := a.cmd.Start(); err != nil {
		_ = os.RemoveAll(base)
		return nil, fmt.Errorf("starting ActiveMQ's JVM: %w", err)
	}
	go func() {
		a.err = a.cmd.Wait()
		close(a.exited)
	}()

	deadline := began.Add(amqStartTimeout)
	for {
		err := stompAnswers(a.StompAddr, time.Until(deadline))
		if err == nil && a.OpenWireAddr != "" {
			// The connectors start one after the other: the OpenWire port is ready
			// when it accepts a connection too.
			err = tcpAccepts(a.OpenWireAddr, time.Until(deadline))
		}
		if err == nil {
			a.Started = time.Since(began)
			return a, nil
		}
		select {
		case <-a.exited:
			out := a.Output()
			_ = os.RemoveAll(base)
			return nil, fmt.Errorf("ActiveMQ exited before its STOMP port %s answered (%v):\n%s", a.StompAddr, a.err, out)
		default:
		}
		if time.Now().After(deadline) {
			_ = a.stop()
			return nil, fmt.Errorf("ActiveMQ's STOMP port %s did not answer a CONNECT within %v (%v):\n%s", a.StompAddr, amqStartTimeout, err, a.Output())
		}
		// The port is not open yet: poll again shortly (or as soon as the JVM exits).
		select {
		case <-a.exited:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Output is what the JVM wrote so far.
func (a *activeMQ) Output() string { return a.out.String() }

// stop ends the JVM (nothing of a test's ActiveMQ is worth a clean shutdown: it keeps
// no data) and removes its base directory.
func (a *activeMQ) stop() error {
	defer os.RemoveAll(a.base)
	select {
	case <-a.exited:
		return nil
	default:
	}
	_ = a.cmd.Process.Kill()
	select {
	case <-a.exited:
		return nil
	case <-time.After(15 * time.Second):
		return fmt.Errorf("ActiveMQ (pid %d) still running 15s after SIGKILL", a.cmd.Process.Pid)
	}
}

// stompAnswers connects to addr and sends a CONNECT without credentials; the port is
// ready when any frame comes back (CONNECTED, or ERROR when authentication is on).
func stompAnswers(addr string, within time.Duration) error {
	if within <= 0 {
		within = time.Millisecond
	}
	nc, err := net.DialTimeout("tcp", addr, min(within, 2*time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(min(within, 10*time.Second)))
	if _, err := nc.Write([]byte("CONNECT\naccept-version:1.2\nhost:localhost\n\n\x00")); err != nil {
		return err
	}
	cmd, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil {
		return fmt.Errorf("no answer to CONNECT: %w", err)
	}
	switch strings.TrimSpace(cmd) {
	case "CONNECTED", "ERROR":
		return nil
	}
	return fmt.Errorf("answer to CONNECT: %q", cmd)
}

// tcpAccepts connects to addr and closes the connection.
func tcpAccepts(addr string, within time.Duration) error {
	nc, err := net.DialTimeout("tcp", addr, min(max(within, time.Millisecond), 2*time.Second))
	if err != nil {
		return err
	}
	return nc.Close()
}

// freeLoopbackPort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
