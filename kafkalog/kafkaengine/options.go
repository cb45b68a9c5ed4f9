package kafkaengine

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// Options configure an Engine.
type Options struct {
	// SeedBrokers are host:port addresses of some brokers of the cluster.
	SeedBrokers []string
	// TopicPrefix is put before every stream's log topic name (see the package comment).
	TopicPrefix string
	// Partitions, if positive, is the partition count of every stream topic created
	// here, instead of the stream's configured count.
	Partitions int
	// ReplicationFactor of created topics; -1 (or 0) is the cluster's default.
	ReplicationFactor int
	// ClientID names the broker's connections to Kafka; default "activemq-go".
	ClientID string
	// TLS, if not nil, encrypts the connections.
	TLS *tls.Config
	// SASL, if not nil, authenticates the connections.
	SASL sasl.Mechanism
	// MaxMessageBytes is the largest record batch the broker produces: records up to
	// about this size are accepted. Topics created (or declared again) get it as
	// max.message.bytes. Default 1 MiB, about Kafka's default.
	MaxMessageBytes int
	// SessionTimeout is the group session timeout: how long Kafka waits for a member
	// that stopped heart-beating (a broker node that died) before its partitions go to
	// the others. Default 10s; Kafka brokers accept 6s to 30min by default.
	SessionTimeout time.Duration
	// RequestTimeout bounds each admin and offset request. Default 10s.
	RequestTimeout time.Duration
	// Logger; nil logs nothing.
	Logger *slog.Logger
	// Now is the clock that stamps records; default time.Now.
	Now func() time.Time

	// extra are franz-go options added to every client (tests: a faster retry).
	extra []kgo.Opt
}

func (o *Options) setDefaults() error {
	if len(o.SeedBrokers) == 0 {
		return fmt.Errorf("%w: no seed brokers", ErrInvalidOptions)
	}
	if o.Partitions < 0 {
		return fmt.Errorf("%w: partitions %d", ErrInvalidOptions, o.Partitions)
	}
	if o.ReplicationFactor == 0 {
		o.ReplicationFactor = -1
	}
	if o.ReplicationFactor < -1 || o.ReplicationFactor > 32767 {
		return fmt.Errorf("%w: replication factor %d", ErrInvalidOptions, o.ReplicationFactor)
	}
	if o.ClientID == "" {
		o.ClientID = "activemq-go"
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 1 << 20
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 10 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// clientOpts are the options every client of the engine has.
func (o *Options) clientOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.SeedBrokers...),
		kgo.ClientID(o.ClientID),
	}
	if o.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(o.TLS.Clone()))
	}
	if o.SASL != nil {
		opts = append(opts, kgo.SASL(o.SASL))
	}
	return append(opts, o.extra...)
}
