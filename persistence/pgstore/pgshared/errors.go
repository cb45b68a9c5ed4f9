package pgshared

import (
	"errors"

	"github.com/activemq-go/broker/persistence/pgstore"
)

var (
	// ErrOption is returned by Open for invalid Options.
	ErrOption = errors.New("pgshared: invalid option")
	// ErrInvalid is returned by Send for a message the tables cannot hold: no Dest, a
	// Dest longer than 250 characters, or a JMSXGroupID that is not valid UTF-8 or
	// holds a NUL byte. Nothing of such a call is stored.
	ErrInvalid = errors.New("pgshared: invalid message")
	// ErrNoSchema is returned by Open when the tables do not exist and SkipCreateTables
	// is set. It is pgstore's: the jdbc adapter checks all its tables alike.
	ErrNoSchema = pgstore.ErrNoSchema
	// ErrSchemaVersion is returned by Open for tables written by a newer version of the
	// broker, or ones it did not create. It is pgstore's.
	ErrSchemaVersion = pgstore.ErrSchemaVersion
	// ErrNodeLost is returned by Claim once the node has lost its registration: its
	// heartbeat went unanswered for LeaseTimeout (by this process's clock) or found its
	// row gone or taken by a newer epoch (the reaper declared the node dead, or another
	// process started with the same NodeID). Its leases are, or will soon be, given to
	// other nodes; the node must be closed and opened again (a new epoch). Lost is
	// closed at the same moment.
	ErrNodeLost = errors.New("pgshared: node lost its registration")
	// ErrClosed is returned by every call after Close.
	ErrClosed = errors.New("pgshared: node closed")
)
