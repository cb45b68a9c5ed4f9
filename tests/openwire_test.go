package tests

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The OpenWire scenarios of issue 23 with ActiveMQ's own Java client
// (testdata/openwire/*.java; harness in openwire_harness_test.go). The expected
// values are what ActiveMQ 5.17 does: the behaviour every target must show.

// TestOpenWireConnect: a connection with a client id, a session, a producer and a
// consumer, started and closed; what the client can see of the broker.
func TestOpenWireConnect(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		client := owName(t, "client")
		r := b.run(t, "connect", "client="+client)
		assert.Equal(t, client, r.get("client_id"))
		assert.Equal(t, tg.brokerName, r.get("broker_name"))
		// The metadata is the client's own, whatever the broker.
		assert.Equal(t, "ActiveMQ", r.get("provider"))
		assert.Equal(t, "5.17.2", r.get("provider_version"))
		assert.Equal(t, "1.1", r.get("jms_version"))
		assert.Equal(t, "12", r.get("wire_format_version"), "the negotiated OpenWire version: the 5.17 client's own")
		assert.Equal(t, "hello", r.get("received"))
		assert.Equal(t, "true", r.get("closed"))
	})
}

// owKindsWant is what the receiver of send-kinds dumps (OwClient.canon), in the order
// of the correlation ids: every kind with its body, the typed properties and the header
// fields as sent, the group's properties, and JMSXUserID of an anonymous sender.
func owKindsWant(dest string) []string {
	bodies := []string{
		"TextMessage body=String:text body é中",
		"BytesMessage body=bytes:000102ff61",
		"MapMessage body={bool=Boolean:true, byte=Byte:-8, bytes=bytes:090807, char=Character:c, double=Double:-2.25, float=Float:1.5, int=Integer:70000, long=Long:1099511627776, short=Short:-300, string=String:sé}",
		"StreamMessage body=[Boolean:false, Byte:7, Short:9, Character:z, Integer:-1, Long:-2, Float:0.5, Double:3.75, String:str, bytes:0102]",
		"ObjectMessage body=String:an object string",
		"ObjectMessage body=HashMap:{k1=v1, k2=42}",
		"Message body=-",
	}
	var want []string
	for i, body := range bodies {
		n := i + 1
		mode := "persistent"
		if n%2 == 0 {
			mode = "non-persistent"
		}
		want = append(want, fmt.Sprintf("%s corr=corr-%d replyTo=queue://%s.REPLY type=type-%d prio=%d mode=%s expires=future redelivered=false dest=queue://%s id=true ts=true "+
			"props={JMSXGroupID=String:G, JMSXGroupSeq=Integer:%d, JMSXUserID=String:anonymous, pBool=Boolean:true, pByte=Byte:1, pDouble=Double:6.25, pFloat=Float:5.5, pInt=Integer:3, pLong=Long:4, pShort=Short:2, pString=String:seven}",
			body, n, dest, n, n, mode, dest, n))
	}
	return want
}

// byCorrelation sorts dumped messages by their correlation id. The order is not the
// kinds scenario's subject: ActiveMQ hands a consumer that comes later the persistent
// messages before the non-persistent ones (its store cursor keeps them apart).
func byCorrelation(lines []string) []string {
	out := append([]string(nil), lines...)
	corr := func(s string) string { _, c, _ := strings.Cut(s, " corr="); return c }
	sort.SliceStable(out, func(i, j int) bool { return corr(out[i]) < corr(out[j]) })
	return out
}

// TestOpenWireMessageKinds: one message of each JMS kind with typed properties and
// the header fields, sent and received; the same with compressed bodies.
func TestOpenWireMessageKinds(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		for _, compressed := range []bool{false, true} {
			url, dest := b.URL, owName(t, "kinds")
			if compressed {
				url = b.URL + "?jms.useCompression=true"
			}
			r := runOW(t, url, "kinds", "dest="+dest)
			assert.Len(t, r.all("sent"), 7)
			assert.Equal(t, owKindsWant(dest), byCorrelation(r.all("got")), "compressed=%v", compressed)
		}
	})
}

// TestOpenWirePrefetch: consumers with prefetch 1, 10 and 0 (the client pulls each
// message with MessagePull) get every message once, in order.
func TestOpenWirePrefetch(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		r := b.run(t, "prefetch", "sizes=1,10,0", "n=20")
		want := strings.Join(owSeqNames("m", 20), ",")
		for _, size := range []string{"1", "10", "0"} {
			assert.Equal(t, size, r.get("prefetch."+size+".consumer_prefetch"))
			assert.Equal(t, want, r.get("prefetch."+size+".received"), "prefetch %s", size)
			assert.Empty(t, r.get("prefetch."+size+".left"), "prefetch %s: left in the queue", size)
		}
	})
}

