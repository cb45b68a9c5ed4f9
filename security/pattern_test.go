package security

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestPatternMatches(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"FOO", "FOO", true},
		{"FOO", "FOO.BAR", false},
		{"FOO", "FOOBAR", false},
		{"FOO.BAR", "FOO", false},
		{"*", "FOO", true},
		{"*", "FOO.BAR", false},
		{"FOO.*", "FOO.BAR", true},
		{"FOO.*", "FOO", false},
		{"FOO.*", "FOO.BAR.BAZ", false},
		{"*.BAR", "FOO.BAR", true},
		{"FOO.*.BAZ", "FOO.X.BAZ", true},
		{"FOO.*.BAZ", "FOO.X.Y.BAZ", false},
		{">", "FOO", true},
		{">", "FOO.BAR.BAZ", true},
		{">", "", true},
		{"USERS.>", "USERS", true}, // '>' matches zero elements, as ActiveMQ 5.17 does
		{"USERS.>", "USERS.a", true},
		{"USERS.>", "USERS.a.b", true},
		{"USERS.>", "USERSX", false},
		{"USERS.>", "FOO.USERS", false},
		{"USERS.*.>", "USERS", false},
		{"USERS.*.>", "USERS.a", true},
		{"FOO*", "FOOBAR", false}, // a wildcard inside an element is a character
		{"FOO*", "FOO*", true},
		{"A..B", "A..B", true},
		{"A.*.B", "A..B", true},
	}
	for _, tt := range tests {
		if got := patternMatches(tt.pattern, tt.name); got != tt.want {
			t.Errorf("patternMatches(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
		var root patternNode
		root.add(&Entry{Pattern: tt.pattern})
		if got := len(root.matchName(tt.name, nil)) == 1; got != tt.want {
			t.Errorf("tree match of %q against %q = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

// TestTreeAgreesWithDefinition matches many names against a tree of many patterns
// and checks that it finds exactly the entries patternMatches says match.
func TestTreeAgreesWithDefinition(t *testing.T) {
	elems := []string{"A", "B", "C", "*", ">"}
	var patterns []string
	var gen func(prefix []string, depth int)
	gen = func(prefix []string, depth int) {
		if len(prefix) > 0 {
			patterns = append(patterns, strings.Join(prefix, "."))
		}
		if depth == 0 || len(prefix) > 0 && prefix[len(prefix)-1] == ">" {
			return
		}
		for _, e := range elems {
			gen(append(slices.Clone(prefix), e), depth-1)
		}
	}
	gen(nil, 3)
	var root patternNode
	entries := make([]*Entry, len(patterns))
	for i, p := range patterns {
		entries[i] = &Entry{Pattern: p}
		root.add(entries[i])
	}
	names := []string{"A", "B", "A.B", "A.A.A", "C.B.A", "A.B.C.A", "X", "A.X.C"}
	for _, name := range names {
		got := root.matchName(name, nil)
		var want []*Entry
		for _, e := range entries {
			if patternMatches(e.Pattern, name) {
				want = append(want, e)
			}
		}
		if fmt.Sprint(sortedPatterns(got)) != fmt.Sprint(sortedPatterns(want)) {
			t.Errorf("%s: tree found %v, want %v", name, sortedPatterns(got), sortedPatterns(want))
		}
	}
}

func sortedPatterns(es []*Entry) []string {
	var ps []string
	for _, e := range es {
		ps = append(ps, e.Pattern)
	}
	slices.Sort(ps)
	return ps
}

// TestWildcardNames checks that a wildcard name gets only the entries that cover
// every destination it stands for.
func TestWildcardNames(t *testing.T) {
	patterns := []string{">", "FOO.>", "FOO.*", "FOO.BAR", "*.BAR", "FOO.*.>"}
	var root patternNode
	for _, p := range patterns {
		root.add(&Entry{Pattern: p})
	}
	tests := []struct {
		name string
		want []string
	}{
		{"FOO.>", []string{">", "FOO.>"}},
		{"FOO.*", []string{">", "FOO.*", "FOO.*.>", "FOO.>"}},
		{"*.BAR", []string{"*.BAR", ">"}},
		{">", []string{">"}},
		{"*", []string{">"}},
		{"FOO.*.X", []string{">", "FOO.*.>", "FOO.>"}},
	}
	for _, tt := range tests {
		if got := sortedPatterns(root.matchName(tt.name, nil)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}
