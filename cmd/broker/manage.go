package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/activemq-go/broker/admin"
)

// moveChunk is how many messages move asks the broker to move per request, so that it
// can show progress and no request runs long.
const moveChunk = 500

func newListCommand() *cobra.Command {
	var (
		af      adminFlags
		kind    string
		jsonOut bool
	)
	cmd := &cobra.Command{
		Use:   "list [flags]",
		Short: "List the destinations with their counters (admin API)",
		Long: `List the queues, topics and streams with their counters, as a table:

  NAME           TYPE   MESSAGES  CONSUMERS  ENQUEUED  DEQUEUED
  /queue/orders  queue  12        2          1,000     988

MESSAGES is what the destination holds, ENQUEUED and DEQUEUED are totals since the
broker started. --json prints the API's JSON array (GET /api/destinations) with every
counter instead.
` + adminHelp + exitCodesHelp,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kind != "" && kind != kindQueue && kind != kindTopic && kind != kindStream {
				return usagef("--type %q: queue, topic or stream", kind)
			}
			c, err := af.client(cmd.Flags())
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			dests, err := c.destinations(ctx, kind)
			if err != nil {
				return fmt.Errorf("list: %w", err)
			}
			if jsonOut {
				return writeJSON(cmd.OutOrStdout(), dests)
			}
			return writeDestinationTable(cmd.OutOrStdout(), dests)
		},
	}
	af.register(cmd.Flags())
	cmd.Flags().StringVar(&kind, "type", "", "only queue, topic or stream destinations")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the API's JSON")
	return cmd
}

// destinations is GET /api/destinations, of one kind unless kind is "".
func (c *adminClient) destinations(ctx context.Context, kind string) ([]admin.Destination, error) {
	path := "/api/destinations"
	if kind != "" {
		path += "?type=" + url.QueryEscape(kind)
	}
	var dests []admin.Destination
	if err := c.do(ctx, http.MethodGet, path, nil, &dests); err != nil {
		return nil, err
	}
	return dests, nil
}

// destination finds d among the destinations: by its kind, or, for a bare name, the
// queue or else the topic (or stream) of that name.
func (c *adminClient) destination(ctx context.Context, d adminDest) (admin.Destination, error) {
	dests, err := c.destinations(ctx, "")
	if err != nil {
		return admin.Destination{}, err
	}
	kinds := []string{d.kind}
	if d.kind == "" {
		kinds = []string{kindQueue, kindTopic}
	}
	for _, k := range kinds {
		want := "/" + k + "/" + d.name
		for _, x := range dests {
			if x.Name == want {
				return x, nil
			}
		}
	}
	return admin.Destination{}, fmt.Errorf("no such destination (broker list shows them)")
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeDestinationTable(w io.Writer, dests []admin.Destination) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tMESSAGES\tCONSUMERS\tENQUEUED\tDEQUEUED")
	for _, d := range dests {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", d.Name, d.Type, thousands(d.Messages), d.Consumers,
			thousands(d.Enqueued), thousands(d.Dequeued))
	}
	return tw.Flush()
}

// destinationStat is what stat --json prints of one destination: its counters and, for
// a stream, its partitions and consumer groups.
type destinationStat struct {
	admin.Destination
	Stream *admin.Stream `json:"stream,omitempty"`
}

