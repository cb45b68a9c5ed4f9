package boltstore_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/activemq-go/broker/internal/race"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/boltstore"
	"github.com/activemq-go/broker/persistence/storetest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// harness opens a store on one file per test; open may be called again after Close and
// then reopens the same file.
func harness(t testing.TB) func() (persistence.Store, error) {
	path := filepath.Join(t.TempDir(), "broker.db")
	return func() (persistence.Store, error) {
		return boltstore.Open(context.Background(), boltstore.Options{Path: path, Logger: quiet})
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, harness, storetest.Features{Durable: true})
}

func BenchmarkStore(b *testing.B) { storetest.RunBenchmarks(b, harness) }

func openPath(t *testing.T, path string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(t.Context(), boltstore.Options{Path: path, Logger: quiet})
	require.NoError(t, err)
	_, err = s.Recover(t.Context())
	require.NoError(t, err)
	return s
}

func commit(t *testing.T, s persistence.Store, ops func(b persistence.Batch)) {
	t.Helper()
	b := s.Begin()
	ops(b)
	require.NoError(t, b.Commit(t.Context(), persistence.Sync))
}

func msg(dest string, seq uint64, subs ...persistence.SubKey) *persistence.Message {
	return &persistence.Message{Dest: dest, Seq: seq, ID: "ID:" + dest, Body: []byte("body"), Subs: subs}
}

func seqs(t *testing.T, s persistence.Store, dest string) []uint64 {
	t.Helper()
	got := []uint64{}
	require.NoError(t, s.Scan(t.Context(), dest, 0, 0, func(m *persistence.Message) error {
		got = append(got, m.Seq)
		return nil
	}))
	return got
}

// LastSeq must survive a reopen even when nothing of a destination is left, or the
// broker would hand out sequence numbers again.
func TestReopenKeepsLastSeqAfterAllAcked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broker.db")
	const q, topic = "queue://last", "topic://last"
	sub := persistence.SubKey{ClientID: "c", Name: "s"}
	s := openPath(t, path)
	commit(t, s, func(b persistence.Batch) {
		b.AddSub(persistence.SubInfo{Key: sub, Dest: topic})
		for i := uint64(1); i <= 40; i++ {
			b.Add(msg(q, i))
			b.Add(msg(topic, i, sub))
		}
	})
	commit(t, s, func(b persistence.Batch) {
		for i := uint64(40); i >= 1; i-- {
			b.Ack(q, i)
			b.AckSub(sub, i)
		}
	})
	require.NoError(t, s.Close())

	s = openPath(t, path)
	defer func() { require.NoError(t, s.Close()) }()
	rec, err := s.Recover(t.Context())
	require.NoError(t, err)
	require.Equal(t, []persistence.DestState{{Name: q, LastSeq: 40}, {Name: topic, LastSeq: 40}}, rec.Destinations)
	require.Equal(t, []persistence.SubInfo{{Key: sub, Dest: topic}}, rec.Subs)
	require.Empty(t, seqs(t, s, q))
	require.Empty(t, seqs(t, s, topic))
}

// A copy of the file taken while the store is open, right after a Commit returned,
// stands for the file of a process killed at that moment: bbolt's file is consistent
// after every committed transaction, and the copy must hold every committed batch.
func TestCopyWhileOpenHoldsCommitted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "broker.db")
	const q = "queue://copy"
	s := openPath(t, path)
	defer func() { require.NoError(t, s.Close()) }()
	for i := uint64(1); i <= 20; i++ {
		commit(t, s, func(b persistence.Batch) { b.Add(msg(q, i)) })
	}
	commit(t, s, func(b persistence.Batch) { b.Ack(q, 7) })

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	copyPath := filepath.Join(dir, "crashed.db")
	require.NoError(t, os.WriteFile(copyPath, data, 0o600))

	c := openPath(t, copyPath)
	defer func() { require.NoError(t, c.Close()) }()
	want := []uint64{}
	for i := uint64(1); i <= 20; i++ {
		if i != 7 {
			want = append(want, i)
		}
	}
	require.Equal(t, want, seqs(t, c, q))
	msgs, bytes := c.Stats(q)
	require.Equal(t, [2]int64{19, 19 * 4}, [2]int64{msgs, bytes})
}

