package batchrec

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
)

// TestEncodingVersion1 pins the bytes of version 1: the journal and logstore files on
// disk hold them, so any change here breaks reading them.
func TestEncodingVersion1(t *testing.T) {
	k := persistence.SubKey{ClientID: "c", Name: "n"}
	tests := []struct {
		name string
		got  []byte
		want []byte
	}{
		{"Ack", AppendAck(nil, "q", 300), []byte{2, 1, 'q', 0xac, 0x02}},
		{"AckSub", AppendAckSub(nil, k, 5), []byte{3, 1, 'c', 1, 'n', 5}},
		{"AddSub", AppendAddSub(nil, persistence.SubInfo{Key: k, Dest: "t", Selector: "s", Created: -1}),
			[]byte{4, 1, 'c', 1, 'n', 1, 't', 1, 's', 1}},
		{"RemoveSub", AppendRemoveSub(nil, k), []byte{5, 1, 'c', 1, 'n'}},
		{"Purge", AppendPurge(nil, "q"), []byte{6, 1, 'q'}},
		{"Message", AppendMessage(nil, &persistence.Message{
			Seq: 7, Dest: "t", Persistent: true, Priority: 4, Expires: 1, Timestamp: -2,
			RedeliveryCount: 3, ID: "i", Headers: persistence.Headers{"k", "v"}, Body: []byte("b"),
		}, []persistence.SubKey{k}),
			[]byte{7, 1, 't', 1, 4, 2, 3, 3, 1, 'i', 2, 1, 'k', 1, 'v', 1, 'b', 1, 1, 'c', 1, 'n'}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { require.Equal(t, tt.want, tt.got) })
	}
}

// A message with a typed part sets flags bit 1 and carries the part, framed as a str,
// between the body and the subscriptions.
func TestEncodingTypedPart(t *testing.T) {
	m := &persistence.Message{Seq: 7, Dest: "t", Persistent: true, Priority: 4, ID: "i", Body: []byte("b"),
		Kind: persistence.BodyText, Props: persistence.Props{persistence.BoolProp("x", true)}}
	typed := persistence.AppendTyped(nil, m)
	want := append([]byte{7, 1, 't', 1 | FlagTyped, 4, 0, 0, 0, 1, 'i', 0, 1, 'b', byte(len(typed))}, typed...)
	require.Equal(t, append(want, 0), AppendMessage(nil, m, nil))
}

func TestMessageLen(t *testing.T) {
	for _, m := range []*persistence.Message{
		{},
		{Seq: 1 << 40, Dest: "queue/a", Expires: -1 << 40, Timestamp: 1 << 62, RedeliveryCount: 1 << 31,
			ID: "id", Headers: persistence.Headers{"k", string(make([]byte, 200))}, Body: make([]byte, 1<<15)},
		{Kind: persistence.BodyBytes},
		{Props: persistence.Props{persistence.BytesProp("b", make([]byte, 300)), persistence.IntProp("i", persistence.PropLong, -1<<40)}},
	} {
		subs := []persistence.SubKey{{ClientID: "c", Name: "n"}}
		require.Len(t, AppendMessage(nil, m, subs), MessageLen(m, subs))
		require.Len(t, AppendMessage(nil, m, nil), MessageLen(m, nil))
	}
}

// BenchmarkAppendMessage encodes the load tool's message (storetest.BenchMessage's
// fields) as a STOMP SEND makes it, and with a body kind and five typed properties.
func BenchmarkAppendMessage(b *testing.B) {
	plain := &persistence.Message{Dest: "queue://bench", Seq: 123456, ID: "ID:localhost-1700000000000-123456",
		Priority: 4, Timestamp: 1700000000123, Body: make([]byte, 256), Headers: persistence.Headers{
			"bench-run", "r-8f14e45fceea167a", "bench-p", "0", "bench-seq", "123456", "bench-ts", "1700000000123456789"}}
	typed := *plain
	typed.Kind = persistence.BodyBytes
	typed.Props = persistence.Props{
		persistence.IntProp("orderId", persistence.PropLong, 1234567890123),
		persistence.IntProp("quantity", persistence.PropInt, 250),
		persistence.DoubleProp("price", 101.25),
		persistence.BoolProp("priority", true),
		persistence.IntProp("region", persistence.PropShort, 44),
	}
	for _, bc := range []struct {
		name string
		m    *persistence.Message
	}{{"Plain", plain}, {"Typed5", &typed}} {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 0, 1024)
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendMessage(buf[:0], bc.m, nil)
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}
