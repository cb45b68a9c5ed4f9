package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/race"
)

// durableQuick is a durable scenario small enough to end within seconds.
func durableQuick(addr string) Options {
	return Options{
		Addr:               addr,
		Producers:          2,
		Size:               100,
		Messages:           300,
		DurableSubscribers: 3,
		IdleTimeout:        5 * time.Second,
		MaxDuration:        time.Minute,
	}
}

func TestDurableCatchup(t *testing.T) {
	for _, catchup := range []string{CatchupSequential, CatchupParallel} {
		t.Run(catchup, func(t *testing.T) {
			b := startFakeBroker(t)
			b.refuseReconnect = true
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "old"), make([]byte, 1000), 0o644))
			require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
			store, err := os.Create(filepath.Join(dir, "sub", "journal"))
			require.NoError(t, err)
			defer store.Close()
			b.store = store

			o := durableQuick(b.addr())
			o.Catchup = catchup
			o.DataDir = dir
			res, err := Run(context.Background(), o)
			require.NoError(t, err)
			require.NoError(t, res.Failure(o))

			assert.Equal(t, StopComplete, res.Stop)
			assert.Equal(t, int64(300), res.Sent)
			assert.Equal(t, int64(900), res.Expected)
			assert.Equal(t, int64(900), res.Received)
			assert.Zero(t, res.Lost+res.Duplicated+res.OutOfOrder+res.Foreign)
			assert.Positive(t, res.SendRate)
			assert.Positive(t, res.RecvRate)

			d := res.Durable
			require.NotNil(t, d)
			attached, maxDraining, refused := b.durableStats()
			assert.Equal(t, []int{0, 0, 0, 300, 300, 300}, attached, "created empty, then offline for every message")
			require.Len(t, d.Subscriber, 3)
			for i, s := range d.Subscriber {
				assert.Equal(t, fmt.Sprintf("%s-%d", d.ClientIDPrefix, i), s.ClientID)
				assert.Equal(t, int64(300), s.Received)
				assert.Positive(t, s.Rate)
			}
			if catchup == CatchupSequential {
				assert.Equal(t, 1, maxDraining, "one subscriber at a time")
			}

			// The fake stores each offline message once per subscriber.
			assert.True(t, d.Measured)
			assert.Equal(t, int64(1000), d.StoreBefore.Bytes)
			assert.Equal(t, int64(3*300*100), d.Growth())
			assert.Equal(t, int64(300*100), d.Payload)
			assert.InDelta(t, 3.0, d.copies(d.Growth()), 1e-9)

			assert.Equal(t, 3, d.Deleted)
			assert.NoError(t, d.CleanupErr)
			assert.Zero(t, b.durableCount(), "subscriptions deleted")
			assert.Equal(t, 6, refused, "each reconnect met a client-id still held, and retried")
			assert.Equal(t, int(res.Expected), b.ackCount(), "client-individual by default: every message acked")
		})
	}
}

func TestDurableKeep(t *testing.T) {
	b := startFakeBroker(t)
	o := durableQuick(b.addr())
	o.KeepDurable = true
	o.ClientIDPrefix = "keep"
	o.Ack = "auto"
	res, err := Run(context.Background(), o)
	require.NoError(t, err)
	require.NoError(t, res.Failure(o))
	assert.Equal(t, 3, b.durableCount())
	assert.True(t, res.Durable.Kept)
	assert.Zero(t, b.ackCount())
	assert.Equal(t, "keep-2", res.Durable.Subscriber[2].ClientID)

	var out strings.Builder
	res.Fprint(&out, o)
	assert.Contains(t, out.String(), "durable subscriptions kept: client-ids keep-0 .. keep-2, name sub\n")
	assert.Contains(t, out.String(), "store growth not measured (no data dir)\n")
}

// TestDurableSetupFailureCleansUp: one subscription is refused; the others,
// created already, are deleted, and nothing is published.
func TestDurableSetupFailureCleansUp(t *testing.T) {
	b := startFakeBroker(t)
	o := durableQuick(b.addr())
	o.ClientIDPrefix = "setup"
	b.refuseDurable = "setup-1"
	res, err := Run(context.Background(), o)
	require.ErrorIs(t, err, ErrConnect)
	assert.Contains(t, err.Error(), "subscriber setup-1")
	assert.Contains(t, err.Error(), "durable subscription refused")
	assert.Zero(t, res.Sent)
	assert.Equal(t, 2, res.Durable.Deleted)
	assert.Zero(t, b.durableCount())
}

