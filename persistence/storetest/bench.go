package storetest

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/activemq-go/broker/persistence"
)

const (
	benchBody = 256
	// benchPurgeEvery bounds what a benchmark leaves in the store: after this many
	// messages a destination is purged (outside the timer where the benchmark allows).
	benchPurgeEvery = 1 << 16
)

// RunBenchmarks runs the shared benchmarks as sub-benchmarks of b, each on a fresh
// store: Add (one Add per Sync batch), AddBatch64 (64 Adds per Sync batch), the two
// with a JMS message (a body kind and five typed properties: AddTyped,
// AddBatch64Typed), AddAck (a Sync batch with an Add, then one with its Ack) and
// ParallelAdd (Sync batches of one Add from GOMAXPROCS goroutines, the case group
// commit is for). Bodies are 256 bytes. Each reports allocations and msgs/s.
func RunBenchmarks(b *testing.B, h Harness) {
	b.Run("Add", func(b *testing.B) { benchAdd(b, h, 1, false) })
	b.Run("AddBatch64", func(b *testing.B) { benchAdd(b, h, 64, false) })
	b.Run("AddTyped", func(b *testing.B) { benchAdd(b, h, 1, true) })
	b.Run("AddBatch64Typed", func(b *testing.B) { benchAdd(b, h, 64, true) })
	b.Run("AddAck", func(b *testing.B) { benchAddAck(b, h) })
	b.Run("ParallelAdd", func(b *testing.B) { benchParallelAdd(b, h) })
}

// benchStore opens a fresh store, recovers it and closes it when the benchmark ends.
func benchStore(b *testing.B, h Harness) persistence.Store {
	b.Helper()
	s, err := h(b)()
	if err != nil {
		b.Fatalf("open: %v", err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Errorf("Close: %v", err)
		}
	})
	if _, err := s.Recover(b.Context()); err != nil {
		b.Fatalf("Recover: %v", err)
	}
	return s
}

// benchMsg returns a message with a benchBody-byte body that the benchmark reuses; a
// store must copy what it keeps.
func benchMsg(dest string) *persistence.Message {
	m := newMsg(dest, 0)
	m.Body = make([]byte, benchBody)
	for i := range m.Body {
		m.Body[i] = byte('a' + i%26)
	}
	return m
}

func reportMsgs(b *testing.B, perOp int) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N*perOp)/s, "msgs/s")
	}
}

func purge(b *testing.B, s persistence.Store, dest string) {
	bt := s.Begin()
	bt.Purge(dest)
	if err := bt.Commit(b.Context(), persistence.Sync); err != nil {
		b.Errorf("purge %s: %v", dest, err)
	}
}

// benchProps are the typed properties of a benchmark's JMS message: five, as a JMS
// application might set.
var benchProps = persistence.Props{
	persistence.IntProp("orderId", persistence.PropLong, 1234567890123),
	persistence.IntProp("quantity", persistence.PropInt, 250),
	persistence.DoubleProp("price", 101.25),
	persistence.BoolProp("priority", true),
	persistence.IntProp("region", persistence.PropShort, 44),
}

func benchAdd(b *testing.B, h Harness, perBatch int, typed bool) {
	const q = "queue://storetest.bench.add"
	s := benchStore(b, h)
	m := benchMsg(q)
	if typed {
		m.Kind, m.Props = persistence.BodyBytes, benchProps
	}
	ctx := b.Context()
	b.ReportAllocs()
	b.SetBytes(int64(perBatch * benchBody))
	for b.Loop() {
		bt := s.Begin()
		for range perBatch {
			m.Seq++
			bt.Add(m)
		}
		if err := bt.Commit(ctx, persistence.Sync); err != nil {
			b.Fatalf("Commit: %v", err)
		}
		if m.Seq%benchPurgeEvery < uint64(perBatch) {
			b.StopTimer()
			purge(b, s, q)
			b.StartTimer()
		}
	}
	reportMsgs(b, perBatch)
}

func benchAddAck(b *testing.B, h Harness) {
	const q = "queue://storetest.bench.addack"
	s := benchStore(b, h)
	m := benchMsg(q)
	ctx := b.Context()
	b.ReportAllocs()
	b.SetBytes(benchBody)
	for b.Loop() {
		m.Seq++
		bt := s.Begin()
		bt.Add(m)
		if err := bt.Commit(ctx, persistence.Sync); err != nil {
			b.Fatalf("Commit of the Add: %v", err)
		}
		bt = s.Begin()
		bt.Ack(q, m.Seq)
		if err := bt.Commit(ctx, persistence.Sync); err != nil {
			b.Fatalf("Commit of the Ack: %v", err)
		}
	}
	reportMsgs(b, 1)
	if n, _ := s.Stats(q); n != 0 {
		b.Errorf("%d messages left after acking all", n)
	}
}

func benchParallelAdd(b *testing.B, h Harness) {
	s := benchStore(b, h)
	ctx := b.Context()
	var producers atomic.Int64
	b.ReportAllocs()
	b.SetBytes(benchBody)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		// One destination per producer, as many producers to many queues.
		q := fmt.Sprintf("queue://storetest.bench.parallel.%d", producers.Add(1))
		m := benchMsg(q)
		for pb.Next() {
			m.Seq++
			bt := s.Begin()
			bt.Add(m)
			if err := bt.Commit(ctx, persistence.Sync); err != nil {
				b.Errorf("Commit: %v", err)
				return
			}
			if m.Seq%benchPurgeEvery == 0 {
				purge(b, s, q) // timed, but once per 65536 messages
			}
		}
	})
	reportMsgs(b, 1)
}

// BenchMessage is a SEND as the project's load tool makes it: its four bench headers and
// a 256-byte body. Benchmarks of the message path share it.
func BenchMessage() *persistence.Message {
	return &persistence.Message{
		ID:        "ID:localhost-1700000000000-123456",
		Body:      bytes.Repeat([]byte("b"), 256),
		Timestamp: 1700000000123,
		Priority:  4,
		Headers: persistence.Headers{
			"bench-run", "r-8f14e45fceea167a",
			"bench-p", "0",
			"bench-seq", "123456",
			"bench-ts", "1700000000123456789",
		},
	}
}
