// OwSpring drives a broker through Spring's JMS support (Debian's libspring-jms-java,
// Spring 4.3) over ActiveMQ's own client, as Spring applications use it: a JmsTemplate
// and DefaultMessageListenerContainers over an ActiveMQConnectionFactory, itself plain
// or wrapped in Spring's CachingConnectionFactory (option factory=plain|caching). It is
// compiled on its own, after OwClient (whose entry point, options and output it uses),
// with the Spring jars on the class path:
//
//   java -cp CLASSES:SPRING_CLASSES:JARS OwSpring SCENARIO BROKER_URL [key=value ...]
//
// Waits are bounded: the template's receive timeout, latches with a timeout.

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.jms.*;
import org.apache.activemq.ActiveMQConnectionFactory;
import org.springframework.jms.connection.CachingConnectionFactory;
import org.springframework.jms.connection.JmsTransactionManager;
import org.springframework.jms.core.JmsTemplate;
import org.springframework.jms.listener.DefaultMessageListenerContainer;
import org.springframework.jms.listener.adapter.MessageListenerAdapter;

class OwSpring extends OwClient {
    static final Set<String> SPRING_SCENARIOS = Set.of("spring-template", "spring-container", "spring-durable", "spring-poison");

    public static void main(String[] args) throws Exception {
        run(args, SPRING_SCENARIOS, OwSpring.class);
    }

    // factory is the scenario's connection factory: ActiveMQ's for the broker URL (with
    // query options q added), wrapped in a CachingConnectionFactory with factory=caching.
    static ConnectionFactory factory(String q) {
        ActiveMQConnectionFactory amq = new ActiveMQConnectionFactory(q.isEmpty() ? url : withOpts(url, q));
        amq.setTrustedPackages(List.of("java.util", "java.lang"));
        // An exception the client hears outside any call (a caching factory then drops its
        // connection, and a browse that was under way ends early, empty): printed.
        javax.jms.ExceptionListener heard = e -> out("async.exception", e);
        switch (opt("factory", "plain")) {
            case "plain":
                amq.setExceptionListener(heard);
                return amq;
            case "caching":
                CachingConnectionFactory c = new CachingConnectionFactory(amq);
                c.setSessionCacheSize(4);
                c.setExceptionListener(heard);
                return c;
            default:
                throw new IllegalArgumentException("factory=" + opt("factory", ""));
        }
    }

    static void close(ConnectionFactory f) {
        if (f instanceof CachingConnectionFactory) ((CachingConnectionFactory) f).destroy();
    }

    // container is a started session-transacted listener container of concurrency 2
    // on queue q (option concurrency: another, "1-4" scales from 1 to 4 consumers;
    // ack=client: a client-acknowledged one instead of transacted); option cache (none, connection, session, consumer) sets its cache
    // level, txmanager=true gives it a JmsTransactionManager (whose default cache level
    // is none: a consumer per receive).
    static DefaultMessageListenerContainer container(ConnectionFactory f, String q, Object listener) {
        DefaultMessageListenerContainer c = new DefaultMessageListenerContainer();
        c.setConnectionFactory(f);
        c.setDestinationName(q);
        if (opt("ack", "transacted").equals("client")) {
            c.setSessionAcknowledgeMode(Session.CLIENT_ACKNOWLEDGE); // a listener's exception: Session.recover
        } else {
            c.setSessionTransacted(true);
        }
        if (opt("txmanager", "false").equals("true")) c.setTransactionManager(new JmsTransactionManager(f));
        if (opts.containsKey("cache")) c.setCacheLevelName("CACHE_" + opt("cache", "").toUpperCase());
        c.setConcurrency(opt("concurrency", "2"));
        c.setMessageListener(listener);
        // A listener's exception is part of the scenario: counted, not logged.
        c.setErrorHandler(e -> {});
        c.afterPropertiesSet();
        c.start();
        return c;
    }

    static void stop(DefaultMessageListenerContainer c) {
        c.stop();
        c.destroy();
    }

