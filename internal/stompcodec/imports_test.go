package stompcodec

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps the codec a leaf: the standard library and go-stomp's frame types only.
func TestImports(t *testing.T) {
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		name := f.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			stdlib := !strings.Contains(strings.Split(path, "/")[0], ".")
			if path == "net" || strings.HasPrefix(path, "net/") ||
				(!stdlib && path != "github.com/go-stomp/stomp/v3/frame") {
				t.Errorf("%s imports %s; the codec may import only the standard library (no net) and go-stomp's frame", name, path)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}
