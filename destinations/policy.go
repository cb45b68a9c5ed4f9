package destinations

import "github.com/activemq-go/broker/destinations/policy"

// PolicyFunc picks the policy of a destination (package policy defines it).
type PolicyFunc func(kind Kind, name string) policy.Policy

// Policies is the PolicyFunc of configured entries: policy.Select's choice among
// them, policy.Default for a destination none matches.
func Policies(entries []policy.Policy) PolicyFunc {
	return func(kind Kind, name string) policy.Policy {
		return policy.Select(entries, kind.IsTopic(), kind == TempQueue || kind == TempTopic, name)
	}
}
