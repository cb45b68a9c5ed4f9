package destinations

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/destinations/streamlog"
	"github.com/activemq-go/broker/persistence"
)

func TestLogTopicNameRoundTrip(t *testing.T) {
	for _, name := range []string{"events.orders", "a-b", "a_b", "with space", "ü", ".", "..", "x/y:z", "_", "__x_"} {
		ln, ok := logTopicName(name)
		require.True(t, ok, name)
		require.True(t, streamlog.ValidTopicName(ln), ln)
		back, ok := brokerTopicName(ln)
		require.True(t, ok, ln)
		require.Equal(t, name, back)
	}
	ln, _ := logTopicName("events.orders")
	require.Equal(t, "events.orders", ln, "plain names stay")
	for _, bad := range []string{"a_zz", "a_", "a_4"} {
		_, ok := brokerTopicName(bad)
		require.False(t, ok, bad)
	}
	_, ok := logTopicName(string(make([]byte, 300)))
	require.False(t, ok)
}

func TestParseStreamStart(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	for v, want := range map[string]streamStart{
		"":                {kind: startNext},
		"NEXT":            {kind: startNext},
		"first":           {kind: startFirst},
		"last":            {kind: startLast},
		"0":               {kind: startOffset},
		"42":              {kind: startOffset, value: 42},
		"timestamp=12345": {kind: startTime, value: 12345},
		"10s":             {kind: startTime, value: 990_000},
	} {
		got, err := parseStreamStart(v, now)
		require.NoError(t, err, v)
		require.Equal(t, want, got, v)
	}
}

func TestPartTracker(t *testing.T) {
	tr := newPartTracker(10)
	for off := int64(10); off < 15; off++ {
		tr.add(off)
	}
	tr.skip(15)
	tr.add(16)
	_, moved := tr.ack(12)
	require.False(t, moved)
	p, moved := tr.ack(10)
	require.True(t, moved)
	require.Equal(t, int64(11), p)
	p, _ = tr.ack(11)
	require.Equal(t, int64(13), p, "past 12, acknowledged earlier")
	_, moved = tr.ack(11)
	require.False(t, moved, "twice")
	tr.ack(13)
	p, _ = tr.ack(14)
	require.Equal(t, int64(16), p, "past the skipped 15")
	p, _ = tr.ack(16)
	require.Equal(t, int64(17), p)
	tr.skip(17)
	point, unsettled := tr.retire()
	require.Equal(t, int64(18), point)
	require.Zero(t, unsettled, "everything handed out was acknowledged")
	_, moved = tr.ack(17)
	require.False(t, moved)
}

func TestStreamRecordRoundTrip(t *testing.T) {
	st := &Stream{t: NewTopic(&Env{Policy: func(Kind, string) policy.Policy { return policy.Policy{} }}, "s.x", policy.Policy{}, 0, false), logTopic: "s.x"}
	m := &persistence.Message{ID: "ID:a;b", Body: []byte("body"), Priority: 9, Expires: 123, Persistent: true,
		Timestamp: 456, Headers: persistence.Headers{"amq", "app's own", "k", "v"}}
	r := encodeRecord(m, "key", 999)
	require.Equal(t, []byte("key"), r.Key)
	require.Equal(t, int64(999), r.Timestamp, "the record has the time of the append")
	r.Offset = 7
	got := st.decodeRecord(&r, 2)
	require.Equal(t, m.ID, got.ID)
	require.Equal(t, m.Body, got.Body)
	require.Equal(t, m.Priority, got.Priority)
	require.Equal(t, m.Expires, got.Expires)
	require.True(t, got.Persistent)
	require.Equal(t, m.Timestamp, got.Timestamp)
	require.Equal(t, m.Headers, got.Headers, "an application header named like the broker's stays")
	require.Equal(t, "topic://s.x", got.Dest)

	// A record another client of the log wrote.
	foreign := streamlog.Record{Offset: 3, Value: []byte("v"), Headers: [][2]string{{"amq", "not ours"}}}
	got = st.decodeRecord(&foreign, 1)
	require.Equal(t, "ID:stream:s.x:1:3", got.ID)
	require.Equal(t, uint8(4), got.Priority)
	require.Equal(t, persistence.Headers{"amq", "not ours"}, got.Headers)
}

