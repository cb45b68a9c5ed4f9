package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/internal/setting"
)

// file is the shape of activemq-style.yaml as mapstructure decodes it. Each field
// is one top-level section and its mapstructure tag is the key's canonical
// spelling. The schema that the unknown-key check and the environment overlay
// follow is derived from these types, so adding a section is: a field here, its
// struct (tagged the same way), its defaults in setDefaults, and its validation
// in build.
type file struct {
	Broker              Broker             `mapstructure:"broker"`
	PersistenceAdapter  adapterBlocks      `mapstructure:"persistenceAdapter"`
	TransportConnectors []connectorEntry   `mapstructure:"transportConnectors"`
	SystemUsage         systemUsageSection `mapstructure:"systemUsage"`
	DestinationPolicy   []policy.Policy    `mapstructure:"destinationPolicy"`
	Streams             streamsSection     `mapstructure:"streams"`
	VirtualTopics       VirtualTopics      `mapstructure:"virtualTopics"`
	SSLContext          sslContextSection  `mapstructure:"sslContext"`
	Plugins             pluginsSection     `mapstructure:"plugins"`
	Metrics             Metrics            `mapstructure:"metrics"`
}

// adapterBlocks is the persistenceAdapter section: one adapter key whose value is
// that adapter's options. Its own type, because its keys are a closed set of
// names while the blocks under them are open.
type adapterBlocks map[string]any

// connectorEntry is one element of transportConnectors as written.
type connectorEntry struct {
	Name string `mapstructure:"name"`
	URI  string `mapstructure:"uri"`
}

// nodeKind is what a place in the settings tree holds.
type nodeKind int

const (
	valueNode    nodeKind = iota // a single value
	sectionNode                  // a mapping with a closed set of keys
	listNode                     // a list of elem
	openNode                     // a mapping with any keys, values of any shape
	adaptersNode                 // persistenceAdapter: adapter names, each an open block
	namesNode                    // a list of names: a comma-separated string or a list of values
	rejectedNode                 // a key that is never accepted; its hint says what to write instead
)

// schemaNode describes one place in the settings tree.
type schemaNode struct {
	kind   nodeKind
	fields []schemaField // sectionNode
	elem   *schemaNode   // listNode
	hint   string        // rejectedNode
}

// rejectedKey is the type of a field naming a key that a user may be expected to
// write but that is refused with the field's hint tag, instead of the bare
// "unknown key" (authorization entries' tempQueue, which ActiveMQ spells
// tempDestination). It is never decoded: the check stops first.
type rejectedKey struct{}

type schemaField struct {
	name string // canonical spelling
	node *schemaNode
}

// schema is the tree every settings map is checked against.
var schema = schemaOf(reflect.TypeOf(file{}))

func schemaOf(t reflect.Type) *schemaNode {
	switch {
	case t == reflect.TypeOf(adapterBlocks{}):
		return &schemaNode{kind: adaptersNode}
	case t == reflect.TypeOf(nameList{}):
		return &schemaNode{kind: namesNode}
	case t == reflect.TypeOf(rejectedKey{}):
		return &schemaNode{kind: rejectedNode}
	case t.Kind() == reflect.Struct:
		n := &schemaNode{kind: sectionNode}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := f.Tag.Get("mapstructure")
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			node := schemaOf(f.Type)
			if node.kind == rejectedNode {
				node = &schemaNode{kind: rejectedNode, hint: f.Tag.Get("hint")}
			}
			n.fields = append(n.fields, schemaField{name: name, node: node})
		}
		return n
	case t.Kind() == reflect.Slice:
		return &schemaNode{kind: listNode, elem: schemaOf(t.Elem())}
	case t.Kind() == reflect.Map:
		return &schemaNode{kind: openNode}
	}
	return &schemaNode{kind: valueNode}
}

// field finds a section's key, case-insensitively.
func (n *schemaNode) field(key string) (schemaField, bool) {
	for _, f := range n.fields {
		if strings.EqualFold(f.name, key) {
			return f, true
		}
	}
	return schemaField{}, false
}

// mustField finds a key that the schema is known to have.
func (n *schemaNode) mustField(key string) schemaField {
	f, ok := n.field(key)
	if !ok {
		panic("config: no key " + key + " in the schema")
	}
	return f
}

// names lists a section's keys, leaving out rejected ones.
func (n *schemaNode) names() []string {
	names := make([]string, 0, len(n.fields))
	for _, f := range n.fields {
		if f.node.kind != rejectedNode {
			names = append(names, f.name)
		}
	}
	return names
}

// allowed lists a section's keys for error messages, leaving out rejected ones.
func (n *schemaNode) allowed() string { return strings.Join(n.names(), ", ") }

// Paths: keys are joined with ".", list elements are "[i]". The display form uses
// the canonical or as-written spelling; the lower-cased form is the one viper's
// keys and the spelling table use.

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func joinIndex(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// checker walks a settings tree against the schema and reports the first key
// that does not belong, or a value of the wrong shape.
type checker struct {
	spell spelling
	from  origins
	tree  map[string]any // the settings tree, for the values of build's errors
	dir   string         // the configuration file's directory; "" for Parse
}

func (c *checker) check(v any, n *schemaNode, path string) *Error {
	switch n.kind {
	case sectionNode:
		if v == nil {
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return c.errorf(path, v, "must be a mapping of keys to values, not "+describe(v), "keys "+n.allowed())
		}
		for _, k := range sortedKeys(m) {
			f, ok := n.field(k)
			if !ok {
				key := c.spell.key(path, k)
				problem := "unknown key"
				if path == "" {
					problem = "unknown top-level key"
				}
				if s := setting.Suggest(k, n.names()); s != "" {
					problem += " (did you mean " + s + "?)"
				}
				return c.errorf(key, nil, problem, n.allowed())
			}
			if f.node.kind == rejectedNode {
				return c.errorf(c.spell.key(path, k), m[k], f.node.hint, n.allowed())
			}
			if err := c.check(m[k], f.node, joinKey(path, f.name)); err != nil {
				return err
			}
		}
	case listNode:
		if v == nil {
			return nil
		}
		l, ok := v.([]any)
		if !ok {
			return c.errorf(path, v, "must be a list (lines starting with \"- \"), not "+describe(v), "")
		}
		for i, e := range l {
			if err := c.check(e, n.elem, joinIndex(path, i)); err != nil {
				return err
			}
		}
	case adaptersNode:
		return c.checkAdapters(v, path)
	case namesNode:
		if l, ok := v.([]any); ok {
			for i, e := range l {
				if err := c.check(e, &schemaNode{kind: valueNode}, joinIndex(path, i)); err != nil {
					return err
				}
			}
		} else if _, ok := v.(map[string]any); ok {
			return c.errorf(path, nil, "must be a list of names or a comma-separated string, not a mapping", namesAllowed)
		}
	case valueNode:
		switch v.(type) {
		case map[string]any, []any:
			return c.errorf(path, nil, "must be a single value, not "+describe(v), "")
		}
	}
	return nil
}

// errorf builds an *Error for the value at path (nil for none), naming the
// environment variable the value came from, if any.
func (c *checker) errorf(path string, v any, problem, allowed string) *Error {
	return c.from.annotate(newError(path, scalarString(v), problem, allowed))
}

// describe names the shape of a value for messages.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "empty"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64, float64:
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}

// scalarString formats a scalar for Error.Value; mappings and lists give "" so
// that nothing nested (a password) is ever printed.
func scalarString(v any) string {
	switch x := v.(type) {
	case nil, map[string]any, []any:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
