package persistence

import (
	"fmt"
	"slices"
	"strings"
)

// DestKind tells a queue from a topic in a qualified destination name.
type DestKind uint8

const (
	// KindQueue is a point-to-point destination: each message to one consumer.
	KindQueue DestKind = iota
	// KindTopic is a publish/subscribe destination: each message to every subscriber.
	KindTopic
)

// Qualified destination prefixes, the same form as ActiveMQ's JDBC CONTAINER column.
const (
	QueuePrefix = "queue://"
	TopicPrefix = "topic://"
)

// QueueName returns the qualified store name of the queue called name.
func QueueName(name string) string { return QueuePrefix + name }

// TopicName returns the qualified store name of the topic called name.
func TopicName(name string) string { return TopicPrefix + name }

// KindOf reports the kind of a qualified destination name.
func KindOf(dest string) DestKind {
	if strings.HasPrefix(dest, TopicPrefix) {
		return KindTopic
	}
	return KindQueue
}

// Message is one stored message, independent of the protocol that carried it.
//
// Dest is a qualified name ("queue://ORDERS", "topic://PRICES"). Seq is assigned by the
// broker, strictly increasing per destination and never reused, also across restarts.
// Headers holds the application's headers as key/value pairs in arrival order (the first
// occurrence of a key wins): the string properties. Props holds the properties of other
// JMS types (a name is in one of the two) and Kind the JMS type of the body; a store
// keeps both (see AppendTyped). The fields below them are the ones the broker itself
// acts on.
type Message struct {
	Dest    string
	Seq     uint64
	ID      string
	Headers Headers
	Props   Props
	Kind    BodyKind
	Body    []byte

	Persistent      bool
	Priority        uint8 // 0..9, 4 by default
	Expires         int64 // ms since the epoch, 0 = never
	Timestamp       int64 // ms since the epoch, set when the broker accepted it
	RedeliveryCount uint32

	// Subs lists the durable subscriptions that must acknowledge a topic message before
	// it may be deleted. Empty for queue messages. A store keeps one copy of the message
	// and, per copy, the set of subscriptions that still owe an acknowledgement.
	Subs []SubKey
}

// messageOverhead is what a message waiting in a queue's memory costs beyond its bytes:
// the Message and the queue's entry for it, and the allocations' rounding. Measured
// (broker's TestWindowHeapWithinSize: 128-byte persistent messages on the journal):
// ≈370 bytes of heap for a Size of 215 with 64 here, before it was raised.
const messageOverhead = 224

// Size is the approximate number of bytes the message occupies in memory while it
// waits in a queue, used for memory limits and statistics: a queue's memoryLimit bounds
// about that much heap.
func (m *Message) Size() int {
	n := len(m.Body) + len(m.ID) + len(m.Dest) + messageOverhead
	for _, h := range m.Headers {
		n += len(h) + 16
	}
	for _, p := range m.Props {
		n += len(p.Name) + len(p.Bytes) + propSize
	}
	return n
}

// Clone returns a deep copy of m, so a store can keep a message the caller may reuse.
func (m *Message) Clone() *Message {
	c := *m
	c.Headers = append(Headers(nil), m.Headers...)
	c.Props = m.Props.Clone()
	c.Body = append([]byte(nil), m.Body...)
	c.Subs = append([]SubKey(nil), m.Subs...)
	return &c
}

// Headers is a flat list of key/value pairs: Headers[2i] is a key, Headers[2i+1] its value.
type Headers []string

// Get returns the first value of key, and whether it was present.
func (h Headers) Get(key string) (string, bool) {
	for i := 0; i+1 < len(h); i += 2 {
		if h[i] == key {
			return h[i+1], true
		}
	}
	return "", false
}

// Len is the number of key/value pairs.
func (h Headers) Len() int { return len(h) / 2 }

// Without returns h without every pair whose key is one of names: h itself when it has
// none of them, else a new list (h is left as it is).
func (h Headers) Without(names ...string) Headers {
	i := 0
	for i+1 < len(h) && !slices.Contains(names, h[i]) {
		i += 2
	}
	if i+1 >= len(h) {
		return h
	}
	out := make(Headers, i, len(h)-2)
	copy(out, h[:i])
	for ; i+1 < len(h); i += 2 {
		if !slices.Contains(names, h[i]) {
			out = append(out, h[i], h[i+1])
		}
	}
	return out
}

// SubKey names a durable topic subscription: the client-id of its owner and its name.
// Stores key subscriptions by the two fields, never by String.
type SubKey struct {
	ClientID string
	Name     string
}

// String renders the key for logs, statistics and names made from it, unambiguously:
// the client-id with `\` written `\\` and ":" written `\c` (STOMP's header escapes),
// then ":" and the name as it is. A client-id with neither character gives
// "clientID:name", as before the escapes. ParseSubKey reads it back.
func (k SubKey) String() string {
	if !strings.ContainsAny(k.ClientID, `\:`) {
		return k.ClientID + ":" + k.Name
	}
	var b strings.Builder
	b.Grow(len(k.ClientID) + len(k.Name) + 8)
	for i := 0; i < len(k.ClientID); i++ {
		switch c := k.ClientID[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case ':':
			b.WriteString(`\c`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte(':')
	b.WriteString(k.Name)
	return b.String()
}

// ParseSubKey reads a key written by SubKey.String.
func ParseSubKey(s string) (SubKey, error) {
	var id strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ':':
			return SubKey{ClientID: id.String(), Name: s[i+1:]}, nil
		case '\\':
			if i+1 == len(s) || (s[i+1] != '\\' && s[i+1] != 'c') {
				return SubKey{}, fmt.Errorf("persistence: bad escape in subscription key %q", s)
			}
			if s[i+1] == 'c' {
				id.WriteByte(':')
			} else {
				id.WriteByte('\\')
			}
			i++
		default:
			id.WriteByte(c)
		}
	}
	return SubKey{}, fmt.Errorf("persistence: subscription key %q has no \":\"", s)
}

// SubInfo is everything the store keeps about a durable subscription itself.
type SubInfo struct {
	Key      SubKey
	Dest     string // qualified topic name
	Selector string // JMS selector, "" for none
	Created  int64  // ms since the epoch
}
