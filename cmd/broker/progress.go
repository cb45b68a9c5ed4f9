package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// defaultProgress is the interval of the plain progress lines.
const defaultProgress = time.Second

// progress reports long work (send --count, consume --count, move) on stderr: a bar with
// the count, rate and ETA when stderr is a terminal, else a plain line every interval
// ("sent 12,000 of 50,000 (8,123/s)") for a log, and a last line with the total and the
// average rate if any line was written. It is safe for concurrent use.
type progress struct {
	verb  string // "sent", "received", "moved"
	total int64  // 0: unknown
	n     atomic.Int64

	bar *progressbar.ProgressBar

	out      io.Writer
	start    time.Time
	mu       sync.Mutex // lines, lastAt, lastN
	lines    int
	lastAt   time.Time
	lastN    int64
	stop     chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once
}

// progressOptions say where and how progress goes.
type progressOptions struct {
	out      io.Writer     // stderr
	interval time.Duration // of plain lines; 0 reports nothing
	// bar allows the bar when out is a terminal (consume turns it off when its output
	// goes to the same terminal).
	bar bool
}

// newProgress starts reporting work counted with verb, of total units (0 unknown).
func newProgress(o progressOptions, verb string, total int64) *progress {
	p := &progress{verb: verb, total: total, out: o.out, start: time.Now(),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	p.lastAt = p.start
	switch {
	case o.interval <= 0 || o.out == nil:
		close(p.stopped)
	case o.bar && isTerminal(o.out):
		max := total
		if max <= 0 {
			max = -1 // a spinner
		}
		p.bar = progressbar.NewOptions64(max,
			progressbar.OptionSetWriter(o.out),
			progressbar.OptionSetDescription(verb),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("msg"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSpinnerType(14),
			progressbar.OptionFullWidth(),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(o.out) }),
		)
		close(p.stopped)
	default:
		go p.tick(o.interval)
	}
	return p
}

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Add counts n more units done.
func (p *progress) Add(n int) {
	p.n.Add(int64(n))
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

// Count is the units counted so far.
func (p *progress) Count() int64 { return p.n.Load() }

// Done stops reporting: the bar is completed where it is, and a plain report ends with
// a line of the total if it wrote any.
func (p *progress) Done() {
	p.stopOnce.Do(func() {
		close(p.stop)
		<-p.stopped
		if p.bar != nil {
			if !p.bar.IsFinished() { // a finished bar ended its line already
				_ = p.bar.Exit()
			}
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.lines > 0 {
			n := p.n.Load()
			d := time.Since(p.start)
			fmt.Fprintf(p.out, "%s %s in %s (%s/s)\n", p.verb, thousands(n), d.Round(100*time.Millisecond), rate(n, d))
		}
	})
}

func (p *progress) tick(interval time.Duration) {
	defer close(p.stopped)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			p.line(now)
		}
	}
}

// line writes the plain line for now: the count, of the total when known, and the rate
// since the previous line; nothing while the count stands still (a consumer waiting for
// messages would fill a log with the same line).
func (p *progress) line(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.n.Load()
	if n == p.lastN {
		return
	}
	of := ""
	if p.total > 0 {
		of = " of " + thousands(p.total)
	}
	fmt.Fprintf(p.out, "%s %s%s (%s/s)\n", p.verb, thousands(n), of, rate(n-p.lastN, now.Sub(p.lastAt)))
	p.lines++
	p.lastAt, p.lastN = now, n
}

// rate is n per d, per second, with thousands separators.
func rate(n int64, d time.Duration) string {
	if d <= 0 {
		return "0"
	}
	return thousands(int64(float64(n) / d.Seconds()))
}

// thousands formats n with commas between groups of three digits: 12,345.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var b []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}
