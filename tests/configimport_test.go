package tests

import (
	"bytes"
	"compress/gzip"
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

// importConfig runs `broker config import xml -o yaml --report report` and returns
// the YAML's path and the report.
func importConfig(t *testing.T, xmlPath string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	out, rep := filepath.Join(dir, "broker.yaml"), filepath.Join(dir, "report.txt")
	cmd := exec.Command(brokerBin, "config", "import", xmlPath, "-o", out, "--report", rep)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	report, err := os.ReadFile(rep)
	require.NoError(t, err)
	return out, string(report)
}

// TestConfigImportSecurityExample converts Debian's activemq-security.xml and runs
// the broker with it: its users log in with the passwords the report says to set,
// and its authorization entries apply.
func TestConfigImportSecurityExample(t *testing.T) {
	src := "/usr/share/doc/activemq/examples/conf/activemq-security.xml"
	_, err := os.Stat(src)
	require.NoError(t, err, "Debian's activemq package provides the example")
	path, report := importConfig(t, src)
	assert.Contains(t, report, "ACTIVEMQ_PASSWORD (was ${activemq.password})")
	assert.Contains(t, report, "GUEST_PASSWORD (was ${guest.password})")
	assert.Contains(t, report, "no STOMP connector in the file")
	yml, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(yml), "\n#  ACTIVEMQ_PASSWORD (was ${activemq.password})\n#  GUEST_PASSWORD (was ${guest.password})\n")

	// The file's openwire connector comes first, then the STOMP one the import adds.
	b := startBrokerFile(t, path, t.TempDir(), "ACTIVEMQ_PASSWORD=sys-secret", "GUEST_PASSWORD=guest-secret",
		"BROKER_TRANSPORTCONNECTORS_0_URI=tcp://127.0.0.1:0", "BROKER_TRANSPORTCONNECTORS_1_URI=stomp://127.0.0.1:0")

	// user (group users) may use USERS.> but not FOO, which is admins' only.
	raw := dialRaw(t, b.Addr)
	f := raw.connect("login", "user", "passcode", "guest-secret")
	require.Equal(t, "CONNECTED", f.Command, "%v\n%s", f, b.Log())
	raw.send(sendFrame("/queue/USERS.orders", "r1", "allowed"))
	expectReceipt(t, raw, "r1")
	raw.send(sendFrame("/queue/FOO", "r2", "denied"))
	expectError(t, raw, "User user is not authorized to write to: queue://FOO", "r2")

	// system (admins) may read FOO; a wrong password is refused.
	c := dial(t, b.Addr, stomp.ConnOpt.Login("system", "sys-secret"))
	sub, err := c.Subscribe("/queue/USERS.orders", stomp.AckAuto)
	require.NoError(t, err)
	select {
	case m := <-sub.C:
		require.NoError(t, m.Err)
		assert.Equal(t, "allowed", string(m.Body))
	case <-time.After(10 * time.Second):
		t.Fatal("no MESSAGE on /queue/USERS.orders")
	}
	bad := dialRaw(t, b.Addr)
	f = bad.connect("login", "system", "passcode", "wrong")
	assert.Equal(t, "ERROR", f.Command, "%v", f)
}

// TestConfigImportClearPasswords converts Debian's activemq-security.xml with its
// placeholders resolved from its credentials.properties, the users' passwords
// written in clear as many activemq.xml files have them: the YAML holds none of
// them but one ${ACTIVEMQ_USER_<NAME>_PASSWORD} per user, which the report and the
// YAML's header list, and the broker started with those variables set lets each
// user in with its password.
func TestConfigImportClearPasswords(t *testing.T) {
	conf := "/usr/share/doc/activemq/examples/conf/"
	xml, err := os.ReadFile(conf + "activemq-security.xml")
	require.NoError(t, err, "Debian's activemq package provides the example")
	props, err := os.ReadFile(conf + "credentials.properties")
	require.NoError(t, err)
	pw := map[string]string{} // user -> password, as ActiveMQ resolves the example
	for _, line := range strings.Split(string(props), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(k, "#") {
			xml = bytes.ReplaceAll(xml, []byte("${"+k+"}"), []byte(v))
			switch k {
			case "activemq.password":
				pw["system"] = v
			case "guest.password":
				pw["user"], pw["guest"] = v, v
			}
		}
	}
	require.Len(t, pw, 3, "credentials.properties gives the example's passwords")
	src := filepath.Join(t.TempDir(), "activemq.xml")
	require.NoError(t, os.WriteFile(src, xml, 0o600))
	require.Contains(t, string(xml), `password="`+pw["system"]+`"`)

	path, report := importConfig(t, src)
	yml, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, line := range strings.Split(string(yml), "\n") {
		if _, v, ok := strings.Cut(strings.TrimSpace(line), "password: "); ok {
			assert.True(t, strings.HasPrefix(v, "${"), "a password in clear in the YAML: %q", line)
		}
	}
	env := []string{"BROKER_TRANSPORTCONNECTORS_0_URI=tcp://127.0.0.1:0", "BROKER_TRANSPORTCONNECTORS_1_URI=stomp://127.0.0.1:0"}
	for _, user := range []string{"system", "user", "guest"} {
		v := "ACTIVEMQ_USER_" + strings.ToUpper(user) + "_PASSWORD"
		assert.Contains(t, report, "  "+v+` (the password of user "`+user+`", written in clear in the XML)`)
		assert.Contains(t, string(yml), "\n#  "+v+" (")
		assert.Contains(t, string(yml), "password: ${"+v+"}")
		env = append(env, v+"="+pw[user])
	}

	b := startBrokerFile(t, path, t.TempDir(), env...)
	for _, user := range []string{"system", "user", "guest"} {
		raw := dialRaw(t, b.Addr)
		f := raw.connect("login", user, "passcode", pw[user])
		assert.Equal(t, "CONNECTED", f.Command, "%s: %v", user, f)
	}
	raw := dialRaw(t, b.Addr)
	f := raw.connect("login", "system", "passcode", pw["guest"])
	assert.Equal(t, "ERROR", f.Command, "system logged in with guest's password: %v", f)
}

