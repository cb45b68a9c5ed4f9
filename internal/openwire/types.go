package openwire

// Data type bytes (ActiveMQ's CommandTypes) of the commands and structures this package
// decodes and encodes.
const (
	TypeWireFormatInfo         byte = 1
	TypeBrokerInfo             byte = 2
	TypeConnectionInfo         byte = 3
	TypeSessionInfo            byte = 4
	TypeConsumerInfo           byte = 5
	TypeProducerInfo           byte = 6
	TypeTransactionInfo        byte = 7
	TypeDestinationInfo        byte = 8
	TypeRemoveSubscriptionInfo byte = 9
	TypeKeepAliveInfo          byte = 10
	TypeShutdownInfo           byte = 11
	TypeRemoveInfo             byte = 12
	TypeControlCommand         byte = 14
	TypeFlushCommand           byte = 15
	TypeConnectionError        byte = 16
	TypeConsumerControl        byte = 17
	TypeConnectionControl      byte = 18
	TypeProducerAck            byte = 19
	TypeMessagePull            byte = 20
	TypeMessageDispatch        byte = 21
	TypeMessageAck             byte = 22
	TypeMessage                byte = 23 // ActiveMQMessage: no body
	TypeBytesMessage           byte = 24
	TypeMapMessage             byte = 25
	TypeObjectMessage          byte = 26
	TypeStreamMessage          byte = 27
	TypeTextMessage            byte = 28
	TypeBlobMessage            byte = 29 // refused: ErrUnknownType
	TypeResponse               byte = 30
	TypeExceptionResponse      byte = 31
	TypeDataResponse           byte = 32
	TypeIntegerResponse        byte = 34
	TypeQueue                  byte = 100
	TypeTopic                  byte = 101
	TypeTempQueue              byte = 102
	TypeTempTopic              byte = 103
	TypeMessageID              byte = 110
	TypeLocalTransactionID     byte = 111
	TypeXATransactionID        byte = 112
	TypeConnectionID           byte = 120
	TypeSessionID              byte = 121
	TypeConsumerID             byte = 122
	TypeProducerID             byte = 123
	TypeBrokerID               byte = 124
)

// DataStructure is anything that travels on the wire with a data type byte: commands, ids,
// destinations.
type DataStructure interface {
	DataType() byte
}

// Command is a top-level frame. Every command but WireFormatInfo embeds a BaseCommand;
// find it with the Request interface.
type Command interface {
	DataStructure
	marshaler
}

// Request is implemented by the commands that carry a command id and the
// response-required flag (all but WireFormatInfo).
type Request interface {
	Command
	Base() *BaseCommand
}

// BaseCommand is the header of every command but WireFormatInfo.
type BaseCommand struct {
	CommandID        int32
	ResponseRequired bool
}

// Base returns the command's header.
func (b *BaseCommand) Base() *BaseCommand { return b }

func (b *BaseCommand) marshal(e *encoder) {
	e.i32(b.CommandID)
	e.bool(b.ResponseRequired)
}

func (b *BaseCommand) unmarshal(d *decoder) {
	b.CommandID = d.i32()
	b.ResponseRequired = d.bool()
}

// marshaler is implemented by every type this package puts on the wire.
type marshaler interface {
	DataStructure
	marshal(e *encoder)
	unmarshal(d *decoder)
}

// Throwable is a Java exception as ExceptionResponse, ConnectionError and a poison
// MessageAck carry it. StackTrace and Cause travel only when StackTraceEnabled was
// negotiated.
type Throwable struct {
	Class      string // the Java class name, e.g. javax.jms.JMSSecurityException
	Message    string
	StackTrace []StackTraceElement
	Cause      *Throwable
}

// StackTraceElement is one frame of a Java stack trace.
type StackTraceElement struct {
	Class  string
	Method string
	File   string
	Line   int32
}

func (t *Throwable) Error() string {
	if t.Message == "" {
		return t.Class
	}
	return t.Class + ": " + t.Message
}

// newDataStructure returns an empty value of the type t, or nil when t is not supported.
func newDataStructure(t byte) marshaler {
	switch t {
	case TypeWireFormatInfo:
		return &WireFormatInfo{}
	case TypeBrokerInfo:
		return &BrokerInfo{}
	case TypeConnectionInfo:
		return &ConnectionInfo{}
	case TypeSessionInfo:
		return &SessionInfo{}
	case TypeConsumerInfo:
		return &ConsumerInfo{}
	case TypeProducerInfo:
		return &ProducerInfo{}
	case TypeTransactionInfo:
		return &TransactionInfo{}
	case TypeDestinationInfo:
		return &DestinationInfo{}
	case TypeRemoveSubscriptionInfo:
		return &RemoveSubscriptionInfo{}
	case TypeKeepAliveInfo:
		return &KeepAliveInfo{}
	case TypeShutdownInfo:
		return &ShutdownInfo{}
	case TypeRemoveInfo:
		return &RemoveInfo{}
	case TypeControlCommand:
		return &ControlCommand{}
	case TypeFlushCommand:
		return &FlushCommand{}
	case TypeConnectionError:
		return &ConnectionError{}
	case TypeConsumerControl:
		return &ConsumerControl{}
	case TypeConnectionControl:
		return &ConnectionControl{}
	case TypeProducerAck:
		return &ProducerAck{}
	case TypeMessagePull:
		return &MessagePull{}
	case TypeMessageDispatch:
		return &MessageDispatch{}
	case TypeMessageAck:
		return &MessageAck{}
	case TypeMessage, TypeBytesMessage, TypeMapMessage, TypeObjectMessage, TypeStreamMessage, TypeTextMessage:
		return &Message{Type: t}
	case TypeResponse:
		return &Response{}
	case TypeExceptionResponse:
		return &ExceptionResponse{}
	case TypeDataResponse:
		return &DataResponse{}
	case TypeIntegerResponse:
		return &IntegerResponse{}
	case TypeQueue, TypeTopic, TypeTempQueue, TypeTempTopic:
		return &Destination{Type: t}
	case TypeMessageID:
		return &MessageID{}
	case TypeLocalTransactionID:
		return &LocalTransactionID{}
	case TypeXATransactionID:
		return &XATransactionID{}
	case TypeConnectionID:
		return &ConnectionID{}
	case TypeSessionID:
		return &SessionID{}
	case TypeConsumerID:
		return &ConsumerID{}
	case TypeProducerID:
		return &ProducerID{}
	case TypeBrokerID:
		return &BrokerID{}
	}
	return nil
}
