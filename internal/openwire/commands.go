package openwire

// Connection-level commands: the connection, its sessions, producers, transactions,
// temporary destinations and durable subscriptions, and the control commands.

// BrokerInfo is the broker's answer to a new connection (after WireFormatInfo).
type BrokerInfo struct {
	BaseCommand
	BrokerID                   *BrokerID
	BrokerURL                  string
	PeerBrokerInfos            []*BrokerInfo
	BrokerName                 string
	SlaveBroker                bool
	MasterBroker               bool
	FaultTolerantConfiguration bool
	DuplexConnection           bool
	NetworkConnection          bool
	ConnectionID               int64
	BrokerUploadURL            string
	NetworkProperties          string
}

// ConnectionInfo opens a connection (client id, credentials).
type ConnectionInfo struct {
	BaseCommand
	ConnectionID          *ConnectionID
	ClientID              string
	Password              string
	UserName              string
	BrokerPath            []BrokerID
	BrokerMasterConnector bool
	Manageable            bool
	ClientMaster          bool
	FaultTolerant         bool
	FailoverReconnect     bool
	ClientIP              string // since version 8
}

// SessionInfo opens a session.
type SessionInfo struct {
	BaseCommand
	SessionID *SessionID
}

// ProducerInfo registers a producer; WindowSize > 0 asks for ProducerAcks.
type ProducerInfo struct {
	BaseCommand
	ProducerID    *ProducerID
	Destination   *Destination
	BrokerPath    []BrokerID
	DispatchAsync bool
	WindowSize    int32
}

// Transaction operations (TransactionInfo.Type).
const (
	TxBegin          byte = 0
	TxPrepare        byte = 1
	TxCommitOnePhase byte = 2
	TxCommitTwoPhase byte = 3
	TxRollback       byte = 4
	TxRecover        byte = 5
	TxForget         byte = 6
	TxEnd            byte = 7
)

// TransactionInfo begins, commits, rolls back... a transaction.
type TransactionInfo struct {
	BaseCommand
	ConnectionID  *ConnectionID
	TransactionID TransactionID
	Type          byte
}

// Destination operations (DestinationInfo.OperationType).
const (
	DestAdd    byte = 0
	DestRemove byte = 1
)

// DestinationInfo creates or removes a (temporary) destination.
type DestinationInfo struct {
	BaseCommand
	ConnectionID  *ConnectionID
	Destination   *Destination
	OperationType byte
	Timeout       int64
	BrokerPath    []BrokerID
}

// RemoveSubscriptionInfo deletes a durable subscription (unsubscribe).
type RemoveSubscriptionInfo struct {
	BaseCommand
	ConnectionID     *ConnectionID
	SubscriptionName string
	ClientID         string
}

// KeepAliveInfo keeps the inactivity monitor quiet.
type KeepAliveInfo struct{ BaseCommand }

// ShutdownInfo announces that the client closes the connection.
type ShutdownInfo struct{ BaseCommand }

// FlushCommand asks for pending work to be flushed.
type FlushCommand struct{ BaseCommand }

// RemoveInfo closes a connection, session, consumer or producer (ObjectID is a
// *ConnectionID, *SessionID, *ConsumerID or *ProducerID).
type RemoveInfo struct {
	BaseCommand
	ObjectID DataStructure
	// LastDeliveredSequenceID is the broker sequence id of the last message the client
	// gave its application (LastDeliveredUnset if none, LastDeliveredUnknown when it
	// cannot tell).
	LastDeliveredSequenceID int64
}

// The RemoveInfo.LastDeliveredSequenceID of a client that delivered nothing, and of one
// that cannot tell (ActiveMQ's broker then counts everything unacknowledged delivered).
const (
	LastDeliveredUnset   = -1
	LastDeliveredUnknown = -2
)

// ControlCommand carries a broker control string.
type ControlCommand struct {
	BaseCommand
	Command string
}

