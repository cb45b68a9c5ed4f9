package main

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/activemq-go/broker/admin"
	"github.com/activemq-go/broker/internal/stompclient"
	"github.com/activemq-go/broker/migrate"
)

// migrateOptions are migrate's flags.
type migrateOptions struct {
	from, to string
	queues   []string
	durables []string
	admin    adminFlags
	fromTLS  tlsFlags
	toTLS    tlsFlags
	dryRun   bool
	idle     time.Duration
	settle   time.Duration
	window   int
	parallel int
	progress time.Duration
}

func newMigrateCommand() *cobra.Command {
	var o migrateOptions
	cmd := &cobra.Command{
		Use:   "migrate --from URL [--to URL] [--queue NAME|PATTERN]... [--durable CLIENT_ID:NAME@/topic/T]... [--dry-run]",
		Short: "Move the messages stored in another STOMP broker's queues (ActiveMQ) into this one",
		Long: `Move the messages waiting in the queues of another STOMP broker (ActiveMQ 5.x, the DLQ
included) into this broker's queues of the same names, each exactly once.

  broker migrate --from stomp://admin:secret@old-mq:61613
  broker migrate --from stomp://old-mq:61613 --to stomp://new-mq:61613 --queue 'ORDERS.>' --queue ActiveMQ.DLQ
  broker migrate --from stomp://old-mq:61613 --dry-run

Without --queue the source's queues are found on ActiveMQ's advisory topic
ActiveMQ.Advisory.Queue (ActiveMQ replays what exists to a new subscriber; it needs
XStream and Jettison on its class path for the JSON form); --queue takes names and
patterns with ActiveMQ's wildcards (* one part, > the rest) instead, repeatable.
--dry-run lists the queues and moves nothing.

A source message is acknowledged only after this broker's receipt for it, so an
interrupted run loses nothing; every moved message carries the source's message-id
in _AMQ_DUPL_ID, and this broker's duplicate detection makes a re-run move each
message once. --parallel queues (4) move at once. A queue is done when a browse of it
finds it empty (ActiveMQ answers at once: an empty queue costs no wait) or, once
draining, when no message came for --idle. The summary lists each queue: messages
moved, of which skipped as duplicates (the target already held them: counted through
its admin API, --admin, else "-"), time, rate, and how it ended. Every header is kept
(persistent, priority, expires, timestamp, type, correlation-id, reply-to,
JMSXGroupID/JMSXGroupSeq, content-type, custom ones) but the source's delivery
headers (message-id, subscription, ack, redelivered, ...).

--durable CLIENT_ID:NAME@/topic/TOPIC[?selector=EXPR] moves a durable subscription's
backlog (STOMP cannot list them: name each, repeatable). The subscription is created
here first, then drained on the source connected as CLIENT_ID (stop its subscriber
first) into that subscription alone, through this broker's admin API (--admin, a user
of an admin group): its topic's other subscribers get nothing. Give the selector the
subscription has on the source: ActiveMQ replaces a durable subscription subscribed
with another selector, and drops its backlog. Queues move first, then durable
subscriptions; with --durable and no --queue, only the durable subscriptions move.

--from and --to take the URLs of --url in send and consume (stomp://, stomp+ssl://,
ws://, wss://; the passwords are visible in ps: set MIGRATE_FROM and BROKERCTL_URL
instead); --from-ca-file, --from-cert-file, --from-key-file and
--from-insecure-skip-verify set the source's TLS, the --to-... ones this broker's. --to defaults to $BROKERCTL_URL, else ` + defaultStompURL + `.` + exitCodesHelp,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMigrate(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "the source broker's URL (default $MIGRATE_FROM)")
	f.StringVar(&o.to, "to", "", "this broker's URL (default $"+envStompURL+", else "+defaultStompURL+")")
	f.StringArrayVar(&o.queues, "queue", nil, "queue NAME or PATTERN (* one part, > the rest) to move; repeatable (default: every queue the source announces)")
	f.StringArrayVar(&o.durables, "durable", nil, "durable subscription CLIENT_ID:NAME@/topic/TOPIC[?selector=EXPR] to move; repeatable")
	o.admin.register(f)
	o.fromTLS.register(f, "from-", "the source broker")
	o.toTLS.register(f, "to-", "this broker")
	f.BoolVar(&o.dryRun, "dry-run", false, "list the queues that would move, move nothing")
	f.DurationVar(&o.idle, "idle", migrate.DefaultIdle, "a queue is drained when no message came for this long")
	f.DurationVar(&o.settle, "settle", migrate.DefaultSettle, "how long to collect the source's queue advisories")
	f.IntVar(&o.window, "window", migrate.DefaultWindow, "source prefetch and most receipts outstanding on the target (at most 512)")
	f.IntVar(&o.parallel, "parallel", migrate.DefaultParallel, "queues moved at once")
	f.DurationVar(&o.progress, "progress", defaultProgress, "interval of the progress lines on stderr when it is not a terminal (0: none)")
	return cmd
}

func runMigrate(cmd *cobra.Command, o migrateOptions) error {
	from := o.from
	if from == "" {
		from = os.Getenv("MIGRATE_FROM")
	}
	if from == "" {
		return usagef("--from is required: the URL of the broker to move messages from")
	}
	src, err := stompclient.ParseURL(from)
	if err != nil {
		return usagef("--from: %w", err)
	}
	to := o.to
	if to == "" {
		to = cmp.Or(fromEnv(envStompURL, envStompURLOld), defaultStompURL)
	}
	dst, err := stompclient.ParseURL(to)
	if err != nil {
		return usagef("--to: %w", err)
	}
	fromOpts, err := o.fromTLS.options(src)
	if err != nil {
		return err
	}
	toOpts, err := o.toTLS.options(dst)
	if err != nil {
		return err
	}
	if o.window <= 0 || o.window > stompclient.MaxOutstanding {
		return usagef("--window %d: between 1 and %d", o.window, stompclient.MaxOutstanding)
	}
	if o.parallel <= 0 {
		return usagef("--parallel %d: at least 1", o.parallel)
	}
	var durables []migrate.Durable
	for _, s := range o.durables {
		d, err := migrate.ParseDurable(s)
		if err != nil {
			return usagef("--durable: %w", err)
		}
		durables = append(durables, d)
	}
	var api *adminClient
	if len(durables) > 0 || cmd.Flags().Changed("admin") || os.Getenv(envAdminURL) != "" {
		if api, err = o.admin.client(cmd.Flags()); err != nil {
			return err
		}
	}
	ctx, stop := signalContext(cmd)
	defer stop()

	var found []string
	needDiscovery := len(o.queues) == 0 && len(durables) == 0
	for _, q := range o.queues {
		needDiscovery = needDiscovery || migrate.IsPattern(q)
	}
	if needDiscovery {
		found, err = migrate.Discover(ctx, src, fromOpts, o.settle)
		if err != nil {
			return err
		}
	}
	var queues []string
	if len(o.queues) > 0 || len(durables) == 0 {
		if queues, err = migrate.Select(found, o.queues); err != nil {
			return usageError(err)
		}
	}
	out := cmd.OutOrStdout()
	if o.dryRun {
		fmt.Fprintf(out, "would move %d queue(s) and %d durable subscription(s) from %s to %s (counts are not known over STOMP):\n",
			len(queues), len(durables), src, dst)
		for _, q := range queues {
			fmt.Fprintf(out, "  %s\n", q)
		}
		for _, d := range durables {
			fmt.Fprintf(out, "  durable %s\n", d)
		}
		return nil
	}
	m := &migrate.Mover{
		Source: migrate.Endpoint{URL: src, Options: fromOpts},
		Target: migrate.Endpoint{URL: dst, Options: toOpts},
		Idle:   o.idle,
		Window: o.window,
	}
	// Bars would overwrite each other when queues move at once: lines then.
	popts := progressOptions{out: cmd.ErrOrStderr(), interval: o.progress, bar: o.parallel == 1 || len(queues) <= 1}
	began := time.Now()
	tr := &queueTracker{popts: popts, progress: map[string]*progress{}}
	if api != nil {
		tr.dups = newDuplicateCounter(ctx, api)
	}
	results, err := m.MoveQueues(ctx, queues, o.parallel, tr)
	sum := summary{idle: m.Idle}
	if err != nil {
		sum.write(out, results, time.Since(began))
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %s", errInterrupted, err)
		}
		return err
	}
	for _, d := range durables {
		p := newProgress(popts, "moved durable "+d.ClientID+":"+d.Name, 0)
		r, err := m.MoveDurable(ctx, d, durableImporter{api}, p.Add)
		p.Done()
		results = append(results, r)
		if err != nil {
			sum.write(out, results, time.Since(began))
			if ctx.Err() != nil {
				return fmt.Errorf("%w: durable subscription %s: %d moved", errInterrupted, d, r.Moved)
			}
			return fmt.Errorf("durable subscription %s (%d moved before): %w", d, r.Moved, err)
		}
	}
	sum.write(out, results, time.Since(began))
	return nil
}