// TestDurableLostMessages: the first subscriber's backlog misses its last
// message; it stops at the idle timeout and the others still drain.
func TestDurableLostMessages(t *testing.T) {
	b := startFakeBroker(t)
	b.dropFromBacklog = 1
	o := durableQuick(b.addr())
	// The missing message costs one idle timeout; the others must come within it
	// however busy the machine (300ms was too short under load).
	o.IdleTimeout = race.Scale(time.Second)
	res, err := Run(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, StopIdle, res.Stop)
	assert.Equal(t, int64(1), res.Lost)
	assert.Equal(t, int64(899), res.Received)
	assert.ErrorIs(t, res.Failure(o), ErrLost)
	require.Len(t, res.Durable.Subscriber, 3)
	assert.Equal(t, int64(1), res.Durable.Subscriber[0].Lost)
	assert.Equal(t, int64(300), res.Durable.Subscriber[2].Received)
	assert.Zero(t, b.durableCount(), "deleted all the same")

	var out strings.Builder
	res.Fprint(&out, o)
	assert.Contains(t, out.String(), "; 899 of 900 delivered, lost 1 duplicated 0 out-of-order 0\n")
	assert.Contains(t, out.String(), "stopped: idle-timeout after")
}

// TestDurableCleanupFailure: the broker refuses to delete the
// subscriptions; the figures stand, the run fails.
func TestDurableCleanupFailure(t *testing.T) {
	b := startFakeBroker(t)
	b.refuseUnsubscribe = true
	o := durableQuick(b.addr())
	res, err := Run(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, StopComplete, res.Stop)
	assert.Equal(t, int64(900), res.Received)
	assert.Zero(t, res.Durable.Deleted)
	require.ErrorIs(t, res.Durable.CleanupErr, ErrCleanup)
	assert.Contains(t, res.Durable.CleanupErr.Error(), "3 of 3: subscriber ")
	assert.Contains(t, res.Durable.CleanupErr.Error(), "UNSUBSCRIBE: ERROR: deleting refused")
	assert.ErrorIs(t, res.Failure(o), ErrCleanup)
	assert.Equal(t, 3, b.durableCount())
}

func TestDurableDataDirMissing(t *testing.T) {
	b := startFakeBroker(t)
	o := durableQuick(b.addr())
	o.DataDir = filepath.Join(t.TempDir(), "nope")
	_, err := Run(context.Background(), o)
	require.ErrorIs(t, err, ErrOptions)
	assert.Zero(t, b.durableCount(), "nothing created")
}

func TestDurableOptions(t *testing.T) {
	o := Options{DurableSubscribers: 2}.withDefaults(time.Unix(0, 42))
	assert.True(t, o.Topic)
	assert.True(t, o.Persistent)
	assert.Equal(t, "client-individual", o.Ack)
	assert.Equal(t, CatchupSequential, o.Catchup)
	assert.Equal(t, "bench-42", o.ClientIDPrefix)
	assert.Equal(t, "/topic/bench-42", o.Destination)

	o = Options{DurableSubscribers: 2, Ack: "auto", ClientIDPrefix: "x", Catchup: CatchupParallel}.withDefaults(time.Now())
	assert.Equal(t, "auto", o.Ack)
	assert.Equal(t, "x", o.ClientIDPrefix)
	assert.Equal(t, CatchupParallel, o.Catchup)

	o = Options{Addr: "h:1", Producers: 1, Messages: 1, DurableSubscribers: 1}.withDefaults(time.Now())
	require.NoError(t, o.validate(), "consumers are not needed")

	bad := map[string]Options{
		"negative":           {DurableSubscribers: -1, Consumers: 1},
		"catch-up value":     {DurableSubscribers: 1, Catchup: "random"},
		"queue":              {DurableSubscribers: 1, Destination: "/queue/x"},
		"data dir alone":     {Consumers: 1, DataDir: "/tmp"},
		"catch-up alone":     {Consumers: 1, Catchup: CatchupParallel},
		"no consumers still": {Consumers: 0},
	}
	for name, o := range bad {
		t.Run(name, func(t *testing.T) {
			o.Addr, o.Producers, o.Messages = "h:1", 1, 1
			assert.ErrorIs(t, o.withDefaults(time.Now()).validate(), ErrOptions)
		})
	}
}

func TestMeasureDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "one"), make([]byte, 10), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "b", "two"), make([]byte, 5000), 0o644))
	// A sparse file: its length counts in full, its blocks do not.
	f, err := os.Create(filepath.Join(dir, "a", "sparse"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(32<<20))
	require.NoError(t, f.Close())
	// Links are not followed.
	require.NoError(t, os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, "link")))

	s, err := measureDir(dir)
	require.NoError(t, err)
	assert.Equal(t, 3, s.Files)
	assert.Equal(t, int64(10+5000+32<<20), s.Bytes)
	if s.Allocated >= 0 {
		assert.Less(t, s.Allocated, int64(1<<20), "a sparse file takes no blocks")
		assert.GreaterOrEqual(t, s.Allocated, int64(5000))
	}

	// A link to the directory is measured as the directory.
	viaLink, err := measureDir(filepath.Join(dir, "link"))
	require.NoError(t, err)
	assert.Equal(t, int64(5000+32<<20), viaLink.Bytes)

	_, err = measureDir(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = measureDir(filepath.Join(dir, "one"))
	assert.ErrorContains(t, err, "not a directory")
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0:                  "0 B",
		1023:               "1023 B",
		1024:               "1.0 KiB",
		1536:               "1.5 KiB",
		124049408:          "118.3 MiB",
		-2 << 20:           "-2.0 MiB",
		5 << 30:            "5.0 GiB",
		1<<63 - 1:          "8.0 EiB",
		-(1 << 40) * 3 / 2: "-1.5 TiB",
	} {
		assert.Equal(t, want, formatBytes(n), n)
	}
	assert.Equal(t, "+0 B", formatSigned(0))
	assert.Equal(t, "-3 B", formatSigned(-3))
}

func TestDurableRates(t *testing.T) {
	d := &DurableResult{}
	lo, med, hi := d.Rates()
	assert.Zero(t, lo+med+hi)
	for _, r := range []float64{47100, 41200, 45000, 46600} {
		d.Subscriber = append(d.Subscriber, SubscriberResult{Rate: r})
	}
	lo, med, hi = d.Rates()
	assert.Equal(t, []float64{41200, 45800, 47100}, []float64{lo, med, hi})
	d.Subscriber = d.Subscriber[:3]
	_, med, _ = d.Rates()
	assert.Equal(t, 45000.0, med)
}

// sampleDurable is the example: 10 subscribers, 100,000 × 1 KiB.
func sampleDurable() (Result, Options) {
	o := Options{
		Addr: "127.0.0.1:61613", Producers: 1, Size: 1024, Messages: 100000,
		DurableSubscribers: 10, DataDir: "/data/kahadb", ClientIDPrefix: "bench-7",
	}
	d := &DurableResult{
		Subscribers: 10, ClientIDPrefix: "bench-7", Catchup: CatchupSequential, Measured: true,
		StoreBefore: DirSize{Bytes: 1 << 20, Allocated: 1 << 20, Files: 2},
		StoreAfter:  DirSize{Bytes: 1<<20 + 124049408, Allocated: 1<<20 + 101711872, Files: 5},
		Payload:     100000 * 1024,
		Deleted:     10,
	}
	for i, r := range []float64{41200.4, 45800, 47100.9, 45000, 46600, 45800, 45800, 44000, 46000, 45700} {
		d.Subscriber = append(d.Subscriber, SubscriberResult{
			ClientID: fmt.Sprintf("bench-7-%d", i), Received: 100000, Rate: r,
			Elapsed: time.Duration(100000 / r * float64(time.Second)),
		})
	}
	res := Result{
		Sent: 100000, Expected: 1000000, Received: 1000000,
		SendRate: 23752.1, SendElapsed: 4210 * time.Millisecond,
		RecvRate: 43290.2, RecvElapsed: 23100 * time.Millisecond,
		Elapsed: 27 * time.Second, Stop: StopComplete, Destination: "/topic/bench-7",
		Durable: d,
	}
	return res, o
}

