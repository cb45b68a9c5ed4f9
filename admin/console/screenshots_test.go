package console

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// ScreenshotsEnv names the directory TestScreenshots writes its PNGs to; unset, they
// go to a temporary directory (the test still renders and checks every page). The
// README's images are made with
//
//	CONSOLE_SCREENSHOTS=$PWD/docs/console go test ./admin/console -run TestScreenshots
const ScreenshotsEnv = "CONSOLE_SCREENSHOTS"

// TestScreenshots takes a screenshot of each main page over the realistic fake
// broker of seed, with ten minutes of rate history.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv(ScreenshotsEnv)
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	e := newEnv(t)
	fillRateHistory(e)
	tb := newTab(t)
	require.NoError(t, chromedp.Do(tb.Context(), chromedp.EmulateViewport(1280, 800)))

	dlq := e.f.ids("ActiveMQ.DLQ")
	for _, s := range []struct{ file, path string }{
		{"overview.png", "/"},
		{"queues.png", "/queues"},
		{"queue.png", "/queues/invoices.render?limit=12"},
		{"dlq.png", "/queues/ActiveMQ.DLQ"},
		{"message.png", "/queues/ActiveMQ.DLQ/messages/" + dlq[0]},
		{"durable.png", "/durable"},
		{"connections.png", "/connections"},
		{"stream.png", "/streams/events"},
	} {
		tb.Open(e.url(s.path))
		shot, err := chromedp.Run(tb.Context(), chromedp.FullScreenshot(100))
		require.NoError(t, err, s.path)
		img, err := png.Decode(bytes.NewReader(shot))
		require.NoError(t, err, "%s: not a PNG", s.path)
		require.Equal(t, 1280, img.Bounds().Dx(), s.path)
		require.NoError(t, os.WriteFile(filepath.Join(dir, s.file), shot, 0o644))
	}
	t.Logf("screenshots in %s", dir)
}

// fillRateHistory gives the console ten minutes of samples ending now: a morning
// ramp with a burst in the middle, deliveries following.
func fillRateHistory(e *env) {
	o := e.f.Overview()
	now := time.Now()
	n := int(historyLength / sampleEvery)
	in, out := o.MessagesIn, o.MessagesOut
	samples := make([]sample, n)
	for i := n - 1; i >= 0; i-- {
		x := float64(i) / float64(n)
		rateIn := 1400 + 500*x + 900*math.Exp(-math.Pow((x-0.55)/0.06, 2)) + 120*math.Sin(float64(i)/2.3)
		rateOut := 1380 + 480*x + 500*math.Exp(-math.Pow((x-0.62)/0.1, 2)) + 90*math.Sin(float64(i)/3.1)
		in -= int64(rateIn * sampleEvery.Seconds())
		out -= int64(rateOut * sampleEvery.Seconds())
		samples[i] = sample{at: now.Add(-time.Duration(n-i) * sampleEvery), in: in, out: out}
	}
	e.c.mu.Lock()
	e.c.rates.samples = samples
	e.c.now = func() time.Time { return now } // the overview's sample ends the last interval
	e.c.mu.Unlock()
}