    // Responder answers a request (through MessageListenerAdapter, which sends the
    // return value to the request's JMSReplyTo).
    public static class Responder {
        public String handleMessage(String text) {
            return "re:" + text;
        }
    }

    // describe is what receiveAndConvert returned: its type and value.
    static String describe(Object o) {
        if (o == null) return "null";
        if (o instanceof byte[]) return "byte[]:" + Arrays.toString((byte[]) o);
        if (o instanceof Map) return "Map:" + new TreeMap<>((Map<?, ?>) o);
        return o.getClass().getSimpleName() + ":" + o;
    }

    // ---- scenarios

    // springTemplate: convertAndSend of a String, a Map, a byte[] and a Serializable
    // (one with a post-processor setting a header and a property), receiveAndConvert of
    // each; then sendAndReceive (a temporary reply queue per request) against a listener
    // container answering through a MessageListenerAdapter.
    static void springTemplate() throws Exception {
        ConnectionFactory f = factory("");
        JmsTemplate t = new JmsTemplate(f);
        t.setReceiveTimeout(timeout);
        String q = dest();
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("i", 7);
        map.put("s", "seven");
        map.put("b", true);
        t.convertAndSend(q, "hello");
        t.convertAndSend(q, map);
        t.convertAndSend(q, new byte[] {1, 2, 3});
        t.convertAndSend(q, new ArrayList<>(List.of("x", "y")), m -> {
            m.setJMSCorrelationID("corr-1");
            m.setStringProperty("origin", "spring");
            return m;
        });
        for (int i = 0; i < 4; i++) out("convert.got", describe(t.receiveAndConvert(q)));
        // The post-processed message, received whole.
        t.convertAndSend(q, "headers", m -> {
            m.setJMSCorrelationID("corr-2");
            m.setStringProperty("origin", "spring");
            return m;
        });
        Message h = t.receive(q);
        out("convert.headers", body(h) + " corr=" + h.getJMSCorrelationID() + " origin=" + h.getStringProperty("origin"));
        t.setReceiveTimeout(num("empty_wait", 500));
        out("convert.after", describe(t.receiveAndConvert(q)));
        t.setReceiveTimeout(timeout);

        // Explicit QoS: priority, delivery mode and time to live on every send.
        JmsTemplate qos = new JmsTemplate(f);
        qos.setExplicitQosEnabled(true);
        qos.setPriority(7);
        qos.setDeliveryPersistent(false);
        qos.setTimeToLive(600000);
        qos.convertAndSend(q, "qos");
        Message h2 = t.receive(q);
        out("qos", body(h2) + " prio=" + h2.getJMSPriority() + " persistent=" + (h2.getJMSDeliveryMode() == DeliveryMode.PERSISTENT)
                + " expires=" + (h2.getJMSExpiration() > System.currentTimeMillis()));

        // A browse, then a selected receive takes the second message before the first
        // (on a queue of their own: a CachingConnectionFactory's cached consumer of q
        // holds what it prefetched of q, as it does with ActiveMQ).
        String sq = dest() + ".selected";
        for (String k : new String[] {"a", "b"}) t.convertAndSend(sq, "sel-" + k, m -> {
            m.setStringProperty("k", k);
            return m;
        });
        out("browse", t.browse(sq, (session, browser) -> {
            List<String> seen = new ArrayList<>();
            for (java.util.Enumeration<?> e = browser.getEnumeration(); e.hasMoreElements();) seen.add(body((Message) e.nextElement()));
            return String.join(",", seen);
        }));
        out("selected", describe(t.receiveSelectedAndConvert(sq, "k = 'b'")));
        out("selected.rest", describe(t.receiveAndConvert(sq)));

        String rq = dest() + ".requests";
        DefaultMessageListenerContainer responder = container(f, rq, new MessageListenerAdapter(new Responder()));
        for (int i = 1; i <= 3; i++) {
            Message[] request = new Message[1];
            String text = "ping" + i;
            Message reply = t.sendAndReceive(rq, s -> request[0] = s.createTextMessage(text));
            if (reply == null) throw new java.lang.IllegalStateException("no reply to " + text + " within " + timeout + " ms");
            out("reply", body(reply));
            out("reply.correlated", request[0].getJMSMessageID().equals(reply.getJMSCorrelationID()));
            out("reply.to_temp_queue", request[0].getJMSReplyTo() instanceof TemporaryQueue);
        }
        stop(responder);
        // Before anything is counted as left: a CachingConnectionFactory's cached
        // consumers hold their prefetched messages until it is destroyed.
        close(f);
        out("requests.left", left(rq));
    }