func TestFprintDurable(t *testing.T) {
	res, o := sampleDurable()
	var b strings.Builder
	res.Fprint(&b, o)
	want := `broker bench: addr=127.0.0.1:61613 dest=/topic/bench-7 durable-subscribers=10 client-id-prefix=bench-7 catchup=sequential data-dir=/data/kahadb producers=1 size=1024 messages=100000 persistent=true receipts=none ack=client-individual
durable catch-up: 10 subscribers, 100000 x 1024 B persistent
sent 100000 in 4.21s (23,752 msgs/s)
store growth 97.0 MiB on disk (0.99x one copy of the payload); file lengths +118.3 MiB (1.21x)
catch-up per subscriber: min 41,200 median 45,800 max 47,100 msgs/s (sequential); all 1,000,000 delivered, lost 0 duplicated 0 out-of-order 0
catch-up aggregate: 1,000,000 in 23.1s (43,290 msgs/s)
durable subscriptions deleted: 10
`
	assert.Equal(t, want, b.String())

	// Without allocated blocks, the file lengths are the growth.
	res.Durable.StoreBefore.Allocated, res.Durable.StoreAfter.Allocated = -1, -1
	b.Reset()
	res.Fprint(&b, o)
	assert.Contains(t, b.String(), "\nstore growth 118.3 MiB (1.21x one copy of the payload)\n")

	res.Durable.Measured = false
	res.Durable.CleanupErr = errors.New("loadtest: durable subscriptions not deleted: 1 of 10: boom")
	res.Durable.Deleted = 9
	b.Reset()
	res.Fprint(&b, o)
	assert.Contains(t, b.String(), "\nstore growth not measured (publishing did not complete)\n")
	assert.Contains(t, b.String(), "\ndurable subscriptions deleted: 9; cleanup: loadtest: durable subscriptions not deleted: 1 of 10: boom\n")
}

func TestWriteJSONDurable(t *testing.T) {
	res, o := sampleDurable()
	var b strings.Builder
	require.NoError(t, res.WriteJSON(&b, o))
	var got struct {
		Consumers int `json:"consumers"`
		Durable   struct {
			Subscribers int    `json:"subscribers"`
			Catchup     string `json:"catchup"`
			SubName     string `json:"subscription_name"`
			Store       struct {
				GrowthBytes          int64   `json:"growth_bytes"`
				GrowthCopies         float64 `json:"growth_copies"`
				AllocatedGrowthBytes *int64  `json:"allocated_growth_bytes"`
			} `json:"store"`
			RateMedian float64 `json:"catchup_rate_median"`
			Subscriber []struct {
				ClientID string  `json:"client_id"`
				Received int64   `json:"received"`
				DrainMs  float64 `json:"drain_ms"`
			} `json:"subscriber"`
			Deleted int `json:"deleted"`
		} `json:"durable"`
	}
	require.NoError(t, json.Unmarshal([]byte(b.String()), &got))
	assert.Equal(t, 10, got.Consumers)
	assert.Equal(t, 10, got.Durable.Subscribers)
	assert.Equal(t, "sequential", got.Durable.Catchup)
	assert.Equal(t, "sub", got.Durable.SubName)
	assert.Equal(t, int64(124049408), got.Durable.Store.GrowthBytes)
	assert.InDelta(t, 1.2114, got.Durable.Store.GrowthCopies, 1e-4)
	require.NotNil(t, got.Durable.Store.AllocatedGrowthBytes)
	assert.Equal(t, int64(101711872), *got.Durable.Store.AllocatedGrowthBytes)
	assert.Equal(t, 45800.0, got.Durable.RateMedian)
	require.Len(t, got.Durable.Subscriber, 10)
	assert.Equal(t, "bench-7-0", got.Durable.Subscriber[0].ClientID)
	assert.Positive(t, got.Durable.Subscriber[0].DrainMs)
	assert.Equal(t, 10, got.Durable.Deleted)

	// Other runs have no durable object.
	b.Reset()
	require.NoError(t, sampleResult().WriteJSON(&b, sampleOptions()))
	assert.NotContains(t, b.String(), "durable")
}
