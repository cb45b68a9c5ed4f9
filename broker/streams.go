package broker

import (
	"context"

	"github.com/activemq-go/broker/destinations"
)

// Stream destinations (see destinations/stream.go): a topic whose policy says Stream
// keeps every message sent to it in Options.Streams, a streamlog.Log, for the policy's
// retention. The broker finds the streams among a SEND's destinations, refuses them in
// transactions and with scheduled delivery, and settles a transaction's stream
// acknowledgements after its store batch. A topic's streamMu (destinations) is taken
// before the destination registry's lock.

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
