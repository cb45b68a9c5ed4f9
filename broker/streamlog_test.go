package broker

import (
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/kafkalog/kafkaengine"
)

// The Kafka engine stands behind the stream path as the embedded log does (cmd hands
// it to the broker as Options.StreamLog), and partitions keys as Kafka clients do.
var (
	_ destinations.StreamLog      = (*kafkaengine.Engine)(nil)
	_ destinations.KeyPartitioner = (*kafkaengine.Engine)(nil)
)