    // springContainer: n messages to a queue a session-transacted container of
    // concurrency 2 consumes; its listener throws on the first delivery of every
    // fail_every-th, which rolls it back to be redelivered. With prefetch 1 the first
    // listener call waits for a second consumer's, so both are in flight at once.
    static void springContainer() throws Exception {
        int n = (int) num("n", 12), failEvery = (int) num("fail_every", 4);
        ConnectionFactory f = factory("jms.prefetchPolicy.queuePrefetch=1");
        String q = dest();
        Map<String, List<String>> deliveries = new ConcurrentHashMap<>();
        Set<String> threads = ConcurrentHashMap.newKeySet();
        CountDownLatch two = new CountDownLatch(2), done = new CountDownLatch(n);
        List<String> failed = java.util.Collections.synchronizedList(new ArrayList<>());
        MessageListener listener = m -> {
            try {
                String b = body(m);
                if (threads.add(Thread.currentThread().getName())) two.countDown();
                two.await(timeout, TimeUnit.MILLISECONDS);
                deliveries.computeIfAbsent(b, k -> java.util.Collections.synchronizedList(new ArrayList<>()))
                        .add(m.getJMSRedelivered() + "/" + m.getObjectProperty("JMSXDeliveryCount"));
                if (Integer.parseInt(b.substring(1)) % failEvery == 0 && !m.getJMSRedelivered()) {
                    failed.add(b);
                    throw new java.lang.IllegalStateException("listener fails " + b + " on its first delivery");
                }
                done.countDown();
            } catch (JMSException | InterruptedException e) {
                throw new RuntimeException(e);
            }
        };
        DefaultMessageListenerContainer c = container(f, q, listener);
        JmsTemplate t = new JmsTemplate(f);
        for (String b : names("m", n)) t.convertAndSend(q, b);
        boolean all = done.await(timeout * 3, TimeUnit.MILLISECONDS);
        stop(c);
        out("container.all_processed", all);
        out("container.concurrent", 2 - two.getCount());
        java.util.Collections.sort(failed, (a, b) -> Integer.compare(Integer.parseInt(a.substring(1)), Integer.parseInt(b.substring(1))));
        out("container.failed", String.join(",", failed));
        // Each message's deliveries: redelivered/JMSXDeliveryCount, in order.
        for (String b : names("m", n)) out("container.deliveries." + b, String.join(",", deliveries.getOrDefault(b, List.of())));
        close(f);
        out("container.left", left(q));
    }

    // springPoison: a message whose listener always throws is rolled back until the
    // client's redelivery policy (maximumRedeliveries=max, no delay) gives up on it and
    // its poison ack sends it to ActiveMQ.DLQ; the messages beside it are processed.
    static void springPoison() throws Exception {
        String run = opt("run", "r"), q = dest();
        ConnectionFactory f = factory("jms.redeliveryPolicy.maximumRedeliveries=" + opt("max", "2")
                + "&jms.redeliveryPolicy.initialRedeliveryDelay=0&jms.redeliveryPolicy.redeliveryDelay=0");
        List<String> bad = java.util.Collections.synchronizedList(new ArrayList<>());
        CountDownLatch good = new CountDownLatch(2);
        DefaultMessageListenerContainer c = container(f, q, (MessageListener) m -> {
            try {
                if (body(m).equals("bad")) {
                    bad.add(m.getJMSRedelivered() + "/" + m.getObjectProperty("JMSXDeliveryCount"));
                    throw new java.lang.IllegalStateException("listener always fails bad");
                }
                good.countDown();
            } catch (JMSException e) {
                throw new RuntimeException(e);
            }
        });
        JmsTemplate t = new JmsTemplate(f);
        t.convertAndSend(q, "bad", m -> {
            m.setStringProperty("run", run);
            return m;
        });
        t.convertAndSend(q, "good1");
        t.convertAndSend(q, "good2");
        out("poison.good_processed", good.await(timeout, TimeUnit.MILLISECONDS));
        t.setReceiveTimeout(timeout);
        Message d = t.receiveSelected("ActiveMQ.DLQ", "run = '" + run + "'");
        stop(c);
        close(f);
        out("poison.dlq", d == null ? "none" : body(d));
        out("poison.deliveries", String.join(",", bad));
        out("poison.left", left(q));
    }

