package dedup

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// host gives every destination the default policy with cacheSize ids and counts the
// duplicates dropped; it knows no durable subscription.
type host struct {
	cacheSize int
	dropped   atomic.Int64
}

func (h *host) Policy(kind destinations.Kind, _ string) policy.Policy {
	p := policy.Default(kind.IsTopic())
	p.DuplicateDetection.IDCacheSize = h.cacheSize
	return p
}

func (h *host) DurableTopic(persistence.SubKey) (string, bool) { return "", false }
func (h *host) Dropped()                                       { h.dropped.Add(1) }

var queue = destinations.Name{Kind: destinations.Queue, Name: "q"}

func withID(id string) *persistence.Message {
	return &persistence.Message{Persistent: true, Priority: 4, Headers: persistence.Headers{IDHeader, id}}
}

// send checks one persistent message with id against dt as a SEND would, writes the
// batch, settles the marks and reports whether it was a duplicate.
func send(t *testing.T, dt *Detector, id string) bool {
	t.Helper()
	var batch persistence.Batch
	marks := &Marks{}
	dup, _ := dt.Check(queue, withID(id), &batch, "c1", marks)
	var err error
	if batch != nil {
		err = batch.Commit(context.Background(), persistence.Sync)
	}
	marks.Settle(err)
	require.NoError(t, err)
	return dup
}

// The cache keeps the policy's number of ids, the oldest forgotten first, and the id
// log is pruned along; a Detector recovering from the store remembers what the first
// one did.
func TestEvictionPrunesTheLogAndRecoverReadsItBack(t *testing.T) {
	store := memstore.New()
	h := &host{cacheSize: 3}
	dt := New(store, h, nil)
	for i := range 5 {
		require.False(t, send(t, dt, "id"+strconv.Itoa(i)))
	}
	assert.True(t, send(t, dt, "id4"))
	assert.True(t, send(t, dt, "id2"))
	assert.EqualValues(t, 2, dt.Duplicates(queue))
	assert.EqualValues(t, 2, h.dropped.Load())
	n, _ := store.Stats(LogPrefix + "queue://q")
	assert.EqualValues(t, 3, n, "the id log is pruned to the cache's size")

	rec, err := store.Recover(context.Background())
	require.NoError(t, err)
	again := New(store, h, nil)
	require.NoError(t, again.Recover(context.Background(), rec.Destinations))
	for _, i := range []int{4, 3, 2} {
		assert.True(t, send(t, again, "id"+strconv.Itoa(i)), "id%d after recovery", i)
	}
	assert.False(t, send(t, again, "id0"), "id0 was forgotten before the restart")
}

// A duplicate of a message still being written is answered with that write's result,
// not before it; a failed write forgets the id, so the next retry is taken.
func TestDuplicateOfPendingIsAnsweredWithTheFirstWrite(t *testing.T) {
	dt := New(memstore.New(), &host{cacheSize: 10}, nil)
	var first persistence.Batch
	firstMarks := &Marks{}
	dup, _ := dt.Check(queue, withID("p"), &first, "c1", firstMarks)
	require.False(t, dup)
	require.True(t, firstMarks.Recorded())

	var retry persistence.Batch
	retryMarks := &Marks{}
	dup, _ = dt.Check(queue, withID("p"), &retry, "c2", retryMarks)
	require.True(t, dup)
	answered := make(chan error, 1)
	done := retryMarks.Answer(func(err error) { answered <- err })
	done(nil) // the retry's own part: nothing to write
	select {
	case err := <-answered:
		t.Fatalf("the retry was answered (%v) before the first copy was written", err)
	default:
	}
	first.Rollback()
	firstMarks.Settle(errors.New("disk on fire"))
	err := <-answered
	require.ErrorIs(t, err, destinations.ErrStore)
	assert.Contains(t, err.Error(), "first copy")
	assert.False(t, send(t, dt, "p"), "the next retry is taken")
}

// A message without an id, or to a destination whose policy turns detection off, is
// never a duplicate and records nothing.
func TestNoIDOrDetectionOff(t *testing.T) {
	dt := New(memstore.New(), &host{cacheSize: 0}, nil)
	var batch persistence.Batch
	marks := &Marks{}
	dup, rec := dt.Check(queue, &persistence.Message{Persistent: true}, &batch, "", marks)
	assert.False(t, dup)
	assert.Nil(t, rec)
	assert.Nil(t, batch)
	assert.False(t, marks.Recorded())
	assert.Equal(t, "r", ID(&persistence.Message{Headers: persistence.Headers{RabbitIDHeader, "r"}}))
	assert.Equal(t, "a", ID(&persistence.Message{Headers: persistence.Headers{RabbitIDHeader, "r", IDHeader, "a"}}))
}
