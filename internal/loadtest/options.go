package loadtest

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/go-stomp/stomp/v3"
)

// Defaults applied by Run to zero-valued Options fields.
const (
	DefaultIdleTimeout = 15 * time.Second
	DefaultMaxDuration = 5 * time.Minute
	DefaultProgress    = time.Second
)

// Catchup values: how the durable subscribers drain their backlogs.
const (
	CatchupSequential = "sequential" // one after the other
	CatchupParallel   = "parallel"   // all at once
)

// Receipts values besides a positive integer K (a receipt on every K-th send).
const (
	ReceiptsEvery = "every"
	ReceiptsNone  = "none"
)

// Client values: which STOMP client the producers and consumers use.
const (
	ClientRaw     = "raw"      // the load tool's own frame-by-frame client (wire.go)
	ClientGoStomp = "go-stomp" // github.com/go-stomp/stomp/v3's client
)

// Options describe one run. The zero value of a field means its default.
type Options struct {
	// Addr is the broker's STOMP address, host:port.
	Addr string

	// Producers and Consumers are the number of connections of each kind;
	// each consumer connection has one subscription.
	Producers, Consumers int

	// Size is the body size in bytes; headers are not counted.
	Size int

	// Messages is the total number of messages sent, split evenly over the
	// producers, the remainder going to the first ones.
	Messages int

	// Persistent adds persistent:true to every SEND.
	Persistent bool

	// Receipts is "every" (wait for a receipt after each send), "none"
	// (default), or K: a receipt on every K-th send, waited for, so at most
	// K sends are unconfirmed.
	Receipts string

	// Topic selects topic accounting: every consumer expects every message.
	Topic bool

	// Destination is where producers send and consumers subscribe. Empty
	// means a fresh /queue/bench-<unixnano> or /topic/bench-<unixnano>.
	Destination string

	// ConsumerDestination, if set, is subscribed instead of Destination:
	// for virtual topics, composite destinations, or to test a run that
	// receives nothing.
	ConsumerDestination string

	// Ack is the subscription ack mode: "auto" (default; "client-individual"
	// in the durable scenario), "client" or "client-individual". In the
	// client modes every message is acked.
	Ack string

	// Version, if set, is the only STOMP version offered on CONNECT: "1.0",
	// "1.1" or "1.2". Empty offers all three and the broker picks.
	Version string

	// Client is the STOMP client of the producers and consumers: "raw"
	// (default), the load tool's own, which spends a few microseconds of
	// CPU per message, or "go-stomp", several times that. On a machine the
	// broker shares with the tool, the client's CPU caps the rate a run
	// can show. The durable scenario's set-up and clean-up are always raw.
	Client string

	// Login and Passcode are sent on CONNECT when either is set.
	Login, Passcode string

	// Prefetch, when positive, is sent as activemq.prefetchSize on SUBSCRIBE.
	Prefetch int
	// Selector, when set, is sent as every consumer's selector header; it must match
	// every message the run sends, or they count as lost.
	Selector string
	// ConsumerHeaders are added to every SUBSCRIBE, each written "name=value":
	// a stream's consumer-group or x-stream-offset, for instance.
	ConsumerHeaders []string
	// DedupIDs gives every SEND a duplicate-detection id, _AMQ_DUPL_ID:
	// <run>-<producer>-<seq>, unique in the run: what duplicate detection costs.
	DedupIDs bool

	// Shared makes the consumers of a topic share its messages, each delivered
	// to one of them, as the members of a consumer group on a stream do: the
	// accounting is a queue's, and order is not checked (a stream keeps order
	// only within a partition).
	Shared bool

	// Replay publishes every message before any consumer subscribes, then
	// measures how fast the consumers drain what is stored: a stream read from
	// x-stream-offset: first, or a queue's backlog. The drain rate runs from
	// the first SUBSCRIBE to the last message; latency is not measured (the
	// messages waited on purpose).
	Replay bool

	// IdleTimeout stops the run when nothing was received for that long
	// (default 15s). MaxDuration stops it in any case (default 5m),
	// counted from the start barrier.
	IdleTimeout, MaxDuration time.Duration

	// DurableSubscribers, when positive, makes Run perform the durable
	// catch-up scenario (see the package comment) with that many durable
	// topic subscriptions. It implies Topic and Persistent; Consumers is
	// not used. MaxDuration then bounds the publishing and each drain
	// separately.
	DurableSubscribers int

	// DataDir is the broker's store directory on this machine. When set,
	// the durable scenario reports how much the files below it grew while
	// the messages were published.
	DataDir string

	// ClientIDPrefix names the durable subscribers: client-id <prefix>-<i>,
	// i from 0. Empty means bench-<unixnano>, so that runs never reuse
	// each other's subscriptions.
	ClientIDPrefix string

	// Catchup is how the durable subscribers drain their backlogs:
	// "sequential" (default) or "parallel".
	Catchup string

	// KeepDurable leaves the durable subscriptions on the broker; by
	// default the scenario deletes them at the end, even after an error or
	// a canceled context, waiting up to the larger of IdleTimeout and
	// MaxDuration for the broker to confirm.
	KeepDurable bool

	// Connects, when positive, makes Run perform the connect scenario (see
	// the package comment): that many CONNECT, CONNECTED, DISCONNECT round
	// trips, each on a fresh TCP connection, shared by Producers workers
	// that each make theirs one after another. Login, Passcode and Version
	// apply; Consumers, Messages and the other options of messages and
	// subscriptions are not used.
	Connects int

	// ExpectRefused makes the connect scenario expect an ERROR frame in
	// answer to every CONNECT (a bad login's, to measure how fast a broker
	// turns those away): a CONNECTED then counts as a failure.
	ExpectRefused bool

	// Progress is the interval of progress lines written to ProgressOut
	// (default 1s). No progress is written when ProgressOut is nil.
	Progress    time.Duration
	ProgressOut io.Writer
}

