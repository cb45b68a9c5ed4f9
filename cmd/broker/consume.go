package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/spf13/cobra"

	"github.com/activemq-go/broker/broker"
	"github.com/activemq-go/broker/internal/stompclient"
)

// Ack modes of consume.
const (
	ackAuto             = "auto"
	ackClient           = "client"
	ackClientIndividual = "client-individual"
)

// defaultConsumePrefetch is the prefetch consume asks for at most (the broker's default
// for queues): fewer when --count is smaller, so that nothing beyond the count is
// dispatched to it.
const defaultConsumePrefetch = 1000

// finishTimeout bounds the acknowledgements and DISCONNECT after an interrupt or a
// timeout.
const finishTimeout = 10 * time.Second

// outputHelp is the part of consume's and browse's help about the output.
const outputHelp = `
Output: each message body as is, followed by a line break; a body that holds line
breaks spans several lines. --json writes one JSON object a line instead, which keeps
every body exactly:
  {"destination":"/queue/x","message_id":"ID:...","headers":{...},"body":"..."}
with "body_base64" in place of "body" when the body is not UTF-8. headers holds every
header of the MESSAGE frame (the first of each name).
`

// consumeOptions are consume's flags.
type consumeOptions struct {
	stomp    stompFlags
	count    int
	json     bool
	selector string
	ack      string
	timeout  time.Duration
	durable  string
	clientID string
	prefetch int
	headers  []string
}

func newConsumeCommand() *cobra.Command {
	var o consumeOptions
	cmd := &cobra.Command{
		Use:   "consume [flags] DESTINATION",
		Short: "Receive messages over STOMP and print them, one a line",
		Long: `Subscribe to DESTINATION (/queue/NAME, /topic/NAME, ActiveMQ's queue://NAME) and print
what arrives, until --count messages came (0: until interrupted), or --timeout passed
without a message.

  broker consume --count 10 /queue/orders
  broker consume --json --selector "priority > 4" /queue/orders
  broker consume --timeout 2s /queue/orders          # drain what waits, then exit 0
  broker consume --durable audit --client-id tool /topic/events

--ack client (the default) and client-individual acknowledge each message once it
is written out: a message is taken off a queue only when printed, and exactly --count
are taken. consume asks the broker for no more than the count at a time
(activemq.prefetchSize, at most 1000) and acknowledges the last of them as it
disconnects, with the DISCONNECT, so that little is dispatched to it beyond the count;
what is (the acknowledgements make room before the broker reads the DISCONNECT) goes
back to the queue flagged redelivered. client acknowledges cumulatively, one ACK for
many; client-individual sends one ACK a message. --ack auto lets the broker count a
message consumed when it dispatches it: faster, but messages dispatched beyond --count
(up to the prefetch) are lost from a queue; use it to follow a topic.

--durable NAME with --client-id ID subscribes durably to a topic
(activemq.subscriptionName): what is published while the command is not running waits
for its next run. --header name=value adds a SUBSCRIBE header (x-stream-offset=first,
consumer-group=G for streams).
` + outputHelp + urlHelp + exitCodesHelp,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConsume(cmd, o, args[0])
		},
	}
	f := cmd.Flags()
	o.stomp.register(f)
	f.IntVar(&o.count, "count", 0, "stop after this many messages (0: until interrupted or --timeout)")
	f.BoolVar(&o.json, "json", false, "print one JSON object a line, with the headers")
	f.StringVar(&o.selector, "selector", "", "JMS selector: only messages it matches (\"priority > 4 AND type = 'order'\")")
	f.StringVar(&o.ack, "ack", ackClient, "auto | client | client-individual")
	f.DurationVar(&o.timeout, "timeout", 0, "stop after this long without a message (exit status 3 if fewer than --count came); 0: wait for ever")
	f.StringVar(&o.durable, "durable", "", "durable topic subscription name (activemq.subscriptionName); needs --client-id")
	f.StringVar(&o.clientID, "client-id", "", "CONNECT client-id (of a durable subscription)")
	f.IntVar(&o.prefetch, "prefetch", 0, "activemq.prefetchSize (0: --count up to 1000 in the client modes, else the broker's)")
	f.StringArrayVar(&o.headers, "header", nil, "name=value header added to the SUBSCRIBE; repeatable")
	return cmd
}

// validate checks the flags that do not depend on the connection.
func (o *consumeOptions) validate(dest string) error {
	switch {
	case o.count < 0:
		return usagef("--count %d: 0 (no limit) or more", o.count)
	case o.timeout < 0:
		return usagef("--timeout %s: 0 (none) or more", o.timeout)
	case o.prefetch < 0:
		return usagef("--prefetch %d: 0 (automatic) or more", o.prefetch)
	case o.ack != ackAuto && o.ack != ackClient && o.ack != ackClientIndividual:
		return usagef("--ack %q: auto, client or client-individual", o.ack)
	case o.durable != "" && o.clientID == "":
		return usagef("--durable %s needs --client-id: a durable subscription is named by both", o.durable)
	case o.durable != "" && !strings.HasPrefix(dest, "/topic/"):
		return usagef("--durable: %s is not a topic; only topics have durable subscriptions", dest)
	}
	return nil
}

