package destinations

import (
	"log/slog"
	"time"

	"github.com/activemq-go/broker/destinations/streamlog"
)

// Streams is the stream side of the broker: the log (whichever engine: destinations
// knows it only as a streamlog.Log), and the committer that writes the consumer groups'
// positions to it.
type Streams struct {
	log       streamlog.Log
	committer *committer
}

// NewStreams starts serving streams from log; Close stops it.
func NewStreams(log streamlog.Log, logger *slog.Logger) *Streams {
	return &Streams{log: log, committer: newCommitter(log, logger)}
}

// Log is the stream log.
func (s *Streams) Log() streamlog.Log { return s.log }

// Now is the time by the log's clock, which stamps stream messages as they are
// appended.
func (s *Streams) Now() time.Time { return s.log.Now() }

// Close writes the groups' last positions. The streams are closed before (their
// subscriptions commit as they stop); the log itself is the caller's to close.
func (s *Streams) Close() { s.committer.close() }

// BrokerTopicName is the broker topic kept in log topic ln; false for a name the broker
// never makes (logTopicName escapes topic names reversibly).
func BrokerTopicName(ln string) (string, bool) { return brokerTopicName(ln) }
