package config

import (
	"fmt"
	"sort"
	"strings"
)

// adapter is one persistenceAdapter choice.
type adapter struct {
	key  string // YAML key, canonical spelling
	name string // name the adapter registers under
}

// adapters are the persistenceAdapter keys, in the order error messages list them.
var adapters = []adapter{
	{key: "memory", name: "memory"},
	{key: "kahaDB", name: "kahadb"},
	{key: "bbolt", name: "bbolt"},
	{key: "jdbc", name: "jdbc"},
	{key: "kafkaLog", name: "kafkalog"},
}

// adapterByKey finds an adapter by YAML key, case-insensitively.
func adapterByKey(key string) (adapter, bool) {
	for _, a := range adapters {
		if strings.EqualFold(a.key, key) {
			return a, true
		}
	}
	return adapter{}, false
}

// adapterKeys lists the adapter keys for error messages.
func adapterKeys() string {
	keys := make([]string, len(adapters))
	for i, a := range adapters {
		keys[i] = a.key
	}
	return strings.Join(keys, ", ")
}

// checkAdapters checks the persistenceAdapter section: exactly one known adapter
// key, whose block is a mapping or empty. An empty section (null or {}) is an
// error; a missing section was given the memory adapter before this runs.
func (c *checker) checkAdapters(v any, path string) *Error {
	if v != nil {
		if _, ok := v.(map[string]any); !ok {
			return c.errorf(path, v, "must be a mapping with one adapter key, not "+describe(v), adapterKeys())
		}
	}
	m, _ := v.(map[string]any)
	keys := sortedKeys(m)
	var found []string
	for _, k := range keys {
		a, ok := adapterByKey(k)
		if !ok {
			return c.errorf(c.spell.key(path, k), nil, "unknown persistence adapter", adapterKeys())
		}
		key := joinKey(path, a.key)
		switch m[k].(type) {
		case nil, map[string]any:
		default:
			return c.errorf(key, m[k], "the adapter's options must be a mapping (or empty), not "+describe(m[k]), "")
		}
		found = append(found, a.key)
	}
	switch len(found) {
	case 0:
		return c.errorf(path, nil, "exactly one adapter is required, found none", adapterKeys())
	case 1:
		return nil
	}
	sort.Slice(found, func(i, j int) bool { return adapterIndex(found[i]) < adapterIndex(found[j]) })
	return c.errorf(path, nil, fmt.Sprintf("exactly one adapter is allowed, found %d: %s",
		len(found), strings.Join(found, ", ")), adapterKeys())
}

func adapterIndex(key string) int {
	for i, a := range adapters {
		if a.key == key {
			return i
		}
	}
	return len(adapters)
}

// buildPersistence turns the checked persistenceAdapter section into a
// Persistence. persistent=false forces the memory adapter; the options of the
// adapter it replaces are dropped (they were still checked).
func buildPersistence(blocks adapterBlocks, persistent bool) Persistence {
	var p Persistence
	for k, v := range blocks { // exactly one, by checkAdapters
		a, _ := adapterByKey(k)
		opts, _ := v.(map[string]any)
		if opts == nil {
			opts = map[string]any{}
		}
		p = Persistence{Adapter: a.name, Key: a.key, Options: opts}
	}
	if !persistent && p.Adapter != "memory" {
		p = Persistence{Adapter: "memory", Key: "memory", Options: map[string]any{}}
	}
	return p
}
