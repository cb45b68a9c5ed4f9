package xmlconfig

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Errors of Convert.
var (
	// ErrXML: the file is not well-formed XML.
	ErrXML = errors.New("xmlconfig: not well-formed XML")
	// ErrUnsafe: a value has no safe counterpart (deleteAllMessagesOnStartup="true").
	ErrUnsafe = errors.New("xmlconfig: cannot convert safely")
	// ErrNoBroker: the file has no <broker> element (camel.xml, jetty.xml, ...).
	ErrNoBroker = errors.New("xmlconfig: no <broker> element: not a broker configuration " +
		"(camel.xml, jetty.xml and the like, which activemq.xml imports, have no counterpart); import the activemq.xml holding the <broker>")
)

// Status is what became of one element or attribute.
type Status int

const (
	// Converted: the YAML does what the XML did.
	Converted Status = iota
	// Differs: converted, with a difference the note explains.
	Differs
	// Unsupported: not in the YAML; the note says why.
	Unsupported
)

func (s Status) String() string {
	switch s {
	case Converted:
		return "converted"
	case Differs:
		return "converted with a difference"
	default:
		return "not supported"
	}
}

// Item is one line of the report.
type Item struct {
	Line    int
	Element string // path of the element, "@attr" for an attribute
	Status  Status
	Note    string
}

func (it Item) String() string {
	s := fmt.Sprintf("line %d: %s: %s", it.Line, it.Element, it.Status)
	if it.Note != "" {
		s += ": " + it.Note
	}
	return s
}

// WriteReport writes the items, then the variables to set and a summary.
func (r *Result) WriteReport(w io.Writer) error {
	var b strings.Builder
	count := map[Status]int{}
	for _, it := range r.Items {
		fmt.Fprintln(&b, it)
		count[it.Status]++
	}
	if lines := r.envLines(); len(lines) > 0 {
		fmt.Fprintln(&b, "environment variables to set before starting the broker:")
		for _, l := range lines {
			fmt.Fprintln(&b, l)
		}
	}
	if len(r.Commands) > 0 {
		fmt.Fprintln(&b, "commands producing the PEM files sslContext reads (each asks for the store's password):")
	}
	for _, c := range r.Commands {
		fmt.Fprintln(&b, "  "+c)
	}
	if len(r.Exposure) > 0 {
		fmt.Fprintln(&b, "listening differently from the XML:")
		for _, e := range r.Exposure {
			fmt.Fprintln(&b, "  "+e)
		}
	}
	fmt.Fprintln(&b, r.startAdvice())
	fmt.Fprintf(&b, "summary: %d converted, %d converted with a difference, %d not supported\n",
		count[Converted], count[Differs], count[Unsupported])
	_, err := io.WriteString(w, b.String())
	return err
}

// envLines lists the environment variables the YAML reads, sorted, one
// indented line each: "  NAME (what it holds)".
func (r *Result) envLines() []string {
	vars := make([]string, 0, len(r.Env))
	for v := range r.Env {
		vars = append(vars, v)
	}
	sort.Strings(vars)
	for i, v := range vars {
		vars[i] = fmt.Sprintf("  %s (%s)", v, r.Env[v])
	}
	return vars
}

// Unsupported lists the paths of the items not supported.
func (r *Result) Unsupported() []Item {
	var out []Item
	for _, it := range r.Items {
		if it.Status == Unsupported {
			out = append(out, it)
		}
	}
	return out
}
