package openwire

import (
	"encoding/json"

	ow "github.com/activemq-go/broker/internal/openwire"
)

// Advisory messages reach STOMP clients with their DataStructure as JSON, ActiveMQ's
// jms-advisory-json transformation. OpenWire clients read the DataStructure itself:
// the 5.17 client watches ActiveMQ.Advisory.TempQueue and .TempTopic (its
// AdvisoryConsumer, watchTopicAdvisories=true) and DestinationSource reads the
// DestinationInfo of every destination advisory. Those become the DestinationInfo they
// describe; the other advisories keep their JSON body as a TextMessage.

// advisoryTransformation is the property that marks an advisory's JSON body.
const advisoryTransformation = "jms-advisory-json"

// advisoryDestinationInfo is the JSON of a DestinationInfo advisory.
type advisoryDestinationInfo struct {
	Info *struct {
		ConnectionID *struct {
			Value string `json:"value"`
		} `json:"connectionId"`
		Destination struct {
			Class string `json:"@class"`
			Name  string `json:"string"`
		} `json:"destination"`
		OperationType byte `json:"operationType"`
	} `json:"DestinationInfo"`
}

// advisoryClasses maps ActiveMQ's destination classes to OpenWire's destination types.
var advisoryClasses = map[string]byte{
	"ActiveMQQueue": ow.TypeQueue, "ActiveMQTopic": ow.TypeTopic,
	"ActiveMQTempQueue": ow.TypeTempQueue, "ActiveMQTempTopic": ow.TypeTempTopic,
}

// advisoryData returns the DataStructure an advisory's JSON body describes, if it is
// one OpenWire clients read; nil otherwise.
func advisoryData(body []byte) ow.DataStructure {
	var a advisoryDestinationInfo
	if json.Unmarshal(body, &a) != nil || a.Info == nil {
		return nil
	}
	t, ok := advisoryClasses[a.Info.Destination.Class]
	if !ok {
		return nil
	}
	info := &ow.DestinationInfo{Destination: &ow.Destination{Type: t, Name: a.Info.Destination.Name}, OperationType: a.Info.OperationType}
	if a.Info.ConnectionID != nil {
		info.ConnectionID = &ow.ConnectionID{Value: a.Info.ConnectionID.Value}
	}
	return info
}
