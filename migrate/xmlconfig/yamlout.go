package xmlconfig

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// omap is a YAML mapping that keeps the order keys were set in.
type omap struct {
	keys []string
	vals map[string]any
}

func newMap() *omap { return &omap{vals: map[string]any{}} }

func (m *omap) set(k string, v any) {
	if _, ok := m.vals[k]; !ok {
		m.keys = append(m.keys, k)
	}
	m.vals[k] = v
}

func (m *omap) get(k string) (any, bool) { v, ok := m.vals[k]; return v, ok }

// sub returns the mapping at k, creating it.
func (m *omap) sub(k string) *omap {
	if v, ok := m.vals[k].(*omap); ok {
		return v
	}
	s := newMap()
	m.set(k, s)
	return s
}

func (m *omap) empty() bool { return m == nil || len(m.keys) == 0 }

// MarshalYAML writes the keys in order.
func (m *omap) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range m.keys {
		var v yaml.Node
		if err := v.Encode(m.vals[k]); err != nil {
			return nil, err
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, &v)
	}
	return n, nil
}

// typed turns an attribute value into the YAML value: a boolean, a whole number
// or a string.
func typed(s string) any {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "true":
		return true
	case "false":
		return false
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(t, 64); err == nil && !strings.ContainsAny(t, "xXnN") {
		return f
	}
	return t
}

// size is an ActiveMQ size ("64 mb", "1 gb", bytes) as setting.ParseSize reads it.
func size(s string) any {
	t := strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return n
	}
	return strings.ToLower(t)
}