// owSeqNames is prefix1..prefixN, OwClient's names().
func owSeqNames(prefix string, n int) []string {
	var s []string
	for i := 1; i <= n; i++ {
		s = append(s, fmt.Sprintf("%s%d", prefix, i))
	}
	return s
}

// TestOpenWireAcknowledgements: AUTO and DUPS_OK settle what was received; CLIENT's
// acknowledge() settles everything the session received up to it; INDIVIDUAL settles
// one message; recover() redelivers; what was not acknowledged comes back after the
// connection closes. Each message is body/JMSRedelivered/JMSXDeliveryCount.
func TestOpenWireAcknowledgements(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		r := b.run(t, "acks")
		want := map[string]string{
			"auto.received":          "m1/false/1,m2/false/1,m3/false/1",
			"auto.after_close":       "",
			"dups_ok.received":       "m1/false/1,m2/false/1,m3/false/1",
			"dups_ok.after_close":    "",
			"client.received":        "m1/false/1,m2/false/1,m3/false/1,m4/false/1",
			"client.after_close":     "m3/true/2,m4/true/2",
			"individual.received":    "m1/false/1,m2/false/1,m3/false/1",
			"individual.after_close": "m1/true/2,m3/true/2",
			"recover.first":          "m1/false/1,m2/false/1",
			"recover.received":       "m1/true/2,m2/true/2",
			"recover.after_close":    "",
		}
		assertOW(t, r, want)
	})
}

// assertOW checks the values want names, one assertion per key.
func assertOW(t testing.TB, r owResult, want map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ok := r.values[k]
		if assert.True(t, ok, "%s was not printed", k) {
			assert.Equal(t, want[k], v[len(v)-1], k)
		}
	}
}

// TestOpenWirePoison: a transacted consumer rolls a message back past the redelivery
// policy's maximumRedeliveries (1): the client's poison ack puts it in ActiveMQ.DLQ with
// the cause the client gave.
func TestOpenWirePoison(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		dest := owName(t, "poison")
		r := b.run(t, "poison", "dest="+dest, "max=1")
		assertOW(t, r, map[string]string{
			"deliveries":               "poison/false/1,poison/true/2",
			"left":                     "",
			"dlq":                      "poison",
			"dlq.original_destination": "queue://" + dest,
			// In the dead-letter queue it is a new delivery, persistent (2).
			"dlq.delivery_count": "1",
			"dlq.redelivered":    "false",
			"dlq.mode":           "2",
		})
		assert.Regexp(t, `^java\.lang\.Throwable: Delivery\[2\] exceeds redelivery policy limit:RedeliveryPolicy \{.*maximumRedeliveries = 1,.*\}, cause:null$`, r.get("dlq.cause"))
	})
}

// TestOpenWireExpired: messages whose time to live passes while they wait in the
// consumer's prefetch buffer are not delivered; the client's expired ack sends the
// persistent ones to ActiveMQ.DLQ.
func TestOpenWireExpired(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		// A time to live long enough for the messages to reach the consumer on a busy machine
		// (the broker expires what is still in the queue itself).
		r := b.run(t, "expired", "ttl=1500")
		assertOW(t, r, map[string]string{
			"buffered": "4",
			"received": "keep1,keep2",
			"left":     "",
			"dlq":      "short1,short2",
		})
		for _, cause := range r.all("dlq.cause") {
			assert.Regexp(t, `^java\.lang\.Throwable: Message Expired\. Expiration:\d+$`, cause)
		}
		assert.Len(t, r.all("dlq.cause"), 2)
	})
}

// TestOpenWireLocalTransactions: sends and acks in local transactions: committed sends
// arrive, a rolled-back send does not, rolled-back receipts are redelivered, and a
// commit settles them with the send it carries.
func TestOpenWireLocalTransactions(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		r := b.run(t, "tx")
		assertOW(t, r, map[string]string{
			"first":          "c1/false/1,c2/false/1",
			"after_rollback": "c1/true/2,c2/true/2",
			"left":           "c3",
		})
	})
}

// TestOpenWireXA: an XA transaction through ActiveMQXAConnectionFactory. ActiveMQ
// prepares (XA_OK, 0) and commits one, rolls back another; a target may refuse XA with
// an exception instead (owTarget.xa).
func TestOpenWireXA(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		r := b.run(t, "xa")
		switch tg.xa {
		case "committed":
			assertOW(t, r, map[string]string{"prepare": "0", "committed": "true", "queue": "xa-committed"})
		case "refused":
			assert.NotEmpty(t, r.get("refused"), "the XA transaction was not refused")
			assert.Empty(t, r.get("committed"))
		default:
			t.Fatalf("target %s: xa %q", tg.name, tg.xa)
		}
	})
}

