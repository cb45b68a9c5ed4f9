package tests

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/activemq-go/broker"

// allowed lists, for each package prefix, the project packages it may import (directly
// or not), following ../shared/DESIGN.md §1. A package not listed may import nothing of
// the project. cmd and tests may import anything.
var allowed = map[string][]string{
	"config":                {},
	"internal/vfs":          {},
	"persistence":           {},
	"persistence/storetest": {"persistence"},
	// persistence/internal holds what the adapters share (group-commit queue, ordered
	// callbacks, batch recording, option parsing): no I/O of its own, no adapter. It is
	// listed before "persistence", whose sub-packages permitted refuses.
	"persistence/internal":  {"persistence/internal", "persistence", "config"},
	"persistence/memstore":  {"persistence/internal", "persistence"},
	"persistence/journal":   {"persistence/internal", "persistence", "internal/vfs", "config"},
	"persistence/boltstore": {"persistence/internal", "persistence", "config"},
	"persistence/pgstore":   {"persistence/internal", "persistence", "config"},
	"persistence/logstore":  {"persistence/internal", "persistence", "kafkalog", "internal/vfs", "config"},
	"kafkalog":              {"internal/vfs"},
	"durable":               {"persistence"},
	"destinations":          {"persistence", "kafkalog", "internal/vfs"},
	"broker":                {"destinations", "durable", "persistence", "kafkalog", "internal/vfs"},
	"transport/stomp/codec": {},
	"transport/stomp":       {"transport/stomp/codec", "broker", "destinations", "durable", "persistence", "kafkalog", "internal/vfs"},
	"transport":             {"transport/stomp", "transport/stomp/codec", "broker", "destinations", "durable", "persistence", "kafkalog", "internal/vfs"},
	"internal/pgtest":       {},
	"internal/loadtest":     {},
}

// TestLayering fails when a package imports across the layering of DESIGN.md: an adapter
// or kafkalog importing broker or transport, the broker importing transport, anything
// but cmd and tests naming a concrete adapter.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], module+"/") {
			continue
		}
		pkg := strings.TrimPrefix(fields[0], module+"/")
		if strings.HasPrefix(pkg, "cmd/") || pkg == "tests" || strings.HasPrefix(pkg, "tests/") {
			continue
		}
		rule, ok := ruleFor(pkg)
		if !ok {
			t.Errorf("package %s has no layering rule: add it to tests/layering_test.go following DESIGN.md", pkg)
			continue
		}
		checked++
		for _, dep := range fields[1:] {
			if !strings.HasPrefix(dep, module+"/") {
				continue
			}
			d := strings.TrimPrefix(dep, module+"/")
			if !permitted(d, rule) {
				t.Errorf("%s imports %s, which DESIGN.md's layering forbids", pkg, d)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d packages checked; go list output looks wrong", checked)
	}
}

// ruleFor finds the most specific rule for pkg.
func ruleFor(pkg string) ([]string, bool) {
	best, found := "", false
	for prefix := range allowed {
		if (pkg == prefix || strings.HasPrefix(pkg, prefix+"/")) && len(prefix) >= len(best) {
			best, found = prefix, true
		}
	}
	if !found {
		return nil, false
	}
	return append(allowed[best], best), true
}

func permitted(dep string, rule []string) bool {
	for _, p := range rule {
		if dep == p || strings.HasPrefix(dep, p+"/") {
			// A sub-package of an allowed package is allowed only if it is not an adapter.
			if strings.HasPrefix(dep, "persistence/") && p == "persistence" && dep != "persistence" {
				return false
			}
			return true
		}
	}
	return false
}
