package advisory

import (
	"encoding/json"
	"strconv"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// The bodies of advisory messages: the JSON ActiveMQ's STOMP transport makes of the
// command an advisory carries (its JmsFrameTranslator, XStream with Jettison's mapped
// convention, what a subscriber gets with or without transformation:jms-advisory-json),
// field for field where this broker has the value. One object, named after the
// command's class, holds the command's fields in ActiveMQ's order. What ActiveMQ
// fills from OpenWire alone is given the value a STOMP client's command has there
// (sessionId -1, dispatchAsync true...); the identifiers are this broker's.

// jsonDestination is an ActiveMQDestination: its class and physical name.
type jsonDestination struct {
	Class string `json:"@class"`
	Name  string `json:"string"`
}

// destinationJSON is d as ActiveMQ writes it; temp says it is a temporary one
// (whose Name is its broker-wide name).
func destinationJSON(d destinations.Name, temp bool) jsonDestination {
	class := "ActiveMQQueue"
	switch {
	case d.Kind.IsTopic() && temp:
		class = "ActiveMQTempTopic"
	case d.Kind.IsTopic():
		class = "ActiveMQTopic"
	case temp:
		class = "ActiveMQTempQueue"
	}
	return jsonDestination{Class: class, Name: d.Name}
}

type jsonConnectionID struct {
	Value string `json:"value"`
}

// jsonConsumerID is a ConsumerId: a STOMP connection has one session, -1.
type jsonConsumerID struct {
	Class        string `json:"@class,omitempty"` // set where the field's type is Object (RemoveInfo)
	ConnectionID string `json:"connectionId"`
	SessionID    int    `json:"sessionId"`
	Value        uint64 `json:"value"`
}

// consumerIDString is a ConsumerId as ActiveMQ prints it (the consumerId header).
func consumerIDString(s *Consumer) string {
	return s.Conn + ":-1:" + strconv.FormatUint(s.Value, 10)
}

type connectionInfo struct {
	CommandID             int              `json:"commandId"`
	ResponseRequired      bool             `json:"responseRequired"`
	ConnectionID          jsonConnectionID `json:"connectionId"`
	ClientID              string           `json:"clientId"`
	ClientIP              string           `json:"clientIp"`
	UserName              string           `json:"userName,omitempty"`
	Password              string           `json:"password"`
	BrokerMasterConnector bool             `json:"brokerMasterConnector"`
	Manageable            bool             `json:"manageable"`
	ClientMaster          bool             `json:"clientMaster"`
	FaultTolerant         bool             `json:"faultTolerant"`
	FailoverReconnect     bool             `json:"failoverReconnect"`
}

// connectionJSON is c's ConnectionInfo; the password is never given, as in ActiveMQ.
func connectionJSON(c Conn) any {
	clientID := c.ClientID
	if clientID == "" {
		clientID = c.ID // ActiveMQ's STOMP transport gives its connection id
	}
	return struct {
		Info connectionInfo `json:"ConnectionInfo"`
	}{connectionInfo{
		ResponseRequired: true,
		ConnectionID:     jsonConnectionID{c.ID},
		ClientID:         clientID,
		ClientIP:         c.RemoteAddr,
		UserName:         c.User,
		ClientMaster:     true,
	}}
}

type consumerInfo struct {
	CommandID                  int             `json:"commandId"`
	ResponseRequired           bool            `json:"responseRequired"`
	ConsumerID                 jsonConsumerID  `json:"consumerId"`
	Destination                jsonDestination `json:"destination"`
	PrefetchSize               int32           `json:"prefetchSize"`
	MaximumPendingMessageLimit int             `json:"maximumPendingMessageLimit"`
	Browser                    bool            `json:"browser"`
	DispatchAsync              bool            `json:"dispatchAsync"`
	Selector                   string          `json:"selector,omitempty"`
	SubscriptionName           string          `json:"subscriptionName,omitempty"`
	NoLocal                    bool            `json:"noLocal"`
	Exclusive                  bool            `json:"exclusive"`
	Retroactive                bool            `json:"retroactive"`
	Priority                   int             `json:"priority"`
	OptimizedAcknowledge       bool            `json:"optimizedAcknowledge"`
	NoRangeAcks                bool            `json:"noRangeAcks"`
}

// consumerJSON is s's ConsumerInfo; temp says its destination is temporary.
func consumerJSON(s *Consumer, temp bool) any {
	info := consumerInfo{
		ConsumerID:       jsonConsumerID{ConnectionID: s.Conn, SessionID: -1, Value: s.Value},
		Destination:      destinationJSON(s.Dest, temp),
		PrefetchSize:     s.Prefetch,
		DispatchAsync:    true,
		Selector:         s.Selector.String(),
		NoLocal:          s.NoLocal,
		Exclusive:        s.Exclusive,
		Priority:         s.Priority,
		SubscriptionName: s.Durable,
	}
	return struct {
		Info consumerInfo `json:"ConsumerInfo"`
	}{info}
}

type removeInfo struct {
	CommandID               int   `json:"commandId"`
	ResponseRequired        bool  `json:"responseRequired"`
	ObjectID                any   `json:"objectId"`
	LastDeliveredSequenceID int64 `json:"lastDeliveredSequenceId"`
}

// removeJSON is the RemoveInfo of what id names (a ConnectionId or a ConsumerId).
func removeJSON(id any, responseRequired bool) any {
	return struct {
		Info removeInfo `json:"RemoveInfo"`
	}{removeInfo{ResponseRequired: responseRequired, ObjectID: id, LastDeliveredSequenceID: -2}}
}

// removeConnectionJSON is the RemoveInfo of the connection called id.
func removeConnectionJSON(id string) any {
	return removeJSON(struct {
		Class string `json:"@class"`
		Value string `json:"value"`
	}{"ConnectionId", id}, true)
}

// removeConsumerJSON is the RemoveInfo of s.
func removeConsumerJSON(s *Consumer) any {
	return removeJSON(jsonConsumerID{Class: "ConsumerId", ConnectionID: s.Conn, SessionID: -1, Value: s.Value}, false)
}

type removeSubscriptionInfo struct {
	CommandID        int              `json:"commandId"`
	ResponseRequired bool             `json:"responseRequired"`
	ConnectionID     jsonConnectionID `json:"connectionId"`
	ClientID         string           `json:"clientId"`
	SubscriptionName string           `json:"subscriptionName"`
}

// removeSubscriptionJSON is the RemoveSubscriptionInfo of the durable subscription
// key, deleted by the connection called conn.
func removeSubscriptionJSON(conn string, key persistence.SubKey) any {
	return struct {
		Info removeSubscriptionInfo `json:"RemoveSubscriptionInfo"`
	}{removeSubscriptionInfo{ResponseRequired: true, ConnectionID: jsonConnectionID{conn}, ClientID: key.ClientID, SubscriptionName: key.Name}}
}

type destinationInfo struct {
	CommandID        int               `json:"commandId"`
	ResponseRequired bool              `json:"responseRequired"`
	ConnectionID     *jsonConnectionID `json:"connectionId,omitempty"`
	Destination      jsonDestination   `json:"destination"`
	OperationType    int               `json:"operationType"`
	Timeout          int               `json:"timeout"`
}

// DestinationInfo operation types.
const (
	destinationAdded   = 0
	destinationRemoved = 1
)

// destinationInfoJSON is the DestinationInfo of d, made by connection by ("" for the
// broker), with operation op.
func destinationInfoJSON(d destinations.Name, temp bool, by string, op int) any {
	info := destinationInfo{Destination: destinationJSON(d, temp), OperationType: op}
	if by != "" {
		info.ConnectionID = &jsonConnectionID{by}
	}
	return struct {
		Info destinationInfo `json:"DestinationInfo"`
	}{info}
}

type messageInfo struct {
	CommandID                 int              `json:"commandId"`
	ResponseRequired          bool             `json:"responseRequired"`
	MessageID                 jsonMessageID    `json:"messageId"`
	Destination               jsonDestination  `json:"destination"`
	Expiration                int64            `json:"expiration"`
	Timestamp                 int64            `json:"timestamp"`
	Arrival                   int64            `json:"arrival"`
	BrokerInTime              int64            `json:"brokerInTime"`
	BrokerOutTime             int64            `json:"brokerOutTime"`
	CorrelationID             string           `json:"correlationId,omitempty"`
	ReplyTo                   *jsonDestination `json:"replyTo,omitempty"`
	Persistent                bool             `json:"persistent"`
	Type                      string           `json:"type,omitempty"`
	Priority                  uint8            `json:"priority"`
	GroupID                   string           `json:"groupID,omitempty"`
	GroupSequence             int              `json:"groupSequence"`
	Compressed                bool             `json:"compressed"`
	UserID                    string           `json:"userID,omitempty"`
	RedeliveryCounter         uint32           `json:"redeliveryCounter"`
	Size                      int              `json:"size"`
	Properties                jsonProperties   `json:"properties,omitempty"`
	ReadOnlyProperties        bool             `json:"readOnlyProperties"`
	ReadOnlyBody              bool             `json:"readOnlyBody"`
	Droppable                 bool             `json:"droppable"`
	JMSXGroupFirstForConsumer bool             `json:"jmsXGroupFirstForConsumer"`
}

// jsonMessageID is a MessageId whose text is not ActiveMQ's producer:sequence form:
// ActiveMQ keeps such an id (a foreign JMS provider's) as its text view.
type jsonMessageID struct {
	TextView string `json:"textView"`
}

// jsonProperties are a message's properties as XStream writes a map through Jettison:
// [{"entry":{"string":["k","v"]}}] for one, [{"entry":[{...},{...}]}] for more.
type jsonProperties [][2]string

func (p jsonProperties) MarshalJSON() ([]byte, error) {
	type pair struct {
		String [2]string `json:"string"`
	}
	var entry any
	if len(p) == 1 {
		entry = pair{p[0]}
	} else {
		pairs := make([]pair, len(p))
		for i, kv := range p {
			pairs[i] = pair{kv}
		}
		entry = pairs
	}
	return json.Marshal([]struct {
		Entry any `json:"entry"`
	}{{entry}})
}

// messageJSON is m, a message of dest (temp: a temporary one), as the payload of an
// Expired or MessageDLQd advisory: an ActiveMQBytesMessage (what ActiveMQ makes of a
// STOMP SEND with content-length, as STOMP clients send it) without its body, as
// ActiveMQ clears it (includeBodyForAdvisory is off by default). The STOMP headers
// ActiveMQ maps to JMS fields are those fields, the others its properties.
func messageJSON(dest destinations.Name, temp bool, m *persistence.Message) any {
	info := messageInfo{
		MessageID:          jsonMessageID{m.ID},
		Destination:        destinationJSON(dest, temp),
		Expiration:         m.Expires,
		Timestamp:          m.Timestamp,
		BrokerInTime:       m.Timestamp,
		Persistent:         m.Persistent,
		Priority:           m.Priority,
		RedeliveryCounter:  m.RedeliveryCount,
		Size:               m.Size(),
		ReadOnlyProperties: true,
	}
	for i := 0; i+1 < len(m.Headers); i += 2 {
		k, v := m.Headers[i], m.Headers[i+1]
		switch k {
		case "correlation-id":
			info.CorrelationID = v
			continue
		case "type":
			info.Type = v
			continue
		case "JMSXGroupID":
			info.GroupID = v
			continue
		case "JMSXGroupSeq":
			if n, err := strconv.Atoi(v); err == nil {
				info.GroupSequence = n
				continue
			}
		case destinations.UserIDProperty:
			info.UserID = v
			continue
		case destinations.ReplyToProperty:
			if d, err := destinations.ParseOne(v); err == nil && !d.IsWildcard() {
				rt := destinationJSON(d, d.Kind == destinations.TempQueue || d.Kind == destinations.TempTopic)
				info.ReplyTo = &rt
				continue
			}
		}
		info.Properties = append(info.Properties, [2]string{k, v})
	}
	return struct {
		Info messageInfo `json:"ActiveMQBytesMessage"`
	}{info}
}
