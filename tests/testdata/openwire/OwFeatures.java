// The scenarios of OwClient (its entry point, helpers and first scenarios) about
// destinations and dispatch features, the broker's extras, and the load mode: one class
// with it (OwClient finds a scenario's method here or there), two files to keep each short.

import java.util.ArrayList;
import java.util.BitSet;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicInteger;
import javax.jms.*;
import org.apache.activemq.ActiveMQConnection;
import org.apache.activemq.advisory.DestinationSource;
import org.apache.activemq.command.ActiveMQTempQueue;
import org.apache.activemq.command.ActiveMQTempTopic;

class OwFeatures extends OwClient {
    static void browser() throws Exception {
        ActiveMQConnection c = open();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(dest());
        sendTexts(s, q, names("m", 3));
        QueueBrowser b = s.createBrowser(q);
        List<Message> seen = new ArrayList<>();
        for (Enumeration<?> e = b.getEnumeration(); e.hasMoreElements();) seen.add((Message) e.nextElement());
        b.close();
        out("browsed", bodies(seen));
        out("consumed", bodies(left(s, q)));
        c.close();
    }

    static void nolocal() throws Exception {
        ActiveMQConnection mine = open(), other = open();
        Session s = mine.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Topic t = s.createTopic(dest());
        MessageConsumer noLocal = s.createConsumer(t, null, true), all = s.createConsumer(t);
        sendTexts(s, t, "local1", "local2");
        Session os = other.createSession(false, Session.AUTO_ACKNOWLEDGE);
        sendTexts(os, t, "remote1", "end");
        out("nolocal", bodies(receiveUntil(noLocal, "end")));
        out("all", bodies(receiveUntil(all, "end")));
        mine.close();
        other.close();
    }

    // selectors: the messages m1..m5 with i=1..5, s, b; each selector (option sel) on its
    // own queue and by its own topic subscriber.
    static void selectors() throws Exception {
        String[] ss = {"x", "y", "z", "xa", "x"};
        List<String> sels = opts.getOrDefault("sel", List.of());
        ActiveMQConnection c = open();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Topic t = s.createTopic(dest());
        List<MessageConsumer> subs = new ArrayList<>();
        for (String sel : sels) subs.add(s.createConsumer(t, "(" + sel + ") OR end = TRUE"));
        List<Destination> ds = new ArrayList<>(List.of(t));
        for (int k = 0; k < sels.size(); k++) ds.add(s.createQueue(dest() + ".Q" + k));
        MessageProducer p = s.createProducer(null);
        for (Destination d : ds) {
            for (int i = 1; i <= 6; i++) {
                TextMessage m = s.createTextMessage(i == 6 ? "end" : "m" + i);
                if (i == 6) m.setBooleanProperty("end", true);
                else {
                    m.setIntProperty("i", i);
                    m.setStringProperty("s", ss[i - 1]);
                    m.setBooleanProperty("b", i % 2 == 1);
                    m.setDoubleProperty("d", i * 0.5);
                }
                p.send(d, m);
            }
        }
        for (int k = 0; k < sels.size(); k++) {
            out("topic." + k, bodies(receiveUntil(subs.get(k), "end")));
            MessageConsumer qc = s.createConsumer(ds.get(k + 1), "(" + sels.get(k) + ") OR end = TRUE");
            out("queue." + k, bodies(receiveUntil(qc, "end")));
        }
        c.close();
    }

    // collect receives n messages over the consumers' listeners and says which got which.

    static List<List<String>> collect(List<MessageConsumer> cs, int n, Action send) throws Exception {
        CountDownLatch all = new CountDownLatch(n);
        List<List<String>> got = new ArrayList<>();
        for (MessageConsumer c : cs) {
            List<String> mine = Collections.synchronizedList(new ArrayList<>());
            got.add(mine);
            c.setMessageListener(m -> {
                try {
                    String b = body(m);
                    if (m.getBooleanProperty("JMSXGroupFirstForConsumer")) b += "(first)";
                    mine.add(b);
                } catch (JMSException e) {
                    throw new RuntimeException(e);
                }
                all.countDown();
            });
        }
        send.run();
        if (!all.await(timeout, TimeUnit.MILLISECONDS)) throw new java.lang.IllegalStateException("only " + (n - all.getCount()) + " of " + n + ": " + got);
        return got;
    }