    // springDurable: a container's durable subscription (client id and subscription
    // name) to a topic a pub/sub JmsTemplate sends to gets what is sent while it runs;
    // shut down, it misses nothing sent meanwhile: a new container of the same client id
    // and name gets that; then the subscription is deleted.
    static void springDurable() throws Exception {
        String client = opt("client", "ow-spring-durable"), name = "sub";
        ConnectionFactory f = factory("");
        if (f instanceof CachingConnectionFactory) ((CachingConnectionFactory) f).setClientId(client);
        JmsTemplate t = new JmsTemplate(f);
        t.setPubSubDomain(true);
        java.util.concurrent.BlockingQueue<String> got = new java.util.concurrent.LinkedBlockingQueue<>();
        MessageListener listener = m -> {
            try {
                got.add(body(m));
            } catch (JMSException e) {
                throw new RuntimeException(e);
            }
        };
        for (String[] round : new String[][] {{"t1", "t2"}, {"t3", "t4"}}) {
            DefaultMessageListenerContainer c = new DefaultMessageListenerContainer();
            c.setConnectionFactory(f);
            if (!(f instanceof CachingConnectionFactory)) c.setClientId(client);
            c.setDestinationName(dest());
            c.setPubSubDomain(true);
            c.setSubscriptionDurable(true);
            c.setDurableSubscriptionName(name);
            c.setSessionTransacted(true);
            c.setMessageListener(listener);
            c.afterPropertiesSet();
            if (round[0].equals("t1")) {
                c.start();
                awaitTrue(c::isRegisteredWithDestination, "the durable subscription");
                for (String b : round) t.convertAndSend(dest(), b);
            } else {
                // Sent while no container runs; the subscription keeps them.
                for (String b : round) t.convertAndSend(dest(), b);
                c.start();
            }
            List<String> roundGot = new ArrayList<>();
            for (String b : round) {
                String m = got.poll(timeout, TimeUnit.MILLISECONDS);
                if (m == null) throw new java.lang.IllegalStateException("no " + b + " within " + timeout + " ms after " + roundGot);
                roundGot.add(m);
            }
            out("durable.got", String.join(",", roundGot));
            stop(c);
        }
        out("durable.extra", String.join(",", got)); // none twice
        close(f); // its shared connection holds the client id
        Connection conn = open(url, client);
        Session s = conn.createSession(false, Session.AUTO_ACKNOWLEDGE);
        attempt("durable.unsubscribe", () -> s.unsubscribe(name));
        conn.close();
    }

    interface Condition {
        boolean holds() throws Exception;
    }

    // awaitTrue waits for cond, checking it every 10 ms up to the receive timeout (for
    // a state that no event announces: a container's consumer being registered).
    static void awaitTrue(Condition cond, String what) throws Exception {
        long deadline = System.currentTimeMillis() + timeout;
        while (!cond.holds()) {
            if (System.currentTimeMillis() > deadline) throw new java.lang.IllegalStateException("no " + what + " within " + timeout + " ms");
            Thread.sleep(10);
        }
    }

    // left is what queue q holds, received by a plain session of the client's own.
    static String left(String q) throws JMSException {
        Connection conn = open();
        Session s = conn.createSession(false, Session.AUTO_ACKNOWLEDGE);
        String r = bodies(left(s, s.createQueue(q)));
        conn.close();
        return r;
    }
}