// TestConfigImportDeadLetterPrefix converts a destinationPolicy with an individual
// dead-letter strategy and checks that a rejected message lands in the prefixed queue.
func TestConfigImportDeadLetterPrefix(t *testing.T) {
	xml := `<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="imported" persistent="false" dataDirectory="${activemq.data}">
    <destinationPolicy><policyMap><policyEntries>
      <policyEntry queue="ORDERS.>" memoryLimit="1 mb">
        <deadLetterStrategy><individualDeadLetterStrategy queuePrefix="DEAD." useQueueForQueueMessages="true"/></deadLetterStrategy>
      </policyEntry>
    </policyEntries></policyMap></destinationPolicy>
    <transportConnectors><transportConnector name="stomp" uri="stomp://127.0.0.1:0?transport.closeAsync=false"/></transportConnectors>
  </broker>
</beans>`
	src := filepath.Join(t.TempDir(), "activemq.xml")
	require.NoError(t, os.WriteFile(src, []byte(xml), 0o600))
	path, report := importConfig(t, src)
	assert.Contains(t, report, "dropped: transport.closeAsync")
	b := startBrokerFile(t, path, t.TempDir())

	c := dial(t, b.Addr)
	sub, err := c.Subscribe("/queue/ORDERS.eu", stomp.AckClientIndividual)
	require.NoError(t, err)
	require.NoError(t, c.Send("/queue/ORDERS.eu", "text/plain", []byte("poison"), stomp.SendOpt.Receipt,
		stomp.SendOpt.Header("persistent", "true"))) // processNonPersistent is false: only persistent ones are dead-lettered)
	var m *stomp.Message
	select {
	case m = <-sub.C:
		require.NoError(t, m.Err)
	case <-time.After(10 * time.Second):
		t.Fatal("no MESSAGE on /queue/ORDERS.eu")
	}
	require.NoError(t, c.Nack(m))

	dlq := dial(t, b.Addr)
	dsub, err := dlq.Subscribe("/queue/DEAD.ORDERS.eu", stomp.AckAuto)
	require.NoError(t, err)
	select {
	case d := <-dsub.C:
		require.NoError(t, d.Err)
		assert.Equal(t, "poison", string(d.Body))
		assert.True(t, strings.Contains(d.Header.Get("original-destination"), "ORDERS.eu"), "%v", d.Header)
	case <-time.After(10 * time.Second):
		t.Fatalf("nothing on /queue/DEAD.ORDERS.eu\n%s", b.Log())
	}
}

// TestConfigImportCommand: a gzipped file converts (YAML on stdout, report on
// stderr); XML that does not parse exits 1 and writes no YAML.
func TestConfigImportCommand(t *testing.T) {
	dir := t.TempDir()
	xml := `<beans><broker xmlns="http://activemq.apache.org/schema/core" brokerName="gz" persistent="false"/></beans>`
	var gz bytes.Buffer
	z := gzip.NewWriter(&gz)
	_, err := z.Write([]byte(xml))
	require.NoError(t, err)
	require.NoError(t, z.Close())
	src := filepath.Join(dir, "activemq.xml.gz")
	require.NoError(t, os.WriteFile(src, gz.Bytes(), 0o600))
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(brokerBin, "config", "import", src)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	assert.Contains(t, stdout.String(), "brokerName: gz")
	assert.Contains(t, stderr.String(), "summary: ")

	bad := filepath.Join(dir, "bad.xml")
	require.NoError(t, os.WriteFile(bad, []byte("<beans><broker></beans>"), 0o600))
	out := filepath.Join(dir, "bad.yaml")
	cmd = exec.Command(brokerBin, "config", "import", bad, "-o", out)
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", b)
	assert.Equal(t, 1, ee.ExitCode())
	assert.Contains(t, string(b), "not well-formed XML")
	_, err = os.Stat(out)
	assert.True(t, os.IsNotExist(err), "no YAML is written for a file that does not parse")
}
