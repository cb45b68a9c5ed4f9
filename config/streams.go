package config

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Streams.Engine values: what keeps the stream destinations.
const (
	StreamsEmbedded = "embedded" // kafkalog, in Streams.Directory (the default)
	StreamsKafka    = "kafka"    // an Apache Kafka cluster (Streams.Kafka)
)

// Streams.Kafka.SASL.Mechanism values.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// KafkaStreams is streams.kafka: the cluster behind the streams when Streams.Engine
// is StreamsKafka.
type KafkaStreams struct {
	// SeedBrokers are host:port addresses of some of the cluster's brokers; at least
	// one is required with engine: kafka.
	SeedBrokers Names
	// TopicPrefix is put before every stream's Kafka topic name (default none).
	TopicPrefix string
	// Partitions, when more than 0, is the partition count of every stream topic the
	// broker creates, instead of its destinationPolicy's partitions (default 0).
	Partitions int
	// ReplicationFactor of the topics the broker creates; -1 (default) is the
	// cluster's default.replication.factor.
	ReplicationFactor int
	// ClientID names the broker's Kafka connections (default "activemq-go").
	ClientID string
	// SessionTimeout is the consumer group session timeout: how long Kafka waits for
	// a broker node that stopped heart-beating before its group members' partitions
	// go to the others (default 10s; Kafka allows 6s to 30m by default).
	SessionTimeout time.Duration
	TLS            KafkaTLS
	SASL           KafkaSASL
}

// KafkaTLS is streams.kafka.tls.
type KafkaTLS struct {
	// Enabled turns TLS on (default false).
	Enabled bool
	// CAFile is a PEM bundle of the CAs that verify the brokers; "" is the system's.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and its key, both or neither.
	CertFile, KeyFile string
	// InsecureSkipVerify accepts any broker certificate (tests only).
	InsecureSkipVerify bool
}

// KafkaSASL is streams.kafka.sasl.
type KafkaSASL struct {
	// Mechanism is "" (none), SASLPlain, SASLScramSHA256 or SASLScramSHA512.
	Mechanism string
	// User and Password authenticate; User is required with a mechanism. The
	// password never appears in errors or logs.
	User, Password string
}

// streamsSection is streams as written.
type streamsSection struct {
	Directory          string        `mapstructure:"directory"`
	Flush              string        `mapstructure:"flush"`
	FlushInterval      time.Duration `mapstructure:"flushInterval"`
	SegmentBytes       byteSize      `mapstructure:"segmentBytes"`
	SegmentMs          time.Duration `mapstructure:"segmentMs"`
	IndexIntervalBytes byteSize      `mapstructure:"indexIntervalBytes"`
	Engine             string        `mapstructure:"engine"`
	Kafka              kafkaSection  `mapstructure:"kafka"`
}

// kafkaSection is streams.kafka as written.
type kafkaSection struct {
	SeedBrokers       nameList      `mapstructure:"seedBrokers"`
	TopicPrefix       string        `mapstructure:"topicPrefix"`
	Partitions        int64         `mapstructure:"partitions"`
	ReplicationFactor int64         `mapstructure:"replicationFactor"`
	ClientID          string        `mapstructure:"clientId"`
	SessionTimeout    time.Duration `mapstructure:"sessionTimeout"`
	TLS               struct {
		Enabled            bool   `mapstructure:"enabled"`
		CAFile             string `mapstructure:"caFile"`
		CertFile           string `mapstructure:"certFile"`
		KeyFile            string `mapstructure:"keyFile"`
		InsecureSkipVerify bool   `mapstructure:"insecureSkipVerify"`
	} `mapstructure:"tls"`
	SASL struct {
		Mechanism string `mapstructure:"mechanism"`
		User      string `mapstructure:"user"`
		Password  string `mapstructure:"password"`
	} `mapstructure:"sasl"`
}