func TestLargeMessage4MiB(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "broker.db"))
	defer func() { require.NoError(t, s.Close()) }()
	const q = "queue://large"
	big := make([]byte, 4<<20)
	for i := range big {
		big[i] = byte(i*31 + i>>12)
	}
	m := msg(q, 1)
	m.Body = big
	m.Headers = persistence.Headers{"k", "v"}
	commit(t, s, func(b persistence.Batch) { b.Add(m); b.Add(msg(q, 2)) })
	var got []*persistence.Message
	require.NoError(t, s.Scan(t.Context(), q, 0, 0, func(m *persistence.Message) error {
		got = append(got, m.Clone())
		return nil
	}))
	require.Len(t, got, 2)
	require.Equal(t, big, got[0].Body)
	require.Equal(t, persistence.Headers{"k", "v"}, got[0].Headers)
	n, bytes := s.Stats(q)
	require.Equal(t, [2]int64{2, 4<<20 + 4}, [2]int64{n, bytes})
}

// Pages of a scan are bounded in bytes too: 6 messages of 1 MiB take two pages, and a
// scan limited by max stops where it should.
func TestScanPagesByBytes(t *testing.T) {
	s, err := boltstore.Open(t.Context(), boltstore.Options{
		Path: filepath.Join(t.TempDir(), "broker.db"), SyncStrategy: boltstore.SyncNever, Logger: quiet,
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	const q = "queue://pages"
	commit(t, s, func(b persistence.Batch) {
		for i := uint64(1); i <= 6; i++ {
			m := msg(q, i)
			m.Body = make([]byte, 1<<20)
			m.Body[0], m.Body[1<<20-1] = byte(i), byte(i)
			b.Add(m)
		}
	})
	scan := func(after uint64, max int) []uint64 {
		var got []uint64
		require.NoError(t, s.Scan(t.Context(), q, after, max, func(m *persistence.Message) error {
			require.Equal(t, [2]byte{byte(m.Seq), byte(m.Seq)}, [2]byte{m.Body[0], m.Body[1<<20-1]})
			got = append(got, m.Seq)
			return nil
		}))
		return got
	}
	require.Equal(t, []uint64{1, 2, 3, 4, 5, 6}, scan(0, 0))
	require.Equal(t, []uint64{2, 3, 4, 5, 6}, scan(1, 5))
	require.Equal(t, []uint64{3, 4, 5}, scan(2, 3))
}

func TestSyncNeverReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broker.db")
	open := func() *boltstore.Store {
		s, err := boltstore.Open(t.Context(), boltstore.Options{Path: path, SyncStrategy: boltstore.SyncNever, Logger: quiet})
		require.NoError(t, err)
		return s
	}
	s := open()
	commit(t, s, func(b persistence.Batch) { b.Add(msg("queue://nosync", 1)) })
	require.NoError(t, s.Close())
	s = open()
	defer func() { require.NoError(t, s.Close()) }()
	require.Equal(t, []uint64{1}, seqs(t, s, "queue://nosync"))
}

func TestOpenLockedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broker.db")
	s := openPath(t, path)
	defer func() { require.NoError(t, s.Close()) }()
	start := time.Now()
	_, err := boltstore.Open(t.Context(), boltstore.Options{Path: path, LockTimeout: 50 * time.Millisecond, Logger: quiet})
	require.ErrorIs(t, err, boltstore.ErrLocked)
	// A bounded wait: Open gives up after its 50ms LockTimeout; 5s (more under -race) is
	// the margin for a busy machine.
	require.Less(t, time.Since(start), race.Scale(5*time.Second))
}

func TestOpenForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket([]byte("something else"))
		return err
	}))
	require.NoError(t, db.Close())
	_, err = boltstore.Open(t.Context(), boltstore.Options{Path: path, Logger: quiet})
	require.ErrorIs(t, err, boltstore.ErrFormat)
}

func TestOpenNewerFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broker.db")
	s := openPath(t, path)
	require.NoError(t, s.Close())
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte{0, 0, 0, 2})
	}))
	require.NoError(t, db.Close())
	_, err = boltstore.Open(t.Context(), boltstore.Options{Path: path, Logger: quiet})
	require.ErrorIs(t, err, boltstore.ErrFormat)
	require.ErrorContains(t, err, "format version 2")
}