func newStatCommand() *cobra.Command {
	var (
		af      adminFlags
		jsonOut bool
	)
	cmd := &cobra.Command{
		Use:   "stat [flags] [DESTINATION]",
		Short: "Show the broker's overview, or one destination's counters (admin API)",
		Long: `Without an argument, show the broker: name, version, uptime, store, memory and store
use against their limits, connections, destinations and message totals
(GET /api/broker). With DESTINATION (/queue/NAME, /topic/NAME, or NAME: the queue, else
the topic of that name), show its counters, and for a stream its partitions and
consumer groups with their lag. --json prints the API's JSON.
` + adminHelp + exitCodesHelp,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var d adminDest
			if len(args) == 1 {
				var err error
				if d, err = parseAdminDest(args[0]); err != nil {
					return err
				}
			}
			c, err := af.client(cmd.Flags())
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			out := cmd.OutOrStdout()
			if len(args) == 0 {
				var o admin.Overview
				if err := c.do(ctx, http.MethodGet, "/api/broker", nil, &o); err != nil {
					return fmt.Errorf("stat: %w", err)
				}
				if jsonOut {
					return writeJSON(out, o)
				}
				return writeOverview(out, o)
			}
			st, err := c.stat(ctx, d)
			if err != nil {
				return fmt.Errorf("stat %s: %w", d, err)
			}
			if jsonOut {
				return writeJSON(out, st)
			}
			return writeDestinationStat(out, st)
		},
	}
	af.register(cmd.Flags())
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the API's JSON")
	return cmd
}

// stat is d's counters, with the stream's partitions when it is one.
func (c *adminClient) stat(ctx context.Context, d adminDest) (destinationStat, error) {
	x, err := c.destination(ctx, d)
	if err != nil {
		return destinationStat{}, err
	}
	st := destinationStat{Destination: x}
	if x.Type == kindStream {
		_, name, _ := strings.Cut(strings.TrimPrefix(x.Name, "/"), "/")
		var s admin.Stream
		if err := c.do(ctx, http.MethodGet, "/api/streams/"+url.PathEscape(name), nil, &s); err != nil {
			return destinationStat{}, err
		}
		st.Stream = &s
	}
	return st, nil
}

func writeOverview(w io.Writer, o admin.Overview) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("name", o.Name)
	row("version", o.Version)
	row("started", o.Started.Format(time.RFC3339))
	row("uptime", (time.Duration(o.Uptime) * time.Second).String())
	row("store", o.Adapter)
	row("memory", usage(o.MemoryUsed, o.MemoryLimit))
	row("store use", usage(o.StoreUsed, o.StoreLimit))
	row("connections", thousands(int64(o.Connections)))
	row("queues", thousands(int64(o.Queues)))
	row("topics", thousands(int64(o.Topics)))
	row("streams", thousands(int64(o.Streams)))
	row("received", thousands(o.MessagesIn)+" messages")
	row("delivered", thousands(o.MessagesOut)+" messages")
	return tw.Flush()
}

func writeDestinationStat(w io.Writer, st destinationStat) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	d := st.Destination
	row("name", d.Name)
	row("type", d.Type)
	row("messages", thousands(d.Messages))
	row("enqueued", thousands(d.Enqueued))
	row("dequeued", thousands(d.Dequeued))
	row("dispatched", thousands(d.Dispatched))
	row("expired", thousands(d.Expired))
	row("consumers", thousands(int64(d.Consumers)))
	row("producers", thousands(int64(d.Producers)))
	row("memory", bytesIEC(d.Memory))
	oldest := "-"
	if d.OldestAge > 0 {
		oldest = time.Duration(d.OldestAge * float64(time.Second)).Round(time.Millisecond).String()
	}
	row("oldest message", oldest)
	if d.DLQ {
		row("dead-letter queue", "yes")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if st.Stream == nil {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tSTART\tEND\tSIZE")
	for _, p := range st.Stream.Partitions {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\n", p.Partition, p.StartOffset, p.EndOffset, bytesIEC(p.Bytes))
	}
	if len(st.Stream.Groups) > 0 {
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tPARTITION\tCOMMITTED\tEND\tLAG")
		for _, g := range st.Stream.Groups {
			for _, p := range g.Partitions {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", g.Group, p.Partition, p.Committed, p.End, p.Lag)
			}
		}
	}
	return tw.Flush()
}

// usage is "used of limit", or "used (no limit)".
func usage(used, limit int64) string {
	if limit <= 0 {
		return bytesIEC(used) + " (no limit)"
	}
	return fmt.Sprintf("%s of %s (%.0f%%)", bytesIEC(used), bytesIEC(limit), 100*float64(used)/float64(limit))
}

// bytesIEC is n bytes in B, KiB, MiB, GiB or TiB.
func bytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGT"[i-1])
}

