// OwClose: what a consumer or session that closes leaves for the next consumer of its
// queue, run like OwClient (its entry point and helpers):
//
//   java -cp CLASSES:JARS OwClose close-prefetched BROKER_URL [key=value ...]

import java.util.Set;
import javax.jms.*;
import org.apache.activemq.ActiveMQConnection;

class OwClose extends OwClient {
    public static void main(String[] args) throws Exception {
        run(args, Set.of("close-prefetched"), OwClose.class);
    }

    // closePrefetched: a consumer with prefetch 10 on a queue of n messages receives
    // the first and is closed (close=consumer), or its session is (close=session), in
    // the session's mode (ack=auto, client or transacted); the next consumer of the
    // queue prints what it gets (up to an end marker sent then) as
    // body/JMSRedelivered/JMSXDeliveryCount.
    static void closePrefetched() throws Exception {
        int n = (int) num("n", 4);
        ActiveMQConnection c = open(withOpts(url, "jms.prefetchPolicy.queuePrefetch=10"), null);
        String ack = opt("ack", "auto");
        Session s = ack.equals("transacted") ? c.createSession(true, Session.SESSION_TRANSACTED)
                : c.createSession(false, ack.equals("client") ? Session.CLIENT_ACKNOWLEDGE : Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(dest());
        sendTexts(s, q, names("m", n));
        if (s.getTransacted()) s.commit();
        MessageConsumer first = s.createConsumer(q);
        out("first", body(first.receive(timeout)));
        if (opt("close", "consumer").equals("consumer")) first.close();
        s.close();
        Session next = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        out("next", redeliveries(left(next, next.createQueue(dest()))));
        c.close();
    }
}
