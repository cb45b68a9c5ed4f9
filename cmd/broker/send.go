package main

import (
	"context"
	"fmt"
	"io"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/spf13/cobra"

	"github.com/activemq-go/broker/internal/stompclient"
)

// sendOptions are send's flags.
type sendOptions struct {
	stomp      stompFlags
	count      int
	headers    []string
	persistent bool
	receipt    bool
}

func newSendCommand() *cobra.Command {
	var o sendOptions
	cmd := &cobra.Command{
		Use:   "send [flags] DESTINATION [BODY]",
		Short: "Send a message over STOMP (BODY, else standard input)",
		Long: `Send a message to DESTINATION (/queue/NAME, /topic/NAME, or ActiveMQ's queue://NAME,
topic://NAME) over STOMP. The body is BODY, or else all of standard input, as is.

  broker send /queue/orders '{"id": 1}'
  broker send --persistent --header priority=9 /queue/orders < order.json
  broker send --count 50000 --url stomp://app:secret@mq:61613 /topic/prices tick

--count N sends N copies, with a progress bar on a terminal (plain lines on stderr
otherwise). --persistent sends persistent:true, and then waits for the broker's
receipt of every message (--receipt, on by default for persistent messages), keeping
up to 512 unanswered so that the store can sync many at once. Without receipts the
command still waits at the end for the broker to handle everything it sent (the
receipt of DISCONNECT), so an ERROR frame for any message is reported and exit 0
means the broker took them all.
` + urlHelp + exitCodesHelp,
		Args: usageArgs(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSend(cmd, o, args)
		},
	}
	f := cmd.Flags()
	o.stomp.register(f)
	f.IntVar(&o.count, "count", 1, "send this many copies of the message")
	f.StringArrayVar(&o.headers, "header", nil, "name=value header of the message; repeatable (priority=9, expires=..., JMSXGroupID=g, reply-to=/queue/r)")
	f.BoolVar(&o.persistent, "persistent", false, "send persistent:true: the broker stores the message before it answers")
	f.BoolVar(&o.receipt, "receipt", false, "wait for the broker's receipt of every message (default true with --persistent)")
	return cmd
}

func runSend(cmd *cobra.Command, o sendOptions, args []string) error {
	dest, err := stompDestination(args[0])
	if err != nil {
		return err
	}
	h, err := parseHeaders("header", o.headers, frame.Destination, frame.ContentLength, frame.Receipt, frame.Transaction)
	if err != nil {
		return err
	}
	if o.count < 1 {
		return usagef("--count %d: send at least 1", o.count)
	}
	if o.persistent {
		h.Set("persistent", "true")
	}
	if !cmd.Flags().Changed("receipt") {
		o.receipt = o.persistent
	}
	u, dialOpts, err := o.stomp.target(cmd.Flags())
	if err != nil {
		return err
	}
	var body []byte
	if len(args) == 2 {
		body = []byte(args[1])
	} else if body, err = readBody(cmd.InOrStdin(), cmd.ErrOrStderr()); err != nil {
		return err
	}

	ctx, stop := signalContext(cmd)
	defer stop()
	c, err := stompclient.Dial(ctx, u, dialOpts)
	if err != nil {
		return fmt.Errorf("send %s: %w", dest, fromCtx(ctx, err))
	}
	defer c.Close()
	// An interrupt closes the connection, which ends a send blocked by flow control.
	context.AfterFunc(ctx, func() { _ = c.Close() })

	var p *progress
	if o.count > 1 {
		p = newProgress(o.stomp.progressOptions(cmd, true), "sent", int64(o.count))
	} else {
		p = newProgress(progressOptions{}, "sent", 1)
	}
	defer p.Done()
	err = sendCopies(ctx, c, dest, h, body, o, p)
	if err == nil {
		err = c.Disconnect(ctx)
	}
	if err != nil {
		err = fromCtx(ctx, err)
		if o.count > 1 {
			done := "written"
			if o.receipt {
				done = "receipted"
			}
			return fmt.Errorf("send %s: %w (%s of %s %s)", dest, err, thousands(p.Count()), thousands(int64(o.count)), done)
		}
		return fmt.Errorf("send %s: %w", dest, err)
	}
	return nil
}

// sendCopies sends o.count copies, with at most stompclient.MaxOutstanding receipts
// outstanding, counting each on p once sent (without receipts) or receipted.
func sendCopies(ctx context.Context, c *stompclient.Conn, dest string, h *frame.Header, body []byte, o sendOptions, p *progress) error {
	await := func() error {
		if _, err := c.AwaitReceipt(ctx); err != nil {
			return err
		}
		p.Add(1)
		return nil
	}
	for range o.count {
		if o.receipt {
			for c.Outstanding() >= stompclient.MaxOutstanding {
				if err := await(); err != nil {
					return err
				}
			}
		} else if err := c.Err(); err != nil {
			return err // an ERROR frame: stop at once
		}
		if _, err := c.Send(dest, h, body, o.receipt); err != nil {
			return err
		}
		if !o.receipt {
			p.Add(1)
		}
	}
	for c.Outstanding() > 0 {
		if err := await(); err != nil {
			return err
		}
	}
	return nil
}

// readBody reads the body from standard input, telling a terminal user how to end it.
func readBody(in io.Reader, prompt io.Writer) ([]byte, error) {
	if isTerminal(in) {
		fmt.Fprintln(prompt, "reading the message body from standard input; end it with Ctrl-D")
	}
	body, err := io.ReadAll(in)
	if err != nil {
		return nil, fmt.Errorf("reading the body from standard input: %w", err)
	}
	return body, nil
}
