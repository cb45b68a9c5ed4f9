package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// EnvPrefix starts every environment variable that overrides a key.
const EnvPrefix = "BROKER_"

const envAllowed = EnvPrefix + "<PATH>, the key path with \"_\" between keys and list indexes, " +
	"e.g. BROKER_BROKER_BROKERNAME, BROKER_TRANSPORTCONNECTORS_0_URI"

// origins remembers which settings came from the environment: lower-cased key
// path -> variable name. Paths that a variable created (a new list element, a new
// adapter block) are recorded too.
type origins map[string]string

// annotate adds the environment variable that set err's key, or one of the keys
// above it, to err's problem.
func (o origins) annotate(err *Error) *Error {
	if err == nil || len(o) == 0 {
		return err
	}
	for p := strings.ToLower(err.Key); p != ""; p = parentPath(p) {
		if name, ok := o[p]; ok {
			err.Problem += " (set by environment variable " + name + ")"
			return err
		}
	}
	return err
}

// parentPath strips the last ".key" or "[i]" from a path.
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// overlay is the environment being applied to a settings tree.
type overlay struct {
	from origins
	v    envVar // the variable being applied
}

// overlayEnv applies every BROKER_ variable of env to tree, in order of their key
// paths (list indexes numerically), skipping variables that the file names in
// placeholders. Variable names are matched case-insensitively; each name is
// split at "_" into keys and list indexes. A key path must exist in the schema:
// section keys must be known, list indexes may point at an existing element or
// at the end of the list (which appends an element), and inside an adapter's
// block any key may be created.
func overlayEnv(tree map[string]any, env environ, skip map[string]bool) (origins, []string, *Error) {
	type job struct {
		v    envVar
		segs []string
	}
	var jobs []job
	var ignored []string
	for _, v := range env.list {
		if len(v.name) < len(EnvPrefix) || !strings.EqualFold(v.name[:len(EnvPrefix)], EnvPrefix) || skip[v.name] {
			continue
		}
		segs := strings.Split(strings.ToLower(v.name[len(EnvPrefix):]), "_")
		for _, s := range segs {
			if s == "" {
				return nil, nil, newError(v.name, v.value, "malformed variable name: empty key between \"_\"", envAllowed)
			}
		}
		if _, known := schema.field(segs[0]); !known {
			ignored = append(ignored, v.name)
			continue
		}
		jobs = append(jobs, job{v, segs})
	}
	sort.SliceStable(jobs, func(i, j int) bool { return lessSegs(jobs[i].segs, jobs[j].segs) })
	o := &overlay{from: origins{}}
	for i, j := range jobs {
		if i > 0 && !lessSegs(jobs[i-1].segs, j.segs) {
			return nil, nil, newError(j.v.name, j.v.value,
				"the same key is also set by "+jobs[i-1].v.name+" (names are case-insensitive)", "")
		}
		o.v = j.v
		if _, err := o.put(tree, schema, j.segs, "", ""); err != nil {
			return nil, nil, err
		}
	}
	return o.from, ignored, nil
}

// lessSegs orders key paths, comparing list indexes as numbers.
func lessSegs(a, b []string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		na, ea := strconv.Atoi(a[i])
		nb, eb := strconv.Atoi(b[i])
		if ea == nil && eb == nil && na != nb {
			return na < nb
		}
		return a[i] < b[i]
	}
	return len(a) < len(b)
}

