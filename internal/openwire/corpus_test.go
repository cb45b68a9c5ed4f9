package openwire

import "fmt"

// The commands of testdata/Interop.java, built in Go: every command and structure the
// codec supports, with every field set. Keep both lists in step.

const testConn = "ID:host-1234-5678-1:1"

func connID() *ConnectionID { return &ConnectionID{Value: testConn} }
func sessID() *SessionID    { return &SessionID{ConnectionID: testConn, Value: 1} }
func consID() *ConsumerID   { return &ConsumerID{ConnectionID: testConn, SessionID: 1, Value: 2} }
func prodID() *ProducerID   { return &ProducerID{ConnectionID: testConn, SessionID: 1, Value: 3} }
func queue() *Destination   { return &Destination{Type: TypeQueue, Name: "orders"} }
func topic() *Destination   { return &Destination{Type: TypeTopic, Name: "prices.>"} }
func tempQueue() *Destination {
	return &Destination{Type: TypeTempQueue, Name: testConn + ":1"}
}
func tempTopic() *Destination {
	return &Destination{Type: TypeTempTopic, Name: testConn + ":2"}
}
func localTx() *LocalTransactionID { return &LocalTransactionID{Value: 5, ConnectionID: connID()} }
func xaTx() *XATransactionID {
	return &XATransactionID{FormatID: 42, GlobalTransactionID: []byte{1, 2, 0x80}, BranchQualifier: []byte{9}}
}
func msgID(seq int64) *MessageID {
	return &MessageID{ProducerID: prodID(), ProducerSequenceID: seq, BrokerSequenceID: 70000}
}

func testThrowable() *Throwable {
	return &Throwable{
		Class:   "java.lang.IllegalStateException",
		Message: "boom é",
		StackTrace: []StackTraceElement{
			{Class: "org.example.Broker", Method: "send", File: "Broker.java", Line: 42},
			{Class: "org.example.Main", Method: "main", File: "Main.java", Line: 7},
		},
		Cause: &Throwable{
			Class:      "java.io.IOException",
			Message:    "disk full",
			StackTrace: []StackTraceElement{{Class: "org.example.Store", Method: "write", File: "Store.java", Line: 99}},
		},
	}
}

func testProps() map[string]any {
	return map[string]any{
		"bool":   true,
		"byte":   int8(-7),
		"char":   Char(0xe9),
		"short":  int16(-300),
		"int":    int32(123456),
		"long":   int64(1) << 40,
		"float":  float32(1.5),
		"double": -2.25,
		"string": "héllo 😀",
		"bytes":  []byte{0, 1, 0xff},
		"null":   nil,
	}
}

