package browsertest

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// pageRecorder runs before any script of every page a Tab loads: it records
// Content-Security-Policy violations and uncaught errors, for CheckPage.
const pageRecorder = `
window.__browsertest_csp = [];
window.__browsertest_errors = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__browsertest_csp.push(e.violatedDirective + " " + e.blockedURI + " " + e.sourceFile + ":" + e.lineNumber);
});
window.addEventListener("error", function (e) { window.__browsertest_errors.push(String(e.message)); });
`

// Tab is a browser tab of one test, with helpers that fail the test on error. It
// answers JavaScript dialogs (confirm, alert) itself: accepting them unless told
// otherwise with AcceptDialogs, and keeping their messages for WaitDialog.
type Tab struct {
	t       testing.TB
	ctx     context.Context
	accept  atomic.Bool
	dialogs chan string
}

// NewTab opens a tab, closed when the test ends.
func (b *Browser) NewTab(t testing.TB) *Tab {
	t.Helper()
	ctx := b.Tab(t)
	tb := &Tab{t: t, ctx: ctx, dialogs: make(chan string, 16)}
	tb.accept.Store(true)
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: pageRecorder}); err != nil {
		t.Fatalf("browsertest: %v", err)
	}
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return // the tab is closed
			}
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: tb.accept.Load()})
			select {
			case tb.dialogs <- ev.Message:
			default:
			}
		}
	}()
	return tb
}

// Context is the tab's chromedp context, for actions the helpers do not cover.
func (tb *Tab) Context() context.Context { return tb.ctx }

// AcceptDialogs sets how the next dialogs are answered.
func (tb *Tab) AcceptDialogs(accept bool) { tb.accept.Store(accept) }

// WaitDialog returns the message of the next dialog answered; it fails the test if
// none comes within 10 s.
func (tb *Tab) WaitDialog() string {
	tb.t.Helper()
	select {
	case m := <-tb.dialogs:
		return m
	case <-time.After(10 * time.Second):
		tb.t.Fatal("browsertest: no dialog")
		return ""
	}
}

// Open navigates to url, requires a 200 answer and checks the page (CheckPage).
func (tb *Tab) Open(url string) {
	tb.t.Helper()
	resp, err := chromedp.Run(tb.ctx, chromedp.NavigateResponse(url))
	if err != nil {
		tb.t.Fatalf("browsertest: opening %s: %v", url, err)
	}
	if resp.Status != 200 {
		tb.t.Fatalf("browsertest: GET %s: status %d", url, resp.Status)
	}
	tb.CheckPage()
}

// Submit clicks the element of sel (a link, or a button that submits a form), waits
// for the page that follows (after any redirects), requires it to answer 200, and
// checks it (CheckPage).
func (tb *Tab) Submit(sel string) {
	tb.t.Helper()
	resp, err := chromedp.RunResponse(tb.ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		tb.t.Fatalf("browsertest: clicking %s on %s: %v", sel, tb.Location(), err)
	}
	if resp.Status != 200 {
		tb.t.Fatalf("browsertest: clicking %s: %s answered %d", sel, resp.URL, resp.Status)
	}
	tb.CheckPage()
}

// Click clicks the element of sel without waiting for a navigation.
func (tb *Tab) Click(sel string) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		tb.t.Fatalf("browsertest: clicking %s: %v", sel, err)
	}
}

// SetValue sets the value of the form field of sel.
func (tb *Tab) SetValue(sel, value string) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, chromedp.SetValue(chromedp.CSS(sel), value)); err != nil {
		tb.t.Fatalf("browsertest: setting %s: %v", sel, err)
	}
}

// Text is the visible text of the first element of sel, trimmed.
func (tb *Tab) Text(sel string) string {
	tb.t.Helper()
	s, err := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		tb.t.Fatalf("browsertest: text of %s on %s: %v", sel, tb.Location(), err)
	}
	return strings.TrimSpace(s)
}

// Location is the tab's URL.
func (tb *Tab) Location() string {
	loc, _ := chromedp.Run(tb.ctx, chromedp.Location())
	return loc
}

// CheckPage fails the test if the page broke its Content-Security-Policy (an inline
// script or style, a resource from elsewhere) or threw an uncaught error.
func (tb *Tab) CheckPage() {
	tb.t.Helper()
	if v := Eval[[]string](tb, "window.__browsertest_csp || []"); len(v) > 0 {
		tb.t.Fatalf("browsertest: Content-Security-Policy violations on %s: %q", tb.Location(), v)
	}
	if v := Eval[[]string](tb, "window.__browsertest_errors || []"); len(v) > 0 {
		tb.t.Fatalf("browsertest: script errors on %s: %q", tb.Location(), v)
	}
}

// Eval evaluates a JavaScript expression in the tab's page.
func Eval[T any](tb *Tab, expr string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("browsertest: evaluating %s: %v", expr, err)
	}
	return v
}
