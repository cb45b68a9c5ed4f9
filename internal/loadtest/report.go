package loadtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Result holds the figures of one run.
type Result struct {
	// Sent counts sends the client accepted; Received counts bench
	// messages delivered, duplicates included.
	Sent, Received int64
	// Expected is Sent for a queue, Sent × consumers for a topic.
	Expected int64
	// Lost is Expected minus distinct deliveries (per consumer for a
	// topic). Duplicated counts deliveries of something already delivered
	// (to the same consumer, for a topic). OutOfOrder counts sequence
	// numbers going backwards per consumer and producer, where an order is
	// promised (a topic, or a queue with one consumer).
	Lost, Duplicated, OutOfOrder int64
	// Foreign counts messages on the destination that this run did not send.
	Foreign int64

	// SendRate is Sent over the time from the start to the last send;
	// RecvRate is Received over the time from the start to the last receipt.
	SendRate, RecvRate       float64
	SendElapsed, RecvElapsed time.Duration

	// Latency percentiles (within 1.6%) and the exact maximum.
	P50, P90, P99, Max time.Duration

	// Elapsed runs from the start barrier to the stop.
	Elapsed time.Duration
	// Stop says why the run stopped: one of the Stop* constants.
	Stop string
	// Destination is the destination the producers sent to.
	Destination string

	// Durable has the figures of the durable catch-up scenario, nil for
	// other runs. Latency is not measured there: the messages waited for
	// their subscribers on purpose.
	Durable *DurableResult

	// Connects has the figures of the connect scenario, nil for other
	// runs; the message figures of Result are zero there.
	Connects *ConnectResult

	// Err is the error Run returned.
	Err error
}

// Failure returns why a run should not count as a pass, or nil: an error,
// lost or duplicated messages, or messages never sent (the run stopped
// before the producers were done); in the connect scenario, connects
// refused (accepted, when a refusal was expected), failed or not made.
// o are the options of the run.
func (r Result) Failure(o Options) error {
	var errs []error
	if r.Err != nil {
		errs = append(errs, r.Err)
	}
	if r.Lost > 0 {
		errs = append(errs, fmt.Errorf("%w: %d of %d", ErrLost, r.Lost, r.Expected))
	}
	if r.Duplicated > 0 {
		errs = append(errs, fmt.Errorf("%w: %d", ErrDuplicated, r.Duplicated))
	}
	if r.Connects != nil {
		errs = append(errs, r.Connects.failures(r.Stop, r.Err)...)
	} else if r.Err == nil && r.Sent < int64(o.Messages) {
		errs = append(errs, fmt.Errorf("%w: %d of %d before %s", ErrUnsent, r.Sent, o.Messages, r.Stop))
	}
	if r.Durable != nil && r.Durable.CleanupErr != nil && !errors.Is(r.Err, ErrCleanup) {
		errs = append(errs, r.Durable.CleanupErr)
	}
	if len(errs) == 0 {
		return nil
	}
	return failures(errs)
}

// failures joins errors on one line, for a command's final message.
type failures []error

func (f failures) Error() string {
	s := make([]string, len(f))
	for i, err := range f {
		s[i] = err.Error()
	}
	return strings.Join(s, "; ")
}

func (f failures) Unwrap() []error { return f }

// Fprint writes the human report of a run with options o.
func (r Result) Fprint(w io.Writer, o Options) {
	o = o.withDefaults(time.Time{})
	if r.Connects != nil {
		r.fprintConnects(w, o)
		return
	}
	dest := r.Destination
	if dest == "" {
		dest = o.Destination
	}
	fmt.Fprintf(w, "broker bench: addr=%s dest=%s", o.Addr, dest)
	if o.ConsumerDestination != "" {
		fmt.Fprintf(w, " consumer-dest=%s", o.ConsumerDestination)
	}
	if r.Durable != nil {
		fmt.Fprintf(w, " durable-subscribers=%d client-id-prefix=%s catchup=%s", o.DurableSubscribers, r.Durable.ClientIDPrefix, o.Catchup)
		if o.DataDir != "" {
			fmt.Fprintf(w, " data-dir=%s", o.DataDir)
		}
		fmt.Fprintf(w, " producers=%d", o.Producers)
	} else {
		fmt.Fprintf(w, " producers=%d consumers=%d", o.Producers, o.Consumers)
	}
	fmt.Fprintf(w, " size=%d messages=%d persistent=%t receipts=%s ack=%s",
		o.Size, o.Messages, o.Persistent, o.Receipts, o.Ack)
	if o.Prefetch > 0 {
		fmt.Fprintf(w, " prefetch=%d", o.Prefetch)
	}
	if o.Version != "" {
		fmt.Fprintf(w, " stomp=%s", o.Version)
	}
	if o.Client == ClientGoStomp {
		fmt.Fprintf(w, " client=%s", o.Client)
	}
	if o.Shared {
		fmt.Fprint(w, " shared=true")
	}
	if o.Replay {
		fmt.Fprint(w, " replay=true")
	}
	for _, h := range o.ConsumerHeaders {
		fmt.Fprintf(w, " consumer-header=%s", h)
	}
	if o.DedupIDs {
		fmt.Fprint(w, " dedup-ids=true")
	}
	fmt.Fprintln(w)
	if r.Durable != nil {
		r.fprintDurable(w, o)
		r.fprintStop(w)
		return
	}

	fmt.Fprintf(w, "sent %d in %s (%s msgs/s)\n", r.Sent, roundDuration(r.SendElapsed), groupDigits(int64(r.SendRate)))
	received := "received"
	if o.Replay {
		received = "replayed"
	}
	fmt.Fprintf(w, "%s %d", received, r.Received)
	if r.Received != r.Expected {
		fmt.Fprintf(w, " of %d expected", r.Expected)
	}
	fmt.Fprintf(w, " in %s (%s msgs/s)\n", roundDuration(r.RecvElapsed), groupDigits(int64(r.RecvRate)))
	if !o.Replay { // replayed messages waited on purpose
		fmt.Fprintf(w, "latency p50=%s p90=%s p99=%s max=%s\n",
			roundDuration(r.P50), roundDuration(r.P90), roundDuration(r.P99), roundDuration(r.Max))
	}

	order := "n/a"
	if o.ordered() {
		order = strconv.FormatInt(r.OutOfOrder, 10)
	}
	fmt.Fprintf(w, "lost %d  duplicated %d  out-of-order %s", r.Lost, r.Duplicated, order)
	if r.Foreign > 0 {
		fmt.Fprintf(w, "  foreign %d", r.Foreign)
	}
	fmt.Fprintln(w)
	r.fprintStop(w)
}