// subscription is the SUBSCRIBE consume sends.
func (o *consumeOptions) subscription(dest string, h *frame.Header) stompclient.Subscription {
	s := stompclient.Subscription{
		Destination: dest, Ack: o.ack, Selector: o.selector,
		Prefetch: o.prefetch, DurableName: o.durable, Headers: h,
	}
	if s.Prefetch == 0 && o.ack != ackAuto && o.count > 0 {
		s.Prefetch = min(o.count, defaultConsumePrefetch)
	}
	return s
}

func runConsume(cmd *cobra.Command, o consumeOptions, arg string) error {
	dest, err := stompDestination(arg)
	if err != nil {
		return err
	}
	if err := o.validate(dest); err != nil {
		return err
	}
	h, err := parseHeaders("header", o.headers, frame.Id, frame.Destination, frame.Ack, frame.Receipt,
		"selector", "activemq.subscriptionName", "browser")
	if err != nil {
		return err
	}
	u, dialOpts, err := o.stomp.target(cmd.Flags())
	if err != nil {
		return err
	}
	dialOpts.ClientID = o.clientID

	ctx, stop := signalContext(cmd)
	defer stop()
	c, err := stompclient.Dial(ctx, u, dialOpts)
	if err != nil {
		return fmt.Errorf("consume %s: %w", dest, fromCtx(ctx, err))
	}
	defer c.Close()
	sub := o.subscription(dest, h)
	if err := c.Subscribe(ctx, sub); err != nil {
		return fmt.Errorf("consume %s: subscribe: %w", dest, fromCtx(ctx, err))
	}

	out := newMessageWriter(cmd.OutOrStdout(), o.json)
	// Progress is for a count to reach; a bar on the terminal the messages are printed on
	// would mix with them.
	po := o.stomp.progressOptions(cmd, !isTerminal(cmd.OutOrStdout()))
	if o.count == 0 {
		po = progressOptions{}
	}
	p := newProgress(po, "received", int64(o.count))
	defer p.Done()
	r := &consumer{c: c, o: o, out: out, p: p, prefetch: sub.Prefetch}
	err = r.run(ctx)
	// What was printed is acknowledged, whatever ended the run.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if ferr := r.finish(fctx); err == nil {
		err = ferr
	}
	p.Done()
	switch {
	case errors.Is(err, errTimedOut):
		return fmt.Errorf("consume %s: %w after %s without a message: %s of %s messages came", dest, err, o.timeout, thousands(r.received), thousands(int64(o.count)))
	case err != nil:
		return fmt.Errorf("consume %s: %w", dest, fromCtx(ctx, err))
	}
	return nil
}

// fromCtx is errInterrupted when ctx, the command's, ended (SIGINT or SIGTERM; the
// error then is only a consequence), else err.
func fromCtx(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errInterrupted
	}
	return err
}

// consumer is one run of consume.
type consumer struct {
	c        *stompclient.Conn
	o        consumeOptions
	out      *messageWriter
	p        *progress
	prefetch int

	received int64
	deferred []*frame.Frame // printed, acknowledged by finish
}

// run receives and prints until the count, the timeout or an error.
func (r *consumer) run(ctx context.Context) error {
	for r.o.count == 0 || r.received < int64(r.o.count) {
		m, err := r.receive(ctx)
		if errors.Is(err, errTimedOut) && r.o.count == 0 {
			return nil // drained
		}
		if err != nil {
			return err
		}
		if err := r.out.write(m); err != nil {
			return fmt.Errorf("writing the output: %w", err)
		}
		r.received++
		r.p.Add(1)
		if err := r.ack(m); err != nil {
			return err
		}
	}
	return nil
}

// receive waits for the next message, up to the timeout.
func (r *consumer) receive(ctx context.Context) (*frame.Frame, error) {
	if r.o.timeout <= 0 {
		return r.c.Receive(ctx)
	}
	tctx, cancel := context.WithTimeout(ctx, r.o.timeout)
	defer cancel()
	m, err := r.c.Receive(tctx)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, errTimedOut
	}
	return m, err
}

// ack acknowledges m, printed, in the client modes: at once while the count is farther
// than a prefetch away (the broker then dispatches one more), else at the end, so that
// the broker never dispatches beyond the count.
func (r *consumer) ack(m *frame.Frame) error {
	if r.o.ack == ackAuto {
		return nil
	}
	if r.o.count > 0 && r.received > int64(r.o.count-r.prefetch) {
		if r.o.ack == ackClient {
			r.deferred = append(r.deferred[:0], m) // cumulative: the last one acks all
		} else {
			r.deferred = append(r.deferred, m)
		}
		return nil
	}
	return r.c.Ack(m)
}

// finish acknowledges the deferred messages and disconnects.
func (r *consumer) finish(ctx context.Context) error {
	acks := r.deferred
	r.deferred = nil
	return r.c.Disconnect(ctx, acks...)
}

