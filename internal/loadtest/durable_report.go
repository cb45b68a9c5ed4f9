package loadtest

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// DurableResult holds the figures of the durable catch-up scenario; the
// publishing and the catch-up totals are in Result (Sent and SendRate;
// Received, RecvRate, Lost, Duplicated, OutOfOrder over all subscribers).
type DurableResult struct {
	Subscribers    int
	ClientIDPrefix string
	Catchup        string

	// Measured says the store directory was measured: StoreBefore once the
	// subscriptions were offline, StoreAfter once the last publish was
	// receipted. It is false without a data dir or when publishing did
	// not complete.
	Measured                bool
	StoreBefore, StoreAfter DirSize
	// Payload is the bytes published: messages sent × body size.
	Payload int64

	// Subscriber has the catch-up of each subscriber that drained, in the
	// order they drained.
	Subscriber []SubscriberResult

	// Kept says the subscriptions were left on the broker; otherwise
	// Deleted counts those deleted and CleanupErr tells why others were
	// not.
	Kept       bool
	Deleted    int
	CleanupErr error
}

// SubscriberResult is the catch-up of one durable subscriber.
type SubscriberResult struct {
	ClientID string
	// Received counts deliveries, duplicates included; Lost,
	// Duplicated and OutOfOrder are as in Result, for this subscriber.
	Received, Lost, Duplicated, OutOfOrder int64
	// Elapsed runs from its SUBSCRIBE to its last message; Rate is
	// Received over it.
	Elapsed time.Duration
	Rate    float64
}

// Growth is how much the lengths of the files of the store directory grew,
// in bytes.
func (d *DurableResult) Growth() int64 { return d.StoreAfter.Bytes - d.StoreBefore.Bytes }

// AllocatedGrowth is how much the disk blocks of the store directory grew,
// in bytes; ok is false where the platform does not say.
func (d *DurableResult) AllocatedGrowth() (growth int64, ok bool) {
	if d.StoreBefore.Allocated < 0 || d.StoreAfter.Allocated < 0 {
		return 0, false
	}
	return d.StoreAfter.Allocated - d.StoreBefore.Allocated, true
}

// copies is growth over the payload: 1.0 means the store grew by one copy
// of the message bodies. It is 0 without a payload.
func (d *DurableResult) copies(growth int64) float64 {
	if d.Payload <= 0 {
		return 0
	}
	return float64(growth) / float64(d.Payload)
}

// Rates returns the lowest, median and highest drain rate of the
// subscribers, in messages/s.
func (d *DurableResult) Rates() (lowest, median, highest float64) {
	if len(d.Subscriber) == 0 {
		return 0, 0, 0
	}
	rates := make([]float64, len(d.Subscriber))
	for i, s := range d.Subscriber {
		rates[i] = s.Rate
	}
	slices.Sort(rates)
	n := len(rates)
	median = rates[n/2]
	if n%2 == 0 {
		median = (rates[n/2-1] + rates[n/2]) / 2
	}
	return rates[0], median, rates[n-1]
}

// fprintDurable writes the figures of the durable scenario, after the
// options line: r is the whole result, o the options with defaults.
func (r Result) fprintDurable(w io.Writer, o Options) {
	d := r.Durable
	fmt.Fprintf(w, "durable catch-up: %d subscribers, %d x %d B persistent\n", d.Subscribers, o.Messages, o.Size)
	fmt.Fprintf(w, "sent %d in %s (%s msgs/s)\n", r.Sent, roundDuration(r.SendElapsed), groupDigits(int64(r.SendRate)))

	switch {
	case !d.Measured && o.DataDir == "":
		fmt.Fprintln(w, "store growth not measured (no data dir)")
	case !d.Measured:
		fmt.Fprintln(w, "store growth not measured (publishing did not complete)")
	default:
		// On disk means allocated blocks where known: file lengths miss
		// what preallocated (sparse) journal files take as they fill.
		g, ok := d.AllocatedGrowth()
		if !ok {
			fmt.Fprintf(w, "store growth %s (%s one copy of the payload)\n", formatBytes(d.Growth()), formatCopies(d, d.Growth()))
			break
		}
		fmt.Fprintf(w, "store growth %s on disk (%s one copy of the payload); file lengths %s (%s)\n",
			formatBytes(g), formatCopies(d, g), formatSigned(d.Growth()), formatCopies(d, d.Growth()))
	}

	if r.Expected > 0 {
		lo, med, hi := d.Rates()
		delivered := "all " + groupDigits(r.Expected-r.Lost)
		if r.Lost > 0 {
			delivered = groupDigits(r.Expected-r.Lost) + " of " + groupDigits(r.Expected)
		}
		fmt.Fprintf(w, "catch-up per subscriber: min %s median %s max %s msgs/s (%s); %s delivered, lost %d duplicated %d out-of-order %d",
			groupDigits(int64(lo)), groupDigits(int64(med)), groupDigits(int64(hi)), d.Catchup,
			delivered, r.Lost, r.Duplicated, r.OutOfOrder)
		if r.Foreign > 0 {
			fmt.Fprintf(w, " foreign %d", r.Foreign)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "catch-up aggregate: %s in %s (%s msgs/s)\n",
			groupDigits(r.Received), roundDuration(r.RecvElapsed), groupDigits(int64(r.RecvRate)))
	}

	switch {
	case d.Kept:
		fmt.Fprintf(w, "durable subscriptions kept: client-ids %s-0 .. %s-%d, name %s\n",
			d.ClientIDPrefix, d.ClientIDPrefix, d.Subscribers-1, durableName)
	case d.CleanupErr != nil:
		fmt.Fprintf(w, "durable subscriptions deleted: %d; cleanup: %v\n", d.Deleted, d.CleanupErr)
	default:
		fmt.Fprintf(w, "durable subscriptions deleted: %d\n", d.Deleted)
	}
}

