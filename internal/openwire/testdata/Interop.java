// Interop checks the Go codec against ActiveMQ's own OpenWireFormat (the 5.17 client jar).
// Usage: java -cp CLASSPATH Interop.java DIR CONFIG...
// A CONFIG is "v<version>-<t|l>-<c|n>-<s|n>": version, tight or loose encoding, cache on or
// off, stack traces on or off. For each, it writes DIR/java-CONFIG.bin (the commands below
// marshalled by ActiveMQ, one frame after another) and DIR/dump-CONFIG.txt: for command i,
// the line "J<i> <dump>" of ActiveMQ's own round trip and, when DIR/go-CONFIG.bin exists,
// "G<i> <dump>" of what ActiveMQ decoded from the Go bytes. The Go test compares the two.
// The same commands are built in corpus_test.go; keep both in step.

import java.io.*;
import java.lang.reflect.*;
import java.nio.file.*;
import java.util.*;
import java.util.zip.*;
import org.apache.activemq.command.*;
import org.apache.activemq.openwire.OpenWireFormat;
import org.apache.activemq.util.ByteSequence;
import org.apache.activemq.util.MarshallingSupport;
import org.fusesource.hawtbuf.UTF8Buffer;

public class Interop {
    static final String CONN = "ID:host-1234-5678-1:1";
    static boolean stackTraces;

    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        for (int i = 1; i < args.length; i++) {
            run(dir, args[i]);
        }
        writeStrings(dir);
    }

    // writeStrings writes DIR/strings.txt: how ActiveMQ prints ids and destinations (the
    // values of stringForms in interop_test.go), one a line.
    static void writeStrings(File dir) throws Exception {
        MessageId text = msgId(7);
        text.setTextView("custom-7");
        XATransactionId arjuna = new XATransactionId();
        arjuna.setFormatId(131077);
        byte[] uid = new byte[28];
        for (int i = 0; i < uid.length; i++) {
            uid[i] = (byte) (i * 37);
        }
        arjuna.setGlobalTransactionId(uid);
        arjuna.setBranchQualifier(Arrays.copyOf(uid, 20)); // too short: partly Arjuna's form
        Object[] values = {connId(), sessId(), consId(), prodId(), msgId(7), text, localTx(), xaTx(), arjuna,
            brokerId("ID:broker-1"), queue(), topic(), tempQueue(), tempTopic(), new ActiveMQQueue("a,b")};
        StringBuilder sb = new StringBuilder();
        for (Object v : values) {
            sb.append(v).append('\n');
        }
        Files.write(new File(dir, "strings.txt").toPath(), sb.toString().getBytes("UTF-8"));
    }

    static OpenWireFormat format(String cfg) {
        String[] p = cfg.split("-");
        OpenWireFormat f = new OpenWireFormat(Integer.parseInt(p[0].substring(1)));
        f.setTightEncodingEnabled(p[1].equals("t"));
        f.setCacheEnabled(p[2].equals("c"));
        f.setStackTraceEnabled(p[3].equals("s"));
        return f;
    }

    static void run(File dir, String cfg) throws Exception {
        stackTraces = format(cfg).isStackTraceEnabled();
        List<DataStructure> cmds = commands();
        OpenWireFormat out = format(cfg);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream dos = new DataOutputStream(bytes);
        for (DataStructure c : cmds) {
            out.marshal(c, dos);
        }
        dos.flush();
        Files.write(new File(dir, "java-" + cfg + ".bin").toPath(), bytes.toByteArray());

        StringBuilder dump = new StringBuilder();
        OpenWireFormat in = format(cfg);
        DataInputStream dis = new DataInputStream(new ByteArrayInputStream(bytes.toByteArray()));
        for (int i = 0; i < cmds.size(); i++) {
            dump.append("J").append(i).append(' ').append(dump(in.unmarshal(dis))).append('\n');
        }
        File goFile = new File(dir, "go-" + cfg + ".bin");
        if (goFile.exists()) {
            OpenWireFormat goIn = format(cfg);
            byte[] goBytes = Files.readAllBytes(goFile.toPath());
            dis = new DataInputStream(new ByteArrayInputStream(goBytes));
            for (int i = 0; dis.available() > 0; i++) {
                String d;
                try {
                    d = dump(goIn.unmarshal(dis));
                } catch (Exception e) {
                    d = "ERROR " + e;
                    dump.append("G").append(i).append(' ').append(d).append('\n');
                    break;
                }
                dump.append("G").append(i).append(' ').append(d).append('\n');
            }
        }
        Files.write(new File(dir, "dump-" + cfg + ".txt").toPath(), dump.toString().getBytes("UTF-8"));
    }

    // ---- the commands (mirror corpus_test.go) ----

    static ConnectionId connId() { return new ConnectionId(CONN); }
    static SessionId sessId() { return new SessionId(connId(), 1); }
    static ConsumerId consId() { return new ConsumerId(sessId(), 2); }
    static ProducerId prodId() { return new ProducerId(sessId(), 3); }
    static ActiveMQQueue queue() { return new ActiveMQQueue("orders"); }
    static ActiveMQTopic topic() { return new ActiveMQTopic("prices.>"); }
    static ActiveMQTempQueue tempQueue() { return new ActiveMQTempQueue(CONN + ":1"); }
    static ActiveMQTempTopic tempTopic() { return new ActiveMQTempTopic(CONN + ":2"); }
    static BrokerId brokerId(String v) { return new BrokerId(v); }
    static LocalTransactionId localTx() { return new LocalTransactionId(connId(), 5); }
    static XATransactionId xaTx() {
        XATransactionId x = new XATransactionId();
        x.setFormatId(42);
        x.setGlobalTransactionId(new byte[] {1, 2, (byte) 0x80});
        x.setBranchQualifier(new byte[] {9});
        return x;
    }
    static MessageId msgId(long seq) {
        MessageId m = new MessageId(prodId(), seq);
        m.setBrokerSequenceId(70000);
        return m;
    }

    static Throwable throwable() {
        IllegalStateException t = new IllegalStateException("boom \u00e9");
        t.setStackTrace(new StackTraceElement[] {
            new StackTraceElement("org.example.Broker", "send", "Broker.java", 42),
            new StackTraceElement("org.example.Main", "main", "Main.java", 7),
        });
        IOException cause = new IOException("disk full");
        cause.setStackTrace(new StackTraceElement[] {
            new StackTraceElement("org.example.Store", "write", "Store.java", 99),
        });
        t.initCause(cause);
        return t;
    }

    static <T extends BaseCommand> T cmd(T c, int id, boolean rr) {
        c.setCommandId(id);
        c.setResponseRequired(rr);
        return c;
    }

    static Map<String, Object> props() {
        Map<String, Object> p = new HashMap<>();
        p.put("bool", Boolean.TRUE);
        p.put("byte", Byte.valueOf((byte) -7));
        p.put("char", Character.valueOf('\u00e9'));
        p.put("short", Short.valueOf((short) -300));
        p.put("int", Integer.valueOf(123456));
        p.put("long", Long.valueOf(1L << 40));
        p.put("float", Float.valueOf(1.5f));
        p.put("double", Double.valueOf(-2.25));
        p.put("string", "h\u00e9llo \ud83d\ude00");
        p.put("bytes", new byte[] {0, 1, (byte) 0xff});
        p.put("null", null);
        return p;
    }

    static <T extends Message> T fill(T m, int id) throws Exception {
        cmd(m, id, true);
        m.setProducerId(prodId());
        m.setDestination(queue());
        m.setTransactionId(localTx());
        m.setOriginalDestination(topic());
        m.setMessageId(msgId(id));
        m.setOriginalTransactionId(xaTx());
        m.setGroupID("group-a");
        m.setGroupSequence(3);
        m.setCorrelationId("corr-1");
        m.setPersistent(true);
        m.setExpiration(1700000000000L);
        m.setPriority((byte) 4);
        m.setReplyTo(tempQueue());
        m.setTimestamp(1690000000000L);
        m.setType("order");
        m.setTargetConsumerId(consId());
        m.setRedeliveryCounter(2);
        m.setBrokerPath(new BrokerId[] {brokerId("b1"), brokerId("b2")});
        m.setArrival(300);
        m.setUserID("alice");
        m.setRecievedByDFBridge(true);
        m.setDroppable(true);
        m.setCluster(new BrokerId[] {brokerId("c1")});
        m.setBrokerInTime(-1);
        m.setBrokerOutTime(70000);
        m.setJMSXGroupFirstForConsumer(true);
        for (Map.Entry<String, Object> e : props().entrySet()) {
            m.setProperty(e.getKey(), e.getValue());
        }
        return m;
    }

    static List<DataStructure> commands() throws Exception {
        List<DataStructure> l = new ArrayList<>();

        WireFormatInfo wf = new WireFormatInfo();
        wf.setVersion(12);
        wf.setTightEncodingEnabled(true);
        wf.setCacheEnabled(true);
        wf.setCacheSize(1024);
        wf.setMaxInactivityDuration(30000);
        wf.setProviderName("ActiveMQ");
        l.add(wf);

        BrokerInfo peer = cmd(new BrokerInfo(), 0, false);
        peer.setBrokerId(brokerId("peer"));
        peer.setBrokerName("peer-broker");
        BrokerInfo bi = cmd(new BrokerInfo(), 1, false);
        bi.setBrokerId(brokerId("ID:broker-1"));
        bi.setBrokerURL("tcp://localhost:61616");
        bi.setPeerBrokerInfos(new BrokerInfo[] {peer});
        bi.setBrokerName("localhost");
        bi.setSlaveBroker(true);
        bi.setMasterBroker(true);
        bi.setFaultTolerantConfiguration(true);
        bi.setDuplexConnection(true);
        bi.setNetworkConnection(true);
        bi.setConnectionId(1L << 40);
        bi.setBrokerUploadUrl("http://upload");
        bi.setNetworkProperties("a=b");
        l.add(bi);

        ConnectionInfo ci = cmd(new ConnectionInfo(connId()), 2, true);
        ci.setClientId("client-1");
        ci.setPassword("secret");
        ci.setUserName("alice");
        ci.setBrokerPath(new BrokerId[] {brokerId("b1")});
        ci.setBrokerMasterConnector(true);
        ci.setManageable(true);
        ci.setClientMaster(true);
        ci.setFaultTolerant(true);
        ci.setFailoverReconnect(true);
        ci.setClientIp("tcp://127.0.0.1:5555");
        l.add(ci);

        l.add(cmd(new SessionInfo(sessId()), 3, true));

        ConsumerInfo co = cmd(new ConsumerInfo(consId()), 4, true);
        co.setBrowser(true);
        co.setDestination(topic());
        co.setPrefetchSize(1000);
        co.setMaximumPendingMessageLimit(-1);
        co.setDispatchAsync(true);
        co.setSelector("color = 'red'");
        co.setClientId("client-1");
        co.setSubscriptionName("sub-1");
        co.setNoLocal(true);
        co.setExclusive(true);
        co.setRetroactive(true);
        co.setPriority((byte) 5);
        co.setBrokerPath(new BrokerId[] {brokerId("b1")});
        co.setNetworkSubscription(true);
        co.setOptimizedAcknowledge(true);
        co.setNoRangeAcks(true);
        co.setNetworkConsumerPath(new ConsumerId[] {consId()});
        l.add(co);

        ProducerInfo pi = cmd(new ProducerInfo(prodId()), 5, true);
        pi.setDestination(queue());
        pi.setBrokerPath(new BrokerId[] {brokerId("b1")});
        pi.setDispatchAsync(true);
        pi.setWindowSize(65536);
        l.add(pi);

        l.add(cmd(new TransactionInfo(connId(), localTx(), TransactionInfo.BEGIN), 6, false));
        l.add(cmd(new TransactionInfo(connId(), xaTx(), TransactionInfo.PREPARE), 7, true));

        DestinationInfo di = cmd(new DestinationInfo(connId(), DestinationInfo.ADD_OPERATION_TYPE, tempQueue()), 8, true);
        di.setTimeout(300);
        di.setBrokerPath(new BrokerId[] {brokerId("b1")});
        l.add(di);

        RemoveSubscriptionInfo rs = cmd(new RemoveSubscriptionInfo(), 9, true);
        rs.setConnectionId(connId());
        rs.setSubcriptionName("sub-1");
        rs.setClientId("client-1");
        l.add(rs);

        l.add(cmd(new KeepAliveInfo(), 10, false));
        l.add(cmd(new ShutdownInfo(), 11, false));

        RemoveInfo ri = cmd(new RemoveInfo(consId()), 12, true);
        ri.setLastDeliveredSequenceId(1L << 40);
        l.add(ri);

        ControlCommand cc = cmd(new ControlCommand(), 13, false);
        cc.setCommand("shutdown");
        l.add(cc);

        l.add(cmd(new FlushCommand(), 14, false));

        ConnectionError ce = cmd(new ConnectionError(), 15, false);
        ce.setException(throwable());
        ce.setConnectionId(connId());
        l.add(ce);

        ConsumerControl ctl = cmd(new ConsumerControl(), 16, false);
        ctl.setDestination(queue());
        ctl.setClose(true);
        ctl.setConsumerId(consId());
        ctl.setPrefetch(10);
        ctl.setFlush(true);
        ctl.setStart(true);
        ctl.setStop(true);
        l.add(ctl);

        ConnectionControl cctl = cmd(new ConnectionControl(), 17, false);
        cctl.setClose(true);
        cctl.setExit(true);
        cctl.setFaultTolerant(true);
        cctl.setResume(true);
        cctl.setSuspend(true);
        cctl.setConnectedBrokers("tcp://a:61616");
        cctl.setReconnectTo("tcp://b:61616");
        cctl.setRebalanceConnection(true);
        cctl.setToken(new byte[] {7, 8});
        l.add(cctl);

        l.add(cmd(new ProducerAck(prodId(), 4096), 18, false));

        MessagePull mp = cmd(new MessagePull(), 19, false);
        mp.setConsumerId(consId());
        mp.setDestination(queue());
        mp.setTimeout(-1);
        mp.setCorrelationId("pull-1");
        MessageId pulled = msgId(9);
        pulled.setTextView("ID:custom-9");
        mp.setMessageId(pulled);
        l.add(mp);

        ActiveMQTextMessage dispatched = fill(new ActiveMQTextMessage(), 0);
        dispatched.setText("dispatched");
        MessageDispatch md = cmd(new MessageDispatch(), 20, false);
        md.setConsumerId(consId());
        md.setDestination(queue());
        md.setMessage(dispatched);
        md.setRedeliveryCounter(1);
        l.add(md);

        MessageAck ack = cmd(new MessageAck(), 21, true);
        ack.setDestination(queue());
        ack.setTransactionId(localTx());
        ack.setConsumerId(consId());
        ack.setAckType(MessageAck.POISON_ACK_TYPE);
        ack.setFirstMessageId(msgId(1));
        ack.setLastMessageId(msgId(2));
        ack.setMessageCount(2);
        ack.setPoisonCause(throwable());
        l.add(ack);

        l.add(fill(new ActiveMQMessage(), 22));

        ActiveMQBytesMessage bm = fill(new ActiveMQBytesMessage(), 23);
        bm.writeBytes(new byte[] {1, 2, 3, 0, (byte) 0xfe});
        bm.reset();
        l.add(bm);

        ActiveMQMapMessage mm = fill(new ActiveMQMapMessage(), 24);
        mm.setObject("n", Integer.valueOf(1));
        mm.setObject("s", "text");
        mm.setObject("nested", new HashMap<String, Object>(Map.of("k", Long.valueOf(2))));
        mm.setObject("list", new ArrayList<Object>(List.of("x", Boolean.FALSE)));
        l.add(mm);

        ActiveMQObjectMessage om = fill(new ActiveMQObjectMessage(), 25);
        om.setContent(new ByteSequence(new byte[] {(byte) 0xac, (byte) 0xed, 0, 5, 't', 0}));
        l.add(om);

        ActiveMQStreamMessage sm = fill(new ActiveMQStreamMessage(), 26);
        sm.writeBoolean(true);
        sm.writeByte((byte) 1);
        sm.writeChar('c');
        sm.writeShort((short) 2);
        sm.writeInt(3);
        sm.writeLong(4);
        sm.writeFloat(5.5f);
        sm.writeDouble(6.5);
        sm.writeString("seven");
        sm.writeBytes(new byte[] {8});
        sm.writeObject(null);
        sm.reset();
        l.add(sm);

        ActiveMQTextMessage tm = fill(new ActiveMQTextMessage(), 27);
        tm.setText("h\u00e9llo \ud83d\ude00 \u0000 world");
        l.add(tm);

        ActiveMQTextMessage ctm = fill(new ActiveMQTextMessage(), 28);
        ctm.setText("compressed compressed compressed compressed");
        ctm.compress();
        l.add(ctm);

        ActiveMQBytesMessage cbm = fill(new ActiveMQBytesMessage(), 29);
        cbm.writeBytes("compressed bytes compressed bytes".getBytes("UTF-8"));
        cbm.compress();
        l.add(cbm);

        ActiveMQMapMessage cmm = fill(new ActiveMQMapMessage(), 30);
        cmm.setObject("k", "compressed map");
        cmm.compress();
        l.add(cmm);

        Response r = cmd(new Response(), 31, false);
        r.setCorrelationId(2);
        l.add(r);

        ExceptionResponse er = cmd(new ExceptionResponse(), 32, false);
        er.setCorrelationId(3);
        er.setException(throwable());
        l.add(er);

        DataResponse dr = cmd(new DataResponse(), 33, false);
        dr.setCorrelationId(4);
        dr.setData(consId());
        l.add(dr);

        IntegerResponse ir = cmd(new IntegerResponse(), 34, false);
        ir.setCorrelationId(5);
        ir.setResult(-3);
        l.add(ir);

        TransactionInfo commit = cmd(new TransactionInfo(connId(), localTx(), TransactionInfo.COMMIT_ONE_PHASE), 35, true);
        l.add(commit);
        l.add(cmd(new RemoveInfo(tempTopic()), 36, true));
        return l;
    }

    // ---- the canonical dump ----

    static String dump(Object o) throws Exception {
        StringBuilder sb = new StringBuilder();
        dump(o, sb);
        return sb.toString();
    }

    static String hex(byte[] b, int off, int len) {
        StringBuilder sb = new StringBuilder("0x");
        for (int i = off; i < off + len; i++) {
            sb.append(String.format("%02x", b[i] & 0xff));
        }
        return sb.toString();
    }

    static byte[] inflate(byte[] b) throws IOException {
        InflaterInputStream in = new InflaterInputStream(new ByteArrayInputStream(b));
        return in.readAllBytes();
    }

    static void dumpTyped(Object v, StringBuilder sb) throws Exception {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof Map) {
            sb.append("Map{");
            for (Map.Entry<?, ?> e : new TreeMap<Object, Object>((Map<?, ?>) v).entrySet()) {
                sb.append(e.getKey()).append('=');
                dumpTyped(e.getValue(), sb);
                sb.append(';');
            }
            sb.append('}');
        } else if (v instanceof List) {
            sb.append("List[");
            for (Object x : (List<?>) v) {
                dumpTyped(x, sb);
                sb.append(';');
            }
            sb.append(']');
        } else if (v instanceof byte[]) {
            sb.append("bytes:").append(hex((byte[]) v, 0, ((byte[]) v).length));
        } else if (v instanceof UTF8Buffer) {
            sb.append("String:").append(v);
        } else if (v instanceof Float || v instanceof Double) {
            sb.append(v.getClass().getSimpleName()).append(':').append(v);
        } else {
            sb.append(v.getClass().getSimpleName()).append(':').append(v);
        }
    }

    static void dumpThrowable(Throwable t, StringBuilder sb) {
        if (t == null) {
            sb.append("null");
            return;
        }
        sb.append("Throwable{").append(t.getClass().getName()).append(": ").append(t.getMessage());
        if (stackTraces) {
            sb.append(" at ");
            for (StackTraceElement e : t.getStackTrace()) {
                sb.append(e.getClassName()).append('.').append(e.getMethodName()).append('(')
                  .append(e.getFileName()).append(':').append(e.getLineNumber()).append(");");
            }
            sb.append(" cause=");
            dumpThrowable(t.getCause(), sb);
        }
        sb.append('}');
    }

    static final Set<String> SKIP = Set.of("properties", "size", "text", "map", "readOnlyBody", "readOnlyProperties");

    static void dump(Object o, StringBuilder sb) throws Exception {
        if (o == null) {
            sb.append("null");
            return;
        }
        if (o instanceof Throwable) {
            dumpThrowable((Throwable) o, sb);
            return;
        }
        if (o instanceof Object[]) {
            sb.append('[');
            for (Object x : (Object[]) o) {
                dump(x, sb);
                sb.append(';');
            }
            sb.append(']');
            return;
        }
        if (o instanceof byte[]) {
            sb.append(hex((byte[]) o, 0, ((byte[]) o).length));
            return;
        }
        if (o instanceof String) {
            sb.append('"').append(o).append('"');
            return;
        }
        if (!o.getClass().getName().startsWith("org.apache.activemq.command.")) {
            sb.append(o);
            return;
        }
        List<Class<?>> chain = new ArrayList<>();
        for (Class<?> c = o.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
            chain.add(0, c);
        }
        sb.append(o.getClass().getSimpleName()).append('{');
        for (Class<?> c : chain) {
            for (Field f : c.getDeclaredFields()) {
                int mod = f.getModifiers();
                if (Modifier.isStatic(mod) || SKIP.contains(f.getName())) {
                    continue;
                }
                if (Modifier.isTransient(mod) && !f.getName().equals("recievedByDFBridge")) {
                    continue;
                }
                f.setAccessible(true);
                Object v = f.get(o);
                sb.append(f.getName()).append('=');
                if (v instanceof ByteSequence) {
                    ByteSequence bs = (ByteSequence) v;
                    byte[] b = Arrays.copyOfRange(bs.getData(), bs.getOffset(), bs.getOffset() + bs.getLength());
                    if (f.getName().equals("marshalledProperties")) {
                        dumpTyped(MarshallingSupport.unmarshalPrimitiveMap(new DataInputStream(new ByteArrayInputStream(b))), sb);
                    } else if (f.getName().equals("content")) {
                        Message m = (Message) o;
                        if (m.isCompressed()) {
                            if (m instanceof ActiveMQBytesMessage) {
                                // as ActiveMQBytesMessage.decompress: the prefix is the body's length
                                int n = new DataInputStream(new ByteArrayInputStream(b)).readInt();
                                b = Arrays.copyOf(inflate(Arrays.copyOfRange(b, 4, b.length)), n);
                            } else {
                                b = inflate(b);
                            }
                        }
                        if (m instanceof ActiveMQMapMessage) {
                            dumpTyped(MarshallingSupport.unmarshalPrimitiveMap(new DataInputStream(new ByteArrayInputStream(b))), sb);
                        } else {
                            sb.append(hex(b, 0, b.length));
                        }
                    } else {
                        sb.append(hex(b, 0, b.length));
                    }
                } else {
                    dump(v, sb);
                }
                sb.append(", ");
            }
        }
        sb.append('}');
    }
}
