package pgstore

import "errors"

var (
	// ErrOption wraps (inside a *setting.Error) every invalid option of the jdbc block,
	// and is returned by Open for invalid Options.
	ErrOption = errors.New("pgstore: invalid option")
	// ErrInvalid is returned by Commit for a batch holding an operation the store cannot
	// apply: an Add without Dest, with Seq 0 or above math.MaxInt64, a destination name
	// longer than 250 characters (the CONTAINER column), a text that is not UTF-8 or
	// holds a NUL byte, an AddSub whose Dest is not a topic. Nothing of such a batch is
	// applied.
	ErrInvalid = errors.New("pgstore: invalid operation")
	// ErrNoSchema is returned by Open when the tables do not exist and
	// createTablesOnStartup is false.
	ErrNoSchema = errors.New("pgstore: tables not found")
	// ErrSchemaVersion is returned by Open for tables written by a newer version of the
	// broker (or ones it did not create, such as ActiveMQ's own), which it refuses to
	// touch.
	ErrSchemaVersion = errors.New("pgstore: unsupported schema version")
	// ErrUnavailable wraps the error of a commit, scan or open that could not reach the
	// database (or lost the connection during the transaction). The broker reports it to
	// the producer; later commits succeed once the database is back.
	ErrUnavailable = errors.New("pgstore: database unavailable")
	// ErrLockLost is returned by every commit once the lease taken by Lock has been lost
	// (another broker may be master now); the Lost channel is closed at the same time.
	ErrLockLost = errors.New("pgstore: lost the database lock")
	// ErrCorrupt marks a stored message (MSG column) that cannot be decoded.
	ErrCorrupt = errors.New("pgstore: corrupt message")
)
