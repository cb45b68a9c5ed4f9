package journal

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/batchrec"
)

// modelIndex is the index as it was before extents: every stored message in a seqLog
// with its exact place. The property test applies the same operations to it and to
// the index and requires the same state.
type modelIndex struct {
	dests map[string]*modelDest
	subs  map[persistence.SubKey]*modelSub
	live  map[uint32]*segStats
}

type modelDest struct {
	name    string
	topic   bool
	added   bool
	lastSeq uint64
	msgs    int64
	bytes   int64
	log     seqLog[loc]
	subs    []*modelSub
}

type modelSub struct {
	info    persistence.SubInfo
	dest    *modelDest
	pending seqLog[struct{}]
}

func newModelIndex() *modelIndex {
	return &modelIndex{dests: map[string]*modelDest{}, subs: map[persistence.SubKey]*modelSub{}, live: map[uint32]*segStats{}}
}

func (x *modelIndex) destination(name string) *modelDest {
	d := x.dests[name]
	if d == nil {
		d = &modelDest{name: name, topic: persistence.KindOf(name) == persistence.KindTopic}
		x.dests[name] = d
	}
	return d
}

func (x *modelIndex) seg(id uint32) *segStats {
	if x.live[id] == nil {
		x.live[id] = &segStats{}
	}
	return x.live[id]
}

func (x *modelIndex) apply(o *op) {
	switch o.Kind {
	case batchrec.OpAdd:
		d := x.destination(o.Dest)
		d.added = true
		d.lastSeq = max(d.lastSeq, o.Seq)
		x.drop(d, o.Seq)
		if d.topic {
			owed := false
			for _, k := range o.Subs {
				for _, sub := range d.subs {
					if sub.info.Key == k && !sub.pending.Contains(o.Seq) {
						sub.pending.Put(o.Seq, struct{}{})
						owed = true
					}
				}
			}
			if !owed {
				return
			}
		}
		d.log.Put(o.Seq, o.loc)
		d.msgs++
		d.bytes += int64(o.loc.body)
		st := x.seg(o.loc.seg)
		st.msgs++
		st.bytes += int64(o.loc.n)
	case batchrec.OpAck:
		if d := x.dests[o.Dest]; d != nil {
			x.drop(d, o.Seq)
		}
	case batchrec.OpAckSub:
		if sub := x.subs[o.Key]; sub != nil {
			if _, ok := sub.pending.Remove(o.Seq); ok && !sub.dest.owed(o.Seq) {
				x.drop(sub.dest, o.Seq)
			}
		}
	case batchrec.OpAddSub:
		if old := x.subs[o.Info.Key]; old != nil {
			if old.info.Dest == o.Info.Dest {
				old.info = o.Info
				return
			}
			x.removeSub(o.Info.Key)
		}
		d := x.destination(o.Info.Dest)
		sub := &modelSub{info: o.Info, dest: d}
		d.subs = append(d.subs, sub)
		x.subs[o.Info.Key] = sub
	case batchrec.OpRemoveSub:
		x.removeSub(o.Key)
	case batchrec.OpPurge:
		if d := x.dests[o.Dest]; d != nil {
			d.log.After(0, func(_ uint64, l *loc) bool {
				st := x.seg(l.seg)
				st.msgs--
				st.bytes -= int64(l.n)
				return true
			})
			d.log.Reset()
			for _, sub := range d.subs {
				sub.pending.Reset()
			}
			d.msgs, d.bytes = 0, 0
		}
	case opMove:
		d := x.dests[o.Dest]
		if d == nil {
			return
		}
		l := d.log.Ptr(o.Seq)
		if l == nil || l.seg != o.oldSeg || l.off != o.oldOff {
			return
		}
		st := x.seg(l.seg)
		st.msgs--
		st.bytes -= int64(l.n)
		l.seg, l.off = o.loc.seg, o.loc.off
		st = x.seg(l.seg)
		st.msgs++
		st.bytes += int64(l.n)
	}
}

