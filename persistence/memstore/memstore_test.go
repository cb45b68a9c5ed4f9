package memstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
	"github.com/activemq-go/broker/persistence/storetest"
)

// harness opens a new empty memory store each time: nothing survives Close.
func harness(testing.TB) func() (persistence.Store, error) {
	return func() (persistence.Store, error) { return memstore.New(), nil }
}

func TestConformance(t *testing.T) {
	storetest.Run(t, harness, storetest.Features{Durable: false})
}

func BenchmarkStore(b *testing.B) {
	storetest.RunBenchmarks(b, harness)
}

func TestOpenByName(t *testing.T) {
	require.Contains(t, persistence.Adapters(), "memory")
	s, err := persistence.Open(t.Context(), "memory", persistence.Options{DataDirectory: t.TempDir()})
	require.NoError(t, err)
	require.IsType(t, &memstore.Store{}, s)
	rec, err := s.Recover(t.Context())
	require.NoError(t, err)
	require.Empty(t, rec.Destinations)
	require.NoError(t, s.Close())

	_, err = persistence.Open(t.Context(), "nope", persistence.Options{})
	require.ErrorIs(t, err, persistence.ErrUnknownAdapter)
	require.ErrorContains(t, err, "forgotten import?")
	require.ErrorContains(t, err, `"nope"`)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = persistence.Open(ctx, "memory", persistence.Options{})
	require.ErrorIs(t, err, context.Canceled)
}

func TestInvalidIsErrInvalid(t *testing.T) {
	s := memstore.New()
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	b := s.Begin()
	b.Add(&persistence.Message{Dest: "queue://q"})
	require.ErrorIs(t, b.Commit(t.Context(), persistence.Sync), memstore.ErrInvalid)
	b = s.Begin()
	b.AddSub(persistence.SubInfo{Key: persistence.SubKey{ClientID: "c", Name: "n"}, Dest: "queue://q"})
	require.ErrorIs(t, b.Commit(t.Context(), persistence.Sync), memstore.ErrInvalid)
}

// TestScanCallbackMayCommit pins a memstore property beyond the contract: Scan does not
// hold the lock while fn runs, so fn may commit (here: ack what it sees).
func TestScanCallbackMayCommit(t *testing.T) {
	const q = "queue://q"
	s := memstore.New()
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	b := s.Begin()
	for seq := uint64(1); seq <= 1000; seq++ {
		b.Add(&persistence.Message{Dest: q, Seq: seq, Body: []byte("x")})
	}
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
	var seen []uint64
	err := s.Scan(t.Context(), q, 0, 0, func(m *persistence.Message) error {
		seen = append(seen, m.Seq)
		ack := s.Begin()
		ack.Ack(q, m.Seq)
		return ack.Commit(t.Context(), persistence.Sync)
	})
	require.NoError(t, err)
	require.Len(t, seen, 1000)
	msgs, bytes := s.Stats(q)
	require.Zero(t, msgs)
	require.Zero(t, bytes)
}
