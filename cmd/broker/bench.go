package main

import (
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
when messages were lost or duplicated, not all were sent, or an error happened.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if progress > 0 {
				o.Progress = progress
				o.ProgressOut = cmd.ErrOrStderr()
			}
			res, err := loadtest.Run(ctx, o)
			if errors.Is(err, loadtest.ErrOptions) || errors.Is(err, loadtest.ErrConnect) {
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
	f.StringVar(&o.Addr, "addr", "127.0.0.1:61613", "broker STOMP address host:port")
	f.IntVar(&o.Producers, "producers", 1, "producer connections")
	f.IntVar(&o.Consumers, "consumers", 1, "consumer connections, one subscription each")
	f.IntVar(&o.Size, "size", 256, "message body size in bytes")
	f.IntVar(&o.Messages, "messages", 10000, "total messages sent, split over the producers")
	f.BoolVar(&o.Persistent, "persistent", false, "send with persistent:true")
	f.StringVar(&o.Receipts, "receipts", loadtest.ReceiptsNone, "every | none | K: wait for a receipt on every K-th send")
	f.BoolVar(&o.Topic, "topic", false, "use a topic: every consumer expects every message")
	f.StringVar(&o.Destination, "destination", "", "destination (default a fresh /queue/bench-<unixnano> or /topic/bench-<unixnano>)")
	f.StringVar(&o.ConsumerDestination, "consumer-destination", "", "subscribe here instead of --destination (virtual topics, composite destinations)")
	f.StringVar(&o.Ack, "ack", "auto", "auto | client | client-individual; client modes ack every message")
	f.IntVar(&o.Prefetch, "prefetch", 0, "send activemq.prefetchSize on SUBSCRIBE (0: do not send)")
	f.StringVar(&o.Version, "stomp-version", "", "offer only this STOMP version: 1.0, 1.1 or 1.2 (default: let the broker pick)")
	f.StringVar(&o.Login, "login", "", "CONNECT login")
	f.StringVar(&o.Passcode, "passcode", "", "CONNECT passcode")
	f.DurationVar(&o.IdleTimeout, "idle-timeout", loadtest.DefaultIdleTimeout, "stop when nothing was received for this long")
	f.DurationVar(&o.MaxDuration, "max-duration", loadtest.DefaultMaxDuration, "stop after this long in any case")
	f.BoolVar(&jsonOut, "json", false, "also print the result as one JSON object")
	f.DurationVar(&progress, "progress", loadtest.DefaultProgress, "interval of progress lines on stderr (0: none)")
	return cmd
}