func (d *modelDest) owed(seq uint64) bool {
	for _, sub := range d.subs {
		if sub.pending.Contains(seq) {
			return true
		}
	}
	return false
}

func (x *modelIndex) drop(d *modelDest, seq uint64) {
	l, ok := d.log.Remove(seq)
	if !ok {
		return
	}
	for _, sub := range d.subs {
		sub.pending.Remove(seq)
	}
	d.msgs--
	d.bytes -= int64(l.body)
	st := x.seg(l.seg)
	st.msgs--
	st.bytes -= int64(l.n)
}

func (x *modelIndex) removeSub(key persistence.SubKey) {
	sub := x.subs[key]
	if sub == nil {
		return
	}
	d := sub.dest
	d.subs = slices.DeleteFunc(d.subs, func(s *modelSub) bool { return s == sub })
	delete(x.subs, key)
	sub.pending.After(0, func(seq uint64, _ *struct{}) bool {
		if !d.owed(seq) {
			x.drop(d, seq)
		}
		return true
	})
	sub.pending.Reset()
}

// v1Checkpoint encodes the model as the body of a version 1 checkpoint (the layout the
// build before version 2 wrote; the package comment keeps it).
func (x *modelIndex) v1Checkpoint() []byte {
	var buf bytes.Buffer
	cw := &ckptWriter{w: bufio.NewWriter(&buf), crc: crc32.New(castagnoli)}
	names := make([]string, 0, len(x.dests))
	for name := range x.dests {
		names = append(names, name)
	}
	slices.Sort(names)
	cw.uvarint(uint64(len(names)))
	for _, name := range names {
		d := x.dests[name]
		cw.str(name)
		flags := uint64(0)
		if d.added {
			flags = 1
		}
		cw.uvarint(flags)
		cw.uvarint(d.lastSeq)
		cw.uvarint(uint64(d.log.Len()))
		prev := uint64(0)
		d.log.After(0, func(seq uint64, l *loc) bool {
			cw.logEntry(seq-prev, *l)
			prev = seq
			return true
		})
		cw.uvarint(uint64(len(d.subs)))
		for _, sub := range d.subs {
			cw.str(sub.info.Key.ClientID)
			cw.str(sub.info.Key.Name)
			cw.str(sub.info.Selector)
			cw.varint(sub.info.Created)
			cw.uvarint(uint64(sub.pending.Len()))
			prev := uint64(0)
			sub.pending.After(0, func(seq uint64, _ *struct{}) bool {
				cw.uvarint(seq - prev)
				prev = seq
				return true
			})
		}
	}
	cw.w.Flush()
	return buf.Bytes()
}

// v2Checkpoint encodes a snapshot as the body of a version 2 checkpoint (the layout the
// build before version 3 wrote: as version 3, with each extent's lengths as runs, one
// per change of lengths between stored seqs).
func v2Checkpoint(snap *snapshot) []byte {
	var buf bytes.Buffer
	cw := &ckptWriter{w: bufio.NewWriter(&buf), crc: crc32.New(castagnoli)}
	extent := func(e *extent) {
		cw.writeExtentHead(e)
		var runs []lenRunV2
		e.after(0, func(seq uint64) bool {
			n, body := e.lengths(seq)
			if k := len(runs); k == 0 || runs[k-1].n != n || runs[k-1].body != body {
				runs = append(runs, lenRunV2{from: uint32(seq - e.lo), n: n, body: body})
			}
			return true
		})
		cw.uvarint(uint64(len(runs)))
		for _, r := range runs {
			cw.uvarint(uint64(r.from))
			cw.uvarint(uint64(r.n))
			cw.uvarint(uint64(r.body))
		}
		cw.uvarint(uint64(len(e.strides)))
		prev := stride{}
		for _, st := range e.strides {
			cw.uvarint(uint64(st.seq - prev.seq))
			cw.uvarint(uint64(st.off - prev.off))
			prev = st
		}
	}
	cw.uvarint(uint64(len(snap.dests)))
	for _, ds := range snap.dests {
		cw.str(ds.name)
		cw.uvarint(uint64(b2i(ds.added)))
		cw.uvarint(ds.lastSeq)
		cw.uvarint(uint64(ds.curSeg))
		cw.uvarint(ds.curMax)
		cw.uvarint(ds.addMin)
		cw.uvarint(ds.movMax)
		cw.uvarint(uint64(len(ds.ext)))
		for _, e := range ds.ext {
			extent(e)
		}
		cw.uvarint(uint64(len(ds.moved)))
		for _, e := range ds.moved {
			extent(e)
		}
		cw.uvarint(uint64(len(ds.keys)))
		prev := uint64(0)
		for j, seq := range ds.keys {
			cw.logEntry(seq-prev, ds.locs[j])
			prev = seq
		}
		cw.uvarint(uint64(len(ds.subs)))
		for _, ss := range ds.subs {
			cw.str(ss.info.Key.ClientID)
			cw.str(ss.info.Key.Name)
			cw.str(ss.info.Selector)
			cw.varint(ss.info.Created)
			cw.writeSeqSet(&ss.pending)
		}
	}
	cw.w.Flush()
	return buf.Bytes()
}

