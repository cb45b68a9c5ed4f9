// Package limits holds the defaults of the broker's limits, written once: the broker
// falls back to them when an Options field is zero, and config gives them to the keys
// of systemUsage that a file leaves out. It imports nothing, so config can use it
// without depending on the broker.
package limits

const (
	// DefaultMemoryUsage bounds the bytes of messages the broker holds in memory
	// (systemUsage.memoryUsage): 1 GiB.
	DefaultMemoryUsage = 1 << 30
	// DefaultMaxTransactionSize bounds the bytes one open transaction holds until
	// COMMIT: 64 MiB.
	DefaultMaxTransactionSize = 64 << 20
	// DefaultMaxTransactionsPerConnection bounds the transactions one connection may
	// have open at once.
	DefaultMaxTransactionsPerConnection = 64
	// DefaultMaxSubscriptionsPerConnection bounds the subscriptions (queue browsers
	// included) one connection may have at once.
	DefaultMaxSubscriptionsPerConnection = 10000
	// DefaultMaxDurableSubscriptions bounds the durable topic subscriptions clients
	// may create, broker-wide (ActiveMQ has no limit).
	DefaultMaxDurableSubscriptions = 10000
	// DefaultSchedulerMemoryLimit is how many bytes of persistent scheduled messages
	// the scheduler keeps in memory; the later ones wait in the store. 32 MiB.
	DefaultSchedulerMemoryLimit = 32 << 20
	// DefaultMaxDestinations bounds the destinations clients may create (advisory
	// topics not counted). ActiveMQ has no count, but its heap and a thread per queue
	// stop it far below this; an empty destination here costs about 2.5 KB, so this
	// bounds a runaway client to a few GB.
	DefaultMaxDestinations = 1_000_000

	// The quotas of one user (plugins) and of one connection (systemUsage), which let
	// no tenant take all of a broker-wide limit; one ordinary application never meets
	// them. A user's count spans its connections.

	// DefaultMaxConnectionsPerUser bounds each authenticated user's live connections.
	DefaultMaxConnectionsPerUser = 100
	// DefaultMaxDestinationsPerUser bounds the queues and topics each authenticated
	// user's SENDs and SUBSCRIBEs create (while they exist).
	DefaultMaxDestinationsPerUser = 10000
	// DefaultMaxDurableSubscriptionsPerUser bounds the durable subscriptions each
	// authenticated user creates (while they exist).
	DefaultMaxDurableSubscriptionsPerUser = 1000
	// DefaultMaxUnackedBytesPerUser bounds the bytes of queue messages dispatched to
	// each authenticated user's consumers and not yet acknowledged: 256 MiB.
	DefaultMaxUnackedBytesPerUser = 256 << 20
	// DefaultMaxTemporaryDestinationsPerConnection bounds the temporary queues and
	// topics one connection has at once.
	DefaultMaxTemporaryDestinationsPerConnection = 1000
)