func newPurgeCommand() *cobra.Command {
	var af adminFlags
	cmd := &cobra.Command{
		Use:   "purge [flags] QUEUE",
		Short: "Remove every message waiting on a queue (admin API)",
		Long: `Remove every message waiting on QUEUE (/queue/NAME or NAME), as ActiveMQ's purge does:
messages dispatched to a consumer and not yet acknowledged stay. The removal is atomic
against the store. Prints how many were removed.
` + adminHelp + exitCodesHelp,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := parseAdminDest(args[0])
			if err == nil {
				d, err = d.queue("purge")
			}
			if err != nil {
				return err
			}
			c, err := af.client(cmd.Flags())
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			var res struct {
				Purged int64 `json:"purged"`
			}
			if err := c.do(ctx, http.MethodPost, d.path()+"/purge", nil, &res); err != nil {
				return fmt.Errorf("purge %s: %w", d, err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "purged %s %s from %s\n", thousands(res.Purged), plural(res.Purged, "message"), d)
			return err
		},
	}
	af.register(cmd.Flags())
	return cmd
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// moveOptions are move's flags.
type moveOptions struct {
	admin    adminFlags
	to       string
	selector string
	limit    int
	copy     bool
	progress time.Duration
}

func newMoveCommand() *cobra.Command {
	var o moveOptions
	cmd := &cobra.Command{
		Use:   "move [flags] QUEUE --to DESTINATION|original",
		Short: "Move (or copy) a queue's messages elsewhere, e.g. retry a dead-letter queue (admin API)",
		Long: `Move the messages waiting on QUEUE (/queue/NAME or NAME) to DESTINATION (/queue/X,
/topic/X, or a bare X for the queue X), oldest first; --to original sends each back to
the destination it came from (its original-destination header): a dead-letter queue
retried, as ActiveMQ's console "Retry" does. With an authorization map a retry leaves
each message whose producer (its JMSXUserID) may not write that destination now, and
says so on stderr ("not moved: ID: why", exit status 1); the others go.

  broker move /queue/ActiveMQ.DLQ --to original
  broker move DLQ.orders --to /queue/orders --selector "JMSXGroupID = 'g1'" --limit 100
  broker move orders --to orders.audit --copy

Each message is added to its target and removed from QUEUE in one store transaction:
if the broker dies halfway, none is lost or delivered twice. Moving goes in requests of
up to 500 messages, with a progress bar on a terminal (plain lines on stderr
otherwise), and stops at what QUEUE held when it started (or --limit). --copy leaves
the messages on QUEUE too (one request). Prints how many were moved.
` + adminHelp + exitCodesHelp,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMove(cmd, o, args[0])
		},
	}
	f := cmd.Flags()
	o.admin.register(f)
	f.StringVar(&o.to, "to", "", "where to: /queue/X, /topic/X, X (a queue), or original (each message's original destination)")
	f.StringVar(&o.selector, "selector", "", "JMS selector: only messages it matches")
	f.IntVar(&o.limit, "limit", 0, "move at most this many (0: all)")
	f.BoolVar(&o.copy, "copy", false, "copy: leave the messages on QUEUE too")
	f.DurationVar(&o.progress, "progress", defaultProgress, "interval of the progress lines on stderr when it is not a terminal (0: no progress at all)")
	return cmd
}

// moveTarget is --to as the API takes it: "original" or /queue/X, /topic/X.
func moveTarget(to string) (string, error) {
	if to == "" {
		return "", usagef("--to is required: a destination, or original")
	}
	if to == "original" {
		return to, nil
	}
	d, err := parseAdminDest(to)
	if err != nil {
		return "", usagef("--to %q: write /queue/NAME, /topic/NAME, NAME or original", to)
	}
	if d.kind == "" {
		d.kind = kindQueue
	}
	return d.String(), nil
}

