package config

import (
	"strings"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/internal/setting"
)

const policyPath = "destinationPolicy"

// defaultPolicies is what the destinationPolicy entries of tree are decoded over:
// one policy.Default per entry, so that a key an entry leaves out keeps its
// default.
func defaultPolicies(tree map[string]any) []policy.Policy {
	list, ok := tree[strings.ToLower(policyPath)].([]any)
	if !ok {
		return nil
	}
	out := make([]policy.Policy, len(list))
	for i := range out {
		out[i] = policy.Default(false)
	}
	return out
}

// buildPolicies checks and completes the decoded destinationPolicy entries
// (policy.Policy.Complete). Which keys were written comes from the settings tree.
func (c *checker) buildPolicies(entries []policy.Policy) ([]policy.Policy, *Error) {
	if len(entries) == 0 {
		return nil, nil
	}
	elem := schema.mustField(policyPath).node.elem
	list, _ := c.tree[strings.ToLower(policyPath)].([]any)
	for i := range entries {
		set := map[string]bool{}
		if i < len(list) {
			m, _ := list[i].(map[string]any)
			writtenKeys(m, elem, "", set)
		}
		if err := entries[i].Complete(set); err != nil {
			at := joinIndex(policyPath, i)
			if err.Key != "" {
				at = joinKey(at, err.Key)
			}
			allowed := err.Allowed
			if err.Duration {
				allowed += setting.DurationAllowed
			}
			return nil, c.invalid(at, err.Problem, allowed)
		}
	}
	return entries, nil
}

// writtenKeys adds to set the canonical path of every value written in m.
func writtenKeys(m map[string]any, n *schemaNode, prefix string, set map[string]bool) {
	for k, v := range m {
		f, ok := n.field(k)
		if !ok || v == nil {
			continue
		}
		if sub, isMap := v.(map[string]any); isMap && f.node.kind == sectionNode {
			if len(sub) == 0 {
				// An empty block (all defaults, as in abortSlowConsumerStrategy: {})
				// is recorded as its own key.
				set[joinKey(prefix, f.name)] = true
			}
			writtenKeys(sub, f.node, joinKey(prefix, f.name), set)
			continue
		}
		set[joinKey(prefix, f.name)] = true
	}
}

// checkPattern checks a destination pattern with wildcards (policy.CheckPattern).
func (c *checker) checkPattern(path, pattern string) *Error {
	if problem := policy.CheckPattern(pattern); problem != "" {
		return c.invalid(path, problem, policy.PatternAllowed)
	}
	return nil
}
