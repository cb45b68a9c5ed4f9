package config

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps config a leaf: the standard library, viper and viper's own
// dependencies (mapstructure, yaml), and of the broker only three leaves of the
// standard library: internal/setting (the value parsing it shares with the persistence
// adapters), destinations/policy (the destination policy it decodes entries into and
// the broker applies), broker/limits (the defaults of the broker's limits) and
// internal/allowedhosts (the Host patterns it checks and the listeners match).
func TestImports(t *testing.T) {
	allowed := []string{"github.com/spf13/viper", "github.com/go-viper/mapstructure/v2", "go.yaml.in/yaml/v3",
		"github.com/activemq-go/broker/internal/setting", "github.com/activemq-go/broker/destinations/policy",
		"github.com/activemq-go/broker/broker/limits", "github.com/activemq-go/broker/internal/allowedhosts"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first := strings.Split(path, "/")[0]
			if !strings.Contains(first, ".") {
				continue // standard library
			}
			ok := false
			for _, a := range allowed {
				ok = ok || path == a
			}
			if !ok {
				t.Errorf("%s imports %s; config may import only the standard library and %v", name, path, allowed)
			}
		}
	}
}
