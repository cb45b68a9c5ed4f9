package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/activemq-go/broker/admin"
	"github.com/activemq-go/broker/migrate"
)

// queueTracker is migrate's migrate.Tracker: a progress report per queue, and the
// duplicates the target dropped counted through its admin API (dups, nil without one).
type queueTracker struct {
	popts    progressOptions
	dups     *duplicateCounter
	mu       sync.Mutex
	progress map[string]*progress
}

func (t *queueTracker) Start(queue string) func(int) {
	p := newProgress(t.popts, "moved "+queue, 0)
	t.mu.Lock()
	t.progress[queue] = p
	t.mu.Unlock()
	return p.Add
}

func (t *queueTracker) Done(r *migrate.Result) {
	t.mu.Lock()
	p := t.progress[r.Queue]
	delete(t.progress, r.Queue)
	t.mu.Unlock()
	p.Done()
	if t.dups != nil && !r.Empty && r.Moved > 0 {
		r.Duplicates = t.dups.since(r.Queue)
	} else if r.Moved == 0 {
		r.Duplicates = 0
	}
}

// duplicateCounter reads the target's duplicate counts per queue (GET /stats of the
// admin API): what a queue's move made duplicate detection drop is its count after the
// move less its count before the run.
type duplicateCounter struct {
	ctx    context.Context
	api    *adminClient
	before map[string]int64 // nil: the API did not answer; nothing is counted
}

func newDuplicateCounter(ctx context.Context, api *adminClient) *duplicateCounter {
	d := &duplicateCounter{ctx: ctx, api: api}
	d.before, _ = d.read()
	return d
}

// read returns each destination's duplicate count.
func (d *duplicateCounter) read() (map[string]int64, error) {
	var rep admin.StatsReport
	if err := d.api.do(d.ctx, http.MethodGet, "/stats", nil, &rep); err != nil {
		return nil, err
	}
	m := make(map[string]int64, len(rep.Destinations))
	for _, s := range rep.Destinations {
		m[s.Name] = s.Duplicates
	}
	return m, nil
}

// since is the count of queue's duplicates since the run began, -1 if unknown.
func (d *duplicateCounter) since(queue string) int64 {
	if d.before == nil {
		return -1
	}
	now, err := d.read()
	if err != nil {
		return -1
	}
	name := "/queue/" + queue
	return now[name] - d.before[name]
}

// summary prints the table of what moved.
type summary struct {
	idle time.Duration // the run's --idle
}

// write prints a row per queue or durable subscription (moved, of which duplicates,
// time, rate, how it ended), the total over wall, the run's time, and the waits made.
func (s summary) write(w io.Writer, rs []migrate.Result, wall time.Duration) {
	idle := s.idle
	if idle <= 0 {
		idle = migrate.DefaultIdle
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "queue\tmoved\tduplicates\ttime\tmsgs/s\tended\t")
	var total, dups int64
	knownDups := false
	empty, waits := 0, 0
	for _, r := range rs {
		ended := "interrupted"
		switch {
		case r.Empty:
			ended = "empty (browse)"
			empty++
		case r.IdleWaits > 0:
			ended = "idle " + idle.String()
		}
		waits += r.IdleWaits
		dup := "-"
		if r.Duplicates >= 0 {
			dup = thousands(r.Duplicates)
			dups += r.Duplicates
			knownDups = true
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Queue, thousands(r.Moved), dup, r.Elapsed.Round(10*time.Millisecond),
			thousands(int64(r.Rate())), ended)
		total += r.Moved
	}
	totalDups := "-"
	if knownDups {
		totalDups = thousands(dups)
	}
	fmt.Fprintf(tw, "total\t%s\t%s\t%s\t%s\t\t\n", thousands(total), totalDups, wall.Round(10*time.Millisecond), rate(total, wall))
	_ = tw.Flush()
	fmt.Fprintf(w, "waits: %d queue(s) found empty by a browse, without waiting; %d wait(s) of --idle %s\n", empty, waits, idle)
	if !knownDups && len(rs) > 0 {
		fmt.Fprintln(w, "duplicates: not counted (give --admin, this broker's admin API, to count them)")
	}
}
