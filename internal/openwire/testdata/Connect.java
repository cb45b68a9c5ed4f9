// Connect drives the real ActiveMQ 5.17 client against a listener of the Go test:
// java -cp CLASSPATH Connect.java PORT
// It opens a connection (client id "interop-client"), starts it, sends one persistent
// TextMessage (a synchronous send: it waits for the Response) with a compressed body and
// closes, then prints "OK".

import javax.jms.*;
import org.apache.activemq.ActiveMQConnection;
import org.apache.activemq.ActiveMQConnectionFactory;

public class Connect {
    public static void main(String[] args) throws Exception {
        ActiveMQConnectionFactory f = new ActiveMQConnectionFactory("tcp://127.0.0.1:" + args[0]);
        f.setUseCompression(true);
        ActiveMQConnection c = (ActiveMQConnection) f.createConnection();
        c.setClientID("interop-client");
        c.start();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageProducer p = s.createProducer(s.createQueue("interop"));
        TextMessage m = s.createTextMessage("hello from java");
        m.setStringProperty("color", "red");
        p.send(m);
        c.close();
        System.out.println("OK");
    }
}