// ConnectionError reports a fatal error to the client.
type ConnectionError struct {
	BaseCommand
	Exception    *Throwable
	ConnectionID *ConnectionID
}

// ConnectionControl is sent by the broker to tell the client to suspend, resume,
// rebalance or reconnect elsewhere.
type ConnectionControl struct {
	BaseCommand
	Close               bool
	Exit                bool
	FaultTolerant       bool
	Resume              bool
	Suspend             bool
	ConnectedBrokers    string
	ReconnectTo         string
	RebalanceConnection bool
	Token               []byte // since version 8
}

func (*BrokerInfo) DataType() byte             { return TypeBrokerInfo }
func (*ConnectionInfo) DataType() byte         { return TypeConnectionInfo }
func (*SessionInfo) DataType() byte            { return TypeSessionInfo }
func (*ProducerInfo) DataType() byte           { return TypeProducerInfo }
func (*TransactionInfo) DataType() byte        { return TypeTransactionInfo }
func (*DestinationInfo) DataType() byte        { return TypeDestinationInfo }
func (*RemoveSubscriptionInfo) DataType() byte { return TypeRemoveSubscriptionInfo }
func (*KeepAliveInfo) DataType() byte          { return TypeKeepAliveInfo }
func (*ShutdownInfo) DataType() byte           { return TypeShutdownInfo }
func (*FlushCommand) DataType() byte           { return TypeFlushCommand }
func (*RemoveInfo) DataType() byte             { return TypeRemoveInfo }
func (*ControlCommand) DataType() byte         { return TypeControlCommand }
func (*ConnectionError) DataType() byte        { return TypeConnectionError }
func (*ConnectionControl) DataType() byte      { return TypeConnectionControl }

func (c *BrokerInfo) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.cached(opt(c.BrokerID))
	e.str(c.BrokerURL)
	e.bool(c.PeerBrokerInfos != nil)
	if c.PeerBrokerInfos != nil {
		e.arrayLen(len(c.PeerBrokerInfos))
		for _, p := range c.PeerBrokerInfos {
			e.nested(opt(p))
		}
	}
	e.str(c.BrokerName)
	e.bool(c.SlaveBroker)
	e.bool(c.MasterBroker)
	e.bool(c.FaultTolerantConfiguration)
	e.bool(c.DuplexConnection)
	e.bool(c.NetworkConnection)
	e.long(c.ConnectionID)
	e.str(c.BrokerUploadURL)
	e.str(c.NetworkProperties)
}

func (c *BrokerInfo) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.BrokerID = as[*BrokerID](d, d.cached())
	c.BrokerURL = d.str()
	if d.bool() {
		n := d.arrayLen()
		c.PeerBrokerInfos = make([]*BrokerInfo, 0, n)
		for i := 0; i < n && d.err == nil; i++ {
			c.PeerBrokerInfos = append(c.PeerBrokerInfos, as[*BrokerInfo](d, d.nested()))
		}
	}
	c.BrokerName = d.str()
	c.SlaveBroker = d.bool()
	c.MasterBroker = d.bool()
	c.FaultTolerantConfiguration = d.bool()
	c.DuplexConnection = d.bool()
	c.NetworkConnection = d.bool()
	c.ConnectionID = d.long()
	c.BrokerUploadURL = d.str()
	c.NetworkProperties = d.str()
}

func (c *ConnectionInfo) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.cached(opt(c.ConnectionID))
	e.str(c.ClientID)
	e.str(c.Password)
	e.str(c.UserName)
	encodeArray[BrokerID](e, c.BrokerPath)
	e.bool(c.BrokerMasterConnector)
	e.bool(c.Manageable)
	e.bool(c.ClientMaster)
	e.bool(c.FaultTolerant)
	e.bool(c.FailoverReconnect)
	if e.version >= 8 {
		e.str(c.ClientIP)
	}
}

