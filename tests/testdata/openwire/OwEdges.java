// The scenarios of OwClient about the edges of a connection: security (credentials,
// authorization, certificates over ssl://, temporary destinations), a command over the
// connector's frame limit, and a connection that stays silent. One class with OwClient
// (which finds a scenario's method here too).

import java.util.Arrays;
import javax.jms.*;
import org.apache.activemq.ActiveMQConnection;
import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.command.ActiveMQMessage;
import org.apache.activemq.command.ActiveMQQueue;

class OwEdges extends OwClient {
    // secure connects with the options' user and password (or a certificate: the JVM's
    // key store), then: a round trip on allowed (default dest), a send to denied if
    // given (its producer made, then a send) and a round trip after it, and a round
    // trip on a temporary queue. It prints connect (ok or the exception), received
    // (body/JMSXUserID), denied_producer, denied, after_denied, temp.
    static void secure() throws Exception {
        ActiveMQConnection c;
        try {
            c = open();
        } catch (JMSException e) {
            out("connect", e.getClass().getName() + ": " + e.getMessage());
            return;
        }
        out("connect", "ok");
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        String allowed = opt("allowed", dest());
        out("received", roundTrip(s, s.createQueue(allowed), "allowed"));
        String denied = opt("denied", null);
        if (denied != null) {
            attempt("denied_producer", () -> s.createProducer(s.createQueue(denied)).close());
            attempt("denied", () -> sendTexts(s, s.createQueue(denied), "denied"));
            out("after_denied", roundTrip(s, s.createQueue(allowed), "after-denied"));
        }
        attempt("temp", () -> {
            TemporaryQueue tq = s.createTemporaryQueue();
            String got = roundTrip(s, tq, "temporary");
            if (!got.startsWith("temporary/")) throw new JMSException("the temporary queue gave " + got);
            tq.delete();
        });
        c.close();
    }

    // durableTake connects with the client-id client and makes the durable subscription
    // "sub" on the topic dest, which replaces one of that name on another topic: it
    // prints what connecting (connect) and subscribing (subscribe) gave.
    static void durableTake() throws Exception {
        ActiveMQConnection c;
        try {
            c = open(url, opt("client", null));
        } catch (JMSException e) {
            out("connect", e.getClass().getName() + ": " + e.getMessage());
            return;
        }
        out("connect", "ok");
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        attempt("subscribe", () -> s.createDurableSubscriber(s.createTopic(dest()), "sub").close());
        c.close();
    }

    // forgeDeadLetter sends the text message "forged" to dest, persistent, carrying the
    // broker's dead-letter metadata of its own making: ActiveMQMessage's
    // originalDestination field and the string properties original-destination and
    // dlqDeliveryFailureCause, naming the queue of the option forged. It prints sent.
    static void forgeDeadLetter() throws Exception {
        ActiveMQConnection c = open();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Message m = s.createTextMessage("forged");
        ActiveMQQueue forged = new ActiveMQQueue(opt("forged", "secret"));
        ((ActiveMQMessage) m).setOriginalDestination(forged);
        m.setStringProperty("original-destination", "/queue/" + forged.getPhysicalName());
        m.setStringProperty("dlqDeliveryFailureCause", "forged by OpenWire");
        MessageProducer p = s.createProducer(s.createQueue(dest()));
        p.setDeliveryMode(DeliveryMode.PERSISTENT);
        p.send(m);
        out("sent", "ok");
        c.close();
    }

    // roundTrip sends body to d and receives it there: body/JMSXUserID, or "none".
    static String roundTrip(Session s, Destination d, String body) throws JMSException {
        MessageConsumer cons = s.createConsumer(d);
        sendTexts(s, d, body);
        Message m = cons.receive(timeout);
        cons.close();
        return m == null ? "none" : body(m) + "/" + m.getStringProperty("JMSXUserID");
    }

    // big sends "before", then a text message of size characters, then "after", each a
    // synchronous send, and prints the outcome of the last two (big, after): the
    // connector's frame limit ends the connection at the big one.
    static void big() throws Exception {
        ActiveMQConnection c = open();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(dest());
        sendTexts(s, q, "before");
        char[] body = new char[(int) num("size", 1 << 20)];
        Arrays.fill(body, 'x');
        attempt("big", () -> sendTexts(s, q, new String(body)));
        attempt("after", () -> sendTexts(s, q, "after"));
        try {
            c.close();
        } catch (JMSException closedAlready) {
        }
    }

    // idle opens a consumer, stays silent for idle ms (the scenario's subject is time:
    // the client's inactivity monitor keeps the connection alive, or not), then does a
    // round trip: received (body/JMSXUserID or none).
    static void idle() throws Exception {
        ActiveMQConnection c = open();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(dest());
        Thread.sleep(num("idle", 3000));
        attempt("after_idle", () -> out("received", roundTrip(s, q, "after-idle")));
        try {
            c.close();
        } catch (JMSException closedAlready) {
        }
    }

    // hold opens a connection (client id: client) with a consumer and a producer of
    // dest, sends and receives one message, then holds it all open until a message
    // comes on dest.release (at most hold ms): what operators see of a client.
    static void hold() throws Exception {
        ActiveMQConnection c = open(url, opt("client", "ow-hold"));
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(dest());
        MessageConsumer cons = s.createConsumer(q);
        MessageProducer p = s.createProducer(q);
        p.send(s.createTextMessage("held"));
        out("received", body(cons.receive(timeout)));
        MessageConsumer release = s.createConsumer(s.createQueue(dest() + ".release"));
        out("released", release.receive(num("hold", 60000)) != null);
        c.close();
    }
    // tempsteal: the options' user makes a temporary queue and reads it; a connection of
    // intruder (password intruder_password) consumes the queue wildcard ">", tries the
    // temporary queue by its name as a queue's (a consumer, a browser) and by itself (a
    // consumer: ActiveMQ's client refuses that), then sends n replies to it. It prints
    // plain_consumer, plain_browser, temp_consumer, owner_received and intruder_wildcard
    // (what the wildcard consumer holds after the owner got every reply: none or bodies).
    static void tempsteal() throws Exception {
        ActiveMQConnection owner = open();
        Session os = owner.createSession(false, Session.AUTO_ACKNOWLEDGE);
        TemporaryQueue tq = os.createTemporaryQueue();
        MessageConsumer replies = os.createConsumer(tq);
        ActiveMQConnectionFactory f = new ActiveMQConnectionFactory(url);
        Connection intruder = f.createConnection(opt("intruder", null), opt("intruder_password", null));
        intruder.start();
        Session is = intruder.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer wild = is.createConsumer(is.createQueue(">"));
        // session.createQueue makes a temporary queue of an ID:... name: a queue of that
        // name takes the command class itself.
        Queue plain = new ActiveMQQueue(tq.getQueueName());
        attempt("plain_consumer", () -> is.createConsumer(plain).close());
        attempt("plain_browser", () -> {
            QueueBrowser b = is.createBrowser(plain);
            b.getEnumeration().hasMoreElements();
            b.close();
        });
        attempt("temp_consumer", () -> is.createConsumer(tq).close());
        int n = (int) num("n", 4);
        sendTexts(is, tq, names("reply", n));
        out("owner_received", bodies(receiveN(replies, n)));
        Message m = wild.receiveNoWait();
        out("intruder_wildcard", m == null ? "none" : ((TextMessage) m).getText());
        intruder.close();
        owner.close();
    }
}
