package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/config"
	"github.com/activemq-go/broker/destinations/policy"
)

func TestKafkaSASL(t *testing.T) {
	assert.Nil(t, kafkaSASL(config.KafkaSASL{}))
	for _, mech := range []string{config.SASLPlain, config.SASLScramSHA256, config.SASLScramSHA512} {
		m := kafkaSASL(config.KafkaSASL{Mechanism: mech, User: "u", Password: "p"})
		require.NotNil(t, m, mech)
		assert.Equal(t, mech, m.Name())
	}
}

func TestKafkaTLS(t *testing.T) {
	c, err := kafkaTLS(config.KafkaTLS{Enabled: true, InsecureSkipVerify: true})
	require.NoError(t, err)
	assert.True(t, c.InsecureSkipVerify)
	assert.Nil(t, c.RootCAs, "the system's CAs")

	dir := t.TempDir()
	_, err = kafkaTLS(config.KafkaTLS{Enabled: true, CAFile: filepath.Join(dir, "missing.pem")})
	require.ErrorContains(t, err, "caFile")
	junk := filepath.Join(dir, "junk.pem")
	require.NoError(t, os.WriteFile(junk, []byte("not a certificate"), 0o600))
	_, err = kafkaTLS(config.KafkaTLS{Enabled: true, CAFile: junk})
	require.ErrorContains(t, err, "no PEM certificate")
	_, err = kafkaTLS(config.KafkaTLS{Enabled: true, CertFile: junk, KeyFile: junk})
	require.ErrorContains(t, err, "certFile/keyFile")
}

// With engine: kafka and no Kafka answering, the broker does not start, and says why.
func TestOpenStreamsKafkaUnreachable(t *testing.T) {
	cfg := config.Default()
	cfg.DestinationPolicy = []policy.Policy{{Topic: "s.>", Type: policy.StreamType}}
	cfg.Streams.Engine = config.StreamsKafka
	cfg.Streams.Kafka.SeedBrokers = config.Names{"127.0.0.1:1"}
	cfg.Streams.Kafka.SASL = config.KafkaSASL{Mechanism: config.SASLPlain, User: "u", Password: "hunter2"}
	_, err := openStreams(cfg, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "streams.kafka")
	require.ErrorContains(t, err, "127.0.0.1:1")
	require.NotContains(t, err.Error(), "hunter2")
}