// TestOpenWireTemporaryDestinations: request/reply over a temporary queue and a
// temporary topic named by JMSReplyTo; deleting one with a consumer fails; a deleted one
// cannot be consumed.
func TestOpenWireTemporaryDestinations(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		r := b.run(t, "temp")
		want := map[string]string{}
		for _, kind := range []string{"queue", "topic"} {
			want[kind+".reply_to_kind"] = "ActiveMQTemp" + strings.ToUpper(kind[:1]) + kind[1:]
			want[kind+".reply"] = "answer-" + kind + "/c-" + kind
			want[kind+".delete_with_consumer"] = "JMSException: A consumer is consuming from the temporary destination"
			want[kind+".deleted"] = "true"
			want[kind+".consume_deleted"] = "InvalidDestinationException: Cannot use a Temporary destination that has been deleted"
		}
		assertOW(t, r, want)
	})
}

// TestOpenWireDurableSubscription: a durable subscriber by client id and name gets what
// was published while it was away; it cannot be unsubscribed while active; after
// unsubscribing, the same name starts afresh.
func TestOpenWireDurableSubscription(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		r := b.run(t, "durable", "client="+owName(t, "client"), "n=5")
		assertOW(t, r, map[string]string{
			"reattached":         "m1,m2,m3,m4,m5",
			"unsubscribe_active": "JMSException: Durable consumer is in use",
			"unsubscribed":       "true",
			"resubscribed":       "",
		})
	})
}

// TestOpenWireBrowser: a queue browser enumerates the waiting messages and leaves them.
func TestOpenWireBrowser(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		assertOW(t, b.run(t, "browser"), map[string]string{"browsed": "m1,m2,m3", "consumed": "m1,m2,m3"})
	})
}

// TestOpenWireNoLocal: a topic subscriber with noLocal does not get what its own
// connection publishes; one without it does.
func TestOpenWireNoLocal(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		assertOW(t, b.run(t, "nolocal"), map[string]string{"nolocal": "remote1", "all": "local1,local2,remote1"})
	})
}

// TestOpenWireSelectors: selectors on int, string, boolean and double properties, on a
// queue and on a topic. The messages m1..m5 have i=1..5, s=x,y,z,xa,x, b=true on odd i,
// d=i/2.
func TestOpenWireSelectors(t *testing.T) {
	sels := []struct{ sel, want string }{
		{"i > 2", "m3,m4,m5"},
		{"s = 'x'", "m1,m5"},
		{"b = TRUE", "m1,m3,m5"},
		{"s LIKE 'x%' AND i <> 1", "m4,m5"},
		{"s IN ('y','z') OR d >= 2.5", "m2,m3,m5"},
		{"i BETWEEN 2 AND 4 AND NOT b", "m2,m4"},
	}
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		var opts []string
		for _, s := range sels {
			opts = append(opts, "sel="+s.sel)
		}
		r := b.run(t, "selectors", opts...)
		for k, s := range sels {
			assert.Equal(t, s.want, r.get(fmt.Sprintf("queue.%d", k)), "queue, %s", s.sel)
			assert.Equal(t, s.want, r.get(fmt.Sprintf("topic.%d", k)), "topic, %s", s.sel)
		}
	})
}

// TestOpenWireExclusiveAndPriority: of two consumers of queue?consumer.exclusive=true
// the first gets every message; of consumer.priority=1 and 10, the higher; when it
// closes, the other takes over.
func TestOpenWireExclusiveAndPriority(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		all := "[m1, m2, m3, m4, m5, m6]"
		assertOW(t, b.run(t, "exclusive"), map[string]string{
			"exclusive.first":       all,
			"exclusive.second":      "[]",
			"exclusive.after_close": "[n1, n2]",
			"priority.first":        "[]",
			"priority.second":       all,
			"priority.after_close":  "[n1, n2]",
		})
	})
}

// TestOpenWireMessageGroups: the messages of one JMSXGroupID go to one consumer of
// two; the first it gets carries JMSXGroupFirstForConsumer=true.
func TestOpenWireMessageGroups(t *testing.T) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		r := b.run(t, "groups")
		got := []string{r.get("consumer1"), r.get("consumer2")}
		sort.Strings(got)
		assert.Equal(t, []string{"[]", "[g1(first), g2, g3, g4, g5, g6, g7, g8]"}, got)
	})
}
