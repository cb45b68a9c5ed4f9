package logstore

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
)

var quietLog = shelltest.Quiet

const testDir = "/data/kafkalog"

// memOptions are the options of a store on fs with the smallest segments and no
// background checkpoints (tests call checkpoint themselves).
func memOptions(fs vfs.FS) Options {
	return Options{Dir: testDir, FS: fs, SegmentBytes: MinSegmentBytes, CheckpointInterval: -1, Logger: quietLog}
}

func mustOpen(t testing.TB, o Options) *Store {
	t.Helper()
	s, err := Open(t.Context(), o)
	require.NoError(t, err)
	return s
}

func commit(t testing.TB, s persistence.Store, ops func(b persistence.Batch)) {
	shelltest.Commit(t, s, ops)
}

func testMsg(dest string, seq uint64, bodyLen int, subs ...persistence.SubKey) *persistence.Message {
	body := make([]byte, bodyLen)
	for i := range body {
		body[i] = byte(seq + uint64(i))
	}
	return &persistence.Message{Dest: dest, Seq: seq, ID: fmt.Sprintf("ID:%s:%d", dest, seq),
		Headers: persistence.Headers{"n", fmt.Sprint(seq)}, Body: body, Persistent: true, Priority: 4, Subs: subs}
}

func scanSeqs(t testing.TB, s persistence.Store, dest string) []uint64 {
	return shelltest.Seqs(t, s, dest)
}

// dump renders everything a store holds, canonically, for comparing a store with the
// oracle.
func dump(t testing.TB, s persistence.Store) string { return shelltest.Dump(t, s) }

// workload is a deterministic sequence of batches and the state a correct store holds
// after each prefix of it.
type workload = shelltest.Workload

var (
	subX = persistence.SubKey{ClientID: "c1", Name: "x"}
	subY = persistence.SubKey{ClientID: "c2", Name: "y"}
)

const (
	wlQueue1 = "queue://one"
	wlQueue2 = "queue://two"
	wlTopic1 = "topic://t1"
	wlTopic2 = "topic://t2"
)

// newWorkload generates n steps, run on the memory store as the oracle: queue adds
// (some replacing a stored seq) and acks, topic messages for two durable subscriptions,
// AckSub, purges, and the subscription changes the checkpoint must get right: removal,
// re-creation, replacement on the same topic and moves to the other topic.
func newWorkload(t testing.TB, seed uint64, n int) *workload {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	last := map[string]uint64{}
	subTopic := map[persistence.SubKey]string{}
	msg := func(dest string, seq uint64, subs ...persistence.SubKey) *persistence.Message {
		m := testMsg(dest, seq, 10+rng.IntN(400), subs...)
		m.Priority, m.Expires, m.RedeliveryCount = uint8(rng.IntN(10)), rng.Int64N(1<<40), uint32(rng.IntN(3))
		if rng.IntN(4) == 0 {
			m.Headers = append(m.Headers, "dup", "a", "dup", "")
		}
		return m
	}
	return shelltest.NewWorkload(t, n, func(i int, oracle persistence.Store) []func(persistence.Batch) {
		var ops []func(persistence.Batch)
		add := func(m *persistence.Message) { ops = append(ops, func(b persistence.Batch) { b.Add(m) }) }
		next := func(dest string) uint64 { last[dest]++; return last[dest] }
		switch r := rng.IntN(100); {
		case i == 0:
			subTopic[subX], subTopic[subY] = wlTopic1, wlTopic1
			ops = append(ops, func(b persistence.Batch) {
				b.AddSub(persistence.SubInfo{Key: subX, Dest: wlTopic1, Created: 1})
				b.AddSub(persistence.SubInfo{Key: subY, Dest: wlTopic1, Selector: "a > 1", Created: 2})
			})
		case r < 35:
			dest := []string{wlQueue1, wlQueue2}[rng.IntN(2)]
			for range 1 + rng.IntN(4) {
				add(msg(dest, next(dest)))
			}
		case r < 40: // redelivery: replace a stored message
			if seqs := shelltest.Seqs(t, oracle, wlQueue1); len(seqs) > 0 {
				add(msg(wlQueue1, seqs[rng.IntN(len(seqs))]))
			}
		case r < 60:
			for _, dest := range []string{wlQueue1, wlQueue2} {
				seqs := shelltest.Seqs(t, oracle, dest)
				for j := 0; j < len(seqs) && j < 1+rng.IntN(5); j++ {
					ops = append(ops, func(b persistence.Batch) { b.Ack(dest, seqs[j]) }) // mostly in order
				}
			}
		case r < 75:
			topic := []string{wlTopic1, wlTopic2}[rng.IntN(2)]
			for range 1 + rng.IntN(3) {
				subs := [][]persistence.SubKey{{subX}, {subY}, {subX, subY}, {subY, subX, subY}}[rng.IntN(4)]
				add(msg(topic, next(topic), subs...))
			}
		case r < 88:
			ops = shelltest.AckPending(t, oracle, rng, subX, subY)
		case r < 91:
			ops = append(ops, func(b persistence.Batch) { b.Purge(wlQueue2) })
		case r < 94: // remove and re-create, maybe in separate batches
			k := []persistence.SubKey{subX, subY}[rng.IntN(2)]
			topic := subTopic[k]
			ops = append(ops, func(b persistence.Batch) { b.RemoveSub(k) })
			if rng.IntN(2) == 0 {
				ops = append(ops, func(b persistence.Batch) {
					b.AddSub(persistence.SubInfo{Key: k, Dest: topic, Created: int64(i)})
				})
			}
		case r < 97: // move to the other topic, or (re)create on it
			k := []persistence.SubKey{subX, subY}[rng.IntN(2)]
			topic := wlTopic2
			if subTopic[k] == wlTopic2 {
				topic = wlTopic1
			}
			subTopic[k] = topic
			ops = append(ops, func(b persistence.Batch) {
				b.AddSub(persistence.SubInfo{Key: k, Dest: topic, Selector: "moved", Created: int64(i)})
			})
		default: // replace a subscription's info on its topic; or a large message
			if k := subX; subTopic[k] != "" && rng.IntN(2) == 0 {
				topic := subTopic[k]
				ops = append(ops, func(b persistence.Batch) {
					b.AddSub(persistence.SubInfo{Key: k, Dest: topic, Selector: fmt.Sprint("v", i), Created: 7})
				})
			} else {
				m := msg(wlQueue1, next(wlQueue1))
				m.Body = make([]byte, 3000+rng.IntN(6000)) // crosses segment boundaries
				add(m)
			}
		}
		return ops
	})
}
