package loadtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunReplay publishes a queue's backlog first, then drains it.
func TestRunReplay(t *testing.T) {
	o := quick(startServer(t))
	o.Replay = true
	o.Consumers = 1
	var progress strings.Builder
	o.ProgressOut, o.Progress = &progress, time.Hour
	res, err := Run(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, StopComplete, res.Stop)
	assert.Equal(t, int64(o.Messages), res.Sent)
	assert.Equal(t, int64(o.Messages), res.Received)
	assert.Equal(t, int64(o.Messages), res.Expected)
	assert.Zero(t, res.Lost)
	assert.Zero(t, res.Duplicated)
	assert.Positive(t, res.SendRate)
	assert.Positive(t, res.RecvRate)
	assert.NoError(t, res.Failure(o))
	assert.Contains(t, progress.String(), "replaying")

	var out strings.Builder
	res.Fprint(&out, o)
	assert.Contains(t, out.String(), "replayed 2000 in")
	assert.Contains(t, out.String(), "replay=true")
	assert.NotContains(t, out.String(), "latency")
}

// TestRunConsumerHeaders: every SUBSCRIBE carries the extra headers; shared
// consumers of a topic destination pass validation with queue accounting.
func TestRunConsumerHeaders(t *testing.T) {
	p := startProxy(t, startServer(t))
	o := quick(p.addr())
	o.Messages = 10
	o.Shared = true
	o.Destination = "/queue/shared" // go-stomp's server has no consumer groups
	o.ConsumerHeaders = []string{"consumer-group=bench", "x-stream-offset=first", "empty="}
	res, err := Run(context.Background(), o)
	requireClean(t, o, res, err)
	wire := p.clientBytes()
	assert.Equal(t, o.Consumers, strings.Count(wire, "\nconsumer-group:bench\n"))
	assert.Equal(t, o.Consumers, strings.Count(wire, "\nx-stream-offset:first\n"))
	assert.Equal(t, o.Consumers, strings.Count(wire, "\nempty:\n"))
	var out strings.Builder
	res.Fprint(&out, o)
	assert.Contains(t, out.String(), "shared=true consumer-header=consumer-group=bench")
	assert.Contains(t, out.String(), "out-of-order n/a")
}

func TestSharedAndReplayOptions(t *testing.T) {
	base := Options{Addr: "h:1", Producers: 1, Consumers: 8, Messages: 10}
	o := base
	o.Shared, o.Destination = true, "/topic/s.bench"
	require.NoError(t, o.withDefaults(time.Now()).validate())
	assert.False(t, o.ordered())

	o = base
	o.Shared = true
	assert.True(t, strings.HasPrefix(o.withDefaults(time.Unix(0, 1)).Destination, "/topic/"))

	for name, bad := range map[string]Options{
		"shared topic":      {Shared: true, Topic: true},
		"replay durable":    {Replay: true, DurableSubscribers: 2},
		"header without =":  {ConsumerHeaders: []string{"consumer-group"}},
		"header empty name": {ConsumerHeaders: []string{"=x"}},
		"topic, not shared": {Destination: "/topic/s.bench"},
	} {
		o := base
		o.Shared, o.Topic, o.Replay, o.DurableSubscribers = bad.Shared, bad.Topic, bad.Replay, bad.DurableSubscribers
		o.ConsumerHeaders = bad.ConsumerHeaders
		if bad.Destination != "" {
			o.Destination = bad.Destination
		}
		assert.ErrorIs(t, o.withDefaults(time.Now()).validate(), ErrOptions, name)
	}
}

// TestRunDedupIDs: with DedupIDs every SEND carries an _AMQ_DUPL_ID unique in the run,
// with either client.
func TestRunDedupIDs(t *testing.T) {
	forEachClient(t, func(t *testing.T, client string) {
		p := startProxy(t, startServer(t))
		o := quick(p.addr())
		o.Client = client
		o.Messages = 10
		o.DedupIDs = true
		res, err := Run(context.Background(), o)
		requireClean(t, o, res, err)
		wire := p.clientBytes()
		ids := map[string]bool{}
		for _, line := range strings.Split(wire, "\n") {
			if id, ok := strings.CutPrefix(line, "_AMQ_DUPL_ID:"); ok {
				ids[id] = true
			}
		}
		assert.Len(t, ids, o.Messages, "one distinct id per SEND")
		var out strings.Builder
		res.Fprint(&out, o)
		assert.Contains(t, out.String(), "dedup-ids=true")
	})
}
