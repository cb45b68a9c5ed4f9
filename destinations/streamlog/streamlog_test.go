package streamlog

import (
	"strings"
	"testing"
)

func TestValidTopicName(t *testing.T) {
	for name, want := range map[string]bool{
		"orders":                 true,
		"a.b_c-D9":               true,
		strings.Repeat("x", 200): true,
		strings.Repeat("x", 201): false,
		"":                       false,
		".":                      false,
		"..":                     false,
		"...":                    true,
		"a/b":                    false,
		"a b":                    false,
		"ü":                      false,
		"_":                      true,
	} {
		if got := ValidTopicName(name); got != want {
			t.Errorf("ValidTopicName(%.20q) = %v, want %v", name, got, want)
		}
	}
}
