package main

import (
	"context"
	"errors"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/activemq-go/broker/internal/loadtest"
)

func newBenchCommand() *cobra.Command {
	var (
		o        loadtest.Options
		jsonOut  bool
		cleanup  bool
		progress = loadtest.DefaultProgress
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Drive any STOMP broker and report msgs/s, latency and lost messages",
		Long: `Bench connects consumers, waits until every subscription is confirmed, then
starts all producers together and counts what arrives. It works against any STOMP
broker (this one, ActiveMQ, ...), so runs can be compared side by side.

It stops when every expected message arrived, after --idle-timeout without a
message, at --max-duration, or on a connection error. The exit status is non-zero
when messages were lost or duplicated, not all were sent, or an error happened.

With --durable-subscribers N it runs the durable catch-up scenario instead: N
connections (client-id <prefix>-<i>) create durable subscriptions to the topic
(activemq.subscriptionName) and disconnect; the producers publish every message
persistently; then each subscriber reconnects and drains its backlog, one after
the other or all at once (--catchup). It reports each subscriber's drain rate
and, with --data-dir (the broker's store directory on this machine, e.g. ActiveMQ's
data/kahadb or this broker's <dataDirectory>/kahadb), how much the files below it
grew while publishing, also as copies of the payload. --max-duration then bounds
the publishing and each drain. The subscriptions are deleted at the end unless
--cleanup=false.

With --replay it publishes every message with no consumer subscribed, then
subscribes the consumers and reports how fast they drain what is stored: a
stream read with --consumer-header x-stream-offset=first, or a queue's backlog.

With --connects N it measures the connection rate instead: N times a fresh TCP
connection sends CONNECT (with --login, --passcode and --stomp-version), waits for
CONNECTED, sends DISCONNECT with a receipt, waits for it and closes; --producers
workers share the N, each one connect after another. It reports connects/s, the
latency from CONNECT to CONNECTED, and the connects refused (an ERROR frame, whose
message it prints) or failed otherwise (dial, timeout, closed without a frame);
any of those makes the exit status non-zero. With --expect-refused every connect
must be refused instead (a bad login, to measure how fast the broker turns those
away, e.g. with failed-login throttling), and the latency runs to the ERROR.

--shared (with --destination /topic/...) counts a topic's messages once over all
consumers, as the members of a stream's consumer group share them
(--consumer-header consumer-group=G).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			// The first interrupt stops the run, which then deletes its
			// durable subscriptions; a second one kills the tool.
			context.AfterFunc(ctx, stop)
			if progress > 0 {
				o.Progress = progress
				o.ProgressOut = cmd.ErrOrStderr()
			}
			o.KeepDurable = !cleanup
			res, err := loadtest.Run(ctx, o)
			if errors.Is(err, loadtest.ErrOptions) || (errors.Is(err, loadtest.ErrConnect) && res.Sent == 0) {
				return err // nothing ran: no figures to report
			}
			out := cmd.OutOrStdout()
			res.Fprint(out, o)
			if jsonOut {
				if err := res.WriteJSON(out, o); err != nil {
					return err
				}
			}
			return res.Failure(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Addr, "addr", "127.0.0.1:61613", "broker STOMP address host:port; a comma-separated list spreads the connections over several brokers round-robin (consumers first, then producers: the nodes of a shared-mode cluster)")
	f.IntVar(&o.Producers, "producers", 1, "producer connections")
	f.IntVar(&o.Consumers, "consumers", 1, "consumer connections, one subscription each")
	f.IntVar(&o.Size, "size", 256, "message body size in bytes")
	f.IntVar(&o.Messages, "messages", 10000, "total messages sent, split over the producers")
	f.BoolVar(&o.Persistent, "persistent", false, "send with persistent:true")
	f.StringVar(&o.Receipts, "receipts", loadtest.ReceiptsNone, "every | none | K: wait for a receipt on every K-th send")
	f.BoolVar(&o.Topic, "topic", false, "use a topic: every consumer expects every message")
	f.StringVar(&o.Destination, "destination", "", "destination (default a fresh /queue/bench-<unixnano> or /topic/bench-<unixnano>)")
	f.StringVar(&o.ConsumerDestination, "consumer-destination", "", "subscribe here instead of --destination (virtual topics, composite destinations)")
	f.StringVar(&o.Ack, "ack", "", "auto | client | client-individual; client modes ack every message (default auto, client-individual with --durable-subscribers)")
	f.IntVar(&o.Prefetch, "prefetch", 0, "send activemq.prefetchSize on SUBSCRIBE (0: do not send)")
	f.StringVar(&o.Selector, "selector", "", "JMS selector every consumer subscribes with (it must match every message sent)")
	f.StringArrayVar(&o.ConsumerHeaders, "consumer-header", nil, "name=value added to every SUBSCRIBE; repeatable (e.g. consumer-group=bench, x-stream-offset=first)")
	f.BoolVar(&o.DedupIDs, "dedup-ids", false, "every SEND carries a duplicate-detection id, _AMQ_DUPL_ID: <run>-<producer>-<seq> (what duplicate detection costs on the send path)")
	f.BoolVar(&o.Shared, "shared", false, "the consumers of a topic share its messages, as a stream's consumer group does: each message counts once over all of them, order is not checked")
	f.BoolVar(&o.Replay, "replay", false, "publish every message first, then subscribe the consumers and measure how fast they drain what is stored (a stream with --consumer-header x-stream-offset=first, or a queue's backlog)")
	f.StringVar(&o.Version, "stomp-version", "", "offer only this STOMP version: 1.0, 1.1 or 1.2 (default: let the broker pick)")
	f.StringVar(&o.Client, "client", loadtest.ClientRaw, "raw | go-stomp: the STOMP client of producers and consumers (raw: the tool's own, lighter on CPU)")
	f.StringVar(&o.Login, "login", "", "CONNECT login")
	f.StringVar(&o.Passcode, "passcode", "", "CONNECT passcode")
	f.DurationVar(&o.IdleTimeout, "idle-timeout", loadtest.DefaultIdleTimeout, "stop when nothing was received for this long")
	f.DurationVar(&o.MaxDuration, "max-duration", loadtest.DefaultMaxDuration, "stop after this long in any case")
	f.IntVar(&o.DurableSubscribers, "durable-subscribers", 0, "durable catch-up scenario with N offline durable topic subscriptions (implies --topic and --persistent; --consumers is not used)")
	f.StringVar(&o.DataDir, "data-dir", "", "broker store directory on this machine, measured before and after publishing (durable scenario)")
	f.StringVar(&o.ClientIDPrefix, "client-id-prefix", "", "durable subscribers connect as <prefix>-<i> (default bench-<unixnano>)")
	f.StringVar(&o.Catchup, "catchup", "", "sequential | parallel: how the durable subscribers drain their backlogs (default sequential)")
	f.BoolVar(&cleanup, "cleanup", true, "delete the durable subscriptions at the end, also after an error or an interrupt (a second interrupt abandons it)")
	f.IntVar(&o.Connects, "connects", 0, "connect scenario: N CONNECT/CONNECTED/DISCONNECT round trips on fresh connections, shared by --producers workers")
	f.BoolVar(&o.ExpectRefused, "expect-refused", false, "connect scenario: every CONNECT must be answered with an ERROR frame (a bad login)")
	f.BoolVar(&jsonOut, "json", false, "also print the result as one JSON object")
	f.DurationVar(&progress, "progress", loadtest.DefaultProgress, "interval of progress lines on stderr (0: none)")
	return cmd
}