// fprintStop writes why a run stopped early and its error.
func (r Result) fprintStop(w io.Writer) {
	if r.Stop != "" && r.Stop != StopComplete {
		fmt.Fprintf(w, "stopped: %s after %s\n", r.Stop, roundDuration(r.Elapsed))
	}
	if r.Err != nil {
		fmt.Fprintf(w, "error: %v\n", r.Err)
	}
}

// jsonReport is the machine-readable report; durations are in milliseconds.
type jsonReport struct {
	Addr                string   `json:"addr"`
	Destination         string   `json:"destination"`
	ConsumerDestination string   `json:"consumer_destination,omitempty"`
	Producers           int      `json:"producers"`
	Consumers           int      `json:"consumers"`
	Size                int      `json:"size"`
	Messages            int      `json:"messages"`
	Persistent          bool     `json:"persistent"`
	Topic               bool     `json:"topic"`
	Receipts            string   `json:"receipts"`
	Ack                 string   `json:"ack"`
	Prefetch            int      `json:"prefetch,omitempty"`
	Version             string   `json:"stomp_version,omitempty"`
	Shared              bool     `json:"shared,omitempty"`
	Replay              bool     `json:"replay,omitempty"`
	ConsumerHeaders     []string `json:"consumer_headers,omitempty"`
	Sent                int64    `json:"sent"`
	Expected            int64    `json:"expected"`
	Received            int64    `json:"received"`
	Lost                int64    `json:"lost"`
	Duplicated          int64    `json:"duplicated"`
	OutOfOrder          int64    `json:"out_of_order"`
	Foreign             int64    `json:"foreign"`
	SendRate            float64  `json:"send_rate"`
	RecvRate            float64  `json:"recv_rate"`
	SendMs              float64  `json:"send_ms"`
	RecvMs              float64  `json:"recv_ms"`
	ElapsedMs           float64  `json:"elapsed_ms"`
	P50Ms               float64  `json:"p50_ms"`
	P90Ms               float64  `json:"p90_ms"`
	P99Ms               float64  `json:"p99_ms"`
	MaxMs               float64  `json:"max_ms"`
	Stop                string   `json:"stop"`
	Error               string   `json:"error,omitempty"`

	Durable *jsonDurable `json:"durable,omitempty"`
}

// WriteJSON writes the report of a run with options o as one JSON object
// on one line.
func (r Result) WriteJSON(w io.Writer, o Options) error {
	o = o.withDefaults(time.Time{})
	if r.Connects != nil {
		return r.writeConnectsJSON(w, o)
	}
	j := jsonReport{
		Addr: o.Addr, Destination: r.Destination, ConsumerDestination: o.ConsumerDestination,
		Producers: o.Producers, Consumers: o.Consumers, Size: o.Size, Messages: o.Messages,
		Persistent: o.Persistent, Topic: o.Topic, Receipts: o.Receipts, Ack: o.Ack, Prefetch: o.Prefetch, Version: o.Version,
		Shared: o.Shared, Replay: o.Replay, ConsumerHeaders: o.ConsumerHeaders,
		Sent: r.Sent, Expected: r.Expected, Received: r.Received,
		Lost: r.Lost, Duplicated: r.Duplicated, OutOfOrder: r.OutOfOrder, Foreign: r.Foreign,
		SendRate: r.SendRate, RecvRate: r.RecvRate,
		SendMs: ms(r.SendElapsed), RecvMs: ms(r.RecvElapsed), ElapsedMs: ms(r.Elapsed),
		P50Ms: ms(r.P50), P90Ms: ms(r.P90), P99Ms: ms(r.P99), MaxMs: ms(r.Max),
		Stop: r.Stop,
	}
	if j.Destination == "" {
		j.Destination = o.Destination
	}
	if r.Err != nil {
		j.Error = r.Err.Error()
	}
	if r.Durable != nil {
		j.Consumers = o.DurableSubscribers
		j.Durable = r.Durable.json(o.DataDir)
	}
	return json.NewEncoder(w).Encode(j)
}

// ms converts d to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// roundDuration keeps three significant digits, or whole seconds: 1.23ms,
// 45.6µs, 2.35s, 16m40s.
func roundDuration(d time.Duration) time.Duration {
	unit := time.Duration(1)
	for unit < time.Second && d >= unit*1000 {
		unit *= 10
	}
	return d.Round(unit)
}

// groupDigits formats n with thousands separators: 109,000.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3+1)
	if neg {
		out = append(out, '-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