func TestInvalidOperations(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "broker.db"))
	defer func() { require.NoError(t, s.Close()) }()
	long := "queue://" + string(make([]byte, bolt.MaxKeySize))
	cases := map[string]func(b persistence.Batch){
		"nil message":      func(b persistence.Batch) { b.Add(nil) },
		"long destination": func(b persistence.Batch) { b.Add(msg(long, 1)) },
		"sub on a queue": func(b persistence.Batch) {
			b.AddSub(persistence.SubInfo{Key: persistence.SubKey{ClientID: "c", Name: "n"}, Dest: "queue://q"})
		},
	}
	for name, ops := range cases {
		t.Run(name, func(t *testing.T) {
			b := s.Begin()
			b.Add(msg("queue://ok", 1))
			ops(b)
			require.ErrorIs(t, b.Commit(t.Context(), persistence.Sync), boltstore.ErrInvalid)
			require.Empty(t, seqs(t, s, "queue://ok"))
		})
	}
}

func TestSeqLimits(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "broker.db"))
	defer func() { require.NoError(t, s.Close()) }()
	const q = "queue://limits"
	commit(t, s, func(b persistence.Batch) { b.Add(msg(q, math.MaxInt64)); b.Add(msg(q, 1)) })
	require.Equal(t, []uint64{1, math.MaxInt64}, seqs(t, s, q))
	var n int
	require.NoError(t, s.Scan(t.Context(), q, math.MaxInt64, 0, func(*persistence.Message) error { n++; return nil }))
	require.Zero(t, n)
}

func TestParseOptions(t *testing.T) {
	o, err := boltstore.ParseOptions(persistence.Options{DataDirectory: "/var/lib/broker"})
	require.NoError(t, err)
	assert.Equal(t, boltstore.Options{Path: "/var/lib/broker/broker.db"}, o)

	o, err = boltstore.ParseOptions(persistence.Options{})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("data", "broker.db"), o.Path)

	o, err = boltstore.ParseOptions(persistence.Options{DataDirectory: "/d", Raw: map[string]any{
		"path":                             "./data/x.db",
		"syncstrategy":                     "Never",
		"initialmmapsize":                  "256mb",
		"freelisttype":                     "array",
		"freelistsync":                     "true", // from the environment: a string
		"locktimeout":                      1500,
		"concurrentstoreanddispatchqueues": false,
		"asyncCommitDelay":                 "2ms",
	}})
	require.NoError(t, err)
	assert.Equal(t, boltstore.Options{
		Path: "data/x.db", SyncStrategy: boltstore.SyncNever, InitialMmapSize: 256 << 20,
		FreelistType: bolt.FreelistArrayType, FreelistSync: true, LockTimeout: 1500 * time.Millisecond,
		StoreBeforeDispatch: true, AsyncCommitDelay: 2 * time.Millisecond,
	}, o)

	o, err = boltstore.ParseOptions(persistence.Options{Raw: map[string]any{
		"initialMmapSize": 0, "freelistSync": false, "lockTimeout": "2s", "syncStrategy": "always",
	}})
	require.NoError(t, err)
	assert.Equal(t, int64(-1), o.InitialMmapSize, "0 means no initial mapping")
	assert.Equal(t, 2*time.Second, o.LockTimeout)

	bad := []struct {
		raw     map[string]any
		key     string
		value   string
		allowed string
	}{
		{map[string]any{"nosync": true}, "persistenceAdapter.bbolt.nosync", "",
			"path, syncStrategy, initialMmapSize, freelistType, freelistSync, concurrentStoreAndDispatchQueues, lockTimeout, asyncCommitDelay"},
		{map[string]any{"concurrentStoreAndDispatchQueues": "often"}, "persistenceAdapter.bbolt.concurrentStoreAndDispatchQueues", "often", "true or false"},
		{map[string]any{"syncstrategy": "periodic"}, "persistenceAdapter.bbolt.syncStrategy", "periodic", "always or never"},
		{map[string]any{"syncstrategy": true}, "persistenceAdapter.bbolt.syncStrategy", "true", "always or never"},
		{map[string]any{"path": ""}, "persistenceAdapter.bbolt.path", "", "a file path"},
		{map[string]any{"path": 7}, "persistenceAdapter.bbolt.path", "7", "a file path"},
		{map[string]any{"initialmmapsize": "lots"}, "persistenceAdapter.bbolt.initialMmapSize", "lots", "a size"},
		{map[string]any{"initialmmapsize": -1}, "persistenceAdapter.bbolt.initialMmapSize", "-1", "a size"},
		{map[string]any{"initialmmapsize": "65gb"}, "persistenceAdapter.bbolt.initialMmapSize", "65gb", "0 to 64gb"},
		{map[string]any{"freelisttype": "tree"}, "persistenceAdapter.bbolt.freelistType", "tree", "map or array"},
		{map[string]any{"freelistsync": "maybe"}, "persistenceAdapter.bbolt.freelistSync", "maybe", "true or false"},
		{map[string]any{"locktimeout": "0s"}, "persistenceAdapter.bbolt.lockTimeout", "0s", "a positive duration"},
		{map[string]any{"locktimeout": "soon"}, "persistenceAdapter.bbolt.lockTimeout", "soon", "a positive duration"},
		{map[string]any{"locktimeout": 1.5}, "persistenceAdapter.bbolt.lockTimeout", "1.5", "a positive duration"},
		{map[string]any{"asyncCommitDelay": "-1ms"}, "persistenceAdapter.bbolt.asyncCommitDelay", "-1ms", "a positive duration"},
		{map[string]any{"path": map[string]any{"a": 1}}, "persistenceAdapter.bbolt.path", "map[a:1]", "a file path"},
	}
	for _, c := range bad {
		t.Run(c.key+"="+c.value, func(t *testing.T) {
			_, err := boltstore.ParseOptions(persistence.Options{Raw: c.raw})
			require.ErrorIs(t, err, boltstore.ErrOption)
			var oe *boltstore.OptionError
			require.True(t, errors.As(err, &oe), "%T", err)
			assert.Equal(t, c.key, oe.Key)
			assert.Equal(t, c.value, oe.Value)
			assert.Contains(t, oe.Allowed, c.allowed)
			assert.Contains(t, err.Error(), c.key)
		})
	}
}

