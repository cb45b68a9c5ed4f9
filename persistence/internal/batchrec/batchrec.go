// Package batchrec is the encoding of a batch's operations shared by the journal and
// logstore adapters: the operation codes and the bytes of each operation and of a
// message. Each adapter frames the operations its own way (journal: a checksummed
// record with an op count and a u32 message length; logstore: a versioned log value with
// a uvarint message length) and decodes them itself; this package writes the parts the
// two formats have in common, so they cannot drift apart.
//
// # Encoding, version 2
//
// uvarint/varint are encoding/binary's; str is a uvarint length and the bytes. An
// operation is a u8 code and its fields:
//
//	1 Add       (framed by the adapter: a length, then the message)
//	2 Ack       str dest, uvarint seq
//	3 AckSub    str clientID, str name, uvarint seq
//	4 AddSub    str clientID, str name, str dest, str selector, varint created
//	5 RemoveSub str clientID, str name
//	6 Purge     str dest
//
// Codes from 7 up are the adapters' own (journal's Move). A message (AppendMessage):
//
//	uvarint seq, str dest, u8 flags (bit 0: persistent, bit 1: typed), u8 priority,
//	varint expires, varint timestamp, uvarint redelivery count, str id,
//	uvarint header string count, str × count (key, value, key, value, ...),
//	str body, [str typed part, if flags bit 1], uvarint subscription count,
//	(str clientID, str name) × count
//
// The typed part is persistence.AppendTyped's encoding (the message's body kind and
// typed properties), present only for a message that has one (Message.Typed): a message
// without it is encoded as in version 1, byte for byte.
//
// Version 1 is version 2 without the flag and the typed part. This encoding is part of
// both adapters' on-disk formats: changing any of it takes a new Version here and a new
// format version in both adapters.
package batchrec

import (
	"encoding/binary"

	"github.com/activemq-go/broker/persistence"
)

// Version is the version of the encoding described in the package comment.
const Version = 2

// FlagTyped is the bit of a message's flags that says the typed part follows the body.
const FlagTyped = 1 << 1

// The operation codes; the values are the format's.
const (
	OpAdd byte = iota + 1
	OpAck
	OpAckSub
	OpAddSub
	OpRemoveSub
	OpPurge
)

// AppendStr appends s as a str: its uvarint length and its bytes.
func AppendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendBytes appends p as a str.
func AppendBytes(b []byte, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// AppendMessage appends the encoding of m, naming subs (the subscriptions of a topic
// message; nil for a queue message) instead of m.Subs.
func AppendMessage(b []byte, m *persistence.Message, subs []persistence.SubKey) []byte {
	b = binary.AppendUvarint(b, m.Seq)
	b = AppendStr(b, m.Dest)
	var flags byte
	if m.Persistent {
		flags |= 1
	}
	typed := m.Typed()
	if typed {
		flags |= FlagTyped
	}
	b = append(b, flags, m.Priority)
	b = binary.AppendVarint(b, m.Expires)
	b = binary.AppendVarint(b, m.Timestamp)
	b = binary.AppendUvarint(b, uint64(m.RedeliveryCount))
	b = AppendStr(b, m.ID)
	b = binary.AppendUvarint(b, uint64(len(m.Headers)))
	for _, h := range m.Headers {
		b = AppendStr(b, h)
	}
	b = AppendBytes(b, m.Body)
	if typed {
		b = binary.AppendUvarint(b, uint64(persistence.TypedLen(m)))
		b = persistence.AppendTyped(b, m)
	}
	b = binary.AppendUvarint(b, uint64(len(subs)))
	for _, k := range subs {
		b = AppendStr(b, k.ClientID)
		b = AppendStr(b, k.Name)
	}
	return b
}

// MessageLen is the length of AppendMessage's encoding of m with subs.
func MessageLen(m *persistence.Message, subs []persistence.SubKey) int {
	n := uvarintLen(m.Seq) + strLen(len(m.Dest)) + 2 + varintLen(m.Expires) + varintLen(m.Timestamp) +
		uvarintLen(uint64(m.RedeliveryCount)) + strLen(len(m.ID)) + uvarintLen(uint64(len(m.Headers))) +
		strLen(len(m.Body)) + uvarintLen(uint64(len(subs)))
	for _, h := range m.Headers {
		n += strLen(len(h))
	}
	for _, k := range subs {
		n += strLen(len(k.ClientID)) + strLen(len(k.Name))
	}
	if m.Typed() {
		n += strLen(persistence.TypedLen(m))
	}
	return n
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func strLen(n int) int { return uvarintLen(uint64(n)) + n }

func varintLen(v int64) int {
	u := uint64(v) << 1
	if v < 0 {
		u = ^u
	}
	return uvarintLen(u)
}

// AppendAck appends an Ack of (dest, seq).
func AppendAck(b []byte, dest string, seq uint64) []byte {
	b = AppendStr(append(b, OpAck), dest)
	return binary.AppendUvarint(b, seq)
}

// AppendAckSub appends an AckSub of seq by k.
func AppendAckSub(b []byte, k persistence.SubKey, seq uint64) []byte {
	b = AppendStr(AppendStr(append(b, OpAckSub), k.ClientID), k.Name)
	return binary.AppendUvarint(b, seq)
}

// AppendAddSub appends an AddSub of info.
func AppendAddSub(b []byte, info persistence.SubInfo) []byte {
	b = AppendStr(AppendStr(append(b, OpAddSub), info.Key.ClientID), info.Key.Name)
	b = AppendStr(AppendStr(b, info.Dest), info.Selector)
	return binary.AppendVarint(b, info.Created)
}

// AppendRemoveSub appends a RemoveSub of k.
func AppendRemoveSub(b []byte, k persistence.SubKey) []byte {
	return AppendStr(AppendStr(append(b, OpRemoveSub), k.ClientID), k.Name)
}

// AppendPurge appends a Purge of dest.
func AppendPurge(b []byte, dest string) []byte {
	return AppendStr(append(b, OpPurge), dest)
}
