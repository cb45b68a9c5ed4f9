package browsertest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestStartTabClose: the browser starts, a tab loads a page of a local server, and
// Close ends the browser and removes its profile.
func TestStartTabClose(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<!doctype html><title>hello from the test</title><p id=p>text</p>")
	}))
	defer srv.Close()

	b, err := Start()
	require.NoError(t, err)
	ctx := b.Tab(t)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL)))
	title, err := chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err)
	require.Equal(t, "hello from the test", title)

	require.NoError(t, b.Close())
	_, err = os.Stat(b.dir)
	require.True(t, os.IsNotExist(err), "the profile directory is removed: %v", err)
}

// TestNoChromium: a missing browser is an error that says what to install.
func TestNoChromium(t *testing.T) {
	t.Setenv(ChromiumEnv, "/nonexistent/chromium")
	_, err := Start()
	require.ErrorIs(t, err, ErrNoChromium)
	require.ErrorContains(t, err, "apt-get install chromium")
}