// withDefaults returns o with defaults filled in. now names a fresh
// destination.
func (o Options) withDefaults(now time.Time) Options {
	if o.DurableSubscribers > 0 {
		o.Topic, o.Persistent = true, true
		if o.Ack == "" {
			o.Ack = stomp.AckClientIndividual.String()
		}
		if o.Catchup == "" {
			o.Catchup = CatchupSequential
		}
		if o.ClientIDPrefix == "" {
			o.ClientIDPrefix = fmt.Sprintf("bench-%d", now.UnixNano())
		}
	}
	if o.Receipts == "" {
		o.Receipts = ReceiptsNone
	}
	if o.Ack == "" {
		o.Ack = stomp.AckAuto.String()
	}
	if o.Client == "" {
		o.Client = ClientRaw
	}
	if o.Destination == "" {
		kind := "queue"
		if o.Topic || o.Shared {
			kind = "topic"
		}
		o.Destination = fmt.Sprintf("/%s/bench-%d", kind, now.UnixNano())
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxDuration == 0 {
		o.MaxDuration = DefaultMaxDuration
	}
	if o.Progress == 0 {
		o.Progress = DefaultProgress
	}
	return o
}

// subscribed is the destination consumers subscribe to.
func (o Options) subscribed() string {
	if o.ConsumerDestination != "" {
		return o.ConsumerDestination
	}
	return o.Destination
}

// validate checks options after withDefaults.
func (o Options) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrOptions, fmt.Sprintf(format, args...))
	}
	switch {
	case o.Addr == "":
		return bad("addr is empty")
	case o.Producers < 1:
		return bad("producers must be at least 1, got %d", o.Producers)
	case o.DurableSubscribers < 0:
		return bad("durable subscribers must not be negative, got %d", o.DurableSubscribers)
	case o.Connects < 0:
		return bad("connects must not be negative, got %d", o.Connects)
	case o.Connects > 0 && (o.DurableSubscribers > 0 || o.Replay):
		return bad("connects is a scenario of its own, not one with durable subscribers or replay")
	case o.ExpectRefused && o.Connects == 0:
		return bad("expect-refused applies to the connects scenario only")
	case o.DurableSubscribers == 0 && o.Connects == 0 && o.Consumers < 1:
		return bad("consumers must be at least 1, got %d", o.Consumers)
	case o.DurableSubscribers == 0 && (o.DataDir != "" || o.Catchup != ""):
		return bad("data dir and catch-up apply to durable subscribers only")
	case o.DurableSubscribers > 0 && o.Catchup != CatchupSequential && o.Catchup != CatchupParallel:
		return bad("catch-up must be %s or %s, got %q", CatchupSequential, CatchupParallel, o.Catchup)
	case o.Size < 0:
		return bad("size must not be negative, got %d", o.Size)
	case o.Connects == 0 && o.Messages < 1:
		return bad("messages must be at least 1, got %d", o.Messages)
	case o.Prefetch < 0:
		return bad("prefetch must not be negative, got %d", o.Prefetch)
	case o.Shared && o.Topic:
		return bad("shared consumers and topic accounting exclude each other")
	case o.Replay && o.DurableSubscribers > 0:
		return bad("replay and durable subscribers are different scenarios")
	case o.IdleTimeout < 0 || o.MaxDuration < 0 || o.Progress < 0:
		return bad("durations must not be negative")
	case o.Client != ClientRaw && o.Client != ClientGoStomp:
		return bad("client must be %s or %s, got %q", ClientRaw, ClientGoStomp, o.Client)
	}
	if _, err := receiptInterval(o.Receipts); err != nil {
		return err
	}
	if _, err := ackMode(o.Ack); err != nil {
		return err
	}
	if _, err := parseHeaders(o.ConsumerHeaders); err != nil {
		return err
	}
	if o.Version != "" {
		if err := stomp.Version(o.Version).CheckSupported(); err != nil {
			return bad("stomp version must be 1.0, 1.1 or 1.2, got %q", o.Version)
		}
	}
	if o.Connects > 0 {
		return nil // no destination is used
	}
	dest := o.subscribed()
	if o.Topic && strings.HasPrefix(dest, "/queue/") {
		return bad("topic run subscribes to queue %q", dest)
	}
	if !o.Topic && !o.Shared && strings.HasPrefix(dest, "/topic/") {
		return bad("queue run subscribes to topic %q; use topic mode, or shared for a consumer group", dest)
	}
	return nil
}