// buildStreams validates the streams section (defaults are viper's) and
// resolves its directory against the data directory.
func (c *checker) buildStreams(s streamsSection, dataDirectory string) (Streams, *Error) {
	const path = "streams"
	key := func(k string) string { return joinKey(path, k) }
	flush, err := c.oneOf(key("flush"), s.Flush, FlushBatch, FlushInterval, FlushOS)
	if err != nil {
		return Streams{}, err
	}
	if err := c.positive(key("flushInterval"), s.FlushInterval); err != nil {
		return Streams{}, err
	}
	if err := c.sizeAtLeast(key("segmentBytes"), int64(s.SegmentBytes), 1); err != nil {
		return Streams{}, err
	}
	if err := c.positive(key("segmentMs"), s.SegmentMs); err != nil {
		return Streams{}, err
	}
	if err := c.sizeAtLeast(key("indexIntervalBytes"), int64(s.IndexIntervalBytes), 1); err != nil {
		return Streams{}, err
	}
	engine, err := c.oneOf(key("engine"), s.Engine, StreamsEmbedded, StreamsKafka)
	if err != nil {
		return Streams{}, err
	}
	kafka, err := c.buildKafkaStreams(s.Kafka, engine == StreamsKafka)
	if err != nil {
		return Streams{}, err
	}
	dir := s.Directory
	if strings.TrimSpace(dir) == "" {
		dir = filepath.Join(dataDirectory, "streams")
	}
	return Streams{
		Directory:          dir,
		Flush:              flush,
		FlushInterval:      s.FlushInterval,
		SegmentBytes:       int64(s.SegmentBytes),
		SegmentMs:          s.SegmentMs,
		IndexIntervalBytes: int64(s.IndexIntervalBytes),
		Engine:             engine,
		Kafka:              kafka,
	}, nil
}

// buildKafkaStreams validates streams.kafka; seed brokers are required only when the
// engine is kafka.
func (c *checker) buildKafkaStreams(s kafkaSection, used bool) (KafkaStreams, *Error) {
	const path = "streams.kafka"
	key := func(k string) string { return joinKey(path, k) }
	if used && len(s.SeedBrokers) == 0 {
		return KafkaStreams{}, c.invalid(key("seedBrokers"), "is required with streams.engine: kafka",
			"a list of host:port addresses of Kafka brokers ([kafka1:9092, kafka2:9092])")
	}
	for i, b := range s.SeedBrokers {
		host, port, err := net.SplitHostPort(b)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return KafkaStreams{}, c.invalid(fmt.Sprintf("%s[%d]", key("seedBrokers"), i), fmt.Sprintf("%q is not host:port", b),
				"host:port, such as kafka1:9092 or [::1]:9092")
		}
	}
	if err := c.intRange(key("partitions"), s.Partitions, 0, 1024, "0: each stream's destinationPolicy partitions"); err != nil {
		return KafkaStreams{}, err
	}
	if s.ReplicationFactor != -1 {
		if err := c.intRange(key("replicationFactor"), s.ReplicationFactor, 1, 32767, "or -1: the cluster's default"); err != nil {
			return KafkaStreams{}, err
		}
	}
	if err := c.positive(key("sessionTimeout"), s.SessionTimeout); err != nil {
		return KafkaStreams{}, err
	}
	if strings.TrimSpace(s.ClientID) == "" {
		return KafkaStreams{}, c.invalid(key("clientId"), "must not be empty", "a client id such as activemq-go")
	}
	if (s.TLS.CertFile == "") != (s.TLS.KeyFile == "") {
		return KafkaStreams{}, c.invalid(key("tls.certFile"), "certFile and keyFile go together",
			"both a PEM client certificate and its key, or neither")
	}
	if !s.TLS.Enabled && (s.TLS.CAFile != "" || s.TLS.CertFile != "" || s.TLS.InsecureSkipVerify) {
		return KafkaStreams{}, c.invalid(key("tls.enabled"), "is false while other tls keys are set", "true, to use them")
	}
	mech, err := c.oneOf(key("sasl.mechanism"), s.SASL.Mechanism, "", SASLPlain, SASLScramSHA256, SASLScramSHA512)
	if err != nil {
		return KafkaStreams{}, err
	}
	if mech != "" && s.SASL.User == "" {
		return KafkaStreams{}, c.invalid(key("sasl.user"), "is required with a sasl mechanism", "the Kafka user name")
	}
	if mech == "" && (s.SASL.User != "" || s.SASL.Password != "") {
		return KafkaStreams{}, c.invalid(key("sasl.mechanism"), "is not set while a user or password is",
			SASLPlain+", "+SASLScramSHA256+" or "+SASLScramSHA512)
	}
	var seeds Names
	if len(s.SeedBrokers) > 0 {
		seeds = s.SeedBrokers
	}
	return KafkaStreams{
		SeedBrokers:       seeds,
		TopicPrefix:       s.TopicPrefix,
		Partitions:        int(s.Partitions),
		ReplicationFactor: int(s.ReplicationFactor),
		ClientID:          s.ClientID,
		SessionTimeout:    s.SessionTimeout,
		TLS: KafkaTLS{Enabled: s.TLS.Enabled, CAFile: s.TLS.CAFile, CertFile: s.TLS.CertFile, KeyFile: s.TLS.KeyFile,
			InsecureSkipVerify: s.TLS.InsecureSkipVerify},
		SASL: KafkaSASL{Mechanism: mech, User: s.SASL.User, Password: s.SASL.Password},
	}, nil
}