// record is a record of a message the simulated journal holds: its destination, seq,
// place and the start of its batch record.
type record struct {
	dest string
	seq  uint64
	l    loc
	rec  uint32
}

// simJournal generates random batches of operations with the places a journal would
// give them, in small segments.
type simJournal struct {
	rng     *rand.Rand
	seg     uint32
	off     uint32
	next    map[string]uint64
	held    []*op // adds delayed to a later batch (concurrent producers)
	records []record
	recOf   map[loc]uint32         // (seg, off) of a message -> its record's start
	bySeq   map[recordKey][]record // the records of a seq in a segment, in order
}

type recordKey struct {
	dest string
	seg  uint32
	seq  uint64
}

const simSegBytes = 48 << 10

var (
	simQueues = []string{"queue://a", "queue://b"}
	simTopic  = "topic://t"
	simSched  = "scheduler://jobs"
	simSubs   = []persistence.SubKey{{ClientID: "c", Name: "1"}, {ClientID: "c", Name: "2"}}
)

// batch returns the operations of the next batch, placed in the journal.
func (j *simJournal) batch(m *modelIndex) []op {
	rng := j.rng
	var ops []op
	add := func(dest string, seq uint64, subs ...persistence.SubKey) {
		body := uint32(10 + rng.IntN(400))
		if rng.IntN(4) > 0 { // mostly same-sized messages, as a producer sends them
			body = 170
		}
		hdr := uint32(30) // the message's other fields: mostly the same
		if rng.IntN(10) == 0 {
			hdr = uint32(20 + rng.IntN(40))
		}
		ops = append(ops, op{Op: batchrec.Op{Kind: batchrec.OpAdd, Dest: dest, Seq: seq, Subs: subs}, loc: loc{n: body + hdr, body: body}})
	}
	liveOf := func(dest string) []uint64 {
		var seqs []uint64
		if d := m.dests[dest]; d != nil {
			d.log.After(0, func(seq uint64, _ *loc) bool { seqs = append(seqs, seq); return true })
		}
		return seqs
	}
	for range 1 + rng.IntN(12) {
		switch r := rng.IntN(100); {
		case r < 45:
			q := simQueues[rng.IntN(2)]
			j.next[q]++
			add(q, j.next[q])
			if rng.IntN(25) == 0 { // a batch that reaches the writer after a later one
				o := ops[len(ops)-1]
				ops = ops[:len(ops)-1]
				j.held = append(j.held, &o)
			}
			if rng.IntN(60) == 0 { // seqs taken by a rolled-back transaction
				j.next[q] += uint64(rng.IntN(3000))
			}
		case r < 60:
			q := simQueues[rng.IntN(2)]
			seqs := liveOf(q)
			switch {
			case len(seqs) > 0 && rng.IntN(3) > 0: // mostly the head, as consumers ack
				k := rng.IntN(min(len(seqs), 4))
				if rng.IntN(5) == 0 {
					k = rng.IntN(len(seqs))
				}
				ops = append(ops, op{Op: batchrec.Op{Kind: batchrec.OpAck, Dest: q, Seq: seqs[k]}})
			default: // not stored, or never
				ops = append(ops, op{Op: batchrec.Op{Kind: batchrec.OpAck, Dest: q, Seq: uint64(rng.IntN(int(j.next[q]) + 10))}})
			}
		case r < 63:
			q := simQueues[rng.IntN(2)]
			if seqs := liveOf(q); len(seqs) > 0 && rng.IntN(2) == 0 {
				add(q, seqs[rng.IntN(len(seqs))]) // replaces
			} else if j.next[q] > 0 {
				add(q, 1+uint64(rng.IntN(int(j.next[q])))) // an old seq again
			}
		case r < 75:
			j.next[simTopic]++
			var subs []persistence.SubKey
			for _, k := range simSubs {
				if rng.IntN(3) > 0 {
					subs = append(subs, k)
				}
			}
			add(simTopic, j.next[simTopic], subs...)
			if rng.IntN(4) == 0 { // the same seq again, owed this time: replaces or stores
				add(simTopic, j.next[simTopic], simSubs[rng.IntN(2)])
			}
		case r < 82:
			k := simSubs[rng.IntN(2)]
			if sub := m.subs[k]; sub != nil && sub.pending.Len() > 0 {
				var p []uint64
				sub.pending.After(0, func(seq uint64, _ *struct{}) bool { p = append(p, seq); return len(p) < 5 })
				ops = append(ops, op{Op: batchrec.Op{Kind: batchrec.OpAckSub, Key: k, Seq: p[rng.IntN(len(p))]}})
			} else {
				ops = append(ops, op{Op: batchrec.Op{Kind: batchrec.OpAckSub, Key: k, Seq: uint64(rng.IntN(100))}})
			}
		case r < 86:
			add(simSched, uint64(1+rng.IntN(1<<16))<<8)
		case r < 88:
			if seqs := liveOf(simSched); len(seqs) > 0 {
				ops = append(ops, op{Op: batchrec.Op{Kind: batchrec.OpAck, Dest: simSched, Seq: seqs[rng.IntN(len(seqs))]}})
			}
		case r < 89:
			ops = append(ops, op{Op: batchrec.Op{Kind: batchrec.OpPurge, Dest: simQueues[rng.IntN(2)]}})
		case r < 91:
			k := simSubs[rng.IntN(2)]
			if rng.IntN(2) == 0 {
				ops = append(ops, op{Op: batchrec.Op{Kind: batchrec.OpRemoveSub, Key: k}})
			} else {
				ops = append(ops, op{Op: batchrec.Op{Kind: batchrec.OpAddSub, Info: persistence.SubInfo{Key: k, Dest: simTopic, Created: int64(rng.IntN(9))}}})
			}
		case r < 95: // the compactor: copy the live messages of an older segment forward
			seg := uint32(1 + rng.IntN(int(j.seg)))
			if seg == j.seg {
				break
			}
			var live []record
			for name, d := range m.dests {
				d.log.After(0, func(seq uint64, l *loc) bool {
					if l.seg == seg {
						live = append(live, record{dest: name, seq: seq, l: *l})
					}
					return true
				})
			}
			slices.SortFunc(live, func(a, b record) int { return cmp.Compare(a.l.off, b.l.off) })
			for _, rc := range live[:min(len(live), 40)] {
				ops = append(ops, op{Op: batchrec.Op{Kind: opMove, Dest: rc.dest, Seq: rc.seq}, oldSeg: rc.l.seg, oldOff: rc.l.off,
					loc: loc{n: rc.l.n, body: rc.l.body}})
			}
		default: // copies of random messages, live or not
			for range 1 + rng.IntN(6) {
				if len(j.records) == 0 {
					break
				}
				rc := j.records[rng.IntN(len(j.records))]
				if rc.l.seg == j.seg {
					continue
				}
				o := op{Op: batchrec.Op{Kind: opMove, Dest: rc.dest, Seq: rc.seq}, oldSeg: rc.l.seg, oldOff: rc.l.off,
					loc: loc{n: rc.l.n, body: rc.l.body}}
				if d := m.dests[rc.dest]; d != nil && rng.IntN(4) > 0 {
					if l, ok := d.log.Get(rc.seq); ok && l.seg != j.seg {
						o.oldSeg, o.oldOff, o.loc = l.seg, l.off, loc{n: l.n, body: l.body}
					}
				}
				ops = append(ops, o)
			}
		}
	}
	if len(j.held) > 0 && rng.IntN(3) == 0 {
		for _, o := range j.held {
			ops = append(ops, *o)
		}
		j.held = j.held[:0]
	}
	// Place the batch: one record at j.off; messages at increasing offsets in it.
	size := uint32(16)
	for i := range ops {
		size += 8
		if o := &ops[i]; o.Kind == batchrec.OpAdd || o.Kind == opMove {
			o.msgOff = size
			size += o.loc.n
		}
	}
	if j.off > segHeaderSize && j.off+size > simSegBytes {
		j.seg, j.off = j.seg+1, segHeaderSize
	}
	rec := j.off
	for i := range ops {
		if o := &ops[i]; o.Kind == batchrec.OpAdd || o.Kind == opMove {
			o.loc.seg, o.loc.off = j.seg, rec+o.msgOff
			rc := record{dest: o.Dest, seq: o.Seq, l: o.loc, rec: rec}
			j.records = append(j.records, rc)
			k := recordKey{o.Dest, j.seg, o.Seq}
			j.bySeq[k] = append(j.bySeq[k], rc)
			j.recOf[o.loc] = rec
		}
	}
	j.off += uint32(alignUp(int(size)))
	return ops
}

