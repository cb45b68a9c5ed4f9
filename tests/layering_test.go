package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/activemq-go/broker"

// allowed lists, for each package prefix, the project packages it may import (directly
// or not), following ../shared/DESIGN.md §1. A package not listed may import nothing of
// the project. cmd and tests may import anything.
var allowed = map[string][]string{
	// config may use three leaves of the standard library: internal/setting, the value
	// parsing (sizes, durations, the Error naming a bad key) it shares with the
	// adapters; destinations/policy, the destination policy it decodes the file's
	// entries into and the broker applies (defined once, below both); and
	// broker/limits, the defaults of the broker's limits that systemUsage defaults to;
	// internal/allowedhosts, whose Host patterns it checks.
	"config":           {"internal/setting", "destinations/policy", "broker/limits", "internal/allowedhosts"},
	"internal/setting": {},
	"broker/limits":    {},
	// migrate/xmlconfig converts activemq.xml to YAML text: it writes the keys config
	// reads (its tests load the result), those of a destination policy from the list
	// destinations/policy, a leaf, keeps of them; nothing else of the project.
	"migrate/xmlconfig": {"destinations/policy"},
	// destinations/policy defines a destination's policy once, for config, the
	// importer, the destinations and the broker: a leaf.
	"destinations/policy":   {},
	"internal/vfs":          {},
	"persistence":           {},
	"persistence/storetest": {"persistence"},
	// persistence/internal holds what the adapters share (group-commit queue, ordered
	// callbacks, batch recording, option parsing): no I/O of its own, no adapter. It is
	// listed before "persistence", whose sub-packages permitted refuses.
	// Neither it nor any adapter may import config (viper, yaml, fsnotify): an adapter
	// parses its own block of options with internal/setting.
	"persistence/internal": {"persistence/internal", "persistence", "internal/setting"},
	// logshell/shelltest, the log-structured adapters' shared test code (only tests
	// import it), opens stores on internal/vfs's memory file system, runs the storetest
	// suite and takes the memory store as its oracle (listed before "persistence", whose
	// sub-packages permitted refuses).
	"persistence/internal/logshell/shelltest": {"persistence/storetest", "persistence/memstore", "persistence/internal", "persistence", "internal/vfs", "internal/setting"},
	"persistence/memstore":                    {"persistence/internal", "persistence"},
	"persistence/journal":                     {"persistence/internal", "persistence", "internal/vfs", "internal/setting"},
	"persistence/boltstore":                   {"persistence/internal", "persistence", "internal/setting"},
	"persistence/pgstore":                     {"persistence/internal", "persistence", "internal/setting"},
	// pgstore/pgshared, the jdbc adapter's shared queues (several nodes over one
	// database), stores messages in pgstore's encoding and opens its pool with
	// pgstore's URL handling; nothing above persistence.
	"persistence/pgstore/pgshared": {"persistence/pgstore", "persistence/internal", "persistence", "internal/setting"},
	// logstore keeps the store in a kafkalog log (whose value types are
	// destinations/streamlog's).
	"persistence/logstore": {"persistence/internal", "persistence", "kafkalog", "destinations/streamlog", "internal/vfs", "internal/setting"},
	// destinations/streamlog, a leaf, is the stream log as destinations uses it: the
	// Log interface and its own value types (records, offsets, assignments) and errors.
	// The engines implement it in those very types (kafkalog's are aliases of them), so
	// records pass with no copy; destinations, durable and the broker know no engine.
	"destinations/streamlog": {},
	// kafkalog, the embedded engine, is a streamlog.Log.
	"kafkalog": {"destinations/streamlog", "internal/vfs"},
	// durable keeps durable subscriptions over the destinations' queues and topics.
	"durable": {"destinations", "destinations/policy", "destinations/selector", "persistence"},
	// destinations (queues, topics, streams) knows the store, and the stream log only
	// as a destinations/streamlog.Log (its sub-packages, the rule's own prefix).
	"destinations": {"persistence"},
	// broker hands destinations the stream log it is given, a streamlog.Log.
	// broker asks security, a leaf, who a client is and what it may do.
	// internal/histogram, a leaf, holds its latency histograms (no metrics library);
	// internal/loglimit, a leaf, limits its repeated log lines.
	"broker": {"destinations", "durable", "persistence", "security", "internal/histogram", "internal/loglimit"},
	// The STOMP frame codec: a leaf the transport and the client tools both import.
	"internal/stompcodec": {},
	"transport/stomp":     {"internal/stompcodec", "broker", "destinations", "durable", "persistence", "security", "internal/histogram", "internal/loglimit"},
	"transport/openwire":  {"internal/openwire", "broker", "destinations", "durable", "persistence", "security", "internal/histogram", "internal/loglimit"},
	"transport":           {"transport/stomp", "transport/openwire", "internal/stompcodec", "internal/openwire", "broker", "destinations", "durable", "persistence", "security", "internal/histogram", "internal/loglimit", "internal/allowedhosts"},
	"internal/pgtest":     {},
	"internal/loadtest":   {},
	// internal/race, for tests: whether -race is on, to scale their deadlines.
	"internal/race": {},

	// The OpenWire codec (issue 23): a leaf of the standard library, like the STOMP one.
	"internal/openwire": {},

	// security (users, groups, password hashes, the authorization map) is a leaf: the
	// broker and transport ask it; cmd builds its Config from config's Plugins.
	"security":        {},
	"internal/gctune": {},

	"internal/histogram": {},
	// internal/loglimit, a leaf, lets a repeated log line through once a minute.
	"internal/loglimit": {},
	// internal/allowedhosts, a leaf, is the Host check of the HTTP listeners (admin,
	// WebSocket connectors) against DNS rebinding.
	"internal/allowedhosts": {},
	// internal/buildinfo, a leaf, says which build is running (version, commit, date).
	"internal/buildinfo": {},
	// admin/metrics reads the broker's counters (and the security service's) at
	// scrape time through the management surface, never the broker itself; it changes
	// nothing.
	"admin/metrics": {"broker/management", "destinations", "durable", "persistence", "security", "internal/histogram", "internal/buildinfo"},
	// The web console renders what its Backend (its own Reader and Manager) gives; it
	// uses nothing of the broker but through package admin, which links it
	// (admin.NewBrokerBackend).
	"admin/console": {"admin", "broker", "destinations", "destinations/policy", "destinations/selector", "durable", "persistence", "security", "internal/histogram", "internal/loglimit", "internal/allowedhosts", "internal/buildinfo"},
	// browsertest starts a headless Chromium for the browser tests.
	"internal/browsertest": {},
	// stompclient, the STOMP client of the command-line tools, reads and writes frames
	// with the codec the transport uses.
	"internal/stompclient": {"internal/stompcodec"},
	// migrate moves stored messages from another STOMP broker with the tools' client.
	"migrate": {"internal/stompclient", "internal/stompcodec"},
	// admin, the admin HTTP listener, uses the broker's management surface and its
	// types, and asks security for the operators; never transport or config (cmd
	// hands it what it needs).
	"admin": {"broker", "destinations", "durable", "persistence", "security", "internal/histogram", "internal/loglimit", "internal/allowedhosts", "internal/buildinfo"},

	// kafkalog/kafkaengine keeps streams in Apache Kafka (franz-go): it is a
	// streamlog.Log in streamlog's value types and knows nothing of the broker,
	// destinations proper or the embedded engine (cmd hands it over).
	"kafkalog/kafkaengine": {"destinations/streamlog"},

	// The parts split out of the broker (issue 22 §2) sit below it: the broker imports
	// them, and each asks its host through a small interface of its own, never the
	// broker or transport (TestLayeringDirection holds that too). broker/scheduler
	// keeps scheduled messages in the store and hands due ones back to its Host.
	"broker/scheduler": {"destinations", "persistence", "broker/limits"},
	// broker/dedup keeps the duplicate-detection ids of destinations and durable
	// subscriptions, and their id logs in the store; its Host gives it the policies.
	"broker/dedup": {"destinations", "persistence"},
	// broker/advisory publishes ActiveMQ's advisory messages on topics it makes with
	// destinations; its Host gives it message ids and authorization.
	"broker/advisory": {"destinations", "persistence", "internal/loglimit"},
	// broker/sharedmode is the broker's side of jdbc mode: shared (the engine's
	// batched sends, its notifications, shared durable subscriptions); its Host gives
	// it the node's queues and topics. It asks broker/advisory, a sibling, which topics
	// are advisories (node-local), and returns durable's Stats.
	"broker/sharedmode": {"broker/advisory", "destinations", "durable", "persistence", "internal/loglimit"},
	// broker/management is the management surface (browse, purge, move, retry, kick,
	// stats) and holds the broker's counters; admin and admin/metrics read it. Its Host
	// gives it the broker's destinations, connections and routing; it asks durable for
	// the durable subscriptions' counts and security only for the Subject type an
	// operator's send carries.
	"broker/management": {"destinations", "durable", "persistence", "security", "internal/histogram"},
	// broker/registry is the destination registry: the queues and topics by name, the
	// temporary ones and their owners, virtual topics, wildcard subscriptions, the
	// count against maxDestinations and the collector of inactive ones, under the lock
	// that was broker.mu. Its Host gives it authorization and advisories' news; it asks
	// broker/advisory, a sibling, which topics are advisories (never counted).
	"broker/registry": {"broker/advisory", "broker/limits", "destinations", "persistence", "internal/loglimit"},
	// broker/flowcontrol is the memory and store accounting and producer flow control;
	// its Host finds the queues and topics a SEND names.
	"broker/flowcontrol": {"destinations", "persistence", "internal/loglimit"},
	// broker/access is the broker's side of security: it asks security who a client is
	// and what it may do, and counts the denials in broker/management's meter.
	"broker/access": {"broker/management", "destinations", "durable", "persistence", "security", "internal/histogram", "internal/loglimit"},
	// broker/conns is the registry of live connections (client-ids, link stealing and
	// resumption, users' connection limits); it knows a connection by its Client.
	"broker/conns": {"destinations", "persistence"},
	// broker/ackretry writes again the auto-acknowledgements whose store write failed.
	"broker/ackretry": {"destinations", "persistence"},
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

// forbidden are the imports that break the layering's direction whatever the rules
// above say: the broker is protocol-neutral and below transport; destinations and
// durable are below the broker, and destinations below durable. None of them knows a
// stream engine: they reach streams through destinations/streamlog only (the engines
// are kafkalog and kafkalog/kafkaengine; cmd wires one in).
var forbidden = map[string][]string{
	"broker":       {"transport", "kafkalog"},
	"destinations": {"broker", "durable", "transport", "kafkalog"},
	"durable":      {"broker", "transport", "kafkalog"},
}

// TestLayeringDirection fails when broker imports transport, or destinations or
// durable import the broker or transport, or destinations imports durable, or any of
// them imports a stream engine.
func TestLayeringDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`,
		module+"/broker/...", module+"/destinations/...", module+"/durable/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], module+"/") {
			continue
		}
		pkg := strings.TrimPrefix(fields[0], module+"/")
		top := strings.SplitN(pkg, "/", 2)[0]
		bans, ok := forbidden[top]
		if !ok {
			continue
		}
		seen[top] = true
		for _, dep := range fields[1:] {
			d := strings.TrimPrefix(dep, module+"/")
			for _, ban := range bans {
				if d == ban || strings.HasPrefix(d, ban+"/") {
					t.Errorf("%s imports %s: the layering goes broker -> durable -> destinations -> persistence, streams through destinations/streamlog", pkg, d)
				}
			}
		}
	}
	for top := range forbidden {
		if !seen[top] {
			t.Errorf("package %s not in go list's output; the check looks wrong", top)
		}
	}
}

// TestBrokerHasNoStompDestinations fails when the broker's code (tests aside) spells a
// destination the STOMP way: the broker is protocol-neutral, destinations.Name renders
// and parses those forms.
func TestBrokerHasNoStompDestinations(t *testing.T) {
	files, err := filepath.Glob("../broker/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no broker sources found: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, lit := range []string{`"/queue/`, `"/topic/`, `"/temp-queue/`, `"/temp-topic/`} {
			if strings.Contains(string(src), lit) {
				t.Errorf("%s holds the STOMP-form destination literal %s`: use destinations.Name and its helpers", f, lit)
			}
		}
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