// messageWriter prints messages as text lines or JSON lines, flushing each so that it
// is out before it is acknowledged.
type messageWriter struct {
	w    *bufio.Writer
	json bool
}

func newMessageWriter(w io.Writer, asJSON bool) *messageWriter {
	return &messageWriter{w: bufio.NewWriter(w), json: asJSON}
}

// jsonMessage is a message as --json prints it.
type jsonMessage struct {
	Destination string            `json:"destination"`
	MessageID   string            `json:"message_id"`
	Headers     map[string]string `json:"headers"`
	Body        *string           `json:"body,omitempty"`
	BodyBase64  string            `json:"body_base64,omitempty"`
}

func toJSONMessage(m *frame.Frame) jsonMessage {
	j := jsonMessage{
		Destination: m.Header.Get(frame.Destination),
		MessageID:   m.Header.Get(frame.MessageId),
		Headers:     make(map[string]string, m.Header.Len()),
	}
	for i := range m.Header.Len() {
		k, v := m.Header.GetAt(i)
		if _, seen := j.Headers[k]; !seen {
			j.Headers[k] = v
		}
	}
	if utf8.Valid(m.Body) {
		s := string(m.Body)
		j.Body = &s
	} else {
		j.BodyBase64 = base64.StdEncoding.EncodeToString(m.Body)
	}
	return j
}

func (w *messageWriter) write(m *frame.Frame) error {
	if w.json {
		b, err := json.Marshal(toJSONMessage(m))
		if err != nil {
			return err
		}
		_, _ = w.w.Write(b)
	} else {
		_, _ = w.w.Write(m.Body)
	}
	_ = w.w.WriteByte('\n')
	return w.w.Flush()
}

// browseOptions are browse's flags.
type browseOptions struct {
	stomp    stompFlags
	json     bool
	limit    int
	selector string
}

func newBrowseCommand() *cobra.Command {
	var o browseOptions
	cmd := &cobra.Command{
		Use:   "browse [flags] QUEUE",
		Short: "Print the messages waiting on a queue without taking them",
		Long: `Print the messages waiting on QUEUE (/queue/NAME, ActiveMQ's queue://NAME) in the order
consumers would get them, without consuming them (a STOMP browser:true
subscription). Messages dispatched to a consumer and not yet acknowledged are not
shown, and a broker shows at most a page of them (400 here, ActiveMQ's
maxBrowsePageSize); the admin API (GET /api/queues/NAME/messages) pages through all.

  broker browse /queue/DLQ.orders
  broker browse --json --limit 10 --selector "JMSXGroupID = 'g1'" /queue/orders
` + outputHelp + urlHelp + exitCodesHelp,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBrowse(cmd, o, args[0])
		},
	}
	f := cmd.Flags()
	o.stomp.register(f)
	f.BoolVar(&o.json, "json", false, "print one JSON object a line, with the headers")
	f.IntVar(&o.limit, "limit", 0, "print at most this many messages (0: all the broker shows)")
	f.StringVar(&o.selector, "selector", "", "JMS selector: only messages it matches")
	_ = f.MarkHidden("progress") // a browse is one page: nothing to follow
	return cmd
}

func runBrowse(cmd *cobra.Command, o browseOptions, arg string) error {
	dest, err := stompDestination(arg)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(dest, "/queue/") {
		return usagef("browse %s: only a queue can be browsed", dest)
	}
	if o.limit < 0 {
		return usagef("--limit %d: 0 (no limit) or more", o.limit)
	}
	u, dialOpts, err := o.stomp.target(cmd.Flags())
	if err != nil {
		return err
	}
	ctx, stop := signalContext(cmd)
	defer stop()
	c, err := stompclient.Dial(ctx, u, dialOpts)
	if err != nil {
		return fmt.Errorf("browse %s: %w", dest, fromCtx(ctx, err))
	}
	defer c.Close()
	if err := c.Subscribe(ctx, stompclient.Subscription{Destination: dest, Selector: o.selector, Browser: true}); err != nil {
		return fmt.Errorf("browse %s: %w", dest, fromCtx(ctx, err))
	}
	out := newMessageWriter(cmd.OutOrStdout(), o.json)
	n := 0
	for ; o.limit == 0 || n < o.limit; n++ {
		m, err := c.Receive(ctx)
		if err != nil {
			return fmt.Errorf("browse %s: %w", dest, fromCtx(ctx, err))
		}
		if m.Header.Get("browser") == "end" {
			break
		}
		if err := out.write(m); err != nil {
			return fmt.Errorf("browse %s: writing the output: %w", dest, err)
		}
	}
	if o.limit == 0 && n >= broker.DefaultBrowsePageSize {
		fmt.Fprintf(cmd.ErrOrStderr(), "browse %s: stopped at %d messages, the most a broker shows a browser (ActiveMQ's maxBrowsePageSize); the queue may hold more: the admin API (GET /api/queues/NAME/messages) pages through all\n",
			dest, n)
	}
	if err := c.Disconnect(ctx); err != nil {
		return fmt.Errorf("browse %s: %w", dest, fromCtx(ctx, err))
	}
	return nil
}