    // exclusive: an exclusive queue's messages go to one consumer; prioritised: to the higher.
    static void exclusive() throws Exception {
        for (String mode : new String[] {"exclusive", "priority"}) {
            ActiveMQConnection c = open();
            Session[] ss = {c.createSession(false, Session.AUTO_ACKNOWLEDGE), c.createSession(false, Session.AUTO_ACKNOWLEDGE)};
            String q = dest() + "." + mode;
            String[] suffix = mode.equals("exclusive") ? new String[] {"?consumer.exclusive=true", "?consumer.exclusive=true"}
                    : new String[] {"?consumer.priority=1", "?consumer.priority=10"};
            List<MessageConsumer> cs = List.of(ss[0].createConsumer(ss[0].createQueue(q + suffix[0])), ss[1].createConsumer(ss[1].createQueue(q + suffix[1])));
            Session ps = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
            List<List<String>> got = collect(cs, 6, () -> sendTexts(ps, ps.createQueue(q), names("m", 6)));
            out(mode + ".first", got.get(0));
            out(mode + ".second", got.get(1));
            // The one that got them closes: the other takes over.
            int busy = got.get(0).isEmpty() ? 1 : 0;
            cs.get(busy).close();
            got = collect(List.of(cs.get(1 - busy)), 2, () -> sendTexts(ps, ps.createQueue(q), "n1", "n2"));
            out(mode + ".after_close", got.get(0));
            c.close();
        }
    }

    static void groups() throws Exception {
        ActiveMQConnection c = open();
        Session[] ss = {c.createSession(false, Session.AUTO_ACKNOWLEDGE), c.createSession(false, Session.AUTO_ACKNOWLEDGE)};
        String q = dest();
        List<MessageConsumer> cs = List.of(ss[0].createConsumer(ss[0].createQueue(q)), ss[1].createConsumer(ss[1].createQueue(q)));
        Session ps = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageProducer p = ps.createProducer(ps.createQueue(q));
        List<List<String>> got = collect(cs, 8, () -> {
            for (int i = 1; i <= 8; i++) {
                TextMessage m = ps.createTextMessage("g" + i);
                m.setStringProperty("JMSXGroupID", "G-" + opt("run", "r"));
                p.send(m);
            }
        });
        out("consumer1", got.get(0));
        out("consumer2", got.get(1));
        c.close();
    }

    static void scheduled() throws Exception {
        long delay = num("delay", 1000);
        ActiveMQConnection c = open();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(dest());
        MessageConsumer cons = s.createConsumer(q);
        MessageProducer p = s.createProducer(q);
        TextMessage late = s.createTextMessage("delayed");
        late.setLongProperty("AMQ_SCHEDULED_DELAY", delay);
        long sentAt = System.currentTimeMillis();
        p.send(late);
        p.send(s.createTextMessage("now"));
        List<Message> got = receiveN(cons, 2);
        long at = System.currentTimeMillis();
        out("order", bodies(got));
        out("delayed_not_before_delay", at - sentAt >= delay);
        out("delayed_props", got.size() == 2 ? canon(got.get(1)) : "none");
        // A repeated one: delivered 1 + AMQ_SCHEDULED_REPEAT times, before a marker due later.
        TextMessage rep = s.createTextMessage("repeat");
        rep.setLongProperty("AMQ_SCHEDULED_PERIOD", 100);
        rep.setIntProperty("AMQ_SCHEDULED_REPEAT", 2);
        p.send(rep);
        TextMessage end = s.createTextMessage("end");
        end.setLongProperty("AMQ_SCHEDULED_DELAY", 100 * 2 + delay);
        p.send(end);
        out("repeats", bodies(receiveUntil(cons, "end")));
        c.close();
    }

    static void userid() throws Exception {
        ActiveMQConnection c = open();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(dest());
        MessageProducer p = s.createProducer(q);
        p.send(s.createTextMessage("plain"));
        TextMessage spoof = s.createTextMessage("spoofed");
        spoof.setStringProperty("JMSXUserID", "mallory");
        p.send(spoof);
        MessageConsumer cons = s.createConsumer(q);
        for (Message m : receiveN(cons, 2)) out("userid." + body(m), m.getStringProperty("JMSXUserID"));
        c.close();
    }

    static void flow() throws Exception {
        int n = (int) num("n", 200), size = (int) num("size", 512);
        ActiveMQConnection c = open(withOpts(url, "jms.producerWindowSize=" + opt("window", "1024") + "&jms.useAsyncSend=true"), null);
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(dest());
        MessageProducer p = s.createProducer(q);
        p.setDeliveryMode(DeliveryMode.PERSISTENT);
        byte[] payload = new byte[size];
        for (int i = 0; i < n; i++) {
            BytesMessage m = s.createBytesMessage();
            m.writeBytes(payload);
            m.setIntProperty("seq", i);
            p.send(m);
        }
        out("window", c.getProducerWindowSize());
        out("async", c.isUseAsyncSend());
        MessageConsumer cons = s.createConsumer(q);
        BitSet seen = new BitSet();
        int dups = 0, got = 0;
        for (Message m : receiveN(cons, n)) {
            int seq = m.getIntProperty("seq");
            if (seen.get(seq)) dups++;
            seen.set(seq);
            got++;
        }
        out("received", got);
        out("lost", n - seen.cardinality());
        out("duplicates", dups);
        c.close();
    }