// formatCopies formats growth as copies of the payload: 1.21x.
func formatCopies(d *DurableResult, growth int64) string {
	if d.Payload <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", d.copies(growth))
}

// formatSigned is formatBytes with a sign: +1.5 KiB, -3 B, +0 B.
func formatSigned(n int64) string {
	if n < 0 {
		return formatBytes(n)
	}
	return "+" + formatBytes(n)
}

// formatBytes formats n in binary units with one decimal: 512 B, 1.5 KiB,
// 118.3 MiB.
func formatBytes(n int64) string {
	sign, v := "", n
	if v < 0 {
		sign, v = "-", -v
	}
	if v < 1024 {
		return fmt.Sprintf("%s%d B", sign, v)
	}
	f := float64(v)
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := -1
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%s%.1f %s", sign, f, units[i])
}

// jsonDurable is the durable part of the machine-readable report.
type jsonDurable struct {
	Subscribers    int              `json:"subscribers"`
	ClientIDPrefix string           `json:"client_id_prefix"`
	SubName        string           `json:"subscription_name"`
	Catchup        string           `json:"catchup"`
	DataDir        string           `json:"data_dir,omitempty"`
	Store          *jsonStore       `json:"store,omitempty"`
	PayloadBytes   int64            `json:"payload_bytes"`
	RateMin        float64          `json:"catchup_rate_min"`
	RateMedian     float64          `json:"catchup_rate_median"`
	RateMax        float64          `json:"catchup_rate_max"`
	Subscriber     []jsonSubscriber `json:"subscriber"`
	Kept           bool             `json:"kept"`
	Deleted        int              `json:"deleted"`
	CleanupError   string           `json:"cleanup_error,omitempty"`
}

// jsonStore measures the store directory; the allocated figures are left
// out where the platform does not give them.
type jsonStore struct {
	BeforeBytes          int64    `json:"before_bytes"`
	AfterBytes           int64    `json:"after_bytes"`
	GrowthBytes          int64    `json:"growth_bytes"`
	GrowthCopies         float64  `json:"growth_copies"`
	AllocatedBeforeBytes *int64   `json:"allocated_before_bytes,omitempty"`
	AllocatedAfterBytes  *int64   `json:"allocated_after_bytes,omitempty"`
	AllocatedGrowthBytes *int64   `json:"allocated_growth_bytes,omitempty"`
	AllocatedCopies      *float64 `json:"allocated_growth_copies,omitempty"`
	FilesBefore          int      `json:"files_before"`
	FilesAfter           int      `json:"files_after"`
}

type jsonSubscriber struct {
	ClientID   string  `json:"client_id"`
	Received   int64   `json:"received"`
	Lost       int64   `json:"lost"`
	Duplicated int64   `json:"duplicated"`
	OutOfOrder int64   `json:"out_of_order"`
	DrainMs    float64 `json:"drain_ms"`
	Rate       float64 `json:"rate"`
}

// json returns the durable part of the report for data dir dir.
func (d *DurableResult) json(dir string) *jsonDurable {
	j := &jsonDurable{
		Subscribers: d.Subscribers, ClientIDPrefix: d.ClientIDPrefix, SubName: durableName,
		Catchup: d.Catchup, DataDir: dir, PayloadBytes: d.Payload,
		Subscriber: make([]jsonSubscriber, len(d.Subscriber)),
		Kept:       d.Kept, Deleted: d.Deleted,
	}
	j.RateMin, j.RateMedian, j.RateMax = d.Rates()
	for i, s := range d.Subscriber {
		j.Subscriber[i] = jsonSubscriber{
			ClientID: s.ClientID, Received: s.Received, Lost: s.Lost,
			Duplicated: s.Duplicated, OutOfOrder: s.OutOfOrder,
			DrainMs: ms(s.Elapsed), Rate: s.Rate,
		}
	}
	if d.CleanupErr != nil {
		j.CleanupError = d.CleanupErr.Error()
	}
	if d.Measured {
		s := &jsonStore{
			BeforeBytes: d.StoreBefore.Bytes, AfterBytes: d.StoreAfter.Bytes,
			GrowthBytes: d.Growth(), GrowthCopies: d.copies(d.Growth()),
			FilesBefore: d.StoreBefore.Files, FilesAfter: d.StoreAfter.Files,
		}
		if g, ok := d.AllocatedGrowth(); ok {
			c := d.copies(g)
			s.AllocatedBeforeBytes, s.AllocatedAfterBytes = &d.StoreBefore.Allocated, &d.StoreAfter.Allocated
			s.AllocatedGrowthBytes, s.AllocatedCopies = &g, &c
		}
		j.Store = s
	}
	return j
}
