package openwire

// Message is a JMS message of any kind; Type says which (TypeMessage, TypeBytesMessage,
// TypeMapMessage, TypeObjectMessage, TypeStreamMessage or TypeTextMessage). Content and
// MarshalledProperties are kept as they travel: decoding leaves them as slices of the frame,
// and body.go turns them into text, maps, lists and typed properties.
type Message struct {
	BaseCommand
	Type                      byte
	ProducerID                *ProducerID
	Destination               *Destination
	TransactionID             TransactionID
	OriginalDestination       *Destination
	MessageID                 *MessageID
	OriginalTransactionID     TransactionID
	GroupID                   string
	GroupSequence             int32
	CorrelationID             string
	Persistent                bool
	Expiration                int64
	Priority                  byte
	ReplyTo                   *Destination
	Timestamp                 int64
	JMSType                   string // JMSType
	Content                   []byte // the body, deflated when Compressed
	MarshalledProperties      []byte // the typed property map; see Properties
	DataStructure             DataStructure
	TargetConsumerID          *ConsumerID
	Compressed                bool
	RedeliveryCounter         int32
	BrokerPath                []BrokerID
	Arrival                   int64
	UserID                    string
	RecievedByDFBridge        bool
	Droppable                 bool
	Cluster                   []BrokerID
	BrokerInTime              int64
	BrokerOutTime             int64
	JMSXGroupFirstForConsumer bool // since version 10
}

func (m *Message) DataType() byte { return m.Type }

func (m *Message) marshal(e *encoder) {
	m.BaseCommand.marshal(e)
	e.cached(opt(m.ProducerID))
	e.cached(opt(m.Destination))
	e.cached(m.TransactionID)
	e.cached(opt(m.OriginalDestination))
	e.nested(opt(m.MessageID))
	e.cached(m.OriginalTransactionID)
	e.str(m.GroupID)
	e.i32(m.GroupSequence)
	e.str(m.CorrelationID)
	e.bool(m.Persistent)
	e.long(m.Expiration)
	e.u8(m.Priority)
	e.nested(opt(m.ReplyTo))
	e.long(m.Timestamp)
	e.str(m.JMSType)
	e.bytes(m.Content)
	e.bytes(m.MarshalledProperties)
	ds, _ := m.DataStructure.(marshaler)
	if m.DataStructure != nil && ds == nil {
		e.fail("%T cannot be marshalled", m.DataStructure)
	}
	e.nested(ds)
	e.cached(opt(m.TargetConsumerID))
	e.bool(m.Compressed)
	e.i32(m.RedeliveryCounter)
	encodeArray[BrokerID](e, m.BrokerPath)
	e.long(m.Arrival)
	e.str(m.UserID)
	e.bool(m.RecievedByDFBridge)
	e.bool(m.Droppable)
	encodeArray[BrokerID](e, m.Cluster)
	e.long(m.BrokerInTime)
	e.long(m.BrokerOutTime)
	if e.version >= 10 {
		e.bool(m.JMSXGroupFirstForConsumer)
	}
}

func (m *Message) unmarshal(d *decoder) {
	m.BaseCommand.unmarshal(d)
	m.ProducerID = as[*ProducerID](d, d.cached())
	m.Destination = as[*Destination](d, d.cached())
	m.TransactionID = as[TransactionID](d, d.cached())
	m.OriginalDestination = as[*Destination](d, d.cached())
	m.MessageID = as[*MessageID](d, d.nested())
	m.OriginalTransactionID = as[TransactionID](d, d.cached())
	m.GroupID = d.str()
	m.GroupSequence = d.i32()
	m.CorrelationID = d.str()
	m.Persistent = d.bool()
	m.Expiration = d.long()
	m.Priority = d.u8()
	m.ReplyTo = as[*Destination](d, d.nested())
	m.Timestamp = d.long()
	m.JMSType = d.str()
	m.Content = d.bytes()
	m.MarshalledProperties = d.bytes()
	m.DataStructure = d.nested()
	m.TargetConsumerID = as[*ConsumerID](d, d.cached())
	m.Compressed = d.bool()
	m.RedeliveryCounter = d.i32()
	m.BrokerPath = decodeArray[BrokerID](d)
	m.Arrival = d.long()
	m.UserID = d.str()
	m.RecievedByDFBridge = d.bool()
	m.Droppable = d.bool()
	m.Cluster = decodeArray[BrokerID](d)
	m.BrokerInTime = d.long()
	m.BrokerOutTime = d.long()
	if d.version >= 10 {
		m.JMSXGroupFirstForConsumer = d.bool()
	}
}

// Response answers a command whose ResponseRequired was set.
type Response struct {
	BaseCommand
	CorrelationID int32 // the CommandID answered
}

// ExceptionResponse answers a command with an error.
type ExceptionResponse struct {
	Response
	Exception *Throwable
}

// DataResponse answers with a data structure.
type DataResponse struct {
	Response
	Data DataStructure
}

// IntegerResponse answers with a number (XA prepare's vote).
type IntegerResponse struct {
	Response
	Result int32
}

func (*Response) DataType() byte          { return TypeResponse }
func (*ExceptionResponse) DataType() byte { return TypeExceptionResponse }
func (*DataResponse) DataType() byte      { return TypeDataResponse }
func (*IntegerResponse) DataType() byte   { return TypeIntegerResponse }

func (c *Response) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.i32(c.CorrelationID)
}

func (c *Response) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.CorrelationID = d.i32()
}

func (c *ExceptionResponse) marshal(e *encoder) {
	c.Response.marshal(e)
	e.throwable(c.Exception)
}

func (c *ExceptionResponse) unmarshal(d *decoder) {
	c.Response.unmarshal(d)
	c.Exception = d.throwable()
}

func (c *DataResponse) marshal(e *encoder) {
	c.Response.marshal(e)
	m, _ := c.Data.(marshaler)
	if c.Data != nil && m == nil {
		e.fail("%T cannot be marshalled", c.Data)
	}
	e.nested(m)
}

func (c *DataResponse) unmarshal(d *decoder) {
	c.Response.unmarshal(d)
	c.Data = d.nested()
}

func (c *IntegerResponse) marshal(e *encoder) {
	c.Response.marshal(e)
	e.i32(c.Result)
}

func (c *IntegerResponse) unmarshal(d *decoder) {
	c.Response.unmarshal(d)
	c.Result = d.i32()
}
