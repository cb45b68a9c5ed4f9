// Package kafkaengine keeps the broker's stream destinations in Apache Kafka: it is
// the stream log (destinations/streamlog's Log, in its value types) over a Kafka
// cluster, reached with franz-go. It is the second engine beside the embedded
// kafkalog.Log; several broker nodes pointed at one cluster serve the same streams and
// consumer groups.
//
// # Topic names
//
// Each stream is one Kafka topic named Options.TopicPrefix followed by the log topic
// name the broker gives the stream (destinations' logTopicName: the broker topic name,
// with characters Kafka does not allow escaped reversibly). With the prefix "amq." the
// stream topic "orders" is the Kafka topic "amq.orders". Topics lists only the topics
// carrying the prefix, without it.
//
// # Writing
//
// Append produces a batch with acks=all and the idempotent producer (franz-go's
// defaults) to the partition the broker chose, and returns once every record is
// acknowledged, with the offset of the first. The broker picks the partition of a keyed
// message with PartitionForKey, which is Kafka's default partitioner (murmur2 of the
// key, as the Java producer and franz-go's sticky-key partitioner do), so a key lands
// where Kafka clients outside the broker put it; unkeyed messages go round-robin.
// Records keep their key, their headers (as Kafka record headers, in order) and the
// broker's timestamp (CreateTime). Offsets within one Append are dense unless the
// batch is split across produce requests (over 1 MB) while another node appends to
// the same partition.
//
// # Reading
//
// Read is a plain Fetch request (no consumer group, no fetch session) sent to the
// partition's leader and decoded by franz-go; Wait is the same request held by the
// broker (MaxWait) until a record at the offset exists. Offsets (oldest, next, by
// time) are ListOffsets requests. HighWatermark and NextOffset are both Kafka's high
// watermark: what every in-sync replica has.
//
// # Consumer groups
//
// A member that joins is one franz-go group client in the Kafka consumer group named
// TopicPrefix + log topic + "/" + group (one Kafka group per stream and broker group),
// with the cooperative-sticky balancer; its fetching is paused (the broker
// reads with Read), and the partitions Kafka assigns it are reported on its Changes
// channel. Group offsets are Kafka's committed offsets: CommitOffsets commits through
// a member of the group on this node (Kafka accepts commits of a non-empty group only
// from a member), or as a simple commit when the group is empty. A member that leaves
// stays in the Kafka group for at most leaveGrace, so that the final positions the
// broker commits as a subscription closes still count, then leaves it.
package kafkaengine
