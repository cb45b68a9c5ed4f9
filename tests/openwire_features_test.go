package tests

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// More OpenWire scenarios (openwire_test.go has the first ones), the load mode, and
// the interop between OpenWire and STOMP on one broker.

// TestOpenWireScheduled: AMQ_SCHEDULED_DELAY (a long property) holds a message back
// for its delay, a message sent after it without one passes it; AMQ_SCHEDULED_PERIOD
// and _REPEAT deliver it 1 + REPEAT times. The broker tells the delivered copy its
// scheduledJobId.
func TestOpenWireScheduled(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		dest := owName(t, "scheduled")
		r := b.run(t, "scheduled", "dest="+dest, "delay=1000")
		assertOW(t, r, map[string]string{
			"order":                    "now,delayed",
			"delayed_not_before_delay": "true",
			"repeats":                  "repeat,repeat,repeat",
		})
		assert.Regexp(t, `^TextMessage body=String:delayed corr=null replyTo=null type=null prio=4 mode=persistent expires=never redelivered=false dest=queue://`+
			strings.ReplaceAll(dest, ".", `\.`)+` id=true ts=true props=\{JMSXUserID=String:anonymous, scheduledJobId=String:ID:\S+\}$`, r.get("delayed_props"))
	})
}

// TestOpenWireJMSXUserID: with populateJMSXUserID the broker sets JMSXUserID to the
// sender's user, over what the sender put there; "anonymous" for a client that did
// not log in.
func TestOpenWireJMSXUserID(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		assertOW(t, b.run(t, "userid", "user="+owUser, "password="+owPassword), map[string]string{"userid.plain": owUser, "userid.spoofed": owUser})
		assertOW(t, b.run(t, "userid"), map[string]string{"userid.plain": "anonymous", "userid.spoofed": "anonymous"})
	})
}

// TestOpenWireProducerFlow: asynchronous persistent sends with a producer window (the
// broker's ProducerAcks open it again) all arrive, once.
func TestOpenWireProducerFlow(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		assertOW(t, b.run(t, "flow", "n=200", "size=512", "window=1024"), map[string]string{
			"window": "1024", "async": "true", "received": "200", "lost": "0", "duplicates": "0",
		})
	})
}

// TestOpenWireTempDestinationAdvisories: a connection's DestinationSource (the client's
// own consumer of the temp destination advisories) sees the temporary queue and topic
// another connection creates, and their removal.
func TestOpenWireTempDestinationAdvisories(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		assertOW(t, b.run(t, "advisory"), map[string]string{
			"tempqueue.added":               "true",
			"temptopic.added":               "true",
			"tempqueue.listed":              "true",
			"temptopic.listed":              "true",
			"tempqueue.removed":             "true",
			"temptopic.removed":             "true",
			"tempqueue.listed_after_delete": "false",
		})
	})
}

// TestOpenWireSyncSendCount: sync-count reports how many synchronous persistent sends
// returned, and drain counts what the queue holds: the pair the kill -9 test uses.
func TestOpenWireSyncSendCount(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		dest := owName(t, "sync")
		r := b.run(t, "sync-count", "dest="+dest, "n=20")
		assert.Equal(t, "20", r.get("sent"))
		assert.Empty(t, r.get("error"))
		assertOW(t, b.run(t, "drain", "dest="+dest), map[string]string{"drained": "20", "duplicates": "0"})
	})
}

// TestOpenWireLoad runs the benchmark mode small: producers and consumers on their own
// connections, a queue (persistent and not) and a topic; nothing lost or duplicated. The
// rates are logged, not asserted.
func TestOpenWireLoad(t *testing.T) {
	runs := []struct {
		name string
		opts []string
	}{
		{"queue-persistent", []string{"kind=queue", "persistent=true", "producers=2", "consumers=2", "messages=100"}},
		{"queue-nonpersistent", []string{"kind=queue", "persistent=false", "producers=2", "consumers=2", "messages=100"}},
		{"topic-1to3", []string{"kind=topic", "persistent=false", "producers=1", "consumers=3", "messages=100"}},
	}
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		for _, run := range runs {
			r := b.run(t, "load", append(run.opts, "size=256")...)
			assert.Equal(t, r.get("expected"), r.get("received"), run.name)
			assertOW(t, r, map[string]string{"lost": "0", "duplicates": "0"})
			t.Logf("%s: %s msgs/s end to end, %s sends/s", run.name, r.get("msgs_per_s"), r.get("send_msgs_per_s"))
		}
	})
}

