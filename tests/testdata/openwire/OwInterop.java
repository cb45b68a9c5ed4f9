// OwInterop: a durable subscription shared with STOMP clients, run like OwClient (its
// entry point and helpers):
//
//   java -cp CLASSES:JARS OwInterop durable-open|durable-take BROKER_URL [key=value ...]

import java.util.Set;
import javax.jms.*;
import org.apache.activemq.ActiveMQConnection;

class OwInterop extends OwClient {
    public static void main(String[] args) throws Exception {
        run(args, Set.of("durable-open", "durable-take"), OwInterop.class);
    }

    // durableOpen: the client id client makes the durable subscription name on the topic
    // dest and goes away.
    static void durableOpen() throws Exception {
        ActiveMQConnection c = open(url, opt("client", "ow-interop"));
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        s.createDurableSubscriber(s.createTopic(dest()), opt("name", "sub")).close();
        c.close();
        out("opened", true);
    }

    // durableTake: the client id client resumes the durable subscription name on the
    // topic dest, receives n messages (got=body each), and goes away, unsubscribing
    // with unsubscribe=true.
    static void durableTake() throws Exception {
        ActiveMQConnection c = open(url, opt("client", "ow-interop"));
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        TopicSubscriber sub = s.createDurableSubscriber(s.createTopic(dest()), opt("name", "sub"));
        for (Message m : receiveN(sub, (int) num("n", 1))) out("got", body(m));
        sub.close();
        if (Boolean.parseBoolean(opt("unsubscribe", "false"))) s.unsubscribe(opt("name", "sub"));
        c.close();
    }
}
