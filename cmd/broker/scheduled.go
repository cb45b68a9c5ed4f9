package main

import (
	"fmt"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/activemq-go/broker/admin"
)

func newScheduledCommand() *cobra.Command {
	var (
		af        adminFlags
		jsonOut   bool
		remove    string
		removeAll bool
	)
	cmd := &cobra.Command{
		Use:   "scheduled [flags]",
		Short: "List or remove scheduled messages (admin API)",
		Long: `List the scheduled messages (AMQ_SCHEDULED_DELAY/_PERIOD/_REPEAT), soonest first:

  ID                           DESTINATION     NEXT RUN (UTC)           REPEATS  PERIOD  SIZE
  ID:mq1-1796693977219-7       /queue/remind   2026-12-08 02:25:14.512  3        1m0s    412 B

REPEATS is how many more deliveries follow the next run. --json prints the API's JSON
(GET /api/scheduled-jobs). --remove ID removes one (its scheduledJobId, the ID column),
--remove-all every one, and print what they did.
` + adminHelp + exitCodesHelp,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if remove != "" && removeAll {
				return usagef("--remove and --remove-all: one or the other")
			}
			c, err := af.client(cmd.Flags())
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			out := cmd.OutOrStdout()
			switch {
			case remove != "":
				if err := c.do(ctx, http.MethodDelete, "/api/scheduled-jobs/"+url.PathEscape(remove), nil, nil); err != nil {
					return fmt.Errorf("scheduled --remove %s: %w", remove, err)
				}
				_, err = fmt.Fprintf(out, "removed scheduled message %s\n", remove)
				return err
			case removeAll:
				var res admin.RemovedResult
				if err := c.do(ctx, http.MethodDelete, "/api/scheduled-jobs", nil, &res); err != nil {
					return fmt.Errorf("scheduled --remove-all: %w", err)
				}
				_, err = fmt.Fprintf(out, "removed %s scheduled %s\n", thousands(int64(res.Removed)), plural(int64(res.Removed), "message"))
				return err
			}
			var jobs []admin.ScheduledJob
			if err := c.do(ctx, http.MethodGet, "/api/scheduled-jobs", nil, &jobs); err != nil {
				return fmt.Errorf("scheduled: %w", err)
			}
			if jsonOut {
				return writeJSON(out, jobs)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tDESTINATION\tNEXT RUN (UTC)\tREPEATS\tPERIOD\tSIZE")
			for _, j := range jobs {
				period := "-"
				if j.PeriodMS > 0 {
					period = (time.Duration(j.PeriodMS) * time.Millisecond).String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", j.ID, j.Destination, j.NextRun.UTC().Format("2006-01-02 15:04:05.000"),
					j.RepeatsLeft, period, bytesIEC(j.Size))
			}
			return tw.Flush()
		},
	}
	af.register(cmd.Flags())
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the API's JSON")
	cmd.Flags().StringVar(&remove, "remove", "", "remove the scheduled message of this id")
	cmd.Flags().BoolVar(&removeAll, "remove-all", false, "remove every scheduled message")
	return cmd
}
