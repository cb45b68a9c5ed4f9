package console

import (
	"fmt"
	"strings"
	"time"
)

// The console keeps its own short history of the broker's message totals, sampled
// when a page is served (at most every sampleEvery), to show rates and a 10-minute
// sparkline without a goroutine of its own. The overview reloads itself every
// overviewRefresh seconds, so an open overview keeps the history filled.
const (
	sampleEvery   = 5 * time.Second
	historyLength = 10 * time.Minute
	// rateWindow is the span the rates shown are averaged over, when the history
	// reaches back that far.
	rateWindow = time.Minute
	// minRateSpan is the shortest span a rate is computed over.
	minRateSpan = time.Second
)

// sample is the broker's message totals at one time.
type sample struct {
	at      time.Time
	in, out int64
}

// rateHistory is a ring of samples, oldest first, spanning at most historyLength.
type rateHistory struct {
	samples []sample
}

// record adds s unless the last sample is younger than sampleEvery, and drops the
// samples older than historyLength.
func (h *rateHistory) record(s sample) {
	if n := len(h.samples); n > 0 && s.at.Sub(h.samples[n-1].at) < sampleEvery {
		return
	}
	h.samples = append(h.samples, s)
	cut := 0
	for cut < len(h.samples) && s.at.Sub(h.samples[cut].at) > historyLength {
		cut++
	}
	h.samples = h.samples[cut:]
}

// rates are messages in and out per second, over Span; ok is false when the history
// is too short.
type rates struct {
	In, Out float64
	Span    time.Duration
	OK      bool
}

// rate returns the rates from the sample nearest to rateWindow before now (and at
// least minRateSpan before it) to the totals of now.
func (h *rateHistory) rate(now sample) rates {
	var from *sample
	for i := range h.samples {
		s := &h.samples[i]
		age := now.at.Sub(s.at)
		if age < minRateSpan {
			break
		}
		from = s
		if age <= rateWindow {
			break
		}
	}
	if from == nil {
		return rates{}
	}
	span := now.at.Sub(from.at)
	return rates{
		In:   perSecond(now.in-from.in, span),
		Out:  perSecond(now.out-from.out, span),
		Span: span,
		OK:   true,
	}
}

// perSecond is n over d; a counter that went back (a broker restart) counts as 0.
func perSecond(n int64, d time.Duration) float64 {
	if n < 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// sparkline is the history of rates as SVG polyline points.
type sparkline struct {
	In, Out string  // "x,y x,y ..." in a sparkWidth x sparkHeight box
	Max     float64 // the rate at the top of the box
	Span    time.Duration
}

const (
	sparkWidth  = 600
	sparkHeight = 140
)

// spark returns the rates between consecutive samples (the last ending at now) as
// polylines over the history's span; ok is false with fewer than two intervals.
func (h *rateHistory) spark(now sample) (sparkline, bool) {
	pts := append(append([]sample(nil), h.samples...), now)
	if n := len(pts); n >= 2 && now.at.Sub(pts[n-2].at) < minRateSpan {
		pts = append(pts[:n-2], now) // now is the last sample itself
	}
	if len(pts) < 3 {
		return sparkline{}, false
	}
	type point struct {
		t       time.Duration // since the first sample
		in, out float64
	}
	first := pts[0].at
	var ps []point
	top := 0.0
	for i := 1; i < len(pts); i++ {
		d := pts[i].at.Sub(pts[i-1].at)
		p := point{t: pts[i].at.Sub(first), in: perSecond(pts[i].in-pts[i-1].in, d), out: perSecond(pts[i].out-pts[i-1].out, d)}
		top = max(top, p.in, p.out)
		ps = append(ps, p)
	}
	if top == 0 {
		top = 1
	}
	span := pts[len(pts)-1].at.Sub(first)
	xy := func(p point, v float64) string {
		x := float64(sparkWidth) * float64(p.t) / float64(span)
		y := sparkHeight - 2 - (sparkHeight-4)*v/top
		return fmt.Sprintf("%.1f,%.1f", x, y)
	}
	var in, out strings.Builder
	for i, p := range ps {
		if i > 0 {
			in.WriteByte(' ')
			out.WriteByte(' ')
		}
		in.WriteString(xy(p, p.in))
		out.WriteString(xy(p, p.out))
	}
	return sparkline{In: in.String(), Out: out.String(), Max: top, Span: span}, true
}
