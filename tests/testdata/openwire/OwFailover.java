// The failover scenarios of OwClient: a client on a failover: URL keeps working while
// the test restarts (or kills -9) the broker under it. The test steers a running
// scenario through stdin (one word a line: "stop", "continue") and follows it through
// its output, which is printed as it happens (progress lines, "resumed" when the
// failover transport reconnected), besides the final counts.

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.jms.*;
import org.apache.activemq.ActiveMQConnection;
import org.apache.activemq.transport.TransportListener;

class OwFailover extends OwClient {
    // stdin is what the test wrote on the scenario's stdin, a line at a time.
    static final BlockingQueue<String> stdin = new LinkedBlockingQueue<>();
    static final AtomicInteger resumed = new AtomicInteger();

    static void readStdin() {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in))) {
                for (String line; (line = r.readLine()) != null;) stdin.add(line.trim());
            } catch (IOException e) {
                out("stdin_error", e);
            }
            stdin.add("eof");
        });
        t.setDaemon(true);
        t.start();
    }

    // await returns when the test wrote word on stdin; the test ending first is an error.
    static void await(String word) throws InterruptedException {
        for (;;) {
            String got = stdin.poll(owWait(), TimeUnit.MILLISECONDS);
            if (got == null || got.equals("eof")) throw new java.lang.IllegalStateException("no \"" + word + "\" on stdin");
            if (got.equals(word)) return;
        }
    }

    // owWait bounds a wait for the test (wait=ms, 60 s by default).
    static long owWait() { return num("wait", 60000); }

    // openTracked is open() with a listener that prints "resumed=N" each time the failover
    // transport reconnects (N counts this connection's reconnects).
    static ActiveMQConnection openTracked(String name) throws JMSException {
        ActiveMQConnection c = open();
        AtomicInteger mine = new AtomicInteger();
        c.addTransportListener(new TransportListener() {
            public void onCommand(Object command) {}

            public void onException(IOException error) { out("transport_error", name + ": " + error); }

            public void transportInterupted() { out("interrupted", name); }

            public void transportResumed() { out("resumed", name + "/" + mine.incrementAndGet()); }
        });
        return c;
    }

    // failoverFlow: a producer sends persistent messages "m0", "m1", ... synchronously
    // (the JMS default for persistent ones) until the test writes "stop", printing
    // "returned=N" every `every` sends that returned; with consume=true a consumer on its
    // own connection receives them meanwhile. After "stop" the producer sends "end"; the
    // consumer receives until "end" and until every send that returned has arrived. It
    // prints the counts: sent (sends that returned), send_error, and for the consumer
    // received (distinct), duplicates (copies beyond the first), dup_flagged (of those,
    // with JMSRedelivered set), redelivered (messages received with JMSRedelivered), lost
    // (returned, never received).
    static void failoverFlow() throws Exception {
        readStdin();
        int every = (int) num("every", 25);
        boolean consume = Boolean.parseBoolean(opt("consume", "false"));
        ActiveMQConnection pc = openTracked("producer");
        Session ps = pc.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageProducer p = ps.createProducer(ps.createQueue(dest()));
        p.setDeliveryMode(DeliveryMode.PERSISTENT);
        Map<String, Integer> counts = new HashMap<>();
        AtomicInteger flagged = new AtomicInteger(), dupFlagged = new AtomicInteger();
        Thread consumer = null;
        ActiveMQConnection cc = null;
        int[] sent = {0};
        Object lock = new Object();
        if (consume) {
            cc = openTracked("consumer");
            Session cs = cc.createSession(false, Session.AUTO_ACKNOWLEDGE);
            MessageConsumer mc = cs.createConsumer(cs.createQueue(dest()));
            consumer = new Thread(() -> {
                try {
                    boolean end = false;
                    for (;;) {
                        synchronized (lock) {
                            if (end && missing(counts, sent[0]) == 0) return;
                        }
                        Message m = mc.receive(owWait());
                        if (m == null) {
                            synchronized (lock) {
                                out("consumer_stalled", "no message within " + owWait() + " ms; missing " + missing(counts, sent[0]));
                            }
                            return;
                        }
                        String b = body(m);
                        synchronized (lock) {
                            if (m.getJMSRedelivered()) flagged.incrementAndGet();
                            if (b.equals("end")) {
                                end = true;
                                continue;
                            }
                            int n = counts.merge(b, 1, Integer::sum);
                            if (n > 1) {
                                out("duplicate", b + " redelivered=" + m.getJMSRedelivered());
                                if (m.getJMSRedelivered()) dupFlagged.incrementAndGet();
                            }
                        }
                    }
                } catch (JMSException e) {
                    out("consumer_error", e);
                }
            });
            consumer.start();
        }
        try {
            for (int i = 0; !"stop".equals(stdin.peek()); i++) {
                p.send(ps.createTextMessage("m" + i));
                synchronized (lock) {
                    sent[0] = i + 1;
                }
                if (sent[0] % every == 0) out("returned", sent[0]);
            }
            if (consume) p.send(ps.createTextMessage("end"));
        } catch (JMSException e) {
            out("send_error", e);
        }
        out("sent", sent[0]);
        if (consumer != null) {
            consumer.join();
            synchronized (lock) {
                int dups = 0;
                for (int n : counts.values()) dups += n - 1;
                out("received", counts.size());
                out("duplicates", dups);
                out("dup_flagged", dupFlagged.get());
                out("redelivered", flagged.get());
                out("lost", missing(counts, sent[0]));
            }
            cc.close();
        }
        pc.close();
    }

    // missing is how many of m0..m(sent-1) counts lacks.
    static int missing(Map<String, Integer> counts, int sent) {
        int n = 0;
        for (int i = 0; i < sent; i++) if (!counts.containsKey("m" + i)) n++;
        return n;
    }

    // drainCount receives everything the queue holds (up to an end marker it sends) and
    // checks it against m0..m(n-1): lost (never received), duplicates (copies beyond the
    // first), extra (m<i> with i >= n: sends that had not returned), redelivered.
    static void drainCount() throws Exception {
        int n = (int) num("n", 0);
        ActiveMQConnection c = open();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        List<Message> got = left(s, s.createQueue(dest()));
        Map<String, Integer> counts = new HashMap<>();
        int redelivered = 0, extra = 0, dups = 0;
        for (Message m : got) {
            if (m.getJMSRedelivered()) redelivered++;
            String b = body(m);
            if (counts.merge(b, 1, Integer::sum) > 1) {
                dups++;
                out("duplicate", b);
            } else if (Integer.parseInt(b.substring(1)) >= n) {
                extra++;
            }
        }
        out("drained", got.size());
        out("lost", missing(counts, n));
        out("duplicates", dups);
        out("extra", extra);
        out("redelivered", redelivered);
        c.close();
    }

    // failoverTx: a transaction of a transacted session takes "in" from queue dest.in
    // (unless take=false) and sends "out" to dest.out; it is left open ("tx_open=1")
    // while the test restarts the broker, and committed once the test writes "continue"
    // (after "resumed"). The commit prints "commit=ok" or the exception; a rolled-back
    // transaction is retried once (retry=ok). Then what the queues hold: out=...,
    // in_left=... (bodies).
    static void failoverTx() throws Exception {
        readStdin();
        String in = dest() + ".in", outQ = dest() + ".out";
        ActiveMQConnection c = openTracked("tx");
        Session plain = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        sendTexts(plain, plain.createQueue(in), "in");
        Session s = c.createSession(true, Session.SESSION_TRANSACTED);
        MessageConsumer mc = s.createConsumer(s.createQueue(in));
        MessageProducer mp = s.createProducer(s.createQueue(outQ));
        mp.setDeliveryMode(DeliveryMode.PERSISTENT);
        // take=false: a transaction that only sends (the client replays it on reconnect).
        boolean take = Boolean.parseBoolean(opt("take", "true"));
        Message m = take ? mc.receive(timeout) : null;
        out("tx_received", m == null ? "none" : body(m));
        mp.send(s.createTextMessage("out"));
        out("tx_open", 1);
        await("continue");
        try {
            s.commit();
            out("commit", "ok");
        } catch (JMSException e) {
            out("commit", e.getClass().getSimpleName());
            out("commit_message", e.getMessage());
            // The client's retry: the whole transaction again.
            m = take ? mc.receive(timeout) : null;
            out("retry_received", m == null ? "none" : body(m) + " redelivered=" + m.getJMSRedelivered());
            mp.send(s.createTextMessage("out"));
            s.commit();
            out("retry", "ok");
        }
        mc.close();
        s.close();
        out("out", bodies(left(plain, plain.createQueue(outQ))));
        out("in_left", bodies(left(plain, plain.createQueue(in))));
        c.close();
    }
}
