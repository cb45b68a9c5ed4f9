package journal

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/batchrec"
)

// sampleRecords returns real batch records: every operation kind, topic and queue
// messages, odd values.
func sampleRecords() [][]byte {
	k1 := persistence.SubKey{ClientID: "c", Name: "n"}
	k2 := persistence.SubKey{ClientID: "ä:b", Name: ""}
	var recs [][]byte
	b := recordingBatch()
	b.Add(&persistence.Message{Dest: "queue://q", Seq: 1, ID: "ID:1", Headers: persistence.Headers{"a", "b", "a", ""},
		Body: []byte("hello"), Persistent: true, Priority: 9, Expires: -1, Timestamp: math.MaxInt64, RedeliveryCount: math.MaxUint32})
	b.Add(&persistence.Message{Dest: "topic://t", Seq: math.MaxInt64, Subs: []persistence.SubKey{k1, k2, k1}})
	b.Ack("queue://q", 1)
	b.AckSub(k1, 7)
	b.AddSub(persistence.SubInfo{Key: k2, Dest: "topic://t", Selector: "x = 'y'", Created: -5})
	b.RemoveSub(k1)
	b.Purge("queue://q")
	recs = append(recs, finishRecord(b.Rec, len(b.Ops)))
	b = recordingBatch()
	recordMove(b, "queue://q", 3, loc{seg: 2, off: 64, body: 1}, appendMessage(nil, &persistence.Message{Dest: "queue://q", Seq: 3, Body: []byte{0}}, nil))
	recs = append(recs, finishRecord(b.Rec, len(b.Ops)))
	b = recordingBatch()
	b.Add(&persistence.Message{Dest: "queue://big", Seq: 2, Body: bytes.Repeat([]byte{7}, 3000)})
	recs = append(recs, finishRecord(b.Rec, len(b.Ops)))
	b = recordingBatch()
	b.Add(typedMessage())
	recs = append(recs, finishRecord(b.Rec, len(b.Ops)))
	b = recordingBatch()
	recordMove(b, "topic://t", 4, loc{seg: 2, off: 64, body: 1}, appendMessage(nil, typedMessage(), nil))
	recs = append(recs, finishRecord(b.Rec, len(b.Ops)))
	return recs
}

// typedMessage is a topic message with a typed part.
func typedMessage() *persistence.Message {
	return &persistence.Message{Dest: "topic://t", Seq: 4, ID: "ID:4", Headers: persistence.Headers{"s", "v"},
		Body: []byte{1}, Kind: persistence.BodyStream, Subs: []persistence.SubKey{{ClientID: "c", Name: "n"}, {ClientID: "d"}},
		Props: persistence.Props{persistence.DoubleProp("d", 0.5), persistence.BytesProp("b", []byte("xy"))}}
}

// A record is version 1, as before the typed part, unless a message in it (added or
// moved) has a typed part: then it is version 2, and the message reads back whole.
func TestRecordVersionTyped(t *testing.T) {
	recs := sampleRecords()
	for i, want := range []byte{recVersion, recVersion, recVersion, recVersionTyped, recVersionTyped} {
		require.Equal(t, want, recs[i][9], "record %d", i)
	}
	for _, rec := range recs[3:] {
		payload, _, err := decodeFrame(rec)
		require.NoError(t, err)
		ops, err := decodeBatch(payload, interner{}, nil)
		require.NoError(t, err)
		require.Len(t, ops, 1)
		require.Equal(t, "topic://t", ops[0].Dest)
		require.EqualValues(t, 1, ops[0].loc.body)
		if ops[0].Kind == batchrec.OpAdd {
			require.Equal(t, typedMessage().Subs, ops[0].Subs)
		}
		m := persistence.Message{Kind: persistence.BodyText, Props: persistence.Props{{Name: "stale"}}}
		require.NoError(t, decodeMessage(rec[ops[0].msgOff:ops[0].msgOff+ops[0].loc.n], &m, nil))
		want := typedMessage()
		want.Subs = nil
		require.Equal(t, *want, m)
	}
	// Replay refuses a message whose typed part Scan could not read, even with a good
	// checksum.
	raw := appendMessage(nil, typedMessage(), nil)
	at := bytes.Index(raw, persistence.AppendTyped(nil, typedMessage()))
	require.Positive(t, at)
	raw[at] = persistence.TypedVersion + 1
	putCRC(raw)
	_, err := peekMessage(raw)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorIs(t, decodeMessage(raw, &persistence.Message{}, nil), ErrCorrupt)

	// A message without a typed part leaves none behind in a reused Message.
	payload, _, err := decodeFrame(recs[2])
	require.NoError(t, err)
	ops, err := decodeBatch(payload, interner{}, nil)
	require.NoError(t, err)
	m := persistence.Message{Kind: persistence.BodyText, Props: persistence.Props{{Name: "stale"}}}
	require.NoError(t, decodeMessage(recs[2][ops[0].msgOff:ops[0].msgOff+ops[0].loc.n], &m, nil))
	require.Equal(t, persistence.BodyPlain, m.Kind)
	require.Nil(t, m.Props)
}

