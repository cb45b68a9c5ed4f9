package openwire

// Consumer-side commands: registration, flow control, dispatch and acknowledgement.

// ConsumerInfo registers a consumer (or a queue browser, or a durable subscriber when
// SubscriptionName is set).
type ConsumerInfo struct {
	BaseCommand
	ConsumerID                 *ConsumerID
	Browser                    bool
	Destination                *Destination
	PrefetchSize               int32
	MaximumPendingMessageLimit int32
	DispatchAsync              bool
	Selector                   string
	ClientID                   string // since version 10
	SubscriptionName           string
	NoLocal                    bool
	Exclusive                  bool
	Retroactive                bool
	Priority                   byte
	BrokerPath                 []BrokerID
	// AdditionalPredicate is a broker-side filter that network bridges send; a client
	// never does. Only nil is supported (anything else decodes as ErrUnknownType).
	AdditionalPredicate  DataStructure
	NetworkSubscription  bool
	OptimizedAcknowledge bool
	NoRangeAcks          bool
	NetworkConsumerPath  []ConsumerID
}

// ConsumerControl changes a consumer's prefetch, or closes, starts, stops or flushes it.
type ConsumerControl struct {
	BaseCommand
	Destination *Destination
	Close       bool
	ConsumerID  *ConsumerID
	Prefetch    int32
	Flush       bool
	Start       bool
	Stop        bool
}

// ProducerAck gives a producer back Size bytes of its window.
type ProducerAck struct {
	BaseCommand
	ProducerID *ProducerID
	Size       int32
}

// MessagePull asks for one message for a consumer with prefetch 0.
type MessagePull struct {
	BaseCommand
	ConsumerID    *ConsumerID
	Destination   *Destination
	Timeout       int64
	CorrelationID string
	MessageID     *MessageID
}

// MessageDispatch delivers a message to a consumer; a nil Message ends a browse or answers
// a MessagePull that found nothing.
type MessageDispatch struct {
	BaseCommand
	ConsumerID        *ConsumerID
	Destination       *Destination
	Message           *Message
	RedeliveryCounter int32
}

// Acknowledgement types (MessageAck.AckType).
const (
	AckDelivered   byte = 0
	AckPoison      byte = 1
	AckStandard    byte = 2
	AckRedelivered byte = 3
	AckIndividual  byte = 4
	AckUnmatched   byte = 5
	AckExpired     byte = 6
)

// MessageAck acknowledges the messages FirstMessageID..LastMessageID of a consumer.
type MessageAck struct {
	BaseCommand
	Destination    *Destination
	TransactionID  TransactionID
	ConsumerID     *ConsumerID
	AckType        byte
	FirstMessageID *MessageID
	LastMessageID  *MessageID
	MessageCount   int32
	PoisonCause    *Throwable // since version 7
}

func (*ConsumerInfo) DataType() byte    { return TypeConsumerInfo }
func (*ConsumerControl) DataType() byte { return TypeConsumerControl }
func (*ProducerAck) DataType() byte     { return TypeProducerAck }
func (*MessagePull) DataType() byte     { return TypeMessagePull }
func (*MessageDispatch) DataType() byte { return TypeMessageDispatch }
func (*MessageAck) DataType() byte      { return TypeMessageAck }

func (c *ConsumerInfo) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.cached(opt(c.ConsumerID))
	e.bool(c.Browser)
	e.cached(opt(c.Destination))
	e.i32(c.PrefetchSize)
	e.i32(c.MaximumPendingMessageLimit)
	e.bool(c.DispatchAsync)
	e.str(c.Selector)
	if e.version >= 10 {
		e.str(c.ClientID)
	}
	e.str(c.SubscriptionName)
	e.bool(c.NoLocal)
	e.bool(c.Exclusive)
	e.bool(c.Retroactive)
	e.u8(c.Priority)
	encodeArray[BrokerID](e, c.BrokerPath)
	if c.AdditionalPredicate != nil {
		e.fail("AdditionalPredicate is not supported")
	}
	e.nested(nil)
	e.bool(c.NetworkSubscription)
	e.bool(c.OptimizedAcknowledge)
	e.bool(c.NoRangeAcks)
	encodeArray[ConsumerID](e, c.NetworkConsumerPath)
}