// ordered says whether the run promises an order to check: a topic, or a
// queue with one consumer; never shared consumers.
func (o Options) ordered() bool {
	return !o.Shared && (o.Topic || o.Consumers == 1)
}

// parseHeaders splits "name=value" headers into name, value pairs.
func parseHeaders(hs []string) ([]string, error) {
	out := make([]string, 0, 2*len(hs))
	for _, h := range hs {
		k, v, ok := strings.Cut(h, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: consumer header %q: write name=value", ErrOptions, h)
		}
		out = append(out, k, v)
	}
	return out, nil
}

// receiptInterval turns Options.Receipts into K: 0 means no receipts, 1 a
// receipt on every send.
func receiptInterval(s string) (int, error) {
	switch s {
	case ReceiptsNone:
		return 0, nil
	case ReceiptsEvery:
		return 1, nil
	}
	k, err := strconv.Atoi(s)
	if err != nil || k < 1 {
		return 0, fmt.Errorf("%w: receipts must be every, none or a positive number, got %q", ErrOptions, s)
	}
	return k, nil
}

// ackMode maps Options.Ack onto go-stomp's ack modes.
func ackMode(s string) (stomp.AckMode, error) {
	for _, m := range []stomp.AckMode{stomp.AckAuto, stomp.AckClient, stomp.AckClientIndividual} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%w: ack must be auto, client or client-individual, got %q", ErrOptions, s)
}

// shares splits n messages over p producers, the remainder to the first ones.
func shares(n, p int) []int {
	out := make([]int, p)
	for i := range out {
		out[i] = n / p
		if i < n%p {
			out[i]++
		}
	}
	return out
}
