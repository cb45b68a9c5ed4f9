package broker

import (
	"github.com/activemq-go/broker/broker/advisory"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
)

func (b *Broker) policyFor(kind destinations.Kind, name string) policy.Policy {
	if b.policies == nil {
		p := policy.Default(kind.IsTopic())
		if b.destMemoryLimit > 0 {
			p.MemoryLimit = policy.Bytes(b.destMemoryLimit)
		}
		return p
	}
	p := b.policies(kind, name)
	if p.IsStream() && advisory.IsAdvisory(destinations.Name{Kind: kind, Name: name}) {
		p.Type = "" // the broker publishes advisories as topic messages
	}
	return p
}
