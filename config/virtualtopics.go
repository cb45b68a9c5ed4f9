package config

import "strings"

// buildVirtualTopics validates the virtualTopics section (defaults are
// viper's). Name and Prefix are checked even when the interceptor is off.
func (c *checker) buildVirtualTopics(v VirtualTopics) (VirtualTopics, *Error) {
	const path = "virtualTopics"
	if err := c.checkPattern(joinKey(path, "name"), v.Name); err != nil {
		return VirtualTopics{}, err
	}
	stars, other := 0, false
	for _, el := range strings.Split(v.Prefix, ".") {
		if el == "*" {
			stars++
		} else if strings.ContainsAny(el, "*>") {
			other = true
		}
	}
	if stars != 1 || other {
		return VirtualTopics{}, c.invalid(joinKey(path, "prefix"),
			`must have exactly one "*" element, standing for the consumer group, and no other wildcard`,
			`"."-separated elements, one of them "*", usually ending in ".", e.g. "Consumer.*." (the default) or "VirtualTopicConsumers.*."`)
	}
	return v, nil
}
