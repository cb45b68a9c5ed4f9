package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ---- 9: offline limits ----------------------------------------------------------------

// TestDurableOfflineLimits: a destination policy's maxPendingMessages and maxPendingBytes
// cap what an offline subscription keeps (the first messages are kept, later ones are
// not, with a log line) but not what an attached one receives; its
// offlineDurableSubscriberTimeout removes a subscription offline for longer (checked
// every offlineDurableSubscriberTaskSchedule, with a log line), never an attached one,
// and the name then starts afresh.
func TestDurableOfflineLimits(t *testing.T) {
	t.Run("maxPendingMessages", func(t *testing.T) {
		b := startBroker(t, brokerConfig{Extra: "destinationPolicy:\n  - topic: \">\"\n    maxPendingMessages: 5\n"})
		const topic = "/topic/limited"
		c := durConnect(t, b.Addr, "app-limited")
		durAttach(c, topic, "sub")
		c.leave()
		p := jmsDial(t, b.Addr)
		durPublish(p, topic, true, numbered("m", 0, 12))
		awaitLogLine(t, b, 5*time.Second, "offline durable subscription over its pending limit",
			"clientID=app-limited", "name=sub", "maxPendingMessages=5")

		c = durConnect(t, b.Addr, "app-limited")
		id := durAttach(c, topic, "sub")
		durExpect(c, id, numbered("m", 0, 5)...)
		durQuiet(c, id)
		// Attached, it gets everything.
		durPublish(p, topic, true, numbered("live", 0, 12))
		durExpect(c, id, numbered("live", 0, 12)...)
		durQuiet(c, id)
	})

	// The cap holds for a backlog the broker recovered from its store: 5 messages kept
	// before a restart leave no room for more after it.
	t.Run("maxPendingMessages-across-restart", func(t *testing.T) {
		bc := brokerConfig{Adapter: "kahaDB: {}", DataDir: t.TempDir(), Extra: "destinationPolicy:\n  - topic: \">\"\n    maxPendingMessages: 5\n"}
		const topic = "/topic/limited.restart"
		b := startBroker(t, bc)
		c := durConnect(t, b.Addr, "app-limited")
		durAttach(c, topic, "sub")
		c.leave()
		durPublish(jmsDial(t, b.Addr), topic, true, numbered("before", 0, 5))
		b.Stop()
		b = startBroker(t, bc)
		durPublish(jmsDial(t, b.Addr), topic, true, numbered("after", 0, 5))
		c = durConnect(t, b.Addr, "app-limited")
		id := durAttach(c, topic, "sub")
		c.sync()
		got := jmsBodies(c.drain(id, 300*time.Millisecond))
		assert.Equal(t, numbered("before", 0, 5), got, "maxPendingMessages 5: only the 5 kept before the restart")
	})

	t.Run("maxPendingBytes", func(t *testing.T) {
		b := startBroker(t, brokerConfig{Extra: "destinationPolicy:\n  - topic: \">\"\n    maxPendingBytes: 2kb\n"})
		const topic = "/topic/limited.bytes"
		c := durConnect(t, b.Addr, "app-bytes")
		durAttach(c, topic, "sub")
		c.leave()
		p := jmsDial(t, b.Addr)
		pad := strings.Repeat("x", 500)
		var bodies []string
		for _, s := range numbered("m", 0, 10) {
			bodies = append(bodies, s+":"+pad)
		}
		durPublish(p, topic, true, bodies)
		awaitLogLine(t, b, 5*time.Second, "offline durable subscription over its pending limit",
			"clientID=app-bytes", "maxPendingBytes=2048")

		c = durConnect(t, b.Addr, "app-bytes")
		id := durAttach(c, topic, "sub")
		c.sync()
		got := c.drain(id, 300*time.Millisecond)
		// The first messages, as many as fit in 2 KiB of ~510-byte messages.
		require.NotEmpty(t, got, "nothing kept at all")
		assert.LessOrEqual(t, len(got), 4, "%d messages of over 500 bytes kept under a 2 KiB limit", len(got))
		assert.Equal(t, bodies[:len(got)], jmsBodies(got), "the first messages are kept")
	})

	// maxPendingBytes counts the whole backlog: also what is in the store only, paged
	// out over the topic's memory limit (1 KiB here, a message or two) ...
	t.Run("maxPendingBytes-paged-out", func(t *testing.T) {
		b := startBroker(t, brokerConfig{Extra: "destinationPolicy:\n  - topic: \">\"\n    memoryLimit: 1kb\n    maxPendingBytes: 4kb\n"})
		const topic = "/topic/limited.paged"
		c := durConnect(t, b.Addr, "app-paged")
		durAttach(c, topic, "sub")
		c.leave()
		bodies := padded(numbered("m", 0, 12), 400)
		durPublish(jmsDial(t, b.Addr), topic, true, bodies)
		awaitLogLine(t, b, 5*time.Second, "offline durable subscription over its pending limit", "clientID=app-paged")

		c = durConnect(t, b.Addr, "app-paged")
		id := durAttach(c, topic, "sub")
		c.sync()
		got := c.drain(id, 300*time.Millisecond)
		// About 500 bytes a message (body, id, headers): 6 to 8 fit in 4 KiB.
		assert.GreaterOrEqual(t, len(got), 6, "%d messages kept under 4 KiB", len(got))
		assert.LessOrEqual(t, len(got), 8, "%d messages of over 400 bytes kept under a 4 KiB limit", len(got))
		assert.Equal(t, bodies[:len(got)], jmsBodies(got), "the first messages are kept")
	})

	// ... and a backlog recovered from the store after a restart: the messages kept
	// before it leave no room for more after it.
	t.Run("maxPendingBytes-across-restart", func(t *testing.T) {
		bc := brokerConfig{Adapter: "kahaDB: {}", DataDir: t.TempDir(), Extra: "destinationPolicy:\n  - topic: \">\"\n    maxPendingBytes: 2560\n"}
		const topic = "/topic/limited.bytes.restart"
		b := startBroker(t, bc)
		c := durConnect(t, b.Addr, "app-bytes")
		durAttach(c, topic, "sub")
		c.leave()
		// About 750 bytes a message (body, id, headers, and what a message costs in
		// memory besides: Message.Size): 3 fit in 2.5 KiB, a 4th does not.
		before := padded(numbered("before", 0, 3), 400)
		durPublish(jmsDial(t, b.Addr), topic, true, before)
		b.Stop()
		b = startBroker(t, bc)
		durPublish(jmsDial(t, b.Addr), topic, true, padded(numbered("after", 0, 3), 400))
		awaitLogLine(t, b, 5*time.Second, "offline durable subscription over its pending limit", "clientID=app-bytes")
		c = durConnect(t, b.Addr, "app-bytes")
		id := durAttach(c, topic, "sub")
		c.sync()
		got := jmsBodies(c.drain(id, 300*time.Millisecond))
		assert.Equal(t, before, got, "maxPendingBytes 2.5 KiB: only the 3 messages kept before the restart")
	})

	t.Run("offlineDurableSubscriberTimeout", func(t *testing.T) {
		b := startBrokerKeys(t, brokerConfig{Extra: "destinationPolicy:\n  - topic: \">\"\n    offlineDurableSubscriberTimeout: 300ms\n"},
			"offlineDurableSubscriberTaskSchedule: 100ms")
		const topic = "/topic/expiring"
		stays := durConnect(t, b.Addr, "app-stays")
		sid := durAttach(stays, topic, "sub")
		goes := durConnect(t, b.Addr, "app-goes")
		durAttach(goes, topic, "sub")
		p := jmsDial(t, b.Addr)
		offline := time.Now()
		goes.leave()
		durPublish(p, topic, true, numbered("backlog", 0, 3))
		durExpect(stays, sid, numbered("backlog", 0, 3)...)

		awaitLogLine(t, b, 5*time.Second, "removing durable subscription offline past its timeout", "clientID=app-goes", "name=sub")
		assert.GreaterOrEqual(t, time.Since(offline), 300*time.Millisecond, "removed before its timeout")
		awaitLogLine(t, b, 5*time.Second, "durable subscription removed", "clientID=app-goes")

		// The attached one is still there, however long it has been around.
		durPublish(p, topic, true, []string{"after-sweep"})
		durExpect(stays, sid, "after-sweep")
		durQuiet(stays, sid)
		assert.Empty(t, logLine(b, "removing durable subscription", "clientID=app-stays"), "an attached subscription was removed")

		goes = durConnect(t, b.Addr, "app-goes")
		gid := durAttach(goes, topic, "sub")
		durQuiet(goes, gid) // a fresh subscription: the backlog went with the old one
		durPublish(p, topic, true, []string{"fresh"})
		durExpect(goes, gid, "fresh")
	})
}