// durableImporter imports into a durable subscription through the admin API.
type durableImporter struct{ c *adminClient }

func (di durableImporter) Import(ctx context.Context, d migrate.Durable, msgs []migrate.Message) (int, error) {
	req := admin.ImportRequest{Messages: make([]admin.SendRequest, len(msgs))}
	for i, m := range msgs {
		r := admin.SendRequest{Headers: m.Headers, Persistent: m.Persistent}
		if utf8.Valid(m.Body) {
			r.Body = string(m.Body)
		} else {
			r.BodyBase64 = base64.StdEncoding.EncodeToString(m.Body)
		}
		req.Messages[i] = r
	}
	var res admin.ImportResult
	path := "/api/durable-subscriptions/" + url.PathEscape(d.ClientID) + "/" + url.PathEscape(d.Name) + "/messages"
	if err := di.c.do(ctx, "POST", path, req, &res); err != nil {
		return 0, err
	}
	return res.Duplicates, nil
}

// Holds reports whether the target has d: a durable subscription of that client-id and
// name on d's topic with d's selector.
func (di durableImporter) Holds(ctx context.Context, d migrate.Durable) (bool, error) {
	var ds []admin.DurableSubscription
	if err := di.c.do(ctx, "GET", "/api/durable-subscriptions", nil, &ds); err != nil {
		return false, err
	}
	for _, s := range ds {
		if s.ClientID == d.ClientID && s.Name == d.Name {
			return s.Topic == "/topic/"+d.Topic && s.Selector == d.Selector, nil
		}
	}
	return false, nil
}
