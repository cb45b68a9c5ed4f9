package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// secret appears in test inputs where a password could leak; it must never
// appear in an error.
const secret = "s3cret-Pa55"

const (
	topKeys     = "broker, persistenceAdapter, transportConnectors, systemUsage, destinationPolicy, streams, virtualTopics, sslContext, plugins, metrics"
	brokerKeys  = "brokerName, dataDirectory, persistent, schedulerSupport, offlineDurableSubscriberTaskSchedule, allowLinkStealing"
	adapterList = "memory, kahaDB, bbolt, jdbc, kafkaLog"
	optionList  = "maximumConnections, maxConnections, wireFormat.maxFrameSize, maxFrameSize, maxFrameSizeBeforeLogin, " +
		"wireFormat.maxDataLength, wireFormat.maxHeaders, maxHeaders, wireFormat.maxHeaderLength, maxHeaderLength, " +
		"wireFormat.maxInactivityDuration, maxInactivityDuration, wireFormat.maxInactivityDurationInitalDelay, " +
		"wireFormat.maxInactivityDurationInitialDelay, maxInactivityDurationInitalDelay, " +
		"transport.connectAttemptTimeout, connectTimeout, transport.hbGracePeriodMultiplier, hbGracePeriodMultiplier, " +
		"transport.needClientAuth, needClientAuth, transport.wantClientAuth, wantClientAuth, transport.defaultHeartBeat, allowedOrigins"
	schemeList = "stomp, stomp+nio, stomp+ssl, stomp+nio+ssl, ws, wss (STOMP); tcp, nio, ssl, nio+ssl (OpenWire)"
)

// connector wraps a URI in a one-connector file.
func connector(uri string) string {
	return fmt.Sprintf("transportConnectors:\n  - name: stomp\n    uri: %q\n", uri)
}

