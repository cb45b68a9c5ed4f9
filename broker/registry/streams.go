package registry

import (
	"fmt"
	"log/slog"

	"github.com/activemq-go/broker/destinations"
)

// Stream topics among the destinations (see destinations/stream.go): the broker asks
// the registry which of a SEND's destinations are streams.

// StreamTopic returns the topic a resolved destination names if it is a stream, else nil.
func (r *Destinations) StreamTopic(d destinations.Name) *destinations.TopicDest {
	if d.Kind != destinations.Topic || d.IsWildcard() {
		return nil
	}
	if t := r.Topic(d.Name); t.IsStream() {
		return t
	}
	return nil
}

// streamDest returns the stream a resolved destination names (opening it), or nil.
func (r *Destinations) streamDest(d destinations.Name) (*destinations.Stream, error) {
	if t := r.StreamTopic(d); t != nil {
		return t.Stream()
	}
	return nil, nil
}

// OpenKnownStreams opens, at start, every stream the log holds whose topic is still a
// stream by policy, so its retention is the configured one and it shows in Stats.
func (r *Destinations) OpenKnownStreams() error {
	for _, ln := range r.env.Streams.Log().Topics() {
		name, ok := destinations.BrokerTopicName(ln)
		if !ok {
			r.log.Warn("stream log topic not served: its name is not one the broker writes", slog.String("logTopic", ln))
			continue
		}
		t := r.Topic(name)
		if !t.IsStream() {
			r.log.Info("stream log topic not served: its destinationPolicy is no longer type: stream",
				slog.String("dest", t.ClientName()), slog.String("logTopic", ln))
			continue
		}
		if _, err := t.Stream(); err != nil {
			return fmt.Errorf("broker: open stream %s: %w", t.ClientName(), err)
		}
	}
	return nil
}

// SplitStreams separates the streams among resolved destinations from the others.
func (r *Destinations) SplitStreams(dests []destinations.Name) ([]*destinations.Stream, []destinations.Name, error) {
	var streams []*destinations.Stream
	var rest []destinations.Name // once a stream is found: the others so far
	for i, d := range dests {
		st, err := r.streamDest(d)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case st != nil:
			if streams == nil && i > 0 {
				rest = append(make([]destinations.Name, 0, len(dests)-1), dests[:i]...)
			}
			streams = append(streams, st)
		case streams != nil:
			rest = append(rest, d)
		}
	}
	if len(streams) == 0 {
		return nil, dests, nil
	}
	return streams, rest, nil
}
