package openwire

import (
	"go/build"
	"strings"
	"testing"
)

// TestLeaf keeps the codec a leaf: its non-test files import the standard library only.
func TestLeaf(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkg.Imports) == 0 {
		t.Fatal("no imports found; the check looks at the wrong directory")
	}
	for _, imp := range pkg.Imports {
		if strings.Contains(strings.Split(imp, "/")[0], ".") {
			t.Errorf("openwire imports %s; it may import only the standard library", imp)
		}
	}
}
