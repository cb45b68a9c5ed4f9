package config

import (
	"bytes"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Masked replaces a secret's value in LoadEffective's answer.
const Masked = "********"

// LoadEffective loads the configuration file at path as Load does and returns it as the
// broker uses it, in the file's shape: every key with its value after defaults, ${...}
// placeholders and BROKER_ variables, keys in their canonical spelling, and every
// secret (a set key naming a password, passcode, secret, passphrase or token) replaced
// by Masked. It is YAML that Load accepts.
func LoadEffective(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{Value: path, Problem: readProblem("cannot read the configuration file", err), Err: err}
	}
	_, tree, perr := parseTree(data, os.Environ(), path)
	if perr != nil {
		return nil, perr
	}
	out, perr := effective(tree)
	if perr != nil {
		return nil, perr
	}
	return out, nil
}

// effective renders the settings tree for LoadEffective.
func effective(tree map[string]any) ([]byte, *Error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(effectiveNode(tree, schema)); err != nil {
		return nil, &Error{Problem: "internal: rendering the effective configuration: " + err.Error()}
	}
	if err := enc.Close(); err != nil {
		return nil, &Error{Problem: "internal: rendering the effective configuration: " + err.Error()}
	}
	return b.Bytes(), nil
}

// effectiveNode gives v, the settings tree at schema node n, its canonical keys and
// masks its secrets, as a yaml node (so the keys keep the schema's order).
func effectiveNode(v any, n *schemaNode) *yaml.Node {
	switch t := v.(type) {
	case map[string]any:
		m := &yaml.Node{Kind: yaml.MappingNode}
		add := func(key string, val any, child *schemaNode) {
			if val == "" && olderNames[key] {
				return // unset: it would clash with the key that replaced it
			}
			var vn *yaml.Node
			if secretKey(key) && val != nil && val != "" {
				if _, isMap := val.(map[string]any); !isMap {
					vn = scalar(Masked)
				}
			}
			if vn == nil {
				vn = effectiveNode(val, child)
			}
			m.Content = append(m.Content, scalar(key), vn)
		}
		if n != nil && n.kind == sectionNode {
			done := map[string]bool{}
			for _, f := range n.fields {
				for k, val := range t {
					if strings.EqualFold(k, f.name) {
						add(f.name, val, f.node)
						done[k] = true
					}
				}
			}
			for _, k := range sortedKeys(t) {
				if !done[k] {
					add(k, t[k], nil)
				}
			}
			return m
		}
		for _, k := range sortedKeys(t) {
			add(k, t[k], nil)
		}
		return m
	case []any:
		s := &yaml.Node{Kind: yaml.SequenceNode}
		var elem *schemaNode
		if n != nil && n.kind == listNode {
			elem = n.elem
		}
		for _, e := range t {
			s.Content = append(s.Content, effectiveNode(e, elem))
		}
		return s
	}
	var vn yaml.Node
	if err := vn.Encode(v); err != nil {
		return scalar("")
	}
	return &vn
}

// olderNames are keys kept for older files under a newer name; Effective writes them
// only when set.
var olderNames = map[string]bool{"statsAddress": true}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

// secretKey reports whether a key's value is a secret Effective masks.
func secretKey(key string) bool {
	k := strings.ToLower(key)
	for _, s := range []string{"password", "passcode", "secret", "passphrase", "token"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}
