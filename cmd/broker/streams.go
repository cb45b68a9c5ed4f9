package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/activemq-go/broker/config"
	"github.com/activemq-go/broker/destinations/streamlog"
	"github.com/activemq-go/broker/kafkalog"
	"github.com/activemq-go/broker/kafkalog/kafkaengine"
)

// streamEngine is the open engine behind stream destinations: the embedded log or
// Kafka.
type streamEngine struct {
	// log is a *kafkalog.Log or a *kafkaengine.Engine.
	log interface {
		streamlog.Log
		Close() error
	}
}

// Log is the engine for broker.Options.Streams; nil (the interface, not a nil pointer
// in it) without streams.
func (s *streamEngine) Log() streamlog.Log {
	if s == nil {
		return nil
	}
	return s.log
}

// Close closes the engine (after the broker).
func (s *streamEngine) Close() error {
	if s == nil {
		return nil
	}
	return s.log.Close()
}

// openStreams opens the engine behind stream destinations (the streams section), or
// returns nil when no destinationPolicy entry has type: stream.
func openStreams(cfg *config.Config, log *slog.Logger) (*streamEngine, error) {
	if !hasStreams(cfg.DestinationPolicy) {
		return nil, nil
	}
	if cfg.Streams.Engine == config.StreamsKafka {
		e, err := openKafkaStreams(cfg.Streams.Kafka, largestMessage(cfg), log)
		if err != nil {
			return nil, err
		}
		return &streamEngine{log: e}, nil
	}
	l, err := openEmbeddedStreams(cfg, log)
	if err != nil {
		return nil, err
	}
	return &streamEngine{log: l}, nil
}

// largestMessage is the size of the largest message a connector accepts.
func largestMessage(cfg *config.Config) int {
	n := 0
	for _, c := range cfg.TransportConnectors {
		n = max(n, int(min(c.MaxFrameSize, c.MaxDataLength)))
	}
	return n
}

// openKafkaStreams connects to the Kafka cluster of streams.kafka; the topics take
// messages of maxMessage bytes (and their headers).
func openKafkaStreams(k config.KafkaStreams, maxMessage int, log *slog.Logger) (*kafkaengine.Engine, error) {
	o := kafkaengine.Options{
		MaxMessageBytes:   max(1<<20, maxMessage+64<<10),
		SeedBrokers:       k.SeedBrokers,
		TopicPrefix:       k.TopicPrefix,
		Partitions:        k.Partitions,
		ReplicationFactor: k.ReplicationFactor,
		ClientID:          k.ClientID,
		SessionTimeout:    k.SessionTimeout,
		Logger:            log,
	}
	if k.TLS.Enabled {
		c, err := kafkaTLS(k.TLS)
		if err != nil {
			return nil, fmt.Errorf("streams.kafka.tls: %w", err)
		}
		o.TLS = c
	}
	o.SASL = kafkaSASL(k.SASL)
	e, err := kafkaengine.Open(o)
	if err != nil {
		return nil, fmt.Errorf("streams.kafka: %w", err)
	}
	return e, nil
}

// kafkaTLS loads the files of streams.kafka.tls.
func kafkaTLS(t config.KafkaTLS) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("caFile: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, errors.New("caFile " + t.CAFile + " holds no PEM certificate")
		}
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("certFile/keyFile: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// kafkaSASL is the mechanism of streams.kafka.sasl, nil without one.
func kafkaSASL(s config.KafkaSASL) sasl.Mechanism {
	switch s.Mechanism {
	case config.SASLPlain:
		return plain.Auth{User: s.User, Pass: s.Password}.AsMechanism()
	case config.SASLScramSHA256:
		return scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism()
	case config.SASLScramSHA512:
		return scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism()
	}
	return nil
}

// openEmbeddedStreams opens the embedded log (streams.directory and its keys).
func openEmbeddedStreams(cfg *config.Config, log *slog.Logger) (*kafkalog.Log, error) {
	s := cfg.Streams
	flush, err := flushPolicy(s.Flush)
	if err != nil {
		return nil, err
	}
	// A batch must hold the largest message a connector accepts.
	maxBatch := max(kafkalog.DefaultMaxBatchBytes, largestMessage(cfg)+1<<20)
	l, err := kafkalog.Open(kafkalog.Options{
		Dir:                s.Directory,
		Flush:              flush,
		FlushInterval:      s.FlushInterval,
		SegmentBytes:       s.SegmentBytes,
		SegmentAge:         s.SegmentMs,
		IndexIntervalBytes: int(s.IndexIntervalBytes),
		MaxBatchBytes:      maxBatch,
		Logger:             log,
	})
	if err != nil {
		return nil, fmt.Errorf("streams (directory %s): %w", s.Directory, err)
	}
	return l, nil
}

// flushPolicy maps streams.flush onto kafkalog's policies.
func flushPolicy(s string) (kafkalog.FlushPolicy, error) {
	switch s {
	case config.FlushBatch:
		return kafkalog.FlushBatch, nil
	case config.FlushInterval:
		return kafkalog.FlushInterval, nil
	case config.FlushOS:
		return kafkalog.FlushOS, nil
	}
	return 0, fmt.Errorf("streams.flush %q: use %s, %s or %s", s, config.FlushBatch, config.FlushInterval, config.FlushOS)
}