func testMessage(t byte, id int32) *Message {
	m := &Message{
		BaseCommand:               BaseCommand{CommandID: id, ResponseRequired: true},
		Type:                      t,
		ProducerID:                prodID(),
		Destination:               queue(),
		TransactionID:             localTx(),
		OriginalDestination:       topic(),
		MessageID:                 msgID(int64(id)),
		OriginalTransactionID:     xaTx(),
		GroupID:                   "group-a",
		GroupSequence:             3,
		CorrelationID:             "corr-1",
		Persistent:                true,
		Expiration:                1700000000000,
		Priority:                  4,
		ReplyTo:                   tempQueue(),
		Timestamp:                 1690000000000,
		JMSType:                   "order",
		TargetConsumerID:          consID(),
		RedeliveryCounter:         2,
		BrokerPath:                []BrokerID{{Value: "b1"}, {Value: "b2"}},
		Arrival:                   300,
		UserID:                    "alice",
		RecievedByDFBridge:        true,
		Droppable:                 true,
		Cluster:                   []BrokerID{{Value: "c1"}},
		BrokerInTime:              -1,
		BrokerOutTime:             70000,
		JMSXGroupFirstForConsumer: true,
	}
	if err := m.SetProperties(testProps()); err != nil {
		panic(err)
	}
	return m
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// corpus returns the commands of Interop.java in order.
func corpus() []Command {
	var l []Command
	base := func(id int32, rr bool) BaseCommand { return BaseCommand{CommandID: id, ResponseRequired: rr} }

	l = append(l, &WireFormatInfo{Magic: []byte("ActiveMQ"), Version: 12, Properties: map[string]any{
		"TightEncodingEnabled": true, "CacheEnabled": true, "CacheSize": int32(1024),
		"MaxInactivityDuration": int64(30000), "ProviderName": "ActiveMQ",
	}})
	l = append(l, &BrokerInfo{
		BaseCommand: base(1, false), BrokerID: &BrokerID{Value: "ID:broker-1"}, BrokerURL: "tcp://localhost:61616",
		PeerBrokerInfos: []*BrokerInfo{{BrokerID: &BrokerID{Value: "peer"}, BrokerName: "peer-broker"}},
		BrokerName:      "localhost", SlaveBroker: true, MasterBroker: true, FaultTolerantConfiguration: true,
		DuplexConnection: true, NetworkConnection: true, ConnectionID: 1 << 40, BrokerUploadURL: "http://upload",
		NetworkProperties: "a=b",
	})
	l = append(l, &ConnectionInfo{
		BaseCommand: base(2, true), ConnectionID: connID(), ClientID: "client-1", Password: "secret", UserName: "alice",
		BrokerPath: []BrokerID{{Value: "b1"}}, BrokerMasterConnector: true, Manageable: true, ClientMaster: true,
		FaultTolerant: true, FailoverReconnect: true, ClientIP: "tcp://127.0.0.1:5555",
	})
	l = append(l, &SessionInfo{BaseCommand: base(3, true), SessionID: sessID()})
	l = append(l, &ConsumerInfo{
		BaseCommand: base(4, true), ConsumerID: consID(), Browser: true, Destination: topic(), PrefetchSize: 1000,
		MaximumPendingMessageLimit: -1, DispatchAsync: true, Selector: "color = 'red'", ClientID: "client-1",
		SubscriptionName: "sub-1", NoLocal: true, Exclusive: true, Retroactive: true, Priority: 5,
		BrokerPath: []BrokerID{{Value: "b1"}}, NetworkSubscription: true, OptimizedAcknowledge: true, NoRangeAcks: true,
		NetworkConsumerPath: []ConsumerID{*consID()},
	})
	l = append(l, &ProducerInfo{
		BaseCommand: base(5, true), ProducerID: prodID(), Destination: queue(), BrokerPath: []BrokerID{{Value: "b1"}},
		DispatchAsync: true, WindowSize: 65536,
	})
	l = append(l, &TransactionInfo{BaseCommand: base(6, false), ConnectionID: connID(), TransactionID: localTx(), Type: TxBegin})
	l = append(l, &TransactionInfo{BaseCommand: base(7, true), ConnectionID: connID(), TransactionID: xaTx(), Type: TxPrepare})
	l = append(l, &DestinationInfo{
		BaseCommand: base(8, true), ConnectionID: connID(), Destination: tempQueue(), OperationType: DestAdd,
		Timeout: 300, BrokerPath: []BrokerID{{Value: "b1"}},
	})
	l = append(l, &RemoveSubscriptionInfo{BaseCommand: base(9, true), ConnectionID: connID(), SubscriptionName: "sub-1", ClientID: "client-1"})
	l = append(l, &KeepAliveInfo{BaseCommand: base(10, false)})
	l = append(l, &ShutdownInfo{BaseCommand: base(11, false)})
	l = append(l, &RemoveInfo{BaseCommand: base(12, true), ObjectID: consID(), LastDeliveredSequenceID: 1 << 40})
	l = append(l, &ControlCommand{BaseCommand: base(13, false), Command: "shutdown"})
	l = append(l, &FlushCommand{BaseCommand: base(14, false)})
	l = append(l, &ConnectionError{BaseCommand: base(15, false), Exception: testThrowable(), ConnectionID: connID()})
	l = append(l, &ConsumerControl{
		BaseCommand: base(16, false), Destination: queue(), Close: true, ConsumerID: consID(), Prefetch: 10,
		Flush: true, Start: true, Stop: true,
	})
	l = append(l, &ConnectionControl{
		BaseCommand: base(17, false), Close: true, Exit: true, FaultTolerant: true, Resume: true, Suspend: true,
		ConnectedBrokers: "tcp://a:61616", ReconnectTo: "tcp://b:61616", RebalanceConnection: true, Token: []byte{7, 8},
	})
	l = append(l, &ProducerAck{BaseCommand: base(18, false), ProducerID: prodID(), Size: 4096})
	pulled := msgID(9)
	pulled.TextView = "ID:custom-9"
	l = append(l, &MessagePull{
		BaseCommand: base(19, false), ConsumerID: consID(), Destination: queue(), Timeout: -1,
		CorrelationID: "pull-1", MessageID: pulled,
	})
	dispatched := testMessage(TypeTextMessage, 0)
	dispatched.SetText("dispatched", false)
	l = append(l, &MessageDispatch{BaseCommand: base(20, false), ConsumerID: consID(), Destination: queue(), Message: dispatched, RedeliveryCounter: 1})
	l = append(l, &MessageAck{
		BaseCommand: base(21, true), Destination: queue(), TransactionID: localTx(), ConsumerID: consID(),
		AckType: AckPoison, FirstMessageID: msgID(1), LastMessageID: msgID(2), MessageCount: 2, PoisonCause: testThrowable(),
	})
	l = append(l, testMessage(TypeMessage, 22))

	bm := testMessage(TypeBytesMessage, 23)
	bm.SetBody([]byte{1, 2, 3, 0, 0xfe}, false)
	l = append(l, bm)

	mm := testMessage(TypeMapMessage, 24)
	must(mm.SetMapBody(map[string]any{
		"n": int32(1), "s": "text", "nested": map[string]any{"k": int64(2)}, "list": []any{"x", false},
	}, false))
	l = append(l, mm)

	om := testMessage(TypeObjectMessage, 25)
	om.SetBody([]byte{0xac, 0xed, 0, 5, 't', 0}, false)
	l = append(l, om)

	sm := testMessage(TypeStreamMessage, 26)
	must(sm.SetStreamBody([]any{true, int8(1), Char('c'), int16(2), int32(3), int64(4), float32(5.5), 6.5, "seven", []byte{8}, nil}, false))
	l = append(l, sm)

	tm := testMessage(TypeTextMessage, 27)
	tm.SetText("héllo 😀 \x00 world", false)
	l = append(l, tm)

	ctm := testMessage(TypeTextMessage, 28)
	ctm.SetText("compressed compressed compressed compressed", true)
	l = append(l, ctm)

	cbm := testMessage(TypeBytesMessage, 29)
	cbm.SetBody([]byte("compressed bytes compressed bytes"), true)
	l = append(l, cbm)

	cmm := testMessage(TypeMapMessage, 30)
	must(cmm.SetMapBody(map[string]any{"k": "compressed map"}, true))
	l = append(l, cmm)

	l = append(l, &Response{BaseCommand: base(31, false), CorrelationID: 2})
	l = append(l, &ExceptionResponse{Response: Response{BaseCommand: base(32, false), CorrelationID: 3}, Exception: testThrowable()})
	l = append(l, &DataResponse{Response: Response{BaseCommand: base(33, false), CorrelationID: 4}, Data: consID()})
	l = append(l, &IntegerResponse{Response: Response{BaseCommand: base(34, false), CorrelationID: 5}, Result: -3})
	l = append(l, &TransactionInfo{BaseCommand: base(35, true), ConnectionID: connID(), TransactionID: localTx(), Type: TxCommitOnePhase})
	l = append(l, &RemoveInfo{BaseCommand: base(36, true), ObjectID: tempTopic(), LastDeliveredSequenceID: -2})
	return l
}

// testConfig is one combination of the options Interop.java runs.
type testConfig struct {
	version          int
	tight, cache, st bool
}

func (c testConfig) String() string {
	f := func(b bool, y, n string) string {
		if b {
			return y
		}
		return n
	}
	return fmt.Sprintf("v%d-%s-%s-%s", c.version, f(c.tight, "t", "l"), f(c.cache, "c", "n"), f(c.st, "s", "n"))
}

func (c testConfig) format() Format {
	f := Format{Version: c.version, TightEncoding: c.tight, StackTrace: c.st}
	if c.cache {
		f.Cache = true
		f.CacheSize = defaultCacheSize // what OpenWireFormat.setCacheEnabled allocates
	}
	return f
}

func testConfigs() []testConfig {
	var l []testConfig
	for _, v := range []int{12, 10, 9, 7, 6} {
		for _, tight := range []bool{true, false} {
			for _, cache := range []bool{true, false} {
				for _, st := range []bool{true, false} {
					l = append(l, testConfig{v, tight, cache, st})
				}
			}
		}
	}
	return l
}
