package broker

import (
	"errors"
	"fmt"

	"github.com/activemq-go/broker/broker/conns"
	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/broker/registry"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/durable"
)

// Error is what the broker reports to a client: Message is the text for the STOMP
// ERROR frame's message header, Fatal says the connection must close after it, Retry
// (when set) is closed once a SEND held by producer flow control may succeed
// (package broker/flowcontrol). Destinations report their errors with the same type.
type Error = destinations.Error

func errorf(sentinel error, format string, args ...any) *Error {
	return &Error{Message: fmt.Sprintf(format, args...), Err: sentinel}
}

var (
	// ErrClosed is returned once the broker or the connection is shut down.
	ErrClosed = destinations.ErrClosed
	// ErrUnknownSubscription: UNSUBSCRIBE, ACK or NACK names a subscription that does not exist.
	ErrUnknownSubscription = errors.New("broker: unknown subscription")
	// ErrDuplicateSubscription: SUBSCRIBE reuses an id the connection already uses.
	ErrDuplicateSubscription = errors.New("broker: duplicate subscription id")
	// ErrDurableInUse: SUBSCRIBE or UNSUBSCRIBE names a durable subscription that has a
	// consumer attached.
	ErrDurableInUse = durable.ErrInUse
	// ErrUnknownAck: ACK or NACK names a message that is not awaiting acknowledgement.
	ErrUnknownAck = errors.New("broker: unexpected ACK")
	// ErrUnknownTransaction: COMMIT, ABORT, SEND, ACK or NACK names a transaction that is not open.
	ErrUnknownTransaction = errors.New("broker: unknown transaction")
	// ErrDuplicateTransaction: BEGIN names a transaction that is already open.
	ErrDuplicateTransaction = errors.New("broker: transaction already started")
	// ErrInvalidDestination: the destination cannot be used for this operation.
	ErrInvalidDestination = destinations.ErrInvalidDestination
	// ErrClientIDInUse: CONNECT with a client-id another live connection holds.
	ErrClientIDInUse = conns.ErrClientIDInUse
	// ErrStore: the store failed to make a message or acknowledgement durable.
	ErrStore = destinations.ErrStore
	// ErrTooManyTransactions: BEGIN on a connection that has as many transactions open
	// as Options.MaxTransactionsPerConnection allows.
	ErrTooManyTransactions = errors.New("broker: too many open transactions")
	// ErrTooManySubscriptions: SUBSCRIBE on a connection that has as many subscriptions
	// as Options.MaxSubscriptionsPerConnection allows.
	ErrTooManySubscriptions = errors.New("broker: too many subscriptions")
	// ErrTooManyDurableSubscriptions: a SUBSCRIBE would create a durable subscription
	// past Options.MaxDurableSubscriptions.
	ErrTooManyDurableSubscriptions = errors.New("broker: too many durable subscriptions")
	// ErrTooManyDestinations: a SEND or SUBSCRIBE would create a destination past
	// Options.MaxDestinations.
	ErrTooManyDestinations = registry.ErrTooManyDestinations
	// ErrInvalidPrefetch: SUBSCRIBE asks for a prefetch over the policy's maximum.
	ErrInvalidPrefetch = errors.New("broker: invalid prefetch")
	// ErrInvalidStreamOffset: SUBSCRIBE to a stream with an x-stream-offset header that
	// is none of the accepted forms.
	ErrInvalidStreamOffset = destinations.ErrInvalidStreamOffset
	// ErrNotFound: a management request names a destination, message, connection,
	// durable subscription or stream that does not exist.
	ErrNotFound = management.ErrNotFound
	// ErrDestinationInUse: removing a destination that has consumers, subscribers or
	// durable subscriptions.
	ErrDestinationInUse = destinations.ErrInUse
	// ErrNoCursor: a browse page starts after a message no longer waiting.
	ErrNoCursor = destinations.ErrNoCursor
	// ErrInvalidSelector: a subscription's, browser's or management request's selector
	// does not parse.
	ErrInvalidSelector = management.ErrInvalidSelector
	// ErrMemoryFull: a non-persistent message would pass a memory limit.
	ErrMemoryFull = destinations.ErrMemoryFull
	// ErrLeaseLost is the error of an ACK of a shared queue's message that this node
	// no longer held: it was given to another node (see package broker/sharedmode).
	ErrLeaseLost = destinations.ErrLeaseLost
)