func TestSplitMeta(t *testing.T) {
	for _, v := range []string{"", "1", "1;4;0;1", "1;4;0;1;", "1;4;0;1;ID:a;b;c", ";;;;", "1;4;0;0;ID:x",
		"2;4;0;1", "2;4;0;1;5", "2;4;0;1;5;", "2;4;0;1;5;ID:a;b", "3;4;0;1;5;ID:x", "21;4;0;1;5;ID:x"} {
		n := 0
		switch {
		case strings.HasPrefix(v, "1;"):
			n = 5
		case strings.HasPrefix(v, "2;"):
			n = 6
		}
		want := strings.SplitN(v, ";", max(n, 1))
		got, gotN := splitMeta(v)
		if n > 0 && len(want) < n {
			n = 0
		}
		if gotN != n || n > 0 && [6]string(append(want, make([]string, 6-n)...)) != got {
			t.Errorf("splitMeta(%q) = %q, %d; SplitN: %q", v, got, gotN, want)
		}
	}
}

// Records written before the message's timestamp had a field of its own (version 1)
// still read, with the record's timestamp.
func TestStreamRecordVersion1(t *testing.T) {
	st := &Stream{t: NewTopic(&Env{Policy: func(Kind, string) policy.Policy { return policy.Policy{} }}, "s.x", policy.Policy{}, 0, false), logTopic: "s.x"}
	r := streamlog.Record{Offset: 1, Timestamp: 1234, Value: []byte("v"),
		Headers: [][2]string{{"amq", "1;7;99;1;ID:a;b"}, {"k", "v"}}}
	got := st.decodeRecord(&r, 0)
	require.Equal(t, "ID:a;b", got.ID)
	require.Equal(t, uint8(7), got.Priority)
	require.Equal(t, int64(99), got.Expires)
	require.True(t, got.Persistent)
	require.Equal(t, int64(1234), got.Timestamp)
	require.Equal(t, persistence.Headers{"k", "v"}, got.Headers)
}

// A batch's records share storage, and each decodes to its own message.
func TestStreamRecordBuilder(t *testing.T) {
	st := &Stream{t: NewTopic(&Env{Policy: func(Kind, string) policy.Policy { return policy.Policy{} }}, "s.x", policy.Policy{}, 0, false), logTopic: "s.x"}
	msgs := []*persistence.Message{
		{ID: "ID:1", Body: []byte("a"), Priority: 4, Timestamp: 1},
		{ID: "ID:2;x", Body: []byte("b"), Priority: 0, Expires: 99, Persistent: true, Timestamp: 2,
			Headers: persistence.Headers{"k1", "v1", "k2", "v2"}},
		{ID: "ID:3", Body: []byte("c"), Priority: 9, Timestamp: 3, Headers: persistence.Headers{"amq", "x"}},
	}
	var b recordBuilder
	for round := range 2 {
		var reqs []appendReq
		for i, m := range msgs {
			reqs = append(reqs, newAppendReq(m, []string{"", "key", ""}[i], nil))
		}
		recs := b.build(reqs, 1000)
		require.Len(t, recs, len(msgs))
		for i, m := range msgs {
			require.Equal(t, encodeRecord(m, []string{"", "key", ""}[i], 1000), recs[i], "round %d, message %d", round, i)
			got := st.decodeRecord(&recs[i], 0)
			require.Equal(t, m.ID, got.ID)
			require.Equal(t, m.Priority, got.Priority)
			require.Equal(t, m.Expires, got.Expires)
			require.Equal(t, m.Persistent, got.Persistent)
			require.Equal(t, m.Timestamp, got.Timestamp)
			require.Equal(t, len(m.Headers), len(got.Headers))
			if len(m.Headers) > 0 {
				require.Equal(t, m.Headers, got.Headers)
			}
		}
		b.reset()
	}
}