    static void advisory() throws Exception {
        ActiveMQConnection watcher = open(), other = open();
        DestinationSource src = watcher.getDestinationSource();
        BlockingQueue<String> events = new LinkedBlockingQueue<>();
        src.setDestinationListener(e -> events.add((e.isAddOperation() ? "add " : "remove ") + e.getDestination().getPhysicalName()));
        Session s = other.createSession(false, Session.AUTO_ACKNOWLEDGE);
        TemporaryQueue tq = s.createTemporaryQueue();
        TemporaryTopic tt = s.createTemporaryTopic();
        String q = ((ActiveMQTempQueue) tq).getPhysicalName(), t = ((ActiveMQTempTopic) tt).getPhysicalName();
        out("tempqueue.added", await(events, "add " + q));
        out("temptopic.added", await(events, "add " + t));
        out("tempqueue.listed", src.getTemporaryQueues().contains(tq));
        out("temptopic.listed", src.getTemporaryTopics().contains(tt));
        tq.delete();
        tt.delete();
        out("tempqueue.removed", await(events, "remove " + q));
        out("temptopic.removed", await(events, "remove " + t));
        out("tempqueue.listed_after_delete", src.getTemporaryQueues().contains(tq));
        watcher.close();
        other.close();
    }

    static boolean await(BlockingQueue<String> events, String want) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeout;
        for (;;) {
            String e = events.poll(Math.max(1, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
            if (e == null) return false;
            if (e.equals(want)) return true;
        }
    }

    static void syncCount() {
        int n = (int) num("n", 100), sent = 0;
        try {
            ActiveMQConnection c = open();
            Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
            MessageProducer p = s.createProducer(s.createQueue(dest()));
            boolean persistent = Boolean.parseBoolean(opt("persistent", "true"));
            p.setDeliveryMode(persistent ? DeliveryMode.PERSISTENT : DeliveryMode.NON_PERSISTENT);
            String pad = "x".repeat((int) num("size", 0));
            for (; sent < n; sent++) p.send(s.createTextMessage("s" + sent + pad));
            c.close();
        } catch (JMSException e) {
            out("error", e);
        }
        out("sent", sent);
    }

    static void drain() throws Exception {
        ActiveMQConnection c = open();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        List<Message> got = left(s, s.createQueue(dest()));
        Set<String> distinct = new HashSet<>();
        for (Message m : got) distinct.add(body(m));
        out("drained", got.size());
        out("duplicates", got.size() - distinct.size());
        c.close();
    }

    // load: P producers and C consumers on their own connections; M messages of S bytes
    // per producer; a queue's consumers share them, each of a topic's gets all.
    static void load() throws Exception {
        int P = (int) num("producers", 1), C = (int) num("consumers", 1), M = (int) num("messages", 100), S = (int) num("size", 256);
        boolean topic = opt("kind", "queue").equals("topic"), persistent = Boolean.parseBoolean(opt("persistent", "true"));
        int perConsumer = topic ? P * M : -1, total = topic ? P * M * C : P * M;
        ConcurrentHashMap<String, Integer> seen = new ConcurrentHashMap<>();
        AtomicInteger dups = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(total);
        List<Connection> conns = new ArrayList<>();
        for (int i = 0; i < C; i++) {
            ActiveMQConnection c = open();
            conns.add(c);
            Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
            final int ci = i;
            s.createConsumer(topic ? s.createTopic(dest()) : s.createQueue(dest())).setMessageListener(m -> {
                try {
                    String key = (topic ? ci + "/" : "") + m.getIntProperty("p") + "/" + m.getIntProperty("seq");
                    if (seen.put(key, 1) != null) dups.incrementAndGet();
                } catch (JMSException e) {
                    throw new RuntimeException(e);
                }
                done.countDown();
            });
        }
        ExecutorService pool = Executors.newFixedThreadPool(P);
        List<Future<?>> fs = new ArrayList<>();
        long start = System.nanoTime();
        for (int i = 0; i < P; i++) {
            final int pi = i;
            ActiveMQConnection c = open();
            conns.add(c);
            fs.add(pool.submit(() -> {
                Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
                MessageProducer p = s.createProducer(topic ? s.createTopic(dest()) : s.createQueue(dest()));
                p.setDeliveryMode(persistent ? DeliveryMode.PERSISTENT : DeliveryMode.NON_PERSISTENT);
                byte[] payload = new byte[S];
                for (int k = 0; k < M; k++) {
                    BytesMessage m = s.createBytesMessage();
                    m.writeBytes(payload);
                    m.setIntProperty("p", pi);
                    m.setIntProperty("seq", k);
                    p.send(m);
                }
                return null;
            }));
        }
        for (Future<?> f : fs) f.get();
        long sentNs = System.nanoTime() - start;
        done.await(num("idle", 30000), TimeUnit.MILLISECONDS);
        long ns = System.nanoTime() - start;
        pool.shutdown();
        for (Connection c : conns) c.close();
        out("sent", P * M);
        out("expected", total);
        out("received", seen.size() + dups.get());
        out("lost", total - seen.size());
        out("duplicates", dups.get());
        out("send_msgs_per_s", String.format("%.0f", P * M / (sentNs / 1e9)));
        out("msgs_per_s", String.format("%.0f", total / (ns / 1e9)));
        if (perConsumer > 0) out("per_consumer", perConsumer);
    }
}
