package broker

import (
	"strings"

	"github.com/activemq-go/broker/broker/advisory"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/security"
)

// advHost is the broker as its advisories' host (package broker/advisory).
type advHost struct{ b *Broker }

func (h advHost) NewMessageID() string { return h.b.newMessageID() }

func (h advHost) MayRead(c *destinations.Consumer, topic string) bool {
	return !h.b.authorizing() || h.b.sec.Authorize(c.Owner.(*Subscription).conn.subject, security.Topic, topic, security.Read)
}

func newAdvisories(b *Broker) *advisory.Advisories {
	return advisory.New(advisory.Config{Name: b.name, ID: strings.TrimSuffix(b.idBase, "-"), Env: &b.env, Host: advHost{b}, Log: b.log})
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

// adviseAddedLocked announces the queue q or topic t, d (resolved: Kind Queue or
// Topic; temp: a temporary one, d its broker-wide name), just made for connection by
// (nil: for the broker). Whatever makes a destination calls it, holding b.mu.
func (b *Broker) adviseAddedLocked(d destinations.Name, temp bool, by *Conn, q *destinations.QueueDest, t *destinations.TopicDest) {
	if b.adv == nil {
		return
	}
	id := ""
	if by != nil {
		id = by.ID
	}
	b.adv.DestinationAdded(d, temp, id, q, t)
}

// adviseRemovedLocked announces that the queue or topic d (resolved: Kind Queue or
// Topic, a temporary one's broker-wide name) was removed. Whatever removes a
// destination calls it, holding b.mu.
func (b *Broker) adviseRemovedLocked(d destinations.Name) {
	if b.adv != nil {
		b.adv.DestinationRemoved(d)
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
