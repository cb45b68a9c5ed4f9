package advisory

import (
	"strconv"
	"strings"

	"github.com/activemq-go/broker/destinations"
)

// Producers are announced on ActiveMQ.Advisory.Producer.Queue|Topic|TempQueue|
// TempTopic.<name> (ProducerInfo when one is made, RemoveInfo when it or its
// connection goes; header producerCount), as ActiveMQ announces them. Only OpenWire
// clients register producers, and only a producer of one destination is announced: a
// STOMP connection's sends, like an anonymous producer's, are announced by nobody.

const producerPrefix = prefix + "Producer."

// Producer is a client's producer of one destination as advisories tell of it.
type Producer struct {
	Conn string // the broker's id of its connection
	// Session and Value are the numbers of the client's ProducerId.
	Session, Value int64
	Dest           destinations.Name // resolved: Kind Queue or Topic
	Window         int32             // the producer window the client asked for
}

type producerKey struct {
	conn           string
	session, value int64
}

func (p Producer) key() producerKey { return producerKey{p.Conn, p.Session, p.Value} }

type producerEntry struct {
	p   Producer
	seq uint64
}

// ProducerAdded announces p, a new producer; one of an advisory topic is not.
func (a *Advisories) ProducerAdded(p Producer) {
	if IsAdvisory(p.Dest) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.producers[p.key()]; ok {
		return
	}
	a.seq++
	a.producers[p.key()] = producerEntry{p: p, seq: a.seq}
	a.producerLocked(p, nil, false)
}

// ProducerRemoved announces that the producer session:value of the connection called
// conn is gone.
func (a *Advisories) ProducerRemoved(conn string, session, value int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.producerRemovedLocked(producerKey{conn, session, value})
}

func (a *Advisories) producerRemovedLocked(k producerKey) {
	e, ok := a.producers[k]
	if !ok {
		return
	}
	delete(a.producers, k)
	a.producerLocked(e.p, nil, true)
}

// producersGoneLocked announces the end of every producer of the connection called
// conn, in the order they came.
func (a *Advisories) producersGoneLocked(conn string) {
	for _, k := range inOrder(a.producers, func(e producerEntry) uint64 { return e.seq }) {
		if k.conn == conn {
			a.producerRemovedLocked(k)
		}
	}
}

// producerLocked announces p (removed: its end) to the listeners, or to one.
func (a *Advisories) producerLocked(p Producer, to *Consumer, removed bool) {
	temp := a.isTempLocked(p.Dest)
	a.publishLocked(producerPrefix+typeName(p.Dest, temp)+"."+p.Dest.Name, to, func() (any, []string) {
		n := 0
		for _, e := range a.producers {
			if e.p.Dest == p.Dest {
				n++
			}
		}
		hs := []string{"producerCount", strconv.Itoa(n)}
		if removed {
			return removeJSON(jsonProducerID{Class: "ProducerId", ConnectionID: p.Conn, SessionID: p.Session, Value: p.Value}, true), hs
		}
		return producerJSON(p, temp), hs
	})
}

// replayProducersLocked gives s, a new subscription of a producer advisory topic, the
// producers there are.
func (a *Advisories) replayProducersLocked(s *Consumer) {
	if !strings.HasPrefix(s.Dest.Name, producerPrefix) {
		return
	}
	for _, k := range inOrder(a.producers, func(e producerEntry) uint64 { return e.seq }) {
		a.producerLocked(a.producers[k].p, s, false)
	}
}

// jsonProducerID is a ProducerId.
type jsonProducerID struct {
	Class        string `json:"@class,omitempty"` // set where the field's type is Object (RemoveInfo)
	ConnectionID string `json:"connectionId"`
	SessionID    int64  `json:"sessionId"`
	Value        int64  `json:"value"`
}

type producerInfo struct {
	CommandID        int             `json:"commandId"`
	ResponseRequired bool            `json:"responseRequired"`
	ProducerID       jsonProducerID  `json:"producerId"`
	Destination      jsonDestination `json:"destination"`
	DispatchAsync    bool            `json:"dispatchAsync"`
	WindowSize       int32           `json:"windowSize"`
	SentCount        int64           `json:"sentCount"`
}

// producerJSON is p's ProducerInfo; temp says its destination is temporary.
func producerJSON(p Producer, temp bool) any {
	return map[string]producerInfo{"ProducerInfo": {
		ResponseRequired: true,
		ProducerID:       jsonProducerID{ConnectionID: p.Conn, SessionID: p.Session, Value: p.Value},
		Destination:      destinationJSON(p.Dest, temp),
		WindowSize:       p.Window,
	}}
}
