package loadtest

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// ConnectResult holds the figures of the connect scenario; Result.Elapsed
// runs from the start to the last connect, Result.Stop says why it ended.
type ConnectResult struct {
	// Connects is the number asked for (Options.Connects).
	Connects      int
	ExpectRefused bool

	// OK counts connects answered by CONNECTED whose DISCONNECT got its
	// RECEIPT; Refused those answered by an ERROR frame; Errors the
	// others: a failed dial, a timeout, a socket closed without a frame,
	// a DISCONNECT without a RECEIPT.
	OK, Refused, Errors int64

	// Rate is the connects made (Done) over Result.Elapsed.
	Rate float64

	// Latency from CONNECT sent to CONNECTED received (to ERROR received
	// with ExpectRefused): percentiles within 1.6% and the exact maximum.
	P50, P90, P99, Max time.Duration

	// FirstRefusal is the message of the first ERROR frame received in
	// answer to CONNECT (its body where it had no message header);
	// FirstError says why the first of Errors failed.
	FirstRefusal, FirstError string
}

// Done counts the connects made, whatever their outcome.
func (c *ConnectResult) Done() int64 { return c.OK + c.Refused + c.Errors }

// failures says why a connect run failed: connects refused (accepted with
// ExpectRefused), failed, or not made; err is the run's error.
func (c *ConnectResult) failures(stop string, err error) []error {
	var errs []error
	switch {
	case c.ExpectRefused && c.OK > 0:
		errs = append(errs, fmt.Errorf("%w: %d of %d", ErrAccepted, c.OK, c.Connects))
	case !c.ExpectRefused && c.Refused > 0:
		errs = append(errs, fmt.Errorf("%w: %d of %d: %s", ErrRefused, c.Refused, c.Connects, c.FirstRefusal))
	}
	if c.Errors > 0 {
		errs = append(errs, fmt.Errorf("%w: %d of %d: %s", ErrConnectsFailed, c.Errors, c.Connects, c.FirstError))
	}
	if err == nil && c.Done() < int64(c.Connects) {
		errs = append(errs, fmt.Errorf("%w: %d of %d before %s", ErrConnectsUnmade, c.Done(), c.Connects, stop))
	}
	return errs
}

// fprintConnects writes the report of the connect scenario; o are the
// options with defaults.
func (r Result) fprintConnects(w io.Writer, o Options) {
	c := r.Connects
	fmt.Fprintf(w, "broker bench: addr=%s connects=%d producers=%d", o.Addr, c.Connects, o.Producers)
	if o.Version != "" {
		fmt.Fprintf(w, " stomp=%s", o.Version)
	}
	if c.ExpectRefused {
		fmt.Fprint(w, " expect-refused=true")
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "connects %d", c.Done())
	if c.Done() != int64(c.Connects) {
		fmt.Fprintf(w, " of %d", c.Connects)
	}
	fmt.Fprintf(w, " in %s (%s connects/s)\n", roundDuration(r.Elapsed), groupDigits(int64(c.Rate)))
	answer := "CONNECTED"
	if c.ExpectRefused {
		answer = "ERROR"
	}
	if c.Max == 0 { // nothing timed
		fmt.Fprintf(w, "latency n/a (no %s)\n", answer)
	} else {
		fmt.Fprintf(w, "latency p50=%s p90=%s p99=%s max=%s (CONNECT to %s)\n",
			roundDuration(c.P50), roundDuration(c.P90), roundDuration(c.P99), roundDuration(c.Max), answer)
	}
	fmt.Fprintf(w, "ok %d  refused %d  errors %d\n", c.OK, c.Refused, c.Errors)
	if c.FirstRefusal != "" {
		fmt.Fprintf(w, "first refusal: %s\n", c.FirstRefusal)
	}
	if c.FirstError != "" {
		fmt.Fprintf(w, "first error: %s\n", c.FirstError)
	}
	r.fprintStop(w)
}

// jsonConnects is the machine-readable report of the connect scenario;
// durations are in milliseconds.
type jsonConnects struct {
	Addr          string  `json:"addr"`
	Connects      int     `json:"connects"`
	Producers     int     `json:"producers"`
	Version       string  `json:"stomp_version,omitempty"`
	ExpectRefused bool    `json:"expect_refused"`
	Done          int64   `json:"done"`
	OK            int64   `json:"ok"`
	Refused       int64   `json:"refused"`
	Errors        int64   `json:"errors"`
	Rate          float64 `json:"connect_rate"`
	ElapsedMs     float64 `json:"elapsed_ms"`
	P50Ms         float64 `json:"p50_ms"`
	P90Ms         float64 `json:"p90_ms"`
	P99Ms         float64 `json:"p99_ms"`
	MaxMs         float64 `json:"max_ms"`
	FirstRefusal  string  `json:"first_refusal,omitempty"`
	FirstError    string  `json:"first_error,omitempty"`
	Stop          string  `json:"stop"`
	Error         string  `json:"error,omitempty"`
}

// writeConnectsJSON writes the report of the connect scenario as one JSON
// object on one line; o are the options with defaults.
func (r Result) writeConnectsJSON(w io.Writer, o Options) error {
	c := r.Connects
	j := jsonConnects{
		Addr: o.Addr, Connects: c.Connects, Producers: o.Producers, Version: o.Version,
		ExpectRefused: c.ExpectRefused,
		Done:          c.Done(), OK: c.OK, Refused: c.Refused, Errors: c.Errors,
		Rate: c.Rate, ElapsedMs: ms(r.Elapsed),
		P50Ms: ms(c.P50), P90Ms: ms(c.P90), P99Ms: ms(c.P99), MaxMs: ms(c.Max),
		FirstRefusal: c.FirstRefusal, FirstError: c.FirstError,
		Stop: r.Stop,
	}
	if r.Err != nil {
		j.Error = r.Err.Error()
	}
	return json.NewEncoder(w).Encode(j)
}