func TestRegisteredOpener(t *testing.T) {
	dir := t.TempDir()
	s, err := persistence.Open(t.Context(), "bbolt", persistence.Options{DataDirectory: dir})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = os.Stat(filepath.Join(dir, "broker.db"))
	require.NoError(t, err)

	_, err = persistence.Open(t.Context(), "bbolt", persistence.Options{DataDirectory: dir, Raw: map[string]any{"bogus": 1}})
	require.ErrorIs(t, err, boltstore.ErrOption)
	require.ErrorContains(t, err, "persistenceAdapter.bbolt.bogus")
}

// TestSizeIsPagesInUse: Size, which the broker holds under storeUsage, counts the pages
// in use: it drops once messages are deleted although the file keeps its length, so a
// store that was full once is not full for good.
func TestSizeIsPagesInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broker.db")
	s := openPath(t, path)
	defer s.Close()
	const q = "queue://size"
	body := make([]byte, 8<<10)
	commit(t, s, func(b persistence.Batch) {
		for i := uint64(1); i <= 256; i++ {
			m := msg(q, i)
			m.Body = body
			b.Add(m)
		}
	})
	full, err := s.Size(t.Context())
	require.NoError(t, err)
	require.GreaterOrEqual(t, full, int64(256*len(body)))
	commit(t, s, func(b persistence.Batch) {
		for i := uint64(1); i <= 256; i++ {
			b.Ack(q, i)
		}
	})
	// Pages freed by a commit are reusable (and counted free) from the next one on.
	commit(t, s, func(b persistence.Batch) { b.Add(msg("queue://other", 1)) })
	empty, err := s.Size(t.Context())
	require.NoError(t, err)
	assert.Less(t, empty, full/4, "Size after every message was deleted")
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, st.Size(), full, "the file keeps its length")
}
