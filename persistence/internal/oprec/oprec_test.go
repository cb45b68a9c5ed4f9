package oprec

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
)

var errInvalid = errors.New("test: invalid operation")

// batch is what an adapter makes of a Recorder: it adds Add, keeping a copy.
type batch struct {
	Recorder[*persistence.Message]
}

func newBatch() *batch {
	b := &batch{}
	b.Init(errInvalid)
	return b
}

func (b *batch) Add(m *persistence.Message) {
	if b.CheckAdd(m) {
		c := *m
		c.Subs = Subs(m)
		b.RecordAdd(m, &c, len(m.Body))
	}
}

var (
	key   = persistence.SubKey{ClientID: "c", Name: "n"}
	topic = persistence.SubInfo{Key: key, Dest: "topic://t"}
)

func TestRecordsInOrder(t *testing.T) {
	b := newBatch()
	m := &persistence.Message{Dest: "topic://t", Seq: 7, Body: []byte("hello"), Subs: []persistence.SubKey{key}}
	b.Add(m)
	b.Ack("queue://q", 3)
	b.AckSub(key, 4)
	b.AddSub(topic)
	b.RemoveSub(key)
	b.Purge("queue://q")
	require.Equal(t, 6, b.Len())

	ops, bytes, err := b.Take()
	require.NoError(t, err)
	require.Equal(t, 5, bytes)
	require.Len(t, ops, 6)
	require.Equal(t, Op[*persistence.Message]{Kind: Add, Dest: "topic://t", Seq: 7, Msg: ops[0].Msg}, ops[0])
	require.NotSame(t, m, ops[0].Msg)
	require.Equal(t, m.Subs, ops[0].Msg.Subs)
	require.Equal(t, []Op[*persistence.Message]{
		{Kind: Ack, Dest: "queue://q", Seq: 3},
		{Kind: AckSub, Sub: key, Seq: 4},
		{Kind: AddSub, Sub: topic.Key, Info: &topic},
		{Kind: RemoveSub, Sub: key},
		{Kind: Purge, Dest: "queue://q"},
	}, ops[1:])
}

func TestSubs(t *testing.T) {
	subs := []persistence.SubKey{key}
	got := Subs(&persistence.Message{Dest: "topic://t", Subs: subs})
	require.Equal(t, subs, got)
	got[0].Name = "changed"
	require.Equal(t, "n", subs[0].Name, "Subs must copy")
	require.Nil(t, Subs(&persistence.Message{Dest: "queue://q", Subs: subs}))
	require.Nil(t, Subs(&persistence.Message{Dest: "topic://t"}))
}

func TestInvalidFailsTake(t *testing.T) {
	cases := map[string]func(b *batch){
		"nil message":    func(b *batch) { b.Add(nil) },
		"no dest":        func(b *batch) { b.Add(&persistence.Message{Seq: 1}) },
		"seq 0":          func(b *batch) { b.Add(&persistence.Message{Dest: "queue://q"}) },
		"sub of a queue": func(b *batch) { b.AddSub(persistence.SubInfo{Key: key, Dest: "queue://q"}) },
	}
	for name, op := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBatch()
			b.Ack("queue://q", 1)
			op(b)
			b.Purge("queue://q")
			require.Equal(t, 2, b.Len(), "the invalid operation is not recorded")
			_, _, err := b.Take()
			require.ErrorIs(t, err, errInvalid)
		})
	}
}

func TestFirstInvalidWins(t *testing.T) {
	b := newBatch()
	b.Add(nil)
	b.Add(&persistence.Message{Dest: "queue://q"})
	_, _, err := b.Take()
	require.ErrorIs(t, err, errInvalid)
	require.ErrorContains(t, err, "nil message")
}

func TestDoneIgnoresOperations(t *testing.T) {
	for name, end := range map[string]func(b *batch){
		"taken":       func(b *batch) { _, _, _ = b.Take() },
		"rolled back": func(b *batch) { b.Rollback() },
	} {
		t.Run(name, func(t *testing.T) {
			b := newBatch()
			b.Add(&persistence.Message{Dest: "queue://q", Seq: 1, Body: []byte("x")})
			end(b)
			require.True(t, b.Done())
			require.Zero(t, b.Len())

			b.Add(&persistence.Message{Dest: "queue://q", Seq: 2})
			b.Add(nil) // invalid, but ignored too
			b.Ack("queue://q", 1)
			b.AddSub(persistence.SubInfo{Key: key, Dest: "queue://q"})
			b.Invalid("ignored")
			require.Zero(t, b.Len())

			ops, bytes, err := b.Take()
			require.ErrorIs(t, err, persistence.ErrBatchDone)
			require.Nil(t, ops)
			require.Zero(t, bytes)
		})
	}
}

func TestInvalidKeepsOperations(t *testing.T) {
	b := newBatch()
	b.Ack("queue://q", 1)
	b.Invalid("bad %d", 42)
	ops, _, err := b.Take()
	require.EqualError(t, err, "test: invalid operation: bad 42")
	require.Len(t, ops, 1)
}

// A single-operation batch records into the Recorder's own backing array.
func TestSingleOperationAllocatesNothing(t *testing.T) {
	b := newBatch()
	allocs := testing.AllocsPerRun(100, func() {
		*b = batch{}
		b.Init(errInvalid)
		b.Ack("queue://q", 1)
		_, _, _ = b.Take()
	})
	require.Zero(t, allocs)
}
