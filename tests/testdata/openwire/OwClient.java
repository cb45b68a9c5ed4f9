// OwClient drives a broker through ActiveMQ's own Java client (OpenWire, JMS 1.1), one
// scenario per subcommand, for the end-to-end tests of tests/openwire_*_test.go; its
// scenarios are here, in OwFeatures.java and in OwFailover.java (compiled together with javac):
//
//   java -cp CLASSES:JARS OwClient SCENARIO BROKER_URL [key=value ...]
//
// It prints its results as key=value lines on stdout (a key may repeat; the value is the
// rest of the line) and exits 1 with the stack trace on stderr when the scenario cannot
// run. Waits are bounded receives (receive(timeout), latches with a timeout); what is
// awaited is a message or an event, never the passing of time, except where the scenario
// is about time itself (expiry, scheduled delivery).

import java.io.Serializable;
import java.lang.reflect.InvocationTargetException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;
import javax.jms.*;
import javax.transaction.xa.*;
import org.apache.activemq.ActiveMQConnection;
import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.ActiveMQMessageConsumer;
import org.apache.activemq.ActiveMQSession;
import org.apache.activemq.ActiveMQXAConnectionFactory;
import org.apache.activemq.command.ActiveMQMessage;

public class OwClient {
    static final Set<String> SCENARIOS = Set.of("connect", "kinds", "send-kinds", "dump", "prefetch", "acks", "poison",
            "expired", "tx", "xa", "temp", "durable", "browser", "nolocal", "selectors", "exclusive", "groups", "scheduled",
            "userid", "flow", "advisory", "sync-count", "drain", "load",
            "failover-flow", "drain-count", "failover-tx", "secure", "tempsteal", "big", "idle", "hold", "durable-take",
            "forge-dead-letter");
    static String url;
    static final Map<String, List<String>> opts = new HashMap<>();
    static long timeout; // a receive that must get a message

    public static void main(String[] args) throws Exception {
        run(args, SCENARIOS, OwClient.class, OwFeatures.class, OwFailover.class, OwEdges.class);
    }