// requireSame checks that x holds what the model holds, and that every message of an
// extent is where reading forward from its stride finds it first.
func requireSame(t *testing.T, m *modelIndex, x *index, j *simJournal, when string) {
	t.Helper()
	for name, md := range m.dests {
		d := x.dests[name]
		if d == nil {
			require.True(t, !md.added && md.log.Len() == 0 && len(md.subs) == 0, "%s: %s missing", when, name)
			continue
		}
		require.Equal(t, [4]int64{b2i(md.added), int64(md.lastSeq), md.msgs, md.bytes},
			[4]int64{b2i(d.added), int64(d.lastSeq), d.msgs, d.bytes}, "%s: %s added/lastSeq/msgs/bytes", when, name)
		var want, got []uint64
		md.log.After(0, func(seq uint64, _ *loc) bool { want = append(want, seq); return true })
		d.each(0, func(seq uint64, e *extent, l loc) bool {
			got = append(got, seq)
			ml, _ := md.log.Get(seq)
			if e == nil {
				require.Equal(t, ml, l, "%s: %s seq %d in the log", when, name, seq)
				return true
			}
			require.Equal(t, loc{seg: ml.seg, n: ml.n, body: ml.body}, l, "%s: %s seq %d in an extent", when, name, seq)
			start, end := e.strideOff(seq), e.end
			require.LessOrEqual(t, start, j.recOf[ml], "%s: %s seq %d: stride after its record", when, name, seq)
			require.LessOrEqual(t, ml.off+ml.n, end, "%s: %s seq %d: beyond the extent's end", when, name, seq)
			for _, rc := range j.bySeq[recordKey{name, e.seg, seq}] { // the first one read from start is it
				if rc.rec >= start && rc.rec < end {
					require.Equal(t, ml, rc.l, "%s: %s seq %d: reading forward finds another record first", when, name, seq)
					break
				}
			}
			return true
		})
		require.Equal(t, want, got, "%s: %s stored seqs", when, name)
		require.Equal(t, len(md.subs), len(d.subs), "%s: %s subs", when, name)
		for i, ms := range md.subs {
			require.Equal(t, ms.info, d.subs[i].info)
			var pw, pg []uint64
			ms.pending.After(0, func(seq uint64, _ *struct{}) bool { pw = append(pw, seq); return true })
			d.subs[i].pending.After(0, func(seq uint64) bool { pg = append(pg, seq); return true })
			require.Equal(t, pw, pg, "%s: %v pending", when, ms.info.Key)
		}
	}
	require.Len(t, x.subs, len(m.subs))
	for id := range mergeKeys(m.live, x.live) {
		var a, b segStats
		if st := m.live[id]; st != nil {
			a = *st
		}
		if st := x.live[id]; st != nil {
			b = *st
		}
		require.Equal(t, a, b, "%s: live of segment %d", when, id)
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func mergeKeys(a, b map[uint32]*segStats) map[uint32]bool {
	m := map[uint32]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

// roundTrip writes x as a checkpoint of this build's version and loads it back.
func roundTrip(t *testing.T, x *index) *index {
	t.Helper()
	var buf bytes.Buffer
	p := x.applied
	_, err := writeCheckpointBody(&buf, 1, (&Store{idx: x}).snapshot())
	require.NoError(t, err)
	b := buf.Bytes()
	y, err := decodeCheckpoint(b[ckptHeaderSize:len(b)-ckptTrailer], ckptVersion, p, nil)
	require.NoError(t, err)
	return y
}

// roundTripV2 writes x as a version 2 checkpoint and loads it back.
func roundTripV2(t *testing.T, x *index) *index {
	t.Helper()
	y, err := decodeCheckpoint(v2Checkpoint((&Store{idx: x}).snapshot()), ckptVersionV2, x.applied, nil)
	require.NoError(t, err)
	y.applied = x.applied
	return y
}

// TestIndexMatchesModel applies random workloads (queues appended in order with late
// batches, holes, replaced and re-added seqs, acks of seqs not stored, a topic with two
// durable subscriptions, scheduled jobs at random seqs, purges, subscription changes,
// compactor moves, live and stale) to the index and to the model (the seqLog index it
// replaced), and compares them after every batch; every 40 batches the index goes
// through a checkpoint, now and then through a version 2 checkpoint (its lengths
// converted), and the model through a version 1 checkpoint that replaces the index (a
// store upgraded in the middle of the workload). Messages have bodies of varied sizes
// and, now and then, other headers, and acks hit random positions.
func TestIndexMatchesModel(t *testing.T) {
	seeds, steps := 12, 1500
	if testing.Short() {
		seeds, steps = 3, 600
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 99))
			j := &simJournal{rng: rng, seg: 1, off: segHeaderSize, next: map[string]uint64{},
				recOf: map[loc]uint32{}, bySeq: map[recordKey][]record{}}
			m, x := newModelIndex(), newIndex()
			for step := range steps {
				ops := j.batch(m)
				for i := range ops {
					m.apply(&ops[i])
					x.apply(&ops[i])
				}
				x.applied = pos{j.seg, int64(j.off)}
				when := fmt.Sprintf("step %d", step)
				requireSame(t, m, x, j, when)
				if step%40 == 39 {
					x = roundTrip(t, x)
					requireSame(t, m, x, j, when+" after a checkpoint")
				}
				if step%300 == 149 {
					x = roundTripV2(t, x)
					requireSame(t, m, x, j, when+" after a version 2 checkpoint")
				}
				if step%400 == 199 {
					b := m.v1Checkpoint()
					var err error
					x, err = decodeCheckpoint(b, ckptVersionV1, pos{j.seg, int64(j.off)}, nil)
					require.NoError(t, err)
					requireSame(t, m, x, j, when+" after a version 1 checkpoint")
				}
			}
			extents, moved, inMoved, logged := 0, 0, int64(0), 0
			for _, d := range x.dests {
				extents += len(d.ext)
				moved += len(d.moved)
				for _, e := range d.moved {
					inMoved += e.n
				}
				logged += d.log.Len()
			}
			t.Logf("seed %d: %d segments, %d extents, %d moved extents holding %d messages, %d messages in logs",
				seed, j.seg, extents, moved, inMoved, logged)
		})
	}
}
