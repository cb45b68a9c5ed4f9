package broker

import (
	"github.com/activemq-go/broker/broker/advisory"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
)

// policies picks each destination's policy: Options.Policies, or policy.Default with
// Options.DestinationMemoryLimit when none are given.
type policies struct {
	fn              destinations.PolicyFunc
	destMemoryLimit int64
}

func newPolicies(o Options) policies {
	p := policies{fn: o.Policies, destMemoryLimit: o.DestinationMemoryLimit}
	if p.destMemoryLimit <= 0 {
		p.destMemoryLimit = int64(policy.DefaultMemoryLimit)
	}
	return p
}

// For is the policy of the destination name of kind.
func (ps *policies) For(kind destinations.Kind, name string) policy.Policy {
	if ps.fn == nil {
		p := policy.Default(kind.IsTopic())
		if ps.destMemoryLimit > 0 {
			p.MemoryLimit = policy.Bytes(ps.destMemoryLimit)
		}
		return p
	}
	p := ps.fn(kind, name)
	if p.IsStream() && advisory.IsAdvisory(destinations.Name{Kind: kind, Name: name}) {
		p.Type = "" // the broker publishes advisories as topic messages
	}
	return p
}

func (b *Broker) policyFor(kind destinations.Kind, name string) policy.Policy {
	return b.policies.For(kind, name)
}
