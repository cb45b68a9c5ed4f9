package tests

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// debianExamples is where Debian's activemq package puts ActiveMQ's example configurations.
const debianExamples = "/usr/share/doc/activemq/examples/conf"

// importedYAML is the part of a converted file the tests look into.
type importedYAML struct {
	Broker struct {
		DataDirectory string `yaml:"dataDirectory"`
	} `yaml:"broker"`
	PersistenceAdapter map[string]map[string]any `yaml:"persistenceAdapter"`
	SSLContext         map[string]string         `yaml:"sslContext"`
	Connectors         []struct {
		Name string `yaml:"name"`
		URI  string `yaml:"uri"`
	} `yaml:"transportConnectors"`
	DestinationPolicy []map[string]any `yaml:"destinationPolicy"`
	Plugins           struct {
		SimpleAuthentication struct {
			Users []struct {
				Username string `yaml:"username"`
				Password string `yaml:"password"`
			} `yaml:"users"`
		} `yaml:"simpleAuthentication"`
	} `yaml:"plugins"`
}

// readImported reads a converted file; the text returned leaves out the header comment
// (which names the source file).
func readImported(t *testing.T, path string) (importedYAML, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var y importedYAML
	require.NoError(t, yaml.Unmarshal(b, &y), "%s", b)
	_, body, _ := strings.Cut(string(b), "\n")
	return y, body
}

// connectorHostRE splits a connector URI into what precedes the port, the port and the rest.
var connectorHostRE = regexp.MustCompile(`^([a-z+]+://[^/?]*:)(\d+)(.*)$`)

// freePortEnv keeps every connector of the converted file on the host it names but on a
// free port (the examples' fixed ports may be in use on the machine): one
// BROKER_TRANSPORTCONNECTORS_i_URI override each.
func freePortEnv(t *testing.T, y importedYAML) []string {
	t.Helper()
	var env []string
	for i, c := range y.Connectors {
		m := connectorHostRE.FindStringSubmatch(c.URI)
		require.NotNil(t, m, "connector %s: %s", c.Name, c.URI)
		env = append(env, fmt.Sprintf("BROKER_TRANSPORTCONNECTORS_%d_URI=%s0%s", i, m[1], m[3]))
	}
	return env
}

// placePEMs writes a certificate and key (and the CA as client CA) where the converted
// sslContext names them, as the report's keytool/openssl commands would.
func placePEMs(t *testing.T, ssl map[string]string) {
	t.Helper()
	pki := newTestPKI(t)
	for key, from := range map[string]string{"certFile": pki.CertFile, "keyFile": pki.KeyFile, "clientCAFile": pki.CAFile} {
		if to := ssl[key]; to != "" {
			b, err := os.ReadFile(from)
			require.NoError(t, err)
			require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o700))
			require.NoError(t, os.WriteFile(to, b, 0o600))
		}
	}
}

// reportVarsRE finds the variables the report says to set.
var reportVarsRE = regexp.MustCompile(`(?m)^  ([A-Z0-9_]+) \(was \$\{[^}]*\}\)$`)

