package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// defaultKafkaStreams is streams.kafka when the file says nothing of it.
var defaultKafkaStreams = KafkaStreams{ReplicationFactor: -1, ClientID: DefaultKafkaClientID, SessionTimeout: DefaultKafkaSessionTimeout}

func TestStreamsKafka(t *testing.T) {
	c, err := Parse([]byte(`streams:
  engine: Kafka
  kafka:
    seedBrokers: [k1:9092, "[::1]:9093"]
    topicPrefix: amq.
    partitions: 6
    replicationFactor: 3
    clientId: node-a
    sessionTimeout: 6s
    tls: {enabled: true, caFile: ca.pem, certFile: c.pem, keyFile: k.pem}
    sasl: {mechanism: scram-sha-512, user: broker, password: s3cret}
`), nil)
	require.NoError(t, err)
	assert.Equal(t, StreamsKafka, c.Streams.Engine)
	assert.Equal(t, KafkaStreams{
		SeedBrokers: Names{"k1:9092", "[::1]:9093"}, TopicPrefix: "amq.", Partitions: 6, ReplicationFactor: 3,
		ClientID: "node-a", SessionTimeout: 6 * time.Second,
		TLS:  KafkaTLS{Enabled: true, CAFile: "ca.pem", CertFile: "c.pem", KeyFile: "k.pem"},
		SASL: KafkaSASL{Mechanism: SASLScramSHA512, User: "broker", Password: "s3cret"},
	}, c.Streams.Kafka)

	// Seed brokers as one comma-separated string (an environment variable).
	c, err = Parse([]byte("streams: {engine: kafka, kafka: {seedBrokers: \"a:1,b:2\"}}\n"), nil)
	require.NoError(t, err)
	assert.Equal(t, Names{"a:1", "b:2"}, c.Streams.Kafka.SeedBrokers)
}

func TestStreamsKafkaInvalid(t *testing.T) {
	for _, tc := range []struct{ name, in, key, want string }{
		{"unknown engine", "{engine: pulsar}", "streams.engine", "embedded, kafka"},
		{"no seed brokers", "{engine: kafka}", "streams.kafka.seedBrokers", "required"},
		{"seed without port", "{engine: kafka, kafka: {seedBrokers: [k1]}}", "streams.kafka.seedBrokers[0]", "host:port"},
		{"seed bad port", "{engine: kafka, kafka: {seedBrokers: [k1:0]}}", "streams.kafka.seedBrokers[0]", "host:port"},
		{"partitions", "{kafka: {partitions: 5000}}", "streams.kafka.partitions", "0 to 1024"},
		{"replication", "{kafka: {replicationFactor: 0}}", "streams.kafka.replicationFactor", "-1"},
		{"session", "{kafka: {sessionTimeout: 0s}}", "streams.kafka.sessionTimeout", "more than 0"},
		{"cert without key", "{kafka: {tls: {enabled: true, certFile: c.pem}}}", "streams.kafka.tls.certFile", "neither"},
		{"tls keys while off", "{kafka: {tls: {caFile: ca.pem}}}", "streams.kafka.tls.enabled", "true"},
		{"mechanism", "{kafka: {sasl: {mechanism: GSSAPI, user: u}}}", "streams.kafka.sasl.mechanism", "SCRAM-SHA-256"},
		{"no user", "{kafka: {sasl: {mechanism: PLAIN}}}", "streams.kafka.sasl.user", "required"},
		{"password without mechanism", "{kafka: {sasl: {user: u, password: hunter2}}}", "streams.kafka.sasl.mechanism", "PLAIN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte("streams: "+tc.in+"\n"), nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.key)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "hunter2", "a password never shows in an error")
		})
	}
}
