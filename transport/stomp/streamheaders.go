package stomp

// Headers of stream messages (RabbitMQ's STOMP conventions for streams).
const (
	// headerStreamOffset on SUBSCRIBE picks where reading starts; on MESSAGE it is the
	// message's offset in its partition.
	headerStreamOffset = "x-stream-offset"
	// headerStreamPartition on MESSAGE is the message's partition.
	headerStreamPartition = "x-stream-partition"
	// headerConsumerGroup on SUBSCRIBE makes the subscriber a member of that group.
	headerConsumerGroup = "consumer-group"
)

// A SEND's partition-key header picks a stream message's partition; it is an
// application header kept with the message, which the stream reads by its name
// (destinations.PartitionKeyProperty), as it reads JMSXGroupID.