func TestParseErrors(t *testing.T) {
	const uriKey = "transportConnectors[0].uri"
	tests := []struct {
		name    string
		yaml    string
		key     string
		problem string // substring
		allowed string // substring
		value   string // exact, when not ""
	}{
		// top level
		{"unknown top-level key", "destinationInterceptors: {}\n", "destinationInterceptors", "unknown top-level key", topKeys, ""},
		{"unknown top-level key, null", "interceptors:\n", "interceptors", "unknown top-level key", topKeys, ""},
		{"unknown top-level key, scalar", "brokerName: b1\n", "brokerName", "unknown top-level key", topKeys, ""},
		{"file is a list", "- broker\n", "", "mapping of sections", topKeys, ""},
		{"YAML syntax", "broker:\n  brokerName: a\n persistent: [\n", "", "line 2", "", ""},
		{"YAML tab", "broker:\n\tbrokerName: a\n", "", "invalid YAML", "", ""},
		{"duplicate key by case", "broker:\n  brokerName: a\n  brokername: b\n", "broker.brokername", "differ only in case", "", ""},
		{"duplicate key", "broker:\n  brokerName: a\n  brokerName: b\n", "broker.brokerName", "duplicate key (line 3; first at line 2)", "", ""},

		// broker
		{"unknown broker key", "broker: {brokerNmae: x}\n", "broker.brokerNmae", "unknown key", brokerKeys, ""},
		{"unknown broker key with a secret", "broker:\n  password: " + secret + "\n", "broker.password", "unknown key", brokerKeys, ""},
		{"broker not a mapping", "broker: hello\n", "broker", "must be a mapping", brokerKeys, "hello"},
		{"bad boolean", "broker: {persistent: maybe}\n", "broker.persistent", "not a boolean", "true, false", "maybe"},
		{"number for boolean", "broker: {persistent: 1}\n", "broker.persistent", "not a boolean", "true, false", "1"},
		{"list for a value", "broker: {brokerName: [a, b]}\n", "broker.brokerName", "single value", "", ""},
		{"empty broker name", "broker: {brokerName: ''}\n", "broker.brokerName", "must not be empty", "localhost", ""},
		{"empty data directory", "broker: {dataDirectory: ' '}\n", "broker.dataDirectory", "must not be empty", "./data", ""},

		// persistenceAdapter
		{"no adapter", "persistenceAdapter: {}\n", "persistenceAdapter", "found none", adapterList, ""},
		{"no adapter, null section", "persistenceAdapter:\n# kahaDB: {}\n", "persistenceAdapter", "found none", adapterList, ""},
		{"two adapters", "persistenceAdapter:\n  kahaDB: {}\n  memory:\n", "persistenceAdapter", "found 2: memory, kahaDB", adapterList, ""},
		{"unknown adapter", "persistenceAdapter: {levelDB: {}}\n", "persistenceAdapter.levelDB", "unknown persistence adapter", adapterList, ""},
		{"unknown adapter beside a known one", "persistenceAdapter: {kahaDB: {}, mKahaDB: {}}\n", "persistenceAdapter.mKahaDB", "unknown persistence adapter", adapterList, ""},
		{"adapter block is a string", "persistenceAdapter: {jdbc: 'postgres://app:" + secret + "@db/x'}\n", "persistenceAdapter.jdbc", "must be a mapping", "", "postgres://app:xxxxx@db/x"},
		{"adapter block is a list", "persistenceAdapter: {kahaDB: [" + secret + "]}\n", "persistenceAdapter.kahaDB", "not a list", "", ""},
		{"adapter block spelt differently", "persistenceAdapter: {KAHADB: 3}\n", "persistenceAdapter.kahaDB", "must be a mapping", "", "3"},
		{"adapter section is a string", "persistenceAdapter: memory\n", "persistenceAdapter", "must be a mapping", adapterList, "memory"},

		// transportConnectors
		{"no connectors", "transportConnectors: []\n", "transportConnectors", "at least one connector", "name, uri", ""},
		{"no connectors, null section", "transportConnectors:\n", "transportConnectors", "at least one connector", "", ""},
		{"connectors not a list", "transportConnectors: stomp://0.0.0.0:61613\n", "transportConnectors", "must be a list", "", "stomp://0.0.0.0:61613"},
		{"connector not a mapping", "transportConnectors: [stomp]\n", "transportConnectors[0]", "must be a mapping", "name, uri", "stomp"},
		{"missing name", "transportConnectors: [{uri: 'stomp://h:1'}]\n", "transportConnectors[0].name", "missing connector name", "unique name", ""},
		{"missing uri", "transportConnectors: [{name: s}]\n", "transportConnectors[0].uri", "missing connector uri", "stomp://", ""},
		{"duplicate name", "transportConnectors:\n  - {name: s, uri: 'stomp://h:1'}\n  - {name: s, uri: 'stomp://h:2'}\n",
			"transportConnectors[1].name", "duplicate connector name (also transportConnectors[0])", "not used", "s"},
		{"unknown connector key", "transportConnectors:\n  - name: s\n    uri: stomp://h:1\n    Trace: true\n", "transportConnectors[0].Trace", "unknown key", "name, uri", ""},
		{"malformed uri, no scheme", connector("127.0.0.1:61613"), uriKey, "malformed URI", "scheme://host:port", "127.0.0.1:61613"},
		{"malformed uri, opaque", connector("stomp:61613"), uriKey, "malformed URI", "scheme://host:port", ""},
		{"malformed uri, no host", connector("stomp://"), uriKey, "malformed URI", "scheme://host:port", ""},
		{"malformed uri, bad escape", connector("stomp://h:1?maxHeaders=%zz"), uriKey, "malformed query option", "option=value", ""},
		{"auto scheme", connector("auto://0.0.0.0:61616"), uriKey, "tcp:// for OpenWire", schemeList, ""},
		{"unknown scheme", connector("amqp://0.0.0.0:5672"), uriKey, `unknown scheme "amqp"`, schemeList, ""},
		{"client auth on plain stomp", connector("stomp://h:1?transport.needClientAuth=true"), uriKey, "TLS connectors only", "stomp+ssl://", ""},
		{"client auth on ws", connector("ws://h:1?wantClientAuth=true"), uriKey, "TLS connectors only", "wss://", ""},
		{"client auth not a boolean", connector("stomp+ssl://h:1?needClientAuth=yes"), uriKey, "option needClientAuth: not a boolean", "true, false", ""},
		{"missing port", connector("stomp://0.0.0.0"), uriKey, "missing port", "0 to 65535", "stomp://0.0.0.0"},
		{"empty port", connector("stomp://0.0.0.0:"), uriKey, "missing port", "0 to 65535", ""},
		{"bad port", connector("stomp://0.0.0.0:stomp"), uriKey, "bad port", "0 to 65535", ""},
		{"port out of range", connector("stomp://0.0.0.0:65536"), uriKey, "bad port", "0 to 65535", ""},
		{"user info", connector("stomp://admin:" + secret + "@0.0.0.0:61613"), uriKey, "takes no user or password", "", "stomp://admin:xxxxx@0.0.0.0:61613"},
		{"user info, bad port", connector("stomp://admin:" + secret + "@0.0.0.0:x"), uriKey, "bad port", "", "stomp://admin:xxxxx@0.0.0.0:x"},
		{"path", connector("stomp://h:1/queue"), uriKey, "unexpected path", "", ""},
		{"unknown option", connector("stomp://h:1?maxFrameSiz=1"), uriKey, `unknown option "maxFrameSiz"`, optionList, "maxFrameSiz=1"},
		{"wrongly prefixed option", connector("stomp://h:1?transport.maxFrameSize=1"), uriKey, "did you mean wireFormat.maxFrameSize?", optionList, ""},
		{"trace option", connector("stomp://h:1?trace=true"), uriKey, `unknown option "trace"`, optionList, ""},
		{"password option", connector("stomp://h:1?password=" + secret), uriKey, `unknown option "password"`, optionList, "password=xxxxx"},
		{"option twice", connector("stomp://h:1?maxFrameSize=2048&wireFormat.maxFrameSize=4096"), uriKey, "given twice", "", ""},
		{"maxConnections not a number", connector("stomp://h:1?maximumConnections=lots"), uriKey, "option maximumConnections: not an integer", "from 1", "maximumConnections=lots"},
		{"maxConnections zero", connector("stomp://h:1?maxConnections=0"), uriKey, "out of range", "from 1", ""},
		{"maxFrameSize too small", connector("stomp://h:1?maxFrameSize=100"), uriKey, "option maxFrameSize: 100 bytes is out of range", "at least 1024", ""},
		{"maxFrameSize bad size", connector("stomp://h:1?wireFormat.maxFrameSize=10zb"), uriKey, "not a size", "kb, mb", ""},
		{"maxFrameSize fraction", connector("stomp://h:1?maxFrameSize=1.5mb"), uriKey, "not a size", "kb, mb", ""},
		{"maxDataLength zero", connector("stomp://h:1?wireFormat.maxDataLength=0"), uriKey, "out of range", "at least 1", ""},
		{"maxHeaders zero", connector("stomp://h:1?maxHeaders=0"), uriKey, "out of range", "from 1", ""},
		{"maxHeaderLength bad", connector("stomp://h:1?wireFormat.maxHeaderLength=long"), uriKey, "not a size", "", ""},
		{"maxHeaderLength too big", connector("stomp://h:1?maxHeaderLength=4gb"), uriKey, "out of range", "", ""},
		{"connectTimeout bad", connector("stomp://h:1?connectTimeout=soon"), uriKey, "not a duration", "milliseconds", ""},
		{"connectTimeout negative", connector("stomp://h:1?transport.connectAttemptTimeout=-1"), uriKey, "must not be negative", "milliseconds", ""},
		{"grace below 1", connector("stomp://h:1?transport.hbGracePeriodMultiplier=0.5"), uriKey, "at least 1.0", ">= 1.0", ""},
		{"grace NaN", connector("stomp://h:1?hbGracePeriodMultiplier=NaN"), uriKey, "not a number", ">= 1.0", ""},
		{"heart-beat not a pair", connector("stomp://h:1?transport.defaultHeartBeat=5000"), uriKey, "not a heart-beat pair", "x,y", ""},
		{"heart-beat negative", connector("stomp://h:1?transport.defaultHeartBeat=-1,0"), uriKey, "must not be negative", "x,y", ""},
		{"heart-beat bad", connector("stomp://h:1?transport.defaultHeartBeat=a,b"), uriKey, "not a heart-beat pair", "x,y", ""},

		// placeholders
		{"unset placeholder", "broker:\n  brokerName: ${CONFIG_TEST_UNSET}\n", "broker.brokerName", "CONFIG_TEST_UNSET is not set", "${NAME:-default}", "${CONFIG_TEST_UNSET}"},
		{"unset placeholder in a list", connector("stomp://${CONFIG_TEST_UNSET}:1"), "transportConnectors[0].uri", "CONFIG_TEST_UNSET is not set and the placeholder has no default (line 3)", "", ""},
		{"unset placeholder in a key", "${CONFIG_TEST_UNSET}: {}\n", "", "CONFIG_TEST_UNSET is not set and the placeholder has no default (line 1)", "", ""},
		{"malformed placeholder", "broker: {brokerName: '${A-B}'}\n", "broker.brokerName", "malformed placeholder", "${NAME:-default}", "${A-B}"},
		{"unterminated placeholder", "broker: {brokerName: 'x${A'}\n", "broker.brokerName", "unterminated placeholder", "", "${A"},
		{"empty placeholder", "broker: {brokerName: '${}'}\n", "broker.brokerName", "malformed placeholder", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), []string{"UNRELATED=" + secret})
			require.Error(t, err)
			ce := assertConfigError(t, err, tt.key, tt.allowed)
			assert.Contains(t, ce.Problem, tt.problem)
			if tt.value != "" {
				assert.Equal(t, tt.value, ce.Value)
			}
			assert.True(t, strings.HasPrefix(err.Error(), "config: "), err.Error())
			assert.NotContains(t, err.Error(), secret)
			assert.NotContains(t, ce.Value, secret)
		})
	}
}