func (c *ConnectionInfo) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.ConnectionID = as[*ConnectionID](d, d.cached())
	c.ClientID = d.str()
	c.Password = d.str()
	c.UserName = d.str()
	c.BrokerPath = decodeArray[BrokerID](d)
	c.BrokerMasterConnector = d.bool()
	c.Manageable = d.bool()
	c.ClientMaster = d.bool()
	c.FaultTolerant = d.bool()
	c.FailoverReconnect = d.bool()
	if d.version >= 8 {
		c.ClientIP = d.str()
	}
}

func (c *SessionInfo) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.cached(opt(c.SessionID))
}

func (c *SessionInfo) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.SessionID = as[*SessionID](d, d.cached())
}

func (c *ProducerInfo) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.cached(opt(c.ProducerID))
	e.cached(opt(c.Destination))
	encodeArray[BrokerID](e, c.BrokerPath)
	e.bool(c.DispatchAsync)
	e.i32(c.WindowSize)
}

func (c *ProducerInfo) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.ProducerID = as[*ProducerID](d, d.cached())
	c.Destination = as[*Destination](d, d.cached())
	c.BrokerPath = decodeArray[BrokerID](d)
	c.DispatchAsync = d.bool()
	c.WindowSize = d.i32()
}

func (c *TransactionInfo) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.cached(opt(c.ConnectionID))
	e.cached(c.TransactionID)
	e.u8(c.Type)
}

func (c *TransactionInfo) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.ConnectionID = as[*ConnectionID](d, d.cached())
	c.TransactionID = as[TransactionID](d, d.cached())
	c.Type = d.u8()
}

func (c *DestinationInfo) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.cached(opt(c.ConnectionID))
	e.cached(opt(c.Destination))
	e.u8(c.OperationType)
	e.long(c.Timeout)
	encodeArray[BrokerID](e, c.BrokerPath)
}

func (c *DestinationInfo) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.ConnectionID = as[*ConnectionID](d, d.cached())
	c.Destination = as[*Destination](d, d.cached())
	c.OperationType = d.u8()
	c.Timeout = d.long()
	c.BrokerPath = decodeArray[BrokerID](d)
}

func (c *RemoveSubscriptionInfo) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.cached(opt(c.ConnectionID))
	e.str(c.SubscriptionName)
	e.str(c.ClientID)
}

func (c *RemoveSubscriptionInfo) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.ConnectionID = as[*ConnectionID](d, d.cached())
	c.SubscriptionName = d.str()
	c.ClientID = d.str()
}

func (c *RemoveInfo) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	m, _ := c.ObjectID.(marshaler)
	e.cached(m)
	e.long(c.LastDeliveredSequenceID)
}

func (c *RemoveInfo) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.ObjectID = d.cached()
	c.LastDeliveredSequenceID = d.long()
}

func (c *ControlCommand) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.str(c.Command)
}

func (c *ControlCommand) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.Command = d.str()
}

func (c *ConnectionError) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.throwable(c.Exception)
	e.nested(opt(c.ConnectionID))
}

func (c *ConnectionError) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.Exception = d.throwable()
	c.ConnectionID = as[*ConnectionID](d, d.nested())
}

func (c *ConnectionControl) marshal(e *encoder) {
	c.BaseCommand.marshal(e)
	e.bool(c.Close)
	e.bool(c.Exit)
	e.bool(c.FaultTolerant)
	e.bool(c.Resume)
	e.bool(c.Suspend)
	e.str(c.ConnectedBrokers)
	e.str(c.ReconnectTo)
	e.bool(c.RebalanceConnection)
	if e.version >= 8 {
		e.bytes(c.Token)
	}
}

func (c *ConnectionControl) unmarshal(d *decoder) {
	c.BaseCommand.unmarshal(d)
	c.Close = d.bool()
	c.Exit = d.bool()
	c.FaultTolerant = d.bool()
	c.Resume = d.bool()
	c.Suspend = d.bool()
	c.ConnectedBrokers = d.str()
	c.ReconnectTo = d.str()
	c.RebalanceConnection = d.bool()
	if d.version >= 8 {
		c.Token = d.bytes()
	}
}
