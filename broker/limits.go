package broker

import (
	"fmt"

	"github.com/activemq-go/broker/destinations"

	"github.com/activemq-go/broker/broker/limits"
)

// quotas are what a connection may hold at once, and the durable subscriptions all may
// (systemUsage), with their defaults applied. The number of destinations is the
// registry's (package broker/registry), the memory and store flow control's.
type quotas struct {
	txBytes  int64 // maxTransactionSize, of one open transaction
	txs      int   // maxTransactionsPerConnection
	subs     int   // maxSubscriptionsPerConnection
	durables int   // maxDurableSubscriptions
	temps    int   // maxTemporaryDestinationsPerConnection
}

func newQuotas(o Options) quotas {
	l := quotas{txBytes: o.MaxTransactionSize, txs: o.MaxTransactionsPerConnection,
		subs: o.MaxSubscriptionsPerConnection, durables: o.MaxDurableSubscriptions}
	if l.txBytes <= 0 {
		l.txBytes = limits.DefaultMaxTransactionSize
	}
	if l.txs <= 0 {
		l.txs = limits.DefaultMaxTransactionsPerConnection
	}
	if l.durables <= 0 {
		l.durables = limits.DefaultMaxDurableSubscriptions
	}
	if l.subs <= 0 {
		l.subs = limits.DefaultMaxSubscriptionsPerConnection
	}
	if l.temps = o.MaxTemporaryDestinationsPerConnection; l.temps <= 0 {
		l.temps = limits.DefaultMaxTemporaryDestinationsPerConnection
	}
	return l
}

// begin refuses transaction tx of a connection that has open transactions already
// when that is the most allowed.
func (l *quotas) begin(tx string, open int) error {
	if open >= l.txs {
		return errorf(ErrTooManyTransactions, "BEGIN %s refused: this connection has %d transactions open, the most allowed (systemUsage maxTransactionsPerConnection); COMMIT or ABORT one first",
			tx, open)
	}
	return nil
}

// txRoom refuses a message of size bytes to transaction tx, which holds held bytes,
// past maxTransactionSize.
func (l *quotas) txRoom(tx string, held, size int64) error {
	if held+size > l.txBytes {
		return &Error{Message: fmt.Sprintf("transaction %s is over its size limit (systemUsage maxTransactionSize %d bytes): message not added; COMMIT or ABORT it", tx, l.txBytes), Err: ErrStoreFull}
	}
	return nil
}

// temp refuses the temporary destination d to a connection that has n already.
func (l *quotas) temp(d destinations.Name, n int) error {
	if n >= l.temps {
		return errorf(ErrTooManyDestinations, "this connection reached its quota of %d temporary destinations (systemUsage maxTemporaryDestinationsPerConnection): %s not created",
			l.temps, d)
	}
	return nil
}

// subscribe refuses one more subscription to a connection that has n.
func (l *quotas) subscribe(n int) error {
	if n >= l.subs {
		return errorf(ErrTooManySubscriptions, "SUBSCRIBE refused: this connection has %d subscriptions, the most allowed (systemUsage maxSubscriptionsPerConnection); UNSUBSCRIBE one first", n)
	}
	return nil
}