func runMove(cmd *cobra.Command, o moveOptions, arg string) error {
	from, err := parseAdminDest(arg)
	if err == nil {
		from, err = from.queue("move")
	}
	if err != nil {
		return err
	}
	to, err := moveTarget(o.to)
	if err != nil {
		return err
	}
	switch {
	case to == from.String():
		return usagef("move %s: --to is the same queue", from)
	case o.limit < 0:
		return usagef("--limit %d: 0 (all) or more", o.limit)
	}
	c, err := o.admin.client(cmd.Flags())
	if err != nil {
		return err
	}
	ctx, stop := signalContext(cmd)
	defer stop()
	verb := "moved"
	if o.copy {
		verb = "copied"
	}
	var n int64
	var refused refusals
	if o.copy {
		var res admin.MoveResult
		res, err = c.move(ctx, from, admin.MoveRequest{To: to, Selector: o.selector, Limit: o.limit, Copy: true})
		n = int64(res.Moved)
		refused.add(res)
	} else {
		n, err = c.moveAll(ctx, from, admin.MoveRequest{To: to, Selector: o.selector, Limit: o.limit},
			progressOptions{out: cmd.ErrOrStderr(), interval: o.progress, bar: true}, &refused)
	}
	if err != nil {
		if n > 0 {
			return fmt.Errorf("move %s: %w (%s %s already)", from, fromCtx(ctx, err), verb, thousands(n))
		}
		return fmt.Errorf("move %s: %w", from, fromCtx(ctx, err))
	}
	where := to
	if to == "original" {
		where = "their original destinations"
	}
	if _, err = fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s from %s to %s\n", verb, thousands(n), plural(n, "message"), from, where); err != nil {
		return err
	}
	return refused.report(cmd.ErrOrStderr(), from)
}

// refusals are the messages a retry left where they were, each once, with why.
type refusals struct {
	seen    map[string]bool
	reasons []admin.MoveRefusal
	more    int // refused beyond those the broker listed
}

// add takes the refusals of one move request; a later request lists again those it
// met anew.
func (r *refusals) add(res admin.MoveResult) {
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	for _, f := range res.Refused {
		if !r.seen[f.ID] {
			r.seen[f.ID] = true
			r.reasons = append(r.reasons, f)
		}
	}
	r.more = max(r.more, res.MoreRefused)
}

// report prints each refused message and why on w, and fails when there is one.
func (r *refusals) report(w io.Writer, from adminDest) error {
	for _, f := range r.reasons {
		if _, err := fmt.Fprintf(w, "not moved: %s: %s\n", f.ID, f.Reason); err != nil {
			return err
		}
	}
	n := int64(len(r.reasons) + r.more)
	if n == 0 {
		return nil
	}
	return fmt.Errorf("move %s: %s %s not moved", from, thousands(n), plural(n, "message"))
}

// move is one POST /api/queues/{name}/move.
func (c *adminClient) move(ctx context.Context, from adminDest, r admin.MoveRequest) (admin.MoveResult, error) {
	var res admin.MoveResult
	err := c.do(ctx, http.MethodPost, from.path()+"/move", r, &res)
	return res, err
}

// moveAll moves up to r.Limit messages (0: all) in requests of moveChunk, reporting
// progress, and stops at what the queue held when it started: messages arriving
// meanwhile (or moved back to it) do not keep it going.
func (c *adminClient) moveAll(ctx context.Context, from adminDest, r admin.MoveRequest, po progressOptions, refused *refusals) (int64, error) {
	q, err := c.destination(ctx, from)
	if err != nil {
		return 0, err
	}
	bound := q.Messages
	if r.Limit > 0 {
		bound = min(bound, int64(r.Limit))
	}
	p := newProgress(po, "moved", bound)
	defer p.Done()
	var moved int64
	for moved < bound {
		ask := min(bound-moved, moveChunk)
		r.Limit = int(ask)
		res, err := c.move(ctx, from, r)
		n := int64(res.Moved)
		moved += n
		p.Add(int(n))
		refused.add(res)
		if err != nil {
			return moved, err
		}
		if n < ask {
			break // no more that match
		}
	}
	return moved, nil
}