// put applies o.v at segs below slot, which is described by n and sits at path
// (display form; lpath lower-cased), and returns the new value of the slot.
func (o *overlay) put(slot any, n *schemaNode, segs []string, path, lpath string) (any, *Error) {
	switch n.kind {
	case rejectedNode:
		return nil, o.errorf(describePath(path)+": "+n.hint, "")
	case namesNode:
		if len(segs) > 0 {
			return nil, o.errorf(describePath(path)+" is a list of names; set it whole, comma-separated, e.g. "+
				o.v.name[:len(o.v.name)-len(strings.Join(segs, "_"))-1]+"=a,b", namesAllowed)
		}
	}
	if len(segs) == 0 {
		return o.leaf(slot, n, path, lpath)
	}
	seg := segs[0]
	switch n.kind {
	case sectionNode:
		m, err := o.mapping(slot, path, lpath)
		if err != nil {
			return nil, err
		}
		f, ok := n.field(seg)
		if !ok {
			return nil, o.errorf(fmt.Sprintf("no key %q in %s", seg, describePath(path)), "keys "+n.allowed())
		}
		lk := strings.ToLower(f.name)
		child, err := o.put(m[lk], f.node, segs[1:], joinKey(path, f.name), joinKey(lpath, lk))
		if err != nil {
			return nil, err
		}
		m[lk] = child
		return m, nil
	case adaptersNode:
		m, err := o.mapping(slot, path, lpath)
		if err != nil {
			return nil, err
		}
		a, ok := adapterByKey(seg)
		if !ok {
			return nil, o.errorf(fmt.Sprintf("no persistence adapter %q", seg), adapterKeys())
		}
		if len(segs) == 1 {
			return nil, o.errorf(joinKey(path, a.key)+" is an adapter's block; set one of its options, e.g. "+o.v.name+"_<OPTION>", "")
		}
		lk := strings.ToLower(a.key)
		child, err := o.put(m[lk], &schemaNode{kind: openNode}, segs[1:], joinKey(path, a.key), joinKey(lpath, lk))
		if err != nil {
			return nil, err
		}
		m[lk] = child
		return m, nil
	case listNode:
		return o.element(slot, n.elem, segs, path, lpath)
	case openNode:
		if _, isList := slot.([]any); isList {
			return o.element(slot, n, segs, path, lpath)
		}
		m, err := o.mapping(slot, path, lpath)
		if err != nil {
			return nil, err
		}
		child, err := o.put(m[seg], n, segs[1:], joinKey(path, seg), joinKey(lpath, seg))
		if err != nil {
			return nil, err
		}
		m[seg] = child
		return m, nil
	}
	return nil, o.errorf(fmt.Sprintf("%s is a single value; it has no key %q", describePath(path), seg), "")
}

// leaf sets the variable's value in slot.
func (o *overlay) leaf(slot any, n *schemaNode, path, lpath string) (any, *Error) {
	switch n.kind {
	case valueNode, namesNode:
	case openNode:
		switch slot.(type) {
		case map[string]any, []any:
			return nil, o.errorf(describePath(path)+" is "+describe(slot)+"; set its keys one by one", "")
		}
	default:
		return nil, o.errorf(describePath(path)+" is a section; set its keys one by one", envAllowed)
	}
	o.from[lpath] = o.v.name
	return o.v.value, nil
}

// mapping returns slot as a mapping, creating it when absent.
func (o *overlay) mapping(slot any, path, lpath string) (map[string]any, *Error) {
	switch m := slot.(type) {
	case map[string]any:
		return m, nil
	case nil:
		o.created(lpath)
		return map[string]any{}, nil
	}
	return nil, o.errorf(describePath(path)+" is "+describe(slot)+" in the file, not a mapping", "")
}

// element applies the variable to a list element; the index may be the list's
// length, which appends a new element.
func (o *overlay) element(slot any, elem *schemaNode, segs []string, path, lpath string) (any, *Error) {
	var l []any
	switch x := slot.(type) {
	case []any:
		l = x
	case nil:
		o.created(lpath)
	default:
		return nil, o.errorf(describePath(path)+" is "+describe(slot)+" in the file, not a list", "")
	}
	i, err := strconv.Atoi(segs[0])
	if err != nil || i < 0 || strconv.Itoa(i) != segs[0] {
		return nil, o.errorf(fmt.Sprintf("%q is not a list index of %s", segs[0], describePath(path)),
			fmt.Sprintf("0 to %d (%d appends an element)", len(l), len(l)))
	}
	if i > len(l) {
		return nil, o.errorf(fmt.Sprintf("index %d is beyond the end of %s, which has %d element(s)", i, describePath(path), len(l)),
			fmt.Sprintf("0 to %d (%d appends an element)", len(l), len(l)))
	}
	if i == len(l) {
		l = append(l, nil)
		o.created(joinIndex(lpath, i))
	}
	child, perr := o.put(l[i], elem, segs[1:], joinIndex(path, i), joinIndex(lpath, i))
	if perr != nil {
		return nil, perr
	}
	l[i] = child
	return l, nil
}

// created records that the current variable created the container at lpath.
func (o *overlay) created(lpath string) {
	if _, ok := o.from[lpath]; !ok && lpath != "" {
		o.from[lpath] = o.v.name
	}
}

func (o *overlay) errorf(problem, allowed string) *Error {
	return newError(o.v.name, o.v.value, problem, allowed)
}

func describePath(path string) string {
	if path == "" {
		return "the file's top level"
	}
	return path
}