func (c *ConsumerInfo) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.ConsumerID = as[*ConsumerID](d, d.cached())
	c.Browser = d.bool()
	c.Destination = as[*Destination](d, d.cached())
	c.PrefetchSize = d.i32()
	c.MaximumPendingMessageLimit = d.i32()
	c.DispatchAsync = d.bool()
	c.Selector = d.str()
	if d.version >= 10 {
		c.ClientID = d.str()
	}
	c.SubscriptionName = d.str()
	c.NoLocal = d.bool()
	c.Exclusive = d.bool()
	c.Retroactive = d.bool()
	c.Priority = d.u8()
	c.BrokerPath = decodeArray[BrokerID](d)
	c.AdditionalPredicate = d.nested()
	c.NetworkSubscription = d.bool()
	c.OptimizedAcknowledge = d.bool()
	c.NoRangeAcks = d.bool()
	c.NetworkConsumerPath = decodeArray[ConsumerID](d)
}

func (c *ConsumerControl) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.nested(opt(c.Destination))
	e.bool(c.Close)
	e.nested(opt(c.ConsumerID))
	e.i32(c.Prefetch)
	e.bool(c.Flush)
	e.bool(c.Start)
	e.bool(c.Stop)
}

func (c *ConsumerControl) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.Destination = as[*Destination](d, d.nested())
	c.Close = d.bool()
	c.ConsumerID = as[*ConsumerID](d, d.nested())
	c.Prefetch = d.i32()
	c.Flush = d.bool()
	c.Start = d.bool()
	c.Stop = d.bool()
}

func (c *ProducerAck) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.nested(opt(c.ProducerID))
	e.i32(c.Size)
}

func (c *ProducerAck) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.ProducerID = as[*ProducerID](d, d.nested())
	c.Size = d.i32()
}

func (c *MessagePull) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.cached(opt(c.ConsumerID))
	e.cached(opt(c.Destination))
	e.long(c.Timeout)
	e.str(c.CorrelationID)
	e.nested(opt(c.MessageID))
}

func (c *MessagePull) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.ConsumerID = as[*ConsumerID](d, d.cached())
	c.Destination = as[*Destination](d, d.cached())
	c.Timeout = d.long()
	c.CorrelationID = d.str()
	c.MessageID = as[*MessageID](d, d.nested())
}

func (c *MessageDispatch) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.cached(opt(c.ConsumerID))
	e.cached(opt(c.Destination))
	e.nested(opt(c.Message))
	e.i32(c.RedeliveryCounter)
}

func (c *MessageDispatch) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.ConsumerID = as[*ConsumerID](d, d.cached())
	c.Destination = as[*Destination](d, d.cached())
	c.Message = as[*Message](d, d.nested())
	c.RedeliveryCounter = d.i32()
}

func (c *MessageAck) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.cached(opt(c.Destination))
	e.cached(c.TransactionID)
	e.cached(opt(c.ConsumerID))
	e.u8(c.AckType)
	e.nested(opt(c.FirstMessageID))
	e.nested(opt(c.LastMessageID))
	e.i32(c.MessageCount)
	if e.version >= 7 {
		e.throwable(c.PoisonCause)
	}
}

func (c *MessageAck) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.Destination = as[*Destination](d, d.cached())
	c.TransactionID = as[TransactionID](d, d.cached())
	c.ConsumerID = as[*ConsumerID](d, d.cached())
	c.AckType = d.u8()
	c.FirstMessageID = as[*MessageID](d, d.nested())
	c.LastMessageID = as[*MessageID](d, d.nested())
	c.MessageCount = d.i32()
	if d.version >= 7 {
		c.PoisonCause = d.throwable()
	}
}
