package broker

import (
	"github.com/activemq-go/broker/broker/advisory"
	"github.com/activemq-go/broker/destinations"
)

func (b *Broker) policyFor(kind destinations.Kind, name string) destinations.Policy {
	if b.policies == nil {
		p := destinations.DefaultPolicy(kind.IsTopic())
		if b.destMemoryLimit > 0 {
			p.MemoryLimit = b.destMemoryLimit
		}
		return p
	}
	p := b.policies(kind, name)
	if p.Stream && advisory.IsAdvisory(destinations.Name{Kind: kind, Name: name}) {
		p.Stream = false // the broker publishes advisories as topic messages
	}
	return p
}
