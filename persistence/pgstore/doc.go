// Package pgstore is the "jdbc" persistence adapter: the broker's messages and durable
// subscriptions in PostgreSQL, through github.com/jackc/pgx/v5 (pgxpool), in tables
// that play the roles of ActiveMQ's JDBC store (ACTIVEMQ_MSGS, ACTIVEMQ_ACKS,
// ACTIVEMQ_LOCK). Several brokers may share one database: a lease row elects the one
// that serves (ActiveMQ's JDBC master/slave with the lease-database-locker).
//
// # Configuration
//
//	persistenceAdapter:
//	  jdbc:
//	    url: jdbc:postgresql://127.0.0.1:5432/activemq   # or postgres://... / postgresql://...
//	    user: activemq                                    # overrides the URL's
//	    password: ${BROKER_JDBC_PASSWORD}                 # overrides the URL's
//	    maxConnections: 10              # pool size, 2..1000
//	    createTablesOnStartup: true     # false: fail with ErrNoSchema if they are missing
//	    tablePrefix: ACTIVEMQ_
//	    lockKeepAlivePeriod: 5s         # lease renewal; the lease lasts 3 periods
//	    lockAcquireSleepInterval: 5s    # how often a waiting broker retries (default: the period)
//	    leaseHolderId: orders-broker    # name in the lock row (default "broker")
//	    useLock: true                   # false: Lock returns at once, no lease, no fencing
//	    cleanupPeriod: 300000           # ActiveMQ's; accepted, no effect (acks delete at once)
//
// A jdbc:postgresql: URL loses its "jdbc:" and its pgjdbc parameters are translated:
// user and password are taken out, ssl=true becomes sslmode=verify-full, currentSchema
// search_path, ApplicationName application_name, connectTimeout and loginTimeout
// connect_timeout; driver-only ones (tcpKeepAlive, prepareThreshold, socketTimeout, ...)
// are dropped. Other parameters pass to pgx as libpq settings. The password is never
// put into a connection string (it is set on the parsed configuration), and every
// error and log text of the package has it removed, raw or URL-escaped.
//
// # Tables
//
// Names are unquoted (PostgreSQL folds them to lower case, as ActiveMQ's); <p> is the
// table prefix.
//
//	<p>SCHEMA_VERSION (ID smallint PK CHECK (ID = 1), VERSION integer, CREATED timestamptz)
//	<p>MSGS        (ID bigint, CONTAINER varchar(250), MSGID_PROD text, MSGID_SEQ bigint,
//	                EXPIRATION bigint, MSG bytea, PRIORITY bigint, XID varchar(250),
//	                SIZE bigint, PRIMARY KEY (CONTAINER, ID))
//	<p>ACKS        (SUB_ID bigint PK, CONTAINER varchar(250), CLIENT_ID text, SUB_NAME text,
//	                SELECTOR text, CREATED bigint, LAST_ACKED_ID bigint,
//	                UNIQUE (CLIENT_ID, SUB_NAME))
//	<p>SUB_PENDING (SUB_ID bigint, ID bigint, CONTAINER varchar(250),
//	                PRIMARY KEY (SUB_ID, ID)); index <p>SUB_PENDING_CIDX (CONTAINER, ID)
//	<p>DESTS       (CONTAINER varchar(250) PK, LAST_SEQ bigint)
//	<p>LOCK        (ID bigint PK, TIME bigint, BROKER_NAME varchar(250)); one row, ID = 1
//
// MSGS holds one row per stored message; CONTAINER is the qualified destination
// ("queue://ORDERS"), ID the broker's sequence number, which (unlike ActiveMQ's global
// ID) is per destination, hence the key (CONTAINER, ID). MSG is the message in the
// encoding below; SIZE is len(Body), for the statistics; MSGID_PROD/MSGID_SEQ (the
// message id split as ActiveMQ does), EXPIRATION and PRIORITY are informational. XID is
// always NULL (transactions are atomic batches, never prepared).
//
// ACKS holds the durable subscriptions; SUB_ID is a surrogate key the store assigns.
// A topic message is stored once; SUB_PENDING lists the subscriptions that still owe
// it an acknowledgement, and the message is deleted with its last pending row (a topic
// message is never stored without one). LAST_ACKED_ID is the highest seq the
// subscription acknowledged, for operators.
//
// DESTS keeps LastSeq, so that sequence numbers are never reused: LastSeq after a
// restart is max(DESTS.LAST_SEQ, highest MSGS.ID). The row is written only when that
// maximum could fall behind, i.e. by a transaction that deletes messages of the
// destination or adds one that is not stored; a transaction of new messages (the
// producer's hot path) does not touch it.
//
// SCHEMA_VERSION says which version of these tables the database holds (1). Open
// creates missing tables in one transaction under an advisory lock (brokers starting
// together), refuses a higher version, and refuses tables it did not create (a MSGS
// table without a version table: ActiveMQ's own) with ErrSchemaVersion.
//
// # Message encoding (MSG, format 1 and 2)
//
//	byte     format version (1; 2 for a message with a typed part)
//	byte     flags: bit 0 Persistent; the others must be 0
//	byte     Priority
//	varint   Expires, then Timestamp (zig-zag)
//	uvarint  RedeliveryCount
//	format 2 only: uvarint length, then the typed part (the JMS body kind and typed
//	         properties: persistence.AppendTyped's encoding, version 1)
//	uvarint  n = 1 + len(Headers): the ID and every header key and value
//	n uvarint lengths, then the n strings' bytes back to back
//	rest     Body
//
// Dest, Seq and Subs are columns and rows, not part of MSG. A message without a typed
// part is written in format 1, byte for byte as before format 2. A reader refuses an
// unknown version or flag (ErrCorrupt: a build that knows only format 1 refuses
// format 2 rather than dropping the typed part) and checks every length before
// allocating.
//
// # Writes: group commit
//
// Batches are recorded in memory (Add encodes the message at once: that is the copy
// the contract promises) and handed to one writer goroutine. The writer takes every
// batch queued while it was busy (up to 1024 batches or 16 MiB) and applies them in one
// transaction: consecutive operations of one kind become one set-based statement over
// unnest() arrays (INSERT of new messages, DELETE ... USING for acks, ...), and all
// statements go in one pgx.Batch, without BEGIN: PostgreSQL runs one pipeline up to its
// Sync as one implicit transaction, committed at the Sync, rolled back whole by any
// error, so a group costs one round trip however many batches it holds. The writer
// then updates the in-memory state (destinations, LastSeq, counters, subscriptions),
// and completes every batch of the group.
//
// If the transaction fails on an SQL error, each batch of the group is retried alone,
// so one bad batch fails alone. If it fails on the connection (database down, network),
// every batch of the group fails with ErrUnavailable, and later commits succeed once
// pgxpool reconnects. If the connection failed after the statements were sent, the
// COMMIT may have happened all the same: the state is reloaded from the tables before
// the next transaction, and a producer that resends such a message stores it twice
// (at-least-once, as with any database whose acknowledgement is lost). A transaction never runs longer than CommitTimeout
// (30s). A batch is applied whole or not at all: Stats and Recover show state after
// COMMIT only.
//
// Durability. Sync returns once the transaction is committed with the server's
// synchronous_commit (on by default: the WAL is flushed, to the standbys too if
// synchronous replication is configured). Async returns once the transaction is
// committed and visible, but a group made only of Async batches runs with
// synchronous_commit = off (set_config(..., true): for that transaction only, like SET
// LOCAL): PostgreSQL acknowledges
// before its WAL flush, and a crash of the database server may lose the last such
// commits (at most about three wal_writer_delay, 600 ms by default), never part of
// one, never a Sync commit. A broker crash loses nothing committed either way. A group
// holding any Sync batch is committed synchronously.
//
// # Reads
//
// Stats is O(1), from counters loaded at Open (one GROUP BY over MSGS) and kept by the
// writer. Recover reports that state; after Lock took the lease it is loaded again
// first. Scan and ScanSub page with WHERE CONTAINER = $1 AND ID > $2 ORDER BY ID LIMIT
// 256 (ScanSub through SUB_PENDING), calling fn while the page's rows are read on a
// pooled connection, with one reused Message whose Body points into the driver's
// buffer: fn must clone what it keeps, and should not block.
//
// # Master election (persistence.Locker)
//
// The <p>LOCK row is a lease, ActiveMQ's lease-database-locker, timed by the database's
// clock (clock_timestamp(), in milliseconds), so the brokers' clocks never matter. With
// P = lockKeepAlivePeriod and a lease length L = 3P:
//
//   - Lock tries UPDATE LOCK SET BROKER_NAME = me, TIME = now + L WHERE ID = 1 AND
//     (TIME IS NULL OR TIME < now OR BROKER_NAME = me); while that changes no row it logs
//     "waiting for the lock held by X" once (X the holder id) and tries again every
//     lockAcquireSleepInterval (default P), until ctx ends or the store closes.
//   - The holder renews every P with UPDATE ... SET TIME = now + L WHERE BROKER_NAME = me
//     AND TIME > now, on a connection of its own (renewals never wait behind scans). A
//     renewal that fails for the connection is retried every P/2; if none succeeds
//     before the lease would expire (by the local clock, counted from before the last
//     successful renewal was sent, so never later than the database's expiry), or one
//     finds the lease gone, Lost is closed and every commit fails with ErrLockLost.
//   - Fencing: while the lease is held, every group-commit transaction starts with
//     SELECT ... FROM LOCK WHERE BROKER_NAME = me AND TIME > now FOR SHARE, failing the
//     whole transaction if the lease is not ours. FOR SHARE conflicts with the
//     take-over's UPDATE, so a commit either completes before another broker takes the
//     lease, or fails: a deposed master can never write, even before it notices.
//   - Close (after the last commit) clears the row, so a waiting broker takes over at
//     its next poll (within lockAcquireSleepInterval), not after the lease.
//   - Holder id: leaseHolderId@host:pid:random, unique per process.
//
// Timings with the default P = 5s: a crashed or partitioned master is replaced within
// L + lockAcquireSleepInterval = 20s; it stops itself (Lost) at most L = 15s after its
// last successful renewal, before the lease expires for the others; a database outage
// shorter than about 2P is ridden out without losing the lock. Commits before Lock
// are not fenced: the broker calls Lock before it serves.
//
// # Unreachable database
//
// Open retries while the database cannot be reached, logging "database unreachable,
// retrying in Xs" with its host:port (never the password), doubling the pause from
// ConnectRetryInterval (1s) up to 30s, until ctx ends (ErrUnavailable). A database
// that refuses us (authentication, unknown database) fails at once.
package pgstore
