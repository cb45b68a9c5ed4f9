package migrate

import "errors"

// Sentinel errors.
var (
	// ErrPattern: a --queue pattern that is empty or names a topic.
	ErrPattern = errors.New("migrate: invalid queue pattern")
	// ErrReceipt: the target answered with a receipt the mover never asked for, or out
	// of order; nothing is acknowledged on the source after it.
	ErrReceipt = errors.New("migrate: unexpected receipt from the target")
)