func TestRecordRoundTrip(t *testing.T) {
	recs := sampleRecords()
	payload, n, err := decodeFrame(recs[0])
	require.NoError(t, err)
	require.Equal(t, len(recs[0]), n)
	require.Zero(t, n%recordAlign)
	ops, err := decodeBatch(payload, interner{}, nil)
	require.NoError(t, err)
	kinds := []opKind{batchrec.OpAdd, batchrec.OpAdd, batchrec.OpAck, batchrec.OpAckSub, batchrec.OpAddSub, batchrec.OpRemoveSub, batchrec.OpPurge}
	require.Len(t, ops, len(kinds))
	for i, k := range kinds {
		require.Equal(t, k, ops[i].Kind, "op %d", i)
	}
	require.Equal(t, "queue://q", ops[0].Dest)
	require.EqualValues(t, 5, ops[0].loc.body)
	require.Equal(t, []persistence.SubKey{{ClientID: "c", Name: "n"}, {ClientID: "ä:b"}, {ClientID: "c", Name: "n"}}, ops[1].Subs)
	require.Equal(t, persistence.SubInfo{Key: persistence.SubKey{ClientID: "ä:b"}, Dest: "topic://t", Selector: "x = 'y'", Created: -5}, ops[4].Info)

	var m persistence.Message
	raw := recs[0][ops[0].msgOff : ops[0].msgOff+ops[0].loc.n]
	require.NoError(t, decodeMessage(raw, &m, nil))
	require.Equal(t, persistence.Message{Dest: "queue://q", Seq: 1, ID: "ID:1", Headers: persistence.Headers{"a", "b", "a", ""},
		Body: []byte("hello"), Persistent: true, Priority: 9, Expires: -1, Timestamp: math.MaxInt64, RedeliveryCount: math.MaxUint32}, m)

	payload, _, err = decodeFrame(recs[1])
	require.NoError(t, err)
	ops, err = decodeBatch(payload, interner{}, nil)
	require.NoError(t, err)
	require.Equal(t, op{Op: batchrec.Op{Kind: opMove, Dest: "queue://q", Seq: 3}, oldSeg: 2, oldOff: 64, msgOff: ops[0].msgOff,
		loc: loc{n: ops[0].loc.n, body: 1}}, ops[0])
}

func TestDecodeFrameRejects(t *testing.T) {
	rec := sampleRecords()[0]
	for i := range rec[:len(rec)-8] { // every byte but the padding is covered
		bad := bytes.Clone(rec)
		bad[i] ^= 0x10
		_, _, err := decodeFrame(bad)
		require.ErrorIs(t, err, ErrCorrupt, "byte %d flipped", i)
	}
	_, _, err := decodeFrame(rec[:len(rec)-20])
	require.ErrorIs(t, err, errShort)
	_, _, err = decodeFrame(make([]byte, 64))
	require.ErrorIs(t, err, errFrame, "zeroes are never a record")
}

// FuzzRecordDecode feeds arbitrary bytes to the record decoders: they must never panic,
// and whatever decodes must be consistent. Seeds are real records, whole and cut.
func FuzzRecordDecode(f *testing.F) {
	for _, rec := range sampleRecords() {
		f.Add(rec)
		f.Add(rec[:len(rec)/2])
		f.Add(append(bytes.Clone(rec), rec...))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		// Decode as a segment would be read: record after record, resyncing after junk.
		in := interner{}
		var ops []op
		for p := 0; p < len(data); {
			payload, n, err := decodeFrame(data[p:])
			if err != nil {
				next := resync(data, p, 0)
				if next < 0 {
					break
				}
				require.Greater(t, next, p)
				p = next
				continue
			}
			require.Positive(t, n)
			ops, err = decodeBatch(payload, in, ops)
			if err == nil {
				for _, o := range ops {
					if o.Kind != batchrec.OpAdd && o.Kind != opMove {
						continue
					}
					raw := data[p+int(o.msgOff) : p+int(o.msgOff)+int(o.loc.n)]
					var m persistence.Message
					require.NoError(t, decodeMessage(raw, &m, nil), "a message that passed peekMessage decodes")
					require.Equal(t, o.Seq, m.Seq)
					require.Equal(t, o.Dest, m.Dest)
					require.Len(t, m.Body, int(o.loc.body))
				}
			}
			p += n
		}
		// The message decoder alone, on raw bytes with a valid checksum.
		raw := make([]byte, 4+len(data))
		copy(raw[4:], data)
		putCRC(raw)
		var m persistence.Message
		if decodeMessage(raw, &m, nil) == nil {
			_, err := peekMessage(raw)
			require.NoError(t, err)
		}
		// The extent reader's walk over a batch payload.
		eachMessage(data, 0, 0, func([]byte, uint64, uint32, uint32) bool { return true })
		eachMessage(data, len(data)/2, 1, func([]byte, uint64, uint32, uint32) bool { return true })
		// And the checkpoint decoder, both versions.
		_, _ = decodeCheckpoint(data, ckptVersionV1, pos{1, segHeaderSize}, nil)
		_, _ = decodeCheckpoint(data, ckptVersion, pos{1, segHeaderSize}, nil)
	})
}

func putCRC(raw []byte) {
	c := crc(raw[4:])
	raw[0], raw[1], raw[2], raw[3] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
}

// recordingBatch is a batch that records but has no store to commit to.
func recordingBatch() *batchrec.Batch[op] {
	b := &batchrec.Batch[op]{}
	b.Init(nil, &recAdapter)
	return b
}
