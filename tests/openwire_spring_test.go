package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Spring's JMS support over ActiveMQ's own client (issue 23): Debian's
// libspring-jms-java (Spring 4.3) serves. The Java program OwSpring
// (testdata/openwire/spring) drives a JmsTemplate and DefaultMessageListenerContainers
// over an ActiveMQConnectionFactory, plain and wrapped in a CachingConnectionFactory,
// against every OpenWire target with the same expectations.

// owSpringJars are Spring's JMS support and what it needs (Debian's spring3-* names are
// Spring 4.3's jars): core, beans, context (the container's lifecycle), transactions
// (the template's and container's resource handling) and Spring's logging API.
var owSpringJars = []string{
	"/usr/share/java/spring3-jms.jar",
	"/usr/share/java/spring3-core.jar",
	"/usr/share/java/spring3-beans.jar",
	"/usr/share/java/spring3-context.jar",
	"/usr/share/java/spring3-transaction.jar",
	"/usr/share/java/spring3-messaging.jar",
	"/usr/share/java/commons-logging.jar",
}

const owSpringSources = "testdata/openwire/spring/*.java"

// owSpringCompiled is OwSpring compiled once per test binary, against OwClient.
var owSpringCompiled javaBuild

// owSpringClasspath returns the class path that runs OwSpring, compiling it (and
// OwClient) on first use. A missing jar fails the test with the package to install.
func owSpringClasspath(t testing.TB) string {
	t.Helper()
	ow := owClasspath(t)
	for _, jar := range owSpringJars {
		if !fileExists(jar) {
			t.Fatalf("%s is missing: install Debian's package libspring-jms-java (it pulls Spring's core, beans, context, transaction and commons-logging; .ci/run does)", jar)
		}
	}
	cp := append(strings.Split(ow, ":"), owSpringJars...)
	dir, err := owSpringCompiled.compile(owSpringSources, cp)
	if err != nil {
		t.Fatal(err)
	}
	return dir + ":" + strings.Join(cp, ":")
}

// runSpring runs OwSpring's scenario against b on a destination of this test's own.
func (b owBroker) runSpring(t testing.TB, scenario string, opts ...string) owResult {
	t.Helper()
	return runJavaOW(t, owSpringClasspath(t), "OwSpring", b.URL, scenario, append([]string{"dest=" + owName(t, scenario)}, opts...)...)
}

// forEachSpringFactory runs f per target and per connection factory the Spring
// scenarios use: ActiveMQ's own, and Spring's CachingConnectionFactory around it.
func forEachSpringFactory(t *testing.T, f func(t *testing.T, tg owTarget, b owBroker, factory string)) {
	forEachOWTarget(t, func(t *testing.T, tg owTarget, b owBroker) {
		for _, factory := range []string{"plain", "caching"} {
			t.Run(factory, func(t *testing.T) { f(t, tg, b, factory) })
		}
	})
}

// TestOpenWireSpringJmsTemplate: JmsTemplate's convertAndSend and receiveAndConvert
// carry a String, a Map, a byte[] and a Serializable as text, map, bytes and object
// messages (a post-processor's header and property with them), receiveAndConvert of an
// empty queue returns null after its timeout; an explicit QoS (priority, delivery mode,
// time to live) reaches the consumer; browse sees what a selected receive then takes out
// of order; sendAndReceive gets each reply, correlated
// to its request, on a temporary queue of its own, from a listener container answering
// through a MessageListenerAdapter; nothing is left on the request queue.
func TestOpenWireSpringJmsTemplate(t *testing.T) {
	forEachSpringFactory(t, func(t *testing.T, _ owTarget, b owBroker, factory string) {
		r := b.runSpring(t, "spring-template", "factory="+factory)
		assert.Equal(t, []string{"String:hello", "Map:{b=true, i=7, s=seven}", "byte[]:[1, 2, 3]", "ArrayList:[x, y]"}, r.all("convert.got"), "convert.got")
		assertOW(t, r, map[string]string{
			"convert.headers": "headers corr=corr-2 origin=spring",
			"convert.after":   "null",
			"qos":             "qos prio=7 persistent=false expires=true",
			"browse":          "sel-a,sel-b",
			"selected":        "String:sel-b",
			"selected.rest":   "String:sel-a",
			"requests.left":   "",
		})
		assert.Empty(t, r.all("async.exception"), "exceptions the client heard outside its calls")
		assert.Equal(t, []string{"re:ping1", "re:ping2", "re:ping3"}, r.all("reply"), "reply")
		assert.Equal(t, []string{"true", "true", "true"}, r.all("reply.correlated"), "reply.correlated")
		assert.Equal(t, []string{"true", "true", "true"}, r.all("reply.to_temp_queue"), "reply.to_temp_queue")
	})
}

