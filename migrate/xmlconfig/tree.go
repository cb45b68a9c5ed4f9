package xmlconfig

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// node is one element of the parsed file, namespaces dropped.
type node struct {
	name   string
	attrs  []xml.Attr // without xmlns and xsi attributes
	kids   []*node
	line   int
	parent *node
	done   map[string]bool // attributes the converter consumed or reported
}

// parseTree reads the whole document into a tree of nodes with line numbers.
func parseTree(data []byte) (*node, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	d.CharsetReader = func(label string, r io.Reader) (io.Reader, error) {
		switch strings.ToLower(label) {
		case "iso-8859-1", "latin1", "us-ascii":
			b, err := io.ReadAll(r)
			rs := make([]rune, len(b))
			for i, c := range b {
				rs[i] = rune(c)
			}
			return strings.NewReader(string(rs)), err
		}
		return nil, fmt.Errorf("unsupported encoding %q", label)
	}
	root := &node{name: "#document"}
	cur := root
	lineAt := func(off int64) int { return 1 + bytes.Count(data[:off], []byte("\n")) }
	for {
		off := d.InputOffset()
		tok, err := d.Token()
		if err != nil {
			if err == io.EOF {
				break
			}
			return nil, fmt.Errorf("%w: %v", ErrXML, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{name: t.Name.Local, line: lineAt(off), parent: cur, done: map[string]bool{}}
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || a.Name.Local == "xmlns" || a.Name.Local == "schemaLocation" {
					continue
				}
				n.attrs = append(n.attrs, xml.Attr{Name: xml.Name{Local: a.Name.Local}, Value: a.Value})
			}
			cur.kids = append(cur.kids, n)
			cur = n
		case xml.EndElement:
			cur = cur.parent
		}
	}
	if cur != root {
		return nil, fmt.Errorf("%w: unexpected end of document", ErrXML)
	}
	return root, nil
}

// attr returns an attribute's value and marks it handled.
func (n *node) attr(name string) (string, bool) {
	for _, a := range n.attrs {
		if strings.EqualFold(a.Name.Local, name) {
			n.done[a.Name.Local] = true
			return a.Value, true
		}
	}
	return "", false
}

// kid returns the first child element called name.
func (n *node) kid(name string) *node {
	for _, k := range n.kids {
		if k.name == name {
			return k
		}
	}
	return nil
}

// path is the element's place in the file, for the report.
func (n *node) path() string {
	var parts []string
	for p := n; p != nil && p.name != "#document"; p = p.parent {
		parts = append(parts, p.name)
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	if len(parts) > 3 {
		parts = append([]string{"…"}, parts[len(parts)-3:]...)
	}
	return strings.Join(parts, "/")
}

// find returns every element called name in n's subtree, in document order.
func (n *node) find(name string) []*node {
	var out []*node
	for _, k := range n.kids {
		if k.name == name {
			out = append(out, k)
		}
		out = append(out, k.find(name)...)
	}
	return out
}
