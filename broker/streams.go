package broker

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/activemq-go/broker/destinations"
)

// Stream destinations (see destinations/stream.go): a topic whose policy says Stream
// keeps every message sent to it in Options.Streams, a streamlog.Log, for the policy's
// retention. The broker finds the streams among a SEND's destinations, refuses them in
// transactions and with scheduled delivery, and settles a transaction's stream
// acknowledgements after its store batch. A topic's streamMu (destinations) is taken
// before the destination registry's lock.

// streamTopic returns the topic a resolved destination names if it is a stream, else nil.
func (b *Broker) streamTopic(d destinations.Name) *destinations.TopicDest {
	if d.Kind != destinations.Topic || d.IsWildcard() {
		return nil
	}
	if t := b.dests.Topic(d.Name); t.IsStream() {
		return t
	}
	return nil
}

// streamDest returns the stream a resolved destination names (opening it), or nil.
func (b *Broker) streamDest(d destinations.Name) (*destinations.Stream, error) {
	if t := b.streamTopic(d); t != nil {
		return t.Stream()
	}
	return nil, nil
}

// openKnownStreams opens, at start, every stream the log holds whose topic is still a
// stream by policy, so its retention is the configured one and it shows in Stats.
func (b *Broker) openKnownStreams() error {
	for _, ln := range b.streams.Log().Topics() {
		name, ok := destinations.BrokerTopicName(ln)
		if !ok {
			b.log.Warn("stream log topic not served: its name is not one the broker writes", slog.String("logTopic", ln))
			continue
		}
		t := b.dests.Topic(name)
		if !t.IsStream() {
			b.log.Info("stream log topic not served: its destinationPolicy is no longer type: stream",
				slog.String("dest", t.ClientName()), slog.String("logTopic", ln))
			continue
		}
		if _, err := t.Stream(); err != nil {
			return fmt.Errorf("broker: open stream %s: %w", t.ClientName(), err)
		}
	}
	return nil
}

// splitStreams separates the streams among resolved destinations from the others.
func (b *Broker) splitStreams(dests []destinations.Name) ([]*destinations.Stream, []destinations.Name, error) {
	var streams []*destinations.Stream
	var rest []destinations.Name // once a stream is found: the others so far
	for i, d := range dests {
		st, err := b.streamDest(d)
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

// closeStreams stops every stream (subscriptions, then appenders, which write what is
// queued), then the committer, which writes the groups' last positions. The log itself
// is the caller's to close.
func (b *Broker) closeStreams() {
	if b.streams == nil {
		return
	}
	for _, t := range b.dests.Streams() {
		t.CloseStream()
	}
	b.streams.Close()
}

// streamsAfterCommit returns the done of a transaction's COMMIT that, once the store
// part succeeded, settles the transaction's stream acknowledgements, and only then
// calls done. Without any it returns done.
func (b *Broker) streamsAfterCommit(t *txState, done func(error)) func(error) {
	var acks []txSettle
	for _, st := range t.settles {
		if st.sub.stream != nil {
			acks = append(acks, st)
		}
	}
	if len(acks) == 0 {
		return done
	}
	return func(err error) {
		if err != nil {
			done(err)
			return
		}
		j := destinations.NewJoin(len(acks), done)
		for _, a := range acks {
			a.sub.stream.Ack(a.ds, j.Part)
		}
	}
}

// subscribeStream makes s a reader of the stream behind t: of every partition, or of
// those its consumer group assigns it (destinations.Stream.Subscribe).
func (c *Conn) subscribeStream(ctx context.Context, r SubscribeRequest, s *Subscription, t *destinations.TopicDest) error {
	st, err := t.Stream()
	if err != nil {
		return err
	}
	group := r.ConsumerGroup
	if group == "" && r.DurableName != "" {
		if c.ClientID == "" {
			return errorf(ErrInvalidDestination, "a durable subscription (here: the consumer group of stream %s) needs a client-id on CONNECT", t.ClientName())
		}
		group = r.DurableName
	}
	ss, err := st.Subscribe(ctx, &s.Consumer, r.StreamOffset, group, c.ID+"/"+s.ID)
	if err != nil {
		return err
	}
	s.stream = ss
	return nil
}
