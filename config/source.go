package config

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// source is the file after the YAML stage: placeholders expanded, keys checked
// for case-insensitive duplicates, ready for viper.
type source struct {
	doc   map[string]any  // the document, for viper
	top   map[string]bool // top-level keys, lower-cased -> value was null
	spell spelling        // how the file spelled each key
	used  map[string]bool // environment variables named by placeholders
}

// spelling maps a lower-cased key path ("broker.brokernmae") to its last segment
// as written in the file ("brokerNmae"), so that errors about keys that viper has
// lower-cased can name them as the user wrote them.
type spelling map[string]string

// key is the display path of key (lower-cased) under the display path parent.
func (s spelling) key(parent, key string) string {
	if w, ok := s[strings.ToLower(joinKey(parent, key))]; ok {
		return joinKey(parent, w)
	}
	return joinKey(parent, key)
}

// readYAML parses the file, expands ${...} placeholders in every scalar (keys and
// values) and decodes it. Expanding after parsing, scalar by scalar, keeps a
// value like "p#ss: word" one value instead of a comment or a new key. (The
// document is handed to viper decoded rather than re-encoded as text because
// yaml.v3 does not re-encode every node faithfully: the null of "{memory: }"
// comes back as an empty string.)
func readYAML(data []byte, env environ) (*source, *Error) {
	src := &source{top: map[string]bool{}, spell: spelling{}, used: map[string]bool{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		e := yamlError(err)
		if bytes.Contains(data, []byte("${")) {
			e.Problem += " (placeholders are expanded after parsing: inside { } or [ ], quote them: \"${NAME}\")"
		}
		return nil, e
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return src, nil // empty, or only comments
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			return src, nil
		}
		return nil, &Error{
			Problem: fmt.Sprintf("the file must be a mapping of sections (line %d)", root.Line),
			Allowed: "top-level keys " + schema.allowed(),
		}
	}
	if err := src.walk(root, "", "", env); err != nil {
		return nil, err
	}
	if err := doc.Decode(&src.doc); err != nil {
		return nil, yamlError(err)
	}
	for k, v := range src.doc {
		src.top[strings.ToLower(k)] = v == nil
	}
	return src, nil
}

// walk expands placeholders and checks keys below n. path is the display path as
// written, lpath its lower-cased form.
func (s *source) walk(n *yaml.Node, path, lpath string, env environ) *Error {
	switch n.Kind {
	case yaml.MappingNode:
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Value == "<<" { // merge key
				if err := s.walk(v, path, lpath, env); err != nil {
					return err
				}
				continue
			}
			if err := s.scalar(k, path, env, false); err != nil {
				return err
			}
			lk := strings.ToLower(k.Value)
			key := joinKey(path, k.Value)
			if prev, dup := seen[lk]; dup {
				problem := fmt.Sprintf("duplicate key (line %d; first at line %d)", k.Line, prev.Line)
				if prev.Value != k.Value {
					problem = fmt.Sprintf("duplicate key: %q (line %d) and %q (line %d) differ only in case, and keys are case-insensitive",
						prev.Value, prev.Line, k.Value, k.Line)
				}
				return &Error{Key: key, Problem: problem}
			}
			seen[lk] = k
			s.spell[joinKey(lpath, lk)] = k.Value
			if err := s.walk(v, key, joinKey(lpath, lk), env); err != nil {
				return err
			}
			if lk == "password" || lk == "passwordhash" {
				keepString(v)
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := s.walk(c, joinIndex(path, i), joinIndex(lpath, i), env); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		return s.scalar(n, path, env, true)
	}
	return nil
}

// scalar expands the placeholders of one scalar. A plain (unquoted) value that
// held a placeholder is re-typed from its expansion, as if the expansion had been
// written there: "persistent: ${P}" with P=false is the boolean false. An empty
// expansion stays the empty string (not null).
func (s *source) scalar(n *yaml.Node, path string, env environ, isValue bool) *Error {
	if n.Kind != yaml.ScalarNode {
		return nil
	}
	out, changed, perr := expand(n.Value, env, s.used)
	if perr != nil {
		return perr.toError(path, n.Line)
	}
	if !changed {
		return nil
	}
	n.Value = out
	if isValue && out != "" && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
		n.Tag = ""
	}
	return nil
}

// keepString makes a plain scalar a string whatever it looks like, so that a
// password is taken as written: YAML would read password: 0123 as the octal
// number 83, 1e3 as 1000 and true as a boolean. A null stays null (no password).
func keepString(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		n.Tag = "!!str"
	}
}

// yamlError turns a YAML parser error into an *Error, keeping its line number.
func yamlError(err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.ReplaceAll(msg, "\n", " ")
	return &Error{Problem: "invalid YAML: " + strings.Join(strings.Fields(msg), " "), Err: err}
}
