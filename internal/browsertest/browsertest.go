// Package browsertest runs one headless Chromium per test binary, driven with
// github.com/chromedp/chromedp, and opens a tab for each test.
//
// The browser is Debian's chromium package: its binary /usr/lib/chromium/chromium,
// started directly rather than through the /usr/bin/chromium script, which adds Google
// API keys and extension flags of its own ($BROWSERTEST_CHROMIUM names another
// binary). If it is missing, Shared fails the test with an error saying
// how to install it; tests using this package never skip: .ci/run installs the package.
//
// Chromium starts with a fresh profile in a temporary directory, headless, without the
// sandbox (the tests run as root in CI) and without any of its own network traffic
// (updates, sync, safe browsing, QUIC): the machine's network is closed, and those
// requests would only fill the logs with refused connections.
//
// # Use
//
//	func TestMain(m *testing.M) { os.Exit(browsertest.Run(m)) }
//
//	func TestX(t *testing.T) {
//		tab := browsertest.Shared(t).NewTab(t) // closed when the test ends
//		tab.Open(url)                          // 200, no CSP violation, no script error
//		tab.Submit("form#purge button")        // click, wait for the next page
//		tab.WaitDialog()                       // the confirm() it asked, accepted
//	}
//
// Tab.Context gives the chromedp context for anything else; Browser.Tab opens a bare
// one.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// DebianChromium is the browser binary of Debian's chromium package.
const DebianChromium = "/usr/lib/chromium/chromium"

// ChromiumEnv names the environment variable that overrides the Chromium binary.
const ChromiumEnv = "BROWSERTEST_CHROMIUM"

// VerboseEnv names the environment variable that, set to 1, sends Chromium's own
// output to the test's stderr.
const VerboseEnv = "BROWSERTEST_VERBOSE"

// TabTimeout bounds everything a test does in one tab.
const TabTimeout = 30 * time.Second

// startTimeout bounds the start of the browser.
const startTimeout = 30 * time.Second

// ErrNoChromium is returned when no Chromium binary is found.
var ErrNoChromium = errors.New("browsertest: no Chromium found: install Debian's chromium package (apt-get install chromium) or set " + ChromiumEnv)

// Browser is a running headless Chromium.
type Browser struct {
	ctx         context.Context // the browser's chromedp context: tabs are its children
	cancel      context.CancelFunc
	cancelAlloc context.CancelFunc
	dir         string // the profile directory, removed by Close
}

// Flags are the command-line switches Chromium is started with, besides the profile
// directory (--user-data-dir) and --remote-debugging-pipe that chromedp adds.
var Flags = map[string]any{
	"headless":                               true,
	"no-sandbox":                             true,
	"disable-gpu":                            true,
	"disable-quic":                           true,
	"no-first-run":                           true,
	"no-default-browser-check":               true,
	"disable-background-networking":          true,
	"disable-component-update":               true,
	"disable-sync":                           true,
	"disable-default-apps":                   true,
	"disable-extensions":                     true,
	"disable-breakpad":                       true,
	"disable-dev-shm-usage":                  true,
	"disable-features":                       "Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,CertificateTransparencyComponentUpdater,AutofillServerCommunication",
	"disable-client-side-phishing-detection": true,
	"safebrowsing-disable-auto-update":       true,
	"metrics-recording-only":                 true,
	"password-store":                         "basic",
	"use-mock-keychain":                      true,
	"hide-scrollbars":                        true,
	"mute-audio":                             true,
	"force-color-profile":                    "srgb",
}

// FindChromium returns the path of the Chromium binary.
func FindChromium() (string, error) {
	if p := os.Getenv(ChromiumEnv); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%w (%s=%s: %v)", ErrNoChromium, ChromiumEnv, p, err)
		}
		return path, nil
	}
	for _, name := range []string{DebianChromium, "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// Start starts a headless Chromium with a fresh profile.
func Start() (*Browser, error) {
	path, err := FindChromium()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "browsertest-")
	if err != nil {
		return nil, fmt.Errorf("browsertest: profile directory: %w", err)
	}
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(path), chromedp.UserDataDir(dir), chromedp.WindowSize(1280, 900)}
	for name, v := range Flags {
		opts = append(opts, chromedp.Flag(name, v))
	}
	if os.Getenv(VerboseEnv) == "1" {
		opts = append(opts, chromedp.CombinedOutput(os.Stderr))
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b := &Browser{ctx: ctx, cancel: cancel, cancelAlloc: cancelAlloc, dir: dir}
	// The first Do starts the browser and binds it to ctx (not to a deadline): a
	// timer cancels the start if it hangs.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err = <-started:
	case <-time.After(startTimeout):
		err = fmt.Errorf("did not start within %v", startTimeout)
	}
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("browsertest: starting %s: %w", path, err)
	}
	return b, nil
}

// Close ends the browser and removes its profile.
func (b *Browser) Close() error {
	b.cancel()
	b.cancelAlloc()
	return os.RemoveAll(b.dir)
}

// Tab opens a new tab, closed when the test ends; the context it returns also ends
// after TabTimeout.
func (b *Browser) Tab(t testing.TB) context.Context {
	t.Helper()
	tab, closeTab := chromedp.NewContext(b.ctx)
	ctx, cancel := context.WithTimeout(tab, TabTimeout)
	t.Cleanup(func() {
		cancel()
		closeTab()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("browsertest: opening a tab: %v", err)
	}
	return ctx
}

var shared struct {
	sync.Mutex
	b   *Browser
	err error
}

// Shared returns the test binary's browser, started on first use; it fails the test
// if the browser cannot start (Chromium missing included). Run closes it.
func Shared(t testing.TB) *Browser {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if shared.b == nil && shared.err == nil {
		shared.b, shared.err = Start()
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.b
}

// Run runs the tests and then closes the shared browser; it returns m.Run's code.
func Run(m *testing.M) int {
	code := m.Run()
	CloseShared()
	return code
}

// CloseShared closes the shared browser, if it was started.
func CloseShared() {
	shared.Lock()
	defer shared.Unlock()
	if shared.b != nil {
		_ = shared.b.Close()
		shared.b = nil
	}
}