    // run runs the scenario args[0], one of scenarios: the method of that name (in
    // camel case) of the first of classes that has one (OwSpring's main runs its own).
    static void run(String[] args, Set<String> scenarios, Class<?>... classes) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: OwClient SCENARIO BROKER_URL [key=value ...]");
            System.exit(2);
        }
        url = args[1];
        for (int i = 2; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            opts.computeIfAbsent(args[i].substring(0, eq), k -> new ArrayList<>()).add(args[i].substring(eq + 1));
        }
        timeout = num("timeout", 10000);
        // The scenario "sync-count" is the method syncCount().
        String method = Pattern.compile("-(.)").matcher(args[0]).replaceAll(m -> m.group(1).toUpperCase());
        try {
            if (!scenarios.contains(args[0])) throw new IllegalArgumentException("unknown scenario " + args[0]);
            scenario(method, classes).invoke(null);
        } catch (Throwable e) {
            (e instanceof InvocationTargetException ? e.getCause() : e).printStackTrace();
            System.out.flush();
            System.exit(1);
        }
        System.out.flush();
        System.exit(0); // the client's non-daemon threads must not hold the JVM
    }

    static java.lang.reflect.Method scenario(String name, Class<?>... classes) throws NoSuchMethodException {
        for (Class<?> c : classes) {
            try {
                return c.getDeclaredMethod(name);
            } catch (NoSuchMethodException e) {
                // the next class's, if it has one
            }
        }
        throw new NoSuchMethodException(name);
    }

    // ---- options, output, connections

    interface Action {
        void run() throws Exception;
    }

    // attempt prints under key "ok" if a succeeds, else the exception it throws.
    static void attempt(String key, Action a) throws Exception {
        try {
            a.run();
            out(key, "ok");
        } catch (JMSException e) {
            out(key, e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    static String opt(String k, String def) {
        List<String> v = opts.get(k);
        return v == null ? def : v.get(v.size() - 1);
    }

    static long num(String k, long def) { return Long.parseLong(opt(k, String.valueOf(def))); }

    static String dest() { return opt("dest", "OW.TEST"); }

    static synchronized void out(String k, Object v) {
        System.out.println(k + "=" + String.valueOf(v).replace("\\", "\\\\").replace("\n", "\\n"));
    }

    // withOpts adds query options to a broker URL (after failover:(...) if it is one).
    static String withOpts(String u, String q) {
        int paren = u.lastIndexOf(')');
        String tail = paren >= 0 ? u.substring(paren) : u;
        return u + (tail.contains("?") ? "&" : "?") + q;
    }

    static ActiveMQConnection open(String u, String clientID) throws JMSException {
        ActiveMQConnectionFactory f = new ActiveMQConnectionFactory(u);
        // java.util.HashMap (of Integers) in an ObjectMessage: 5.17 trusts no package by default.
        f.setTrustedPackages(List.of("java.util", "java.lang"));
        ActiveMQConnection c = (ActiveMQConnection) f.createConnection(opt("user", null), opt("password", null));
        if (clientID != null) c.setClientID(clientID);
        c.start();
        return c;
    }

    static ActiveMQConnection open() throws JMSException { return open(url, null); }

    static void sendTexts(Session s, Destination d, String... bodies) throws JMSException {
        MessageProducer p = s.createProducer(d);
        for (String b : bodies) p.send(s.createTextMessage(b));
        p.close();
    }

    static String[] names(String prefix, int n) {
        String[] r = new String[n];
        for (int i = 0; i < n; i++) r[i] = prefix + (i + 1);
        return r;
    }

    static String body(Message m) throws JMSException {
        return m instanceof TextMessage ? ((TextMessage) m).getText() : m.getClass().getSimpleName();
    }

    // receiveUntil receives until the text body end, which must come, and returns what came before.
    static List<Message> receiveUntil(MessageConsumer c, String end) throws JMSException {
        List<Message> got = new ArrayList<>();
        for (;;) {
            Message m = c.receive(timeout);
            if (m == null) throw new java.lang.IllegalStateException("no " + end + " within " + timeout + " ms after " + bodies(got));
            if (end.equals(body(m))) return got;
            got.add(m);
        }
    }

    static List<Message> receiveN(MessageConsumer c, int n) throws JMSException {
        List<Message> got = new ArrayList<>();
        while (got.size() < n) {
            Message m = c.receive(timeout);
            if (m == null) break;
            got.add(m);
        }
        return got;
    }

    static String bodies(List<Message> ms) throws JMSException {
        List<String> b = new ArrayList<>();
        for (Message m : ms) b.add(body(m));
        return String.join(",", b);
    }

    // redeliveries describes each message as body/JMSRedelivered/JMSXDeliveryCount.
    static String redeliveries(List<Message> ms) throws JMSException {
        List<String> b = new ArrayList<>();
        for (Message m : ms) b.add(body(m) + "/" + m.getJMSRedelivered() + "/" + m.getObjectProperty("JMSXDeliveryCount"));
        return String.join(",", b);
    }

    // left is what a queue holds: an end marker sent now is received after all of it
    // (by a consumer of its own: the session's others must be closed).
    static List<Message> left(Session s, Queue q) throws JMSException {
        sendTexts(s, q, "end");
        MessageConsumer c = s.createConsumer(q);
        List<Message> got = receiveUntil(c, "end");
        c.close();
        return got;
    }

    // ---- scenarios

    static void connect() throws Exception {
        ActiveMQConnection c = open(url, opt("client", "ow-connect"));
        out("client_id", c.getClientID());
        ConnectionMetaData md = c.getMetaData();
        out("provider", md.getJMSProviderName());
        out("provider_version", md.getProviderVersion());
        out("jms_version", md.getJMSVersion());
        out("broker_name", c.getBrokerName());
        out("wire_format_version", c.getProtocolVersion());
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(dest());
        MessageConsumer cons = s.createConsumer(q);
        sendTexts(s, q, "hello");
        out("received", body(cons.receive(timeout)));
        cons.close();
        s.close();
        c.close();
        out("closed", true);
    }

    static void kinds() throws Exception {
        sendKinds();
        dump(7);
    }

    // sendKinds sends one message of each JMS kind (7), each with every typed property and header.
    static void sendKinds() throws Exception {
        ActiveMQConnection c = open();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(dest());
        MessageProducer p = s.createProducer(q);
        List<Message> ms = new ArrayList<>();
        ms.add(s.createTextMessage("text body \u00e9\u4e2d"));
        BytesMessage b = s.createBytesMessage();
        b.writeBytes(new byte[] {0, 1, 2, (byte) 0xff, 'a'});
        ms.add(b);
        MapMessage mm = s.createMapMessage();
        mm.setBoolean("bool", true); mm.setByte("byte", (byte) -8); mm.setShort("short", (short) -300);
        mm.setChar("char", 'c'); mm.setInt("int", 70000); mm.setLong("long", 1L << 40);
        mm.setFloat("float", 1.5f); mm.setDouble("double", -2.25); mm.setString("string", "s\u00e9");
        mm.setBytes("bytes", new byte[] {9, 8, 7});
        ms.add(mm);
        StreamMessage sm = s.createStreamMessage();
        sm.writeBoolean(false); sm.writeByte((byte) 7); sm.writeShort((short) 9); sm.writeChar('z');
        sm.writeInt(-1); sm.writeLong(-2L); sm.writeFloat(0.5f); sm.writeDouble(3.75);
        sm.writeString("str"); sm.writeBytes(new byte[] {1, 2});
        ms.add(sm);
        ms.add(s.createObjectMessage("an object string"));
        HashMap<String, Serializable> hm = new HashMap<>();
        hm.put("k1", "v1"); hm.put("k2", 42);
        ms.add(s.createObjectMessage(hm));
        ms.add(s.createMessage());
        int i = 0;
        for (Message m : ms) {
            i++;
            m.setBooleanProperty("pBool", true); m.setByteProperty("pByte", (byte) 1);
            m.setShortProperty("pShort", (short) 2); m.setIntProperty("pInt", 3);
            m.setLongProperty("pLong", 4L); m.setFloatProperty("pFloat", 5.5f);
            m.setDoubleProperty("pDouble", 6.25); m.setStringProperty("pString", "seven");
            m.setJMSCorrelationID("corr-" + i);
            m.setJMSReplyTo(s.createQueue(dest() + ".REPLY"));
            m.setJMSType("type-" + i);
            m.setStringProperty("JMSXGroupID", "G");
            m.setIntProperty("JMSXGroupSeq", i);
            p.send(m, i % 2 == 0 ? DeliveryMode.NON_PERSISTENT : DeliveryMode.PERSISTENT, i, 600000);
            out("sent", m.getClass().getSimpleName());
        }
        c.close();
    }

    static void dump() throws Exception { dump((int) num("n", 1)); }

    static void dump(int n) throws Exception {
        ActiveMQConnection c = open();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer cons = s.createConsumer(s.createQueue(dest()));
        for (Message m : receiveN(cons, n)) out("got", canon(m));
        c.close();
    }

    // canon is a message in one line, without what differs from run to run (ids, times).
    static String canon(Message m) throws JMSException {
        StringBuilder b = new StringBuilder(m.getClass().getSimpleName().replace("ActiveMQ", ""));
        b.append(" body=");
        if (m instanceof TextMessage) b.append(val(((TextMessage) m).getText()));
        else if (m instanceof BytesMessage) {
            BytesMessage bm = (BytesMessage) m;
            byte[] raw = new byte[(int) bm.getBodyLength()];
            bm.readBytes(raw);
            b.append(val(raw));
        } else if (m instanceof MapMessage) {
            TreeMap<String, String> t = new TreeMap<>();
            for (Object k : Collections.list((Enumeration<?>) ((MapMessage) m).getMapNames())) t.put((String) k, val(((MapMessage) m).getObject((String) k)));
            b.append(t);
        } else if (m instanceof StreamMessage) {
            List<String> l = new ArrayList<>();
            try {
                for (;;) l.add(val(((StreamMessage) m).readObject()));
            } catch (MessageEOFException endOfStream) {
            }
            b.append(l);
        } else if (m instanceof ObjectMessage) b.append(val(((ObjectMessage) m).getObject()));
        else b.append("-");
        b.append(" corr=").append(m.getJMSCorrelationID());
        b.append(" replyTo=").append(m.getJMSReplyTo());
        b.append(" type=").append(m.getJMSType());
        b.append(" prio=").append(m.getJMSPriority());
        b.append(" mode=").append(m.getJMSDeliveryMode() == DeliveryMode.PERSISTENT ? "persistent" : "non-persistent");
        b.append(" expires=").append(m.getJMSExpiration() == 0 ? "never" : m.getJMSExpiration() > System.currentTimeMillis() ? "future" : "past");
        b.append(" redelivered=").append(m.getJMSRedelivered());
        b.append(" dest=").append(m.getJMSDestination());
        b.append(" id=").append(m.getJMSMessageID() != null && m.getJMSMessageID().startsWith("ID:"));
        b.append(" ts=").append(m.getJMSTimestamp() > 0);
        TreeMap<String, String> props = new TreeMap<>();
        for (Object k : Collections.list((Enumeration<?>) m.getPropertyNames())) props.put((String) k, val(m.getObjectProperty((String) k)));
        b.append(" props=").append(props);
        return b.toString();
    }

    static String val(Object o) {
        if (o == null) return "null";
        if (o instanceof byte[]) {
            StringBuilder h = new StringBuilder("bytes:");
            for (byte x : (byte[]) o) h.append(String.format("%02x", x));
            return h.toString();
        }
        if (o instanceof Map) return o.getClass().getSimpleName() + ":" + new TreeMap<>((Map<?, ?>) o);
        return o.getClass().getSimpleName() + ":" + o;
    }

    static void prefetch() throws Exception {
        int n = (int) num("n", 20);
        for (String size : opt("sizes", "1,10,0").split(",")) {
            ActiveMQConnection c = open(withOpts(url, "jms.prefetchPolicy.queuePrefetch=" + size), null);
            Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
            Queue q = s.createQueue(dest() + ".P" + size);
            ActiveMQMessageConsumer cons = (ActiveMQMessageConsumer) s.createConsumer(q);
            sendTexts(s, q, names("m", n));
            List<Message> got = receiveN(cons, n);
            out("prefetch." + size + ".consumer_prefetch", cons.getPrefetchNumber());
            out("prefetch." + size + ".received", bodies(got));
            cons.close();
            out("prefetch." + size + ".left", bodies(left(s, q)));
            c.close();
        }
    }

    // ackCase sends n messages to a queue of its own and receives k of them on a session
    // of mode; then: 0 acknowledges the 2nd (CLIENT, INDIVIDUAL), 1 receives k more,
    // 2 recovers and receives k again, acknowledging the last; then the connection
    // closes and a new one says what the queue holds.
    static void ackCase(String name, int mode, int n, int k, int... steps) throws Exception {
        ActiveMQConnection c = open();
        Session s = c.createSession(false, mode);
        Queue q = s.createQueue(dest() + "." + name);
        sendTexts(s, q, names("m", n));
        MessageConsumer cons = s.createConsumer(q);
        List<Message> got = receiveN(cons, k);
        for (int step : steps) {
            if (step == 0) got.get(1).acknowledge();
            if (step == 1) got.addAll(receiveN(cons, k));
            if (step == 2) {
                out(name + ".first", redeliveries(got));
                s.recover();
                got = receiveN(cons, k);
                got.get(k - 1).acknowledge();
            }
        }
        out(name + ".received", redeliveries(got));
        c.close();
        c = open();
        out(name + ".after_close", redeliveries(left(c.createSession(false, Session.AUTO_ACKNOWLEDGE), q)));
        c.close();
    }

    static void acks() throws Exception {
        ackCase("auto", Session.AUTO_ACKNOWLEDGE, 3, 3);
        ackCase("dups_ok", Session.DUPS_OK_ACKNOWLEDGE, 3, 3);
        // acknowledge() on the 2nd acknowledges the 1st too; 3 and 4 come back.
        ackCase("client", Session.CLIENT_ACKNOWLEDGE, 4, 2, 0, 1);
        ackCase("individual", ActiveMQSession.INDIVIDUAL_ACKNOWLEDGE, 3, 3, 0);
        ackCase("recover", Session.CLIENT_ACKNOWLEDGE, 2, 2, 2);
    }

    static void poison() throws Exception {
        String run = opt("run", "r");
        ActiveMQConnection c = open(withOpts(url, "jms.redeliveryPolicy.maximumRedeliveries=" + opt("max", "1")
                + "&jms.redeliveryPolicy.initialRedeliveryDelay=0&jms.redeliveryPolicy.redeliveryDelay=0"), null);
        Session tx = c.createSession(true, Session.SESSION_TRANSACTED);
        Queue q = tx.createQueue(dest());
        MessageProducer p = tx.createProducer(q);
        TextMessage m = tx.createTextMessage("poison");
        m.setStringProperty("run", run);
        p.send(m);
        p.send(tx.createTextMessage("marker"));
        tx.commit();
        MessageConsumer cons = tx.createConsumer(q);
        // Rolled back until the client gives up on it; the marker behind it comes next.
        List<Message> deliveries = new ArrayList<>();
        for (Message got = cons.receive(timeout); got != null && !body(got).equals("marker"); got = cons.receive(timeout)) {
            deliveries.add(got);
            tx.rollback();
        }
        tx.commit();
        cons.close();
        out("deliveries", redeliveries(deliveries));
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        out("left", bodies(left(s, q)));
        MessageConsumer dlq = s.createConsumer(s.createQueue("ActiveMQ.DLQ"), "run = '" + run + "'");
        Message d = dlq.receive(timeout);
        out("dlq", d == null ? "none" : body(d));
        if (d != null) {
            out("dlq.cause", d.getStringProperty("dlqDeliveryFailureCause"));
            out("dlq.original_destination", ((ActiveMQMessage) d).getOriginalDestination());
            out("dlq.delivery_count", d.getObjectProperty("JMSXDeliveryCount"));
            out("dlq.redelivered", d.getJMSRedelivered());
            out("dlq.mode", d.getJMSDeliveryMode());
        }
        c.close();
    }

    static void expired() throws Exception {
        String run = opt("run", "r");
        long ttl = num("ttl", 500);
        ActiveMQConnection c = open();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(dest());
        ActiveMQMessageConsumer cons = (ActiveMQMessageConsumer) s.createConsumer(q);
        MessageProducer p = s.createProducer(q);
        long expiry = 0;
        for (String b : new String[] {"keep1", "short1", "short2", "keep2"}) {
            TextMessage m = s.createTextMessage(b);
            m.setStringProperty("run", run);
            p.send(m, DeliveryMode.PERSISTENT, 4, b.startsWith("short") ? ttl : 0);
            expiry = Math.max(expiry, m.getJMSExpiration());
        }
        // All four wait in the consumer's prefetch buffer ...
        long deadline = System.currentTimeMillis() + timeout;
        while (cons.getMessageSize() < 4 && System.currentTimeMillis() < deadline) Thread.sleep(10);
        out("buffered", cons.getMessageSize());
        // ... until the short ones are past their expiry (the scenario's subject is time).
        while (System.currentTimeMillis() <= expiry + 50) Thread.sleep(Math.max(1, expiry + 51 - System.currentTimeMillis()));
        out("received", bodies(receiveN(cons, 2)));
        cons.close();
        out("left", bodies(left(s, q)));
        MessageConsumer dlq = s.createConsumer(s.createQueue("ActiveMQ.DLQ"), "run = '" + run + "'");
        List<Message> dead = receiveN(dlq, 2);
        out("dlq", bodies(dead));
        for (Message d : dead) out("dlq.cause", d.getStringProperty("dlqDeliveryFailureCause"));
        c.close();
    }

    static void tx() throws Exception {
        ActiveMQConnection c = open();
        Session tx = c.createSession(true, Session.SESSION_TRANSACTED);
        Queue q = tx.createQueue(dest());
        MessageProducer p = tx.createProducer(q);
        p.send(tx.createTextMessage("c1"));
        p.send(tx.createTextMessage("c2"));
        tx.commit();
        p.send(tx.createTextMessage("rolledback"));
        tx.rollback();
        MessageConsumer cons = tx.createConsumer(q);
        out("first", redeliveries(receiveN(cons, 2)));
        tx.rollback();
        out("after_rollback", redeliveries(receiveN(cons, 2)));
        p.send(tx.createTextMessage("c3"));
        tx.commit(); // acks c1 and c2, sends c3
        cons.close();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        out("left", bodies(left(s, q)));
        c.close();
    }

    static class Xid1 implements Xid {
        final byte[] gtid;
        Xid1(String id) { gtid = id.getBytes(); }
        public int getFormatId() { return 77; }
        public byte[] getGlobalTransactionId() { return gtid; }
        public byte[] getBranchQualifier() { return new byte[] {1}; }
    }

    static void xa() throws Exception {
        ActiveMQXAConnectionFactory f = new ActiveMQXAConnectionFactory(url);
        XAConnection c;
        try {
            c = f.createXAConnection(opt("user", null), opt("password", null));
            c.start();
            XASession xs = c.createXASession();
            XAResource r = xs.getXAResource();
            Queue q = xs.createQueue(dest());
            MessageProducer p = xs.getSession().createProducer(q);
            String run = opt("run", "r");
            Xid commit = new Xid1(run + "-commit"), rollback = new Xid1(run + "-rollback");
            r.start(commit, XAResource.TMNOFLAGS);
            p.send(xs.createTextMessage("xa-committed"));
            r.end(commit, XAResource.TMSUCCESS);
            out("prepare", r.prepare(commit));
            r.commit(commit, false);
            r.start(rollback, XAResource.TMNOFLAGS);
            p.send(xs.createTextMessage("xa-rolledback"));
            r.end(rollback, XAResource.TMSUCCESS);
            r.rollback(rollback);
            out("committed", true);
        } catch (JMSException | XAException e) {
            out("refused", e.getClass().getName() + ": " + e.getMessage());
            return;
        }
        c.close();
        ActiveMQConnection plain = open(); // an XA connection's sessions are all XA
        Session s = plain.createSession(false, Session.AUTO_ACKNOWLEDGE);
        out("queue", bodies(left(s, s.createQueue(dest()))));
        plain.close();
    }

    static void temp() throws Exception {
        ActiveMQConnection req = open(), resp = open();
        Session rs = resp.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer service = rs.createConsumer(rs.createQueue(dest()));
        MessageProducer answer = rs.createProducer(null);
        Session s = req.createSession(false, Session.AUTO_ACKNOWLEDGE);
        for (boolean topic : new boolean[] {false, true}) {
            String kind = topic ? "topic" : "queue";
            TemporaryQueue tq = topic ? null : s.createTemporaryQueue();
            TemporaryTopic tt = topic ? s.createTemporaryTopic() : null;
            Destination reply = topic ? tt : tq;
            MessageConsumer replies = s.createConsumer(reply);
            TextMessage m = s.createTextMessage("question-" + kind);
            m.setJMSReplyTo(reply);
            m.setJMSCorrelationID("c-" + kind);
            s.createProducer(s.createQueue(dest())).send(m);
            Message q = service.receive(timeout);
            out(kind + ".reply_to_kind", q.getJMSReplyTo().getClass().getSimpleName());
            TextMessage a = rs.createTextMessage("answer-" + kind);
            a.setJMSCorrelationID(q.getJMSCorrelationID());
            answer.send(q.getJMSReplyTo(), a);
            Message got = replies.receive(timeout);
            out(kind + ".reply", got == null ? "none" : body(got) + "/" + got.getJMSCorrelationID());
            attempt(kind + ".delete_with_consumer", () -> { if (topic) tt.delete(); else tq.delete(); });
            replies.close();
            if (topic) tt.delete(); else tq.delete();
            out(kind + ".deleted", true);
            attempt(kind + ".consume_deleted", () -> s.createConsumer(reply));
        }
        req.close();
        resp.close();
    }

    static void durable() throws Exception {
        int n = (int) num("n", 5);
        String client = opt("client", "ow-durable"), topicName = dest();
        ActiveMQConnection c = open(url, client);
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Topic t = s.createTopic(topicName);
        s.createDurableSubscriber(t, "sub").close();
        c.close();
        ActiveMQConnection pub = open();
        Session ps = pub.createSession(false, Session.AUTO_ACKNOWLEDGE);
        sendTexts(ps, ps.createTopic(topicName), names("m", n));
        c = open(url, client);
        s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        TopicSubscriber sub = s.createDurableSubscriber(t, "sub");
        out("reattached", bodies(receiveN(sub, n)));
        final Session active = s;
        attempt("unsubscribe_active", () -> active.unsubscribe("sub"));
        sub.close();
        s.unsubscribe("sub");
        out("unsubscribed", true);
        sendTexts(ps, ps.createTopic(topicName), "after");
        sub = s.createDurableSubscriber(t, "sub");
        sendTexts(ps, ps.createTopic(topicName), "end");
        out("resubscribed", bodies(receiveUntil(sub, "end")));
        sub.close();
        s.unsubscribe("sub");
        c.close();
        pub.close();
    }
}