// configLibraries match the import paths of what config reads the file with: viper,
// the file watcher it links, and any YAML package.
var configLibraries = []func(path string) bool{
	func(p string) bool { return strings.HasPrefix(p, "github.com/spf13/viper") },
	func(p string) bool { return strings.HasPrefix(p, "github.com/fsnotify/") },
	func(p string) bool { return strings.Contains(p, "yaml") },
	func(p string) bool { return p == module+"/config" },
}

// TestStoresLinkNoConfigLibraries fails when a persistence adapter (or anything under
// persistence/ but storetest, kafkalog, internal/vfs, internal/setting) depends,
// directly or not, on config or the libraries behind it: an adapter embedded in another
// program must not drag in viper, fsnotify and a YAML parser to read its own few
// options. storetest and logshell/shelltest are left out: only tests import them, and
// testify links a YAML package.
func TestStoresLinkNoConfigLibraries(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`,
		module+"/persistence/...", module+"/kafkalog/...", module+"/internal/vfs", module+"/internal/setting").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	adapters := map[string]bool{"memstore": false, "journal": false, "boltstore": false, "pgstore": false, "logstore": false}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg := strings.TrimPrefix(fields[0], module+"/")
		if pkg == "persistence/storetest" || pkg == "persistence/internal/logshell/shelltest" {
			continue // only tests import them
		}
		if _, ok := adapters[strings.TrimPrefix(pkg, "persistence/")]; ok {
			adapters[strings.TrimPrefix(pkg, "persistence/")] = true
		}
		for _, dep := range fields[1:] {
			for _, banned := range configLibraries {
				if banned(dep) {
					t.Errorf("%s depends on %s: stores parse their options with internal/setting, not config", pkg, dep)
				}
			}
		}
	}
	for name, seen := range adapters {
		if !seen {
			t.Errorf("adapter persistence/%s not in go list's output; the check looks wrong", name)
		}
	}
}

// surfaceImports lists, for each wire protocol's transport, the project packages its
// code (tests aside) may import directly: the broker's session surface, its codec, and
// security's identity types (the listeners' package, transport, also the Host check of
// its WebSocket handshakes, internal/allowedhosts, a leaf). Nothing of destinations, durable, persistence or the
// stream engines: a transport reaches them through the surface only (issue 22 §1).
var surfaceImports = map[string][]string{
	"transport":          {"broker", "transport/stomp", "transport/openwire", "internal/stompcodec", "internal/loglimit", "internal/allowedhosts", "security"},
	"transport/stomp":    {"broker", "internal/stompcodec", "security"},
	"transport/openwire": {"broker", "internal/openwire", "security"},
}

// TestTransportsUseTheSessionSurface fails when a transport imports, directly, more of
// the project than surfaceImports allows it, or when a package under transport/ has
// no entry there.
func TestTransportsUseTheSessionSurface(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/transport/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, ok := strings.Cut(line, " ")
		pkg = strings.TrimPrefix(pkg, module+"/")
		may, listed := surfaceImports[pkg]
		if !listed {
			t.Errorf("transport package %s has no entry in surfaceImports: a transport drives the broker's session surface only", pkg)
			continue
		}
		checked++
		for _, dep := range strings.Fields(imports) {
			d, project := strings.CutPrefix(dep, module+"/")
			if ok && project && !slices.Contains(may, d) {
				t.Errorf("%s imports %s: a transport uses the broker's session surface (package broker), its codec and security only", pkg, d)
			}
		}
	}
	if checked < 2 {
		t.Fatalf("only %d transport packages checked; go list output looks wrong", checked)
	}
}
