package loadtest

import "errors"

var (
	// ErrOptions reports options that cannot describe a run; the wrapping
	// error names the option.
	ErrOptions = errors.New("loadtest: invalid options")

	// ErrConnect reports a failure to connect or subscribe before the start
	// barrier; no message has been sent.
	ErrConnect = errors.New("loadtest: connect")

	// ErrConnection reports a connection that failed during the run: a send
	// or ack that the client could not complete, an ERROR frame, or a closed
	// socket.
	ErrConnection = errors.New("loadtest: connection failed")

	// ErrLost is returned by Result.Failure when expected deliveries never
	// arrived.
	ErrLost = errors.New("loadtest: messages lost")

	// ErrDuplicated is returned by Result.Failure when a message was
	// delivered more often than expected.
	ErrDuplicated = errors.New("loadtest: messages duplicated")

	// ErrStore reports that the store directory (Options.DataDir) could
	// not be measured during the durable scenario.
	ErrStore = errors.New("loadtest: store size")

	// ErrCleanup is returned by Result.Failure when durable subscriptions
	// the scenario created could not be deleted; they stay on the broker.
	ErrCleanup = errors.New("loadtest: durable subscriptions not deleted")

	// ErrUnsent is returned by Result.Failure when the run stopped before
	// the producers had sent every message.
	ErrUnsent = errors.New("loadtest: not every message was sent")

	// ErrRefused is returned by Result.Failure when the broker answered
	// connects of the connect scenario with an ERROR frame.
	ErrRefused = errors.New("loadtest: connects refused")

	// ErrAccepted is returned by Result.Failure when the connect scenario
	// expected every connect to be refused (Options.ExpectRefused) and the
	// broker accepted some.
	ErrAccepted = errors.New("loadtest: connects accepted, refusal expected")

	// ErrConnectsFailed is returned by Result.Failure when connects of the
	// connect scenario failed other than by a refusal: a failed dial, a
	// timeout, a socket closed without a frame, no RECEIPT for the
	// DISCONNECT.
	ErrConnectsFailed = errors.New("loadtest: connects failed")

	// ErrConnectsUnmade is returned by Result.Failure when the connect
	// scenario stopped before every connect was made.
	ErrConnectsUnmade = errors.New("loadtest: not every connect was made")
)