// TestConfigImportEveryDebianExample imports every activemq.xml-style file Debian's
// package ships. A file with no <broker> (camel.xml, jetty.xml, ...) is refused with
// status 1 and no YAML; every other converts, points at nothing in the XML's own
// directory, says whether it starts as written or what to do first, and, that done,
// starts with the real binary (its connectors moved to free ports on the same hosts)
// and stops on SIGTERM with status 0.
func TestConfigImportEveryDebianExample(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(debianExamples, "*.xml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "Debian's activemq package provides the examples")
	started, refused := 0, 0
	for _, src := range files {
		src := src
		t.Run(filepath.Base(src), func(t *testing.T) {
			raw, err := os.ReadFile(src)
			require.NoError(t, err)
			dir := t.TempDir()
			out, rep := filepath.Join(dir, "broker.yaml"), filepath.Join(dir, "report.txt")
			b, err := exec.Command(brokerBin, "config", "import", src, "-o", out, "--report", rep).CombinedOutput()
			if !regexp.MustCompile(`<broker[\s>]`).Match(raw) {
				var ee *exec.ExitError
				require.ErrorAs(t, err, &ee, "a file with no <broker> is refused: %s", b)
				assert.Equal(t, 1, ee.ExitCode())
				assert.Contains(t, string(b), "no <broker> element")
				_, err = os.Stat(out)
				assert.True(t, os.IsNotExist(err), "no YAML for a file with no <broker>")
				refused++
				return
			}
			require.NoError(t, err, "%s", b)
			report, err := os.ReadFile(rep)
			require.NoError(t, err)
			y, text := readImported(t, out)
			assert.NotContains(t, text, debianExamples, "nothing in the YAML points into the XML's directory")
			assert.NotContains(t, text, "/etc/activemq")
			assert.NotContains(t, string(report), "see the variables below", "the report lists the variables it means")
			require.Regexp(t, `(?m)^start: `, string(report), "the report says how the result starts")

			env := freePortEnv(t, y)
			if !strings.Contains(string(report), "start: ready as written") {
				// What the report says to do first: set its variables, write its PEM files.
				require.Contains(t, string(report), "start: not before")
				for _, m := range reportVarsRE.FindAllStringSubmatch(string(report), -1) {
					env = append(env, m[1]+"=value-of-"+strings.ToLower(m[1]))
				}
				if y.SSLContext != nil {
					require.Contains(t, string(report), "commands producing the PEM files")
					placePEMs(t, y.SSLContext)
				}
			}
			p := startBrokerFile(t, out, y.Broker.DataDirectory, env...)
			var login []func(*stomp.Conn) error
			if users := y.Plugins.SimpleAuthentication.Users; len(users) > 0 {
				login = append(login, stomp.ConnOpt.Login(users[0].Username, os.Expand(users[0].Password, func(v string) string {
					return "value-of-" + strings.ToLower(v)
				})))
			}
			c := dial(t, p.Addr, login...)
			require.NoError(t, c.Send("/queue/import.check", "text/plain", []byte("x"), stomp.SendOpt.Receipt))
			p.Stop()
			require.NoError(t, p.err, "SIGTERM ends the broker with status 0")
			started++
		})
	}
	t.Logf("%d examples started, %d refused (no <broker>)", started, refused)
	assert.Positive(t, refused)
	assert.Positive(t, started)
}

// TestConfigImportExposureAndDefaults imports a file whose connectors listen on
// 127.0.0.1 only, one of them a protocol not spoken here, with an sslContext but no TLS
// connector, a placeholder other than ${activemq.*} and no destination policy. The STOMP
// connector the import adds listens on 127.0.0.1 too, the report says what changed about
// exposure, the sslContext is reported and not written (the broker starts), the
// variable is listed where the report refers to it, the store lies next to the YAML,
// and queues keep ActiveMQ's FIFO order whatever the priority.
func TestConfigImportExposureAndDefaults(t *testing.T) {
	xml := `<beans xmlns="http://www.springframework.org/schema/beans">
  <bean class="org.springframework.beans.factory.config.PropertyPlaceholderConfigurer">
    <property name="locations"><value>file:${activemq.conf}/credentials.properties</value></property>
  </bean>
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="${node.name}" dataDirectory="${activemq.data}">
    <persistenceAdapter><kahaDB directory="${activemq.data}/kahadb"/></persistenceAdapter>
    <sslContext><sslContext keyStore="file:${activemq.conf}/broker.ks" keyStorePassword="password"/></sslContext>
    <transportConnectors>
      <transportConnector name="openwire" uri="tcp://127.0.0.1:61616"/>
      <transportConnector name="amqp" uri="amqp://127.0.0.1:5672"/>
    </transportConnectors>
  </broker>
</beans>`
	xmlDir := t.TempDir()
	src := filepath.Join(xmlDir, "activemq.xml")
	require.NoError(t, os.WriteFile(src, []byte(xml), 0o600))
	out, report := importConfig(t, src)
	y, text := readImported(t, out)

	require.Len(t, y.Connectors, 2, text)
	assert.Equal(t, "stomp://127.0.0.1:61613", y.Connectors[1].URI, "the added STOMP connector listens where the file's connectors do")
	assert.Contains(t, report, "stomp: not in the XML, written as stomp://127.0.0.1:61613")
	assert.Contains(t, report, "amqp: was 127.0.0.1:5672 in the XML, not written")
	assert.NotContains(t, report, "openwire: was", "the openwire connector's exposure did not change")

	assert.Nil(t, y.SSLContext, "no TLS connector: no sslContext\n%s", text)
	assert.Regexp(t, `sslContext: not supported: not written: no TLS connector`, report)
	assert.NotContains(t, report, "keytool")

	assert.Regexp(t, `read from the environment: NODE_NAME\b`, report)
	assert.Contains(t, report, "NODE_NAME (was ${node.name})")
	assert.Contains(t, report, "start: not before")

	outDir := filepath.Dir(out)
	assert.Equal(t, filepath.Join(outDir, "data"), y.Broker.DataDirectory)
	assert.Equal(t, filepath.Join(outDir, "data", "kahadb"), y.PersistenceAdapter["kahaDB"]["directory"])
	assert.NotContains(t, text, xmlDir)
	require.NotEmpty(t, y.DestinationPolicy, text)
	assert.Equal(t, map[string]any{"queue": ">", "prioritizedMessages": false}, y.DestinationPolicy[len(y.DestinationPolicy)-1])
	assert.NotContains(t, report, "add prioritizedMessages")

	env := append(freePortEnv(t, y), "NODE_NAME=imported")
	p := startBrokerFile(t, out, y.Broker.DataDirectory, env...)
	host, _, err := net.SplitHostPort(p.Addr)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host, "the STOMP connector listens on loopback only")
	_, err = os.Stat(filepath.Join(outDir, "data", "kahadb"))
	assert.NoError(t, err, "the store is next to the YAML")

	// FIFO whatever the priority, as in ActiveMQ.
	c := dial(t, p.Addr)
	for i, prio := range []string{"1", "9", "4"} {
		require.NoError(t, c.Send("/queue/fifo", "text/plain", []byte(fmt.Sprint(i)), stomp.SendOpt.Receipt,
			stomp.SendOpt.Header("priority", prio)))
	}
	sub, err := c.Subscribe("/queue/fifo", stomp.AckAuto)
	require.NoError(t, err)
	var got bytes.Buffer
	for i := 0; i < 3; i++ {
		select {
		case m := <-sub.C:
			require.NoError(t, m.Err)
			got.Write(m.Body)
		case <-time.After(10 * time.Second):
			t.Fatalf("message %d not delivered\n%s", i, p.Log())
		}
	}
	assert.Equal(t, "012", got.String())
}

// TestConfigImportNoConnector: a broker with no transport connector (ActiveMQ listened
// on none) gets a STOMP connector on loopback, not on every interface.
func TestConfigImportNoConnector(t *testing.T) {
	src := filepath.Join(t.TempDir(), "activemq.xml")
	require.NoError(t, os.WriteFile(src, []byte(`<beans><broker xmlns="http://activemq.apache.org/schema/core" persistent="false"/></beans>`), 0o600))
	out, report := importConfig(t, src)
	y, text := readImported(t, out)
	require.Len(t, y.Connectors, 1, text)
	assert.Equal(t, "stomp://127.0.0.1:61613", y.Connectors[0].URI)
	assert.Contains(t, report, "stomp: not in the XML, written as stomp://127.0.0.1:61613")
	assert.Contains(t, report, "start: ready as written")
}
