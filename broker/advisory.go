package broker

import (
	"strings"

	"github.com/activemq-go/broker/broker/advisory"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
)

// advHost is the broker as its advisories' host (package broker/advisory).
type advHost struct{ b *Broker }

func (h advHost) NewMessageID() string { return h.b.newMessageID() }

func (h advHost) MayRead(c *destinations.Consumer, topic string) bool {
	return h.b.access.MayRead(c.Owner.(*Subscription).conn.subject, true, topic)
}

func newAdvisories(b *Broker) *advisory.Advisories {
	return advisory.New(advisory.Config{Name: b.ids.name, ID: strings.TrimSuffix(b.ids.base, "-"), Env: &b.env, Host: advHost{b}, Log: b.log})
}

// SetAdvisoryURL sets the originBrokerURL header of advisory messages: ActiveMQ's
// publishable connect string of the transport connector, such as
// stomp://127.0.0.1:61613. The caller sets it once the connectors listen.
func (b *Broker) SetAdvisoryURL(url string) {
	if b.adv != nil {
		b.adv.SetURL(url)
	}
}

// adviseConnected announces c, a new connection.
func (b *Broker) adviseConnected(c *Conn) {
	if b.adv != nil {
		b.adv.Connected(advisory.Conn{ID: c.ID, ClientID: c.ClientID, RemoteAddr: c.RemoteAddr, User: c.subject.User})
	}
}

// adviseDisconnected announces that c closed.
func (b *Broker) adviseDisconnected(c *Conn) {
	if b.adv != nil {
		b.adv.Disconnected(c.ID)
	}
}

// adviseExpired announces m, a topic message that expired before it was delivered.
func (b *Broker) adviseExpired(m *persistence.Message) {
	if b.adv != nil {
		b.adv.Expired(destinations.Name{Kind: destinations.Topic, Name: strings.TrimPrefix(m.Dest, persistence.TopicPrefix)}, m)
	}
}

// adviseSubscribed takes in s, a new subscription, for advisories.
func (b *Broker) adviseSubscribed(s *Subscription) {
	if b.adv == nil {
		return
	}
	c := advisory.Consumer{Consumer: &s.Consumer, Conn: s.conn.ID, Value: s.advID, Plain: s.durable == nil && s.stream == nil}
	if s.durable != nil {
		c.Durable = s.durable.Key().Name
	}
	b.adv.Subscribed(c)
}

// adviseUnsubscribed announces that s ended.
func (b *Broker) adviseUnsubscribed(s *Subscription) {
	if b.adv != nil {
		b.adv.Unsubscribed(&s.Consumer)
	}
}

// adviseDurableDeleted announces that c deleted the durable subscription key of topic.
func (b *Broker) adviseDurableDeleted(c *Conn, key persistence.SubKey, topic string) {
	if b.adv != nil {
		b.adv.DurableDeleted(c.ID, key, topic)
	}
}
