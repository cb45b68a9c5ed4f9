package kafkalog

import (
	"testing"
	"time"

	"github.com/activemq-go/broker/internal/vfs"
	"github.com/stretchr/testify/require"
)

func TestTopicConfigRetentionPerTopic(t *testing.T) {
	c := newClock()
	fs := vfs.NewMem()
	o := memOpts(fs, c)
	o.Retention = time.Hour // the Log's default
	l := openT(t, o)
	require.NoError(t, l.CreateTopic("dflt", 1))
	require.NoError(t, l.CreateTopicWith("short", 1, TopicConfig{Retention: time.Minute}))
	require.NoError(t, l.CreateTopicWith("forever", 1, TopicConfig{Retention: -1}))
	require.NoError(t, l.CreateTopicWith("small", 1, TopicConfig{Retention: -1, RetentionBytes: 2 * 4096}))
	for _, name := range []string{"dflt", "short", "forever", "small"} {
		appendN(t, l, name, 0, 0, 300, 10)
	}
	c.Add(10 * time.Minute) // past "short", within the default hour
	require.NoError(t, l.EnforceRetention())
	oldest := func(name string) int64 {
		off, err := l.OldestOffset(name, 0)
		require.NoError(t, err)
		return off
	}
	require.Zero(t, oldest("dflt"))
	require.Positive(t, oldest("short"))
	require.Zero(t, oldest("forever"))
	st, err := l.Stats("small", 0)
	require.NoError(t, err)
	require.LessOrEqual(t, st.Bytes, int64(2*4096), "size limit of the topic")
	require.Positive(t, oldest("small"))

	// The settings survive a reopen; declaring the topic again replaces them.
	require.NoError(t, l.Close())
	l = openT(t, o)
	defer l.Close()
	cfg, err := l.TopicConfig("forever")
	require.NoError(t, err)
	require.Equal(t, TopicConfig{Retention: -1}, cfg)
	cfg, err = l.TopicConfig("dflt")
	require.NoError(t, err)
	require.Zero(t, cfg)
	c.Add(2 * time.Hour)
	require.NoError(t, l.EnforceRetention())
	require.Zero(t, oldest("forever"), "kept whatever the age after reopen")
	require.Positive(t, oldest("dflt"))

	require.NoError(t, l.CreateTopicWith("forever", 1, TopicConfig{Retention: time.Hour}))
	cfg, err = l.TopicConfig("forever")
	require.NoError(t, err)
	require.Equal(t, time.Hour, cfg.Retention)
	require.NoError(t, l.EnforceRetention())
	require.Positive(t, oldest("forever"), "new retention applies at once")
	checkRecs(t, readAll(t, l, "forever", 0, oldest("forever")), int(oldest("forever")))
}

func TestCreateTopicWithIdempotence(t *testing.T) {
	l := openT(t, memOpts(vfs.NewMem(), newClock()))
	defer l.Close()
	cfg := TopicConfig{Retention: time.Hour, RetentionBytes: 1 << 20}
	require.NoError(t, l.CreateTopicWith("t", 3, cfg))
	appendN(t, l, "t", 2, 0, 20, 5)
	require.NoError(t, l.CreateTopicWith("t", 3, cfg), "declaring again is fine")
	checkRecs(t, readAll(t, l, "t", 2, 0), 0)
	require.ErrorIs(t, l.CreateTopicWith("t", 4, cfg), ErrTopicExists, "partition count cannot change")
	require.ErrorIs(t, l.CreateTopic("t", 3), ErrTopicExists)
	require.ErrorIs(t, l.CreateTopicWith("a/b", 1, cfg), ErrInvalidTopic)
	require.ErrorIs(t, l.CreateTopicWith("u", 0, cfg), ErrUnknownPartition)
	_, err := l.TopicConfig("nope")
	require.ErrorIs(t, err, ErrUnknownTopic)
}

func TestTopicConfigCorruptFile(t *testing.T) {
	fs := vfs.NewMem()
	o := memOpts(fs, newClock())
	l := openT(t, o)
	require.NoError(t, l.CreateTopicWith("t", 1, TopicConfig{Retention: time.Hour}))
	require.NoError(t, l.Close())
	f, err := fs.Create(topicConfigPath(&o, "t"))
	require.NoError(t, err)
	_, err = f.Write([]byte("KLTC garbage"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = Open(o)
	require.ErrorIs(t, err, ErrCorrupt)
}

func TestTopicConfigRoundTrip(t *testing.T) {
	for _, c := range []TopicConfig{{}, {Retention: -1, RetentionBytes: -1}, {Retention: 36 * time.Hour, RetentionBytes: 10 << 30}} {
		got, err := decodeTopicConfig(encodeTopicConfig(c))
		require.NoError(t, err)
		require.Equal(t, c, got)
	}
}