// TestOpenWireSpringListenerContainer: a session-transacted DefaultMessageListenerContainer
// of concurrency 2 (prefetch 1) has two messages in flight at once on two consumers and
// processes every message once; its listener's exception on the first delivery of
// every 4th message rolls that delivery back, and the message comes again, redelivered,
// with JMSXDeliveryCount 2; the queue is empty afterwards. (ActiveMQ's broker now and
// then gives a rolled-back message to the next consumer unflagged first, when the
// container closes its consumer right after the rollback: owTarget.unflaggedRetake.)
func TestOpenWireSpringListenerContainer(t *testing.T) {
	const n, failEvery = 12, 4
	forEachSpringFactory(t, func(t *testing.T, tg owTarget, b owBroker, factory string) {
		for _, variant := range []string{"cache=consumer", "cache=none", "txmanager=true", "ack=client", "concurrency=1-4"} {
			t.Run(variant, func(t *testing.T) {
				r := b.runSpring(t, "spring-container", "factory="+factory, variant, fmt.Sprint("n=", n), fmt.Sprint("fail_every=", failEvery))
				if tg.unflaggedRetake {
					dropUnflaggedRetakes(r)
				}
				assertOW(t, r, springContainerWant(n, failEvery))
			})
		}
	})
}

// dropUnflaggedRetakes takes out of spring-container's output the deliveries a target
// with unflaggedRetake may repeat: a failing message's first delivery (false/1) given
// again before the flagged one, and its second failure in container.failed.
func dropUnflaggedRetakes(r owResult) {
	for k, vs := range r.values {
		last := len(vs) - 1
		switch {
		case strings.HasPrefix(k, "container.deliveries."):
			for strings.HasPrefix(vs[last], "false/1,false/1,") {
				vs[last] = strings.TrimPrefix(vs[last], "false/1,")
			}
		case k == "container.failed":
			seen := map[string]bool{}
			var once []string
			for _, m := range strings.Split(vs[last], ",") {
				if !seen[m] {
					seen[m] = true
					once = append(once, m)
				}
			}
			vs[last] = strings.Join(once, ",")
		}
	}
}

// springContainerWant is what spring-container prints with n messages, every
// failEvery-th failing once.
func springContainerWant(n, failEvery int) map[string]string {
	var failed []string
	want := map[string]string{
		"container.all_processed": "true",
		"container.concurrent":    "2",
		"container.left":          "",
	}
	for i := 1; i <= n; i++ {
		want[fmt.Sprint("container.deliveries.m", i)] = "false/1"
		if i%failEvery == 0 {
			want[fmt.Sprint("container.deliveries.m", i)] = "false/1,true/2"
			failed = append(failed, fmt.Sprint("m", i))
		}
	}
	want["container.failed"] = strings.Join(failed, ",")
	return want
}

// TestOpenWireSpringDurable: a listener container's durable topic subscription (client
// id on the container, or on the CachingConnectionFactory) gets what a pub/sub
// JmsTemplate sends; a new container of the same client id and subscription name gets
// what was sent while none ran; the subscription is deleted after.
func TestOpenWireSpringDurable(t *testing.T) {
	forEachSpringFactory(t, func(t *testing.T, _ owTarget, b owBroker, factory string) {
		r := b.runSpring(t, "spring-durable", "factory="+factory, "client="+owName(t, "client"))
		assert.Equal(t, []string{"t1,t2", "t3,t4"}, r.all("durable.got"))
		assertOW(t, r, map[string]string{"durable.extra": "", "durable.unsubscribe": "ok"})
	})
}

// TestOpenWireSpringPoison: a message a session-transacted container's listener always
// fails on is redelivered up to the client's maximumRedeliveries (2) and then goes to
// ActiveMQ.DLQ by the client's poison ack, with a consumer kept (cache consumer) or one
// per receive (cache none); the messages beside it are processed; nothing is left.
func TestOpenWireSpringPoison(t *testing.T) {
	forEachSpringFactory(t, func(t *testing.T, _ owTarget, b owBroker, factory string) {
		for _, cache := range []string{"consumer", "none"} {
			t.Run(cache, func(t *testing.T) {
				r := b.runSpring(t, "spring-poison", "factory="+factory, "cache="+cache, "run="+owName(t, "run"))
				assertOW(t, r, map[string]string{
					"poison.good_processed": "true",
					"poison.dlq":            "bad",
					"poison.deliveries":     "false/1,true/2,true/3",
					"poison.left":           "",
				})
			})
		}
	})
}
