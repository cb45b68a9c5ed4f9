package boltstore_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/boltstore"
	"github.com/activemq-go/broker/persistence/memstore"
)

// TestAgainstMemstore applies the same random batches to the bbolt store and to
// memstore, the reference implementation, and compares everything readable after each
// one: Scan of every destination (fields and pending subscriptions), ScanSub of every
// subscription, Stats and Recover. Now and then the bbolt store is reopened.
func TestAgainstMemstore(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runAgainstMemstore(t, seed, 300) })
	}
}

func runAgainstMemstore(t *testing.T, seed uint64, batches int) {
	rng := rand.New(rand.NewPCG(seed, 0))
	path := filepath.Join(t.TempDir(), "broker.db")
	open := func() *boltstore.Store {
		s, err := boltstore.Open(t.Context(), boltstore.Options{Path: path, SyncStrategy: boltstore.SyncNever, Logger: quiet})
		require.NoError(t, err)
		return s
	}
	bs := open()
	defer func() { require.NoError(t, bs.Close()) }()
	ms := memstore.New()

	dests := []string{"queue://a", "queue://b", "topic://x", "topic://y"}
	keys := []persistence.SubKey{{ClientID: "c1", Name: "s"}, {ClientID: "c2", Name: "s"}, {ClientID: "c1", Name: "t"}, {ClientID: "c3", Name: "u"}}
	lastSeq := map[string]uint64{}
	pick := func(n int) int { return rng.IntN(n) }

	for i := range batches {
		bb, mb := bs.Begin(), ms.Begin()
		for range 1 + pick(6) {
			d := dests[pick(len(dests))]
			k := keys[pick(len(keys))]
			switch r := pick(100); {
			case r < 45:
				seq := lastSeq[d] + 1
				if pick(6) == 0 && seq > 3 {
					seq -= uint64(1 + pick(3)) // replace, or fill a gap
				} else if pick(8) == 0 {
					seq++ // leave a gap
				}
				lastSeq[d] = max(lastSeq[d], seq)
				m := &persistence.Message{
					Dest: d, Seq: seq, ID: fmt.Sprintf("ID:%d:%d", i, seq),
					Headers:  persistence.Headers{"n", fmt.Sprint(pick(100))},
					Body:     make([]byte, pick(40)),
					Priority: uint8(pick(10)), RedeliveryCount: uint32(pick(3)),
				}
				for range pick(4) {
					m.Subs = append(m.Subs, keys[pick(len(keys))])
				}
				bb.Add(m)
				mb.Add(m)
			case r < 60:
				seq := uint64(1 + pick(int(lastSeq[d]+2)))
				bb.Ack(d, seq)
				mb.Ack(d, seq)
			case r < 80:
				seq := uint64(1 + pick(int(max(lastSeq["topic://x"], lastSeq["topic://y"])+2)))
				bb.AckSub(k, seq)
				mb.AckSub(k, seq)
			case r < 88:
				info := persistence.SubInfo{Key: k, Dest: dests[2+pick(2)], Selector: fmt.Sprint(pick(3)), Created: int64(i)}
				bb.AddSub(info)
				mb.AddSub(info)
			case r < 94:
				bb.RemoveSub(k)
				mb.RemoveSub(k)
			default:
				bb.Purge(d)
				mb.Purge(d)
			}
		}
		berr := bb.Commit(t.Context(), persistence.Sync)
		merr := mb.Commit(t.Context(), persistence.Sync)
		require.Equal(t, merr == nil, berr == nil, "batch %d: bbolt %v, memstore %v", i, berr, merr)
		if pick(25) == 0 {
			require.NoError(t, bs.Close())
			bs = open()
		}
		compareStores(t, fmt.Sprintf("after batch %d", i), bs, ms, dests, keys)
	}
}

func compareStores(t *testing.T, when string, bs, ms persistence.Store, dests []string, keys []persistence.SubKey) {
	t.Helper()
	ctx := context.Background()
	for _, d := range dests {
		require.Equal(t, readAll(t, ms.Scan, ctx, d), readAll(t, bs.Scan, ctx, d), "%s: Scan(%s)", when, d)
		mm, mb := ms.Stats(d)
		bm, bb := bs.Stats(d)
		require.Equal(t, [2]int64{mm, mb}, [2]int64{bm, bb}, "%s: Stats(%s)", when, d)
	}
	for _, k := range keys {
		want, werr := readAllSub(ms, ctx, k)
		got, gerr := readAllSub(bs, ctx, k)
		require.Equal(t, werr != nil, gerr != nil, "%s: ScanSub(%v) errors %v, %v", when, k, werr, gerr)
		require.Equal(t, want, got, "%s: ScanSub(%v)", when, k)
	}
	wr, err := ms.Recover(ctx)
	require.NoError(t, err)
	gr, err := bs.Recover(ctx)
	require.NoError(t, err)
	require.Equal(t, wr, gr, "%s: Recover", when)
}

type scanFunc[K any] func(context.Context, K, uint64, int, func(*persistence.Message) error) error

func readAll[K any](t *testing.T, scan scanFunc[K], ctx context.Context, k K) []*persistence.Message {
	t.Helper()
	got, err := collect(scan, ctx, k)
	require.NoError(t, err)
	return got
}

func readAllSub(s persistence.Store, ctx context.Context, k persistence.SubKey) ([]*persistence.Message, error) {
	return collect(s.ScanSub, ctx, k)
}

func collect[K any](scan scanFunc[K], ctx context.Context, k K) ([]*persistence.Message, error) {
	got := []*persistence.Message{}
	err := scan(ctx, k, 0, 0, func(m *persistence.Message) error {
		c := m.Clone()
		if len(c.Headers) == 0 {
			c.Headers = nil
		}
		if len(c.Body) == 0 {
			c.Body = nil
		}
		if len(c.Subs) == 0 {
			c.Subs = nil
		}
		slices.SortFunc(c.Subs, func(a, b persistence.SubKey) int {
			return cmp.Or(cmp.Compare(a.ClientID, b.ClientID), cmp.Compare(a.Name, b.Name))
		})
		got = append(got, c)
		return nil
	})
	return got, err
}
