// Package loadtest drives any STOMP broker with producers and consumers and
// measures throughput, end-to-end latency and delivery correctness.
//
// It only speaks plain STOMP through github.com/go-stomp/stomp/v3, so the same
// run can be pointed at this project's broker and at Apache ActiveMQ and the
// figures compared side by side.
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
// # Why a receipted BEGIN/ABORT after SUBSCRIBE
//
// go-stomp's client routes the RECEIPT of a receipted SUBSCRIBE to the new
// subscription, which then closes itself, and go-stomp's own server never
// answers a SUBSCRIBE receipt. A receipt on a later frame of the same
// connection proves the broker has processed the SUBSCRIBE before it, because
// brokers handle one connection's frames in order.
package loadtest