// TestOpenWireFromStomp: STOMP SENDs read by the JMS client, as ActiveMQ maps them: a
// frame without content-length is a TextMessage, one with it a BytesMessage; the
// headers are the JMS header fields (correlation-id, reply-to, type, priority,
// persistent, expires, JMSXGroupID, with JMSXGroupSeq 0) and other headers string
// properties (content-type among them when the frame has one).
func TestOpenWireFromStomp(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		q := owName(t, "in")
		c := dial(t, b.Stomp)
		headers := []func(*frame.Frame) error{
			stomp.SendOpt.Header("reply-to", "/queue/"+q+".R"), stomp.SendOpt.Header("type", "t"),
			stomp.SendOpt.Header("priority", "7"), stomp.SendOpt.Header("persistent", "true"),
			stomp.SendOpt.Header("expires", strconv.FormatInt(time.Now().Add(10*time.Minute).UnixMilli(), 10)),
			stomp.SendOpt.Header("JMSXGroupID", "g1"), stomp.SendOpt.Header("color", "red"), stomp.SendOpt.Header("n", "5"),
		}
		require.NoError(t, c.Send("/queue/"+q, "text/plain", []byte("no length"), append(headers, stomp.SendOpt.NoContentLength, stomp.SendOpt.Header("correlation-id", "c1"))...))
		require.NoError(t, c.Send("/queue/"+q, "", []byte("with\x00length"), append(headers, stomp.SendOpt.Header("correlation-id", "c2"), stomp.SendOpt.Receipt)...))
		r := runOW(t, b.URL, "dump", "dest="+q, "n=2")
		common := fmt.Sprintf("replyTo=queue://%s.R type=t prio=7 mode=persistent expires=future redelivered=false dest=queue://%s id=true ts=true props={JMSXGroupID=String:g1, JMSXGroupSeq=Integer:0, JMSXUserID=String:anonymous, color=String:red, ", q, q)
		assert.Equal(t, []string{
			"TextMessage body=String:no length corr=c1 " + common + "content-type=String:text/plain, n=String:5}",
			"BytesMessage body=bytes:77697468006c656e677468 corr=c2 " + common + "n=String:5}",
		}, r.all("got"))
	})
}

// TestOpenWireToStomp: the JMS client's messages of every kind read with STOMP, as
// ActiveMQ maps them: a TextMessage's text without content-length, a BytesMessage's
// bytes with it, no body for map, stream, object and plain messages (no
// transformation asked); the header fields and typed properties as headers with
// string values; persistent:true only for persistent messages; JMSXGroupID and
// JMSXGroupSeq not at all.
func TestOpenWireToStomp(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		q := owName(t, "out")
		b.run(t, "send-kinds", "dest="+q)
		c := dial(t, b.Stomp)
		sub, err := c.Subscribe("/queue/"+q, stomp.AckAuto)
		require.NoError(t, err)
		var got []string
		for range 7 {
			select {
			case m := <-sub.C:
				require.NoError(t, m.Err)
				got = append(got, stompCanon(m, tg.stompAdds...))
			case <-time.After(10 * time.Second):
				t.Fatalf("only %d of 7 messages over STOMP: %q", len(got), got)
			}
		}
		// By correlation id: the order is not the subject (see byCorrelation).
		sort.Slice(got, func(i, j int) bool { return stompCorr(got[i]) < stompCorr(got[j]) })
		var want []string
		for n := 1; n <= 7; n++ {
			body, length, persistent := `""`, "", ""
			switch n {
			case 1:
				body = strconv.Quote("text body é中")
			case 2:
				body = strconv.Quote("\x00\x01\x02\xffa")
				if !slices.Contains(tg.stompAdds, "content-length") {
					length = "content-length:5 "
				}
			}
			if n%2 == 1 {
				persistent = "persistent:true "
			}
			want = append(want, fmt.Sprintf("JMSXUserID:anonymous %scorrelation-id:corr-%d destination:/queue/%s expires:set message-id:set "+
				"pBool:true pByte:1 pDouble:6.25 pFloat:5.5 pInt:3 pLong:4 pShort:2 pString:seven %spriority:%d reply-to:/queue/%s.REPLY subscription:set timestamp:set type:type-%d body=%s",
				length, n, q, persistent, n, q, n, body))
		}
		assert.Equal(t, want, got)
	})
}

// stompCanon is a STOMP MESSAGE in one line: its headers sorted (those that differ from
// run to run as "set", those named in skip left out), then its body quoted.
func stompCanon(m *stomp.Message, skip ...string) string {
	var hs []string
	for i := 0; i < m.Header.Len(); i++ {
		k, v := m.Header.GetAt(i)
		if slices.Contains(skip, k) {
			continue
		}
		switch k {
		case "expires", "message-id", "subscription", "timestamp":
			v = "set"
		}
		hs = append(hs, k+":"+v)
	}
	sort.Strings(hs)
	return strings.Join(hs, " ") + " body=" + strconv.Quote(string(m.Body))
}

// stompCorr is the correlation-id of a stompCanon line.
func stompCorr(line string) string {
	_, c, _ := strings.Cut(line, " correlation-id:")
	c, _, _ = strings.Cut(c, " ")
	return c
}
