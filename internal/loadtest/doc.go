// Package loadtest drives any STOMP broker with producers and consumers and
// measures throughput, end-to-end latency and delivery correctness.
//
// It only speaks plain STOMP, so the same run can be pointed at this project's
// broker and at Apache ActiveMQ and the figures compared side by side. By
// default it uses a STOMP client of its own (wire.go) that spends a few
// microseconds of CPU per message; Options.Client "go-stomp" runs the
// producers and consumers on github.com/go-stomp/stomp/v3's client instead,
// which costs several times that. Where the tool shares the machine's cores
// with the broker, the client's share caps the rate a run can show, the
// same for either broker, so ratios between brokers shrink with a heavier
// client.
//
// # A run
//
//  1. Every consumer connects, subscribes, and confirms the subscription with a
//     receipted no-op (BEGIN, then ABORT with a receipt; see below).
//  2. Every producer connects.
//  3. All producers start together (the start barrier) and send their share
//     of Options.Messages.
//  4. The run stops when every expected message has arrived, when nothing has
//     arrived for Options.IdleTimeout, at Options.MaxDuration, on a connection
//     error, or when the context ends.
//
// # Message headers
//
// Every SEND carries
//
//	bench-run  random id of the run; messages with another id are counted as foreign
//	bench-p    producer index, 0-based
//	bench-seq  sequence within that producer, 0-based
//	bench-ts   unix nanoseconds when the producer handed the frame to the client
//
// and a body of exactly Options.Size bytes. Latency is the consumer's receive
// time minus bench-ts, so producers and consumers must share a clock (run the
// tool on one machine).
//
// # Accounting
//
// Expected deliveries are the messages actually sent, times the number of
// consumers for a topic. A bitmap per producer (one shared by all consumers for
// a queue, one per consumer for a topic) finds duplicates at once and lost
// messages at the end. Out-of-order is counted per consumer and producer, and
// only where an order is promised: a queue with one consumer, or a topic.
//
// # Durable catch-up
//
// With Options.DurableSubscribers N, Run measures what offline durable
// subscribers cost a broker instead:
//
//  1. N connections with client-ids <ClientIDPrefix>-0 .. -<N-1> each
//     SUBSCRIBE to the topic with activemq.subscriptionName:sub and
//     DISCONNECT, both receipted: N durable subscriptions, all offline.
//  2. The files below Options.DataDir, if set, are measured.
//  3. The producers publish every message persistently. The last send of
//     each is receipted, so once they are done the broker has stored all.
//  4. The files are measured again: the store's growth, also as copies of
//     the payload (messages × size; 1.0 = one copy).
//  5. Each subscriber connects again as its client-id, subscribes with the
//     same name and drains its backlog: one after the other, or all at once
//     (Options.Catchup). Its rate runs from its SUBSCRIBE to its last
//     message. Each must get every message once, in publish order; the
//     accounting is that of a topic.
//  6. Unless Options.KeepDurable, each subscription is deleted: UNSUBSCRIBE
//     with activemq.subscriptionName on a fresh connection as its client-id
//     (ActiveMQ refuses to delete a subscription with a consumer attached).
//
// Steps 1 and 6 always use the raw client, whatever Options.Client says. A
// broker may keep a client-id for a moment after answering the DISCONNECT
// of the connection that had it, so a CONNECT refused with
// "already connected" is retried. ActiveMQ deletes a durable subscription
// only with STOMP 1.1 or later: with 1.0 it takes the subscription name for
// the client-id.
//
// The store grows on disk by the blocks its files allocate, which can differ
// from their lengths: ActiveMQ's KahaDB creates each 32 MiB journal file at
// full length, sparse, and fills it. Both are measured (DirSize).
//
// # Connect rate
//
// With Options.Connects N, Run measures how fast a broker takes connections
// instead. Each connect opens a fresh TCP connection, sends CONNECT (with
// Options.Login and Options.Passcode when set, offering Options.Version or
// every version), waits for CONNECTED, sends DISCONNECT with a receipt,
// waits for the RECEIPT and closes. Options.Producers workers share the N
// connects, each making its share one after another. The frames are written
// as prepared bytes and read with a small buffer reused by the worker, so
// the tool's CPU per connect is small and the broker's cost dominates;
// Options.Client is not used. A connect must be done within 30 s from its
// dial: a broker may delay its answer to a failed login on purpose.
//
// The rate is the connects made over the time from the start to the last
// one; the latency runs from CONNECT sent to CONNECTED received. A connect
// is refused when the broker answers CONNECT with an ERROR frame (the first
// one's message is kept), and failed for any other reason: a failed dial, a
// timeout, a socket closed without an answer, no RECEIPT for the
// DISCONNECT. With Options.ExpectRefused every connect must be refused
// instead, as a bad login is, to measure how fast a broker turns those
// away; the latency then runs to the ERROR frame.
//
// # Why a receipted BEGIN/ABORT after SUBSCRIBE
//
// go-stomp's client routes the RECEIPT of a receipted SUBSCRIBE to the new
// subscription, which then closes itself, and go-stomp's own server never
// answers a SUBSCRIBE receipt. A receipt on a later frame of the same
// connection proves the broker has processed the SUBSCRIBE before it, because
// brokers handle one connection's frames in order.
package loadtest
