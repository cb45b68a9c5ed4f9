// Package pgshared is the storage engine of shared queues (persistenceAdapter.jdbc.mode:
// shared): several broker nodes serve the same queues over one PostgreSQL database,
// and each queue message is leased to one node at a time, which delivers it to one of
// its consumers. It is a library for the broker's queues; pgstore (the masterSlave
// mode) is untouched, and its tables may live beside these in one database.
//
// Unlike pgstore, no node assigns sequence numbers: the database does (an identity
// column), and a node learns of messages sent through other nodes from LISTEN/NOTIFY.
// Every deadline is judged by the database's clock (clock_timestamp(), in
// milliseconds), so the nodes' clocks never matter.
//
// # Tables
//
// Names are unquoted (PostgreSQL folds them to lower case); <p> is the table prefix
// (TablePrefix, default ACTIVEMQ_), followed by SQ_.
//
//	<p>SQ_VERSION (ID smallint PK CHECK (ID = 1), VERSION integer, CREATED timestamptz)
//	<p>SQ_MSGS    (ID bigint GENERATED ALWAYS AS IDENTITY PK, CONTAINER varchar(250),
//	               PRIORITY smallint, MSG bytea, GROUP_ID text NULL, EXPIRATION bigint,
//	               REDELIVERIES integer, OWNER text NULL, EPOCH bigint NULL,
//	               LEASED_AT bigint NULL)
//	    index <p>SQ_MSGS_AVAIL    (CONTAINER, PRIORITY DESC, ID) WHERE OWNER IS NULL
//	    index <p>SQ_MSGS_LEASED   (OWNER, EPOCH) WHERE OWNER IS NOT NULL
//	    index <p>SQ_MSGS_EXPIRING (EXPIRATION) WHERE EXPIRATION <> 0 AND OWNER IS NULL
//	<p>SQ_EPOCH   sequence: every life of every node takes the next value
//	<p>SQ_NODES   (NODE_ID text PK, EPOCH bigint, HEARTBEAT bigint, STARTED bigint)
//	<p>SQ_GROUPS  (CONTAINER varchar(250), GROUP_ID text, OWNER text, EPOCH bigint,
//	               PRIMARY KEY (CONTAINER, GROUP_ID)); index (OWNER, EPOCH)
//	<p>SQ_LOCK    (ID bigint PK, TIME bigint, NODE_ID text, EPOCH bigint); one row, ID = 1
//	<p>SQ_SUBS    (CONTAINER varchar(250) PK, CLIENT_ID text, NAME text, TOPIC varchar(250),
//	               SELECTOR text, CREATED bigint, ACTIVE_NODE text NULL, ACTIVE_EPOCH bigint NULL)
//	    index <p>SQ_SUBS_TOPIC (TOPIC)
//	<p>SQ_TRANSIT (ID bigint GENERATED ALWAYS AS IDENTITY PK, MSG bytea, CREATED bigint)
//
// SQ_MSGS holds one row per queue message. ID, assigned at INSERT, is the FIFO order
// across nodes (and the message's Seq); CONTAINER is the qualified destination
// ("queue://ORDERS"); MSG is the message in pgstore's encoding (format 1 or 2, see
// pgstore's package comment: pgstore.EncodeMessage); GROUP_ID its JMSXGroupID header;
// EXPIRATION its Expires (ms since the epoch, 0 never); REDELIVERIES the times it was
// given back as possibly delivered. OWNER and EPOCH are NULL while the message is
// available, and name the node's life that holds it while it is leased; LEASED_AT is
// when it was claimed, for operators.
//
// SQ_NODES has one row per live node: HEARTBEAT is the database time of its last
// heartbeat. SQ_GROUPS says which node's life owns a message group. SQ_LOCK elects the
// reaper. SQ_VERSION holds the schema version (1): Open creates what is missing in one
// transaction under an advisory lock (nodes starting together; pgstore.EnsureTables),
// refuses a higher version and a SQ_MSGS table without a version table
// (ErrSchemaVersion).
//
// # Leases and the clock
//
// A lease is (message ID, OWNER, EPOCH). It stands as long as its node's row in
// SQ_NODES has that EPOCH, and that row goes when its HEARTBEAT is older than
// LeaseTimeout (the reaper), when the node closes, or when the same NodeID registers
// again (a new EPOCH). The lease's deadline is thus per node, not per message: the
// heartbeat renews every lease of the node with one single-row UPDATE per
// HeartbeatPeriod (no write per leased message), and there is no Renew call. Rules:
//
//   - Open registers the node: its row gets EPOCH = nextval(SQ_EPOCH) and HEARTBEAT =
//     now, and, in the same transaction, the leases and groups of the node's earlier
//     lives (same NodeID, another epoch) are given back at once (REDELIVERIES + 1). A
//     restarted node never owns what its previous life held, even where the reaper
//     had deleted that life's row: epochs are never reused.
//   - The heartbeat (UPDATE SQ_NODES SET HEARTBEAT = now WHERE NODE_ID = me AND EPOCH
//     = mine) runs every HeartbeatPeriod on the pool. If it changes no row (the reaper
//     declared the node dead, or another process registered the same NodeID), or
//     none succeeded for LeaseTimeout by the node's own clock, counted from before the
//     last successful one was sent, the node is lost: Lost is closed, Claim returns
//     ErrNodeLost. The broker then closes the node and opens it again.
//   - Ack deletes WHERE ID = lease AND OWNER = me AND EPOCH = lease epoch; a lease
//     whose row is not deleted is reported lost. Release makes the same test in an
//     UPDATE back to OWNER NULL. So a lease is acknowledged at most once, and never after its message
//     went to someone else.
//   - The reaper returns a lease only when its node's row is gone, so until then a
//     node whose heartbeat is late but alive still acknowledges successfully: nobody
//     else could have the message.
//
// # The claim
//
// One statement, $1 the destination, $2 the batch size, $3 and $4 the node and epoch,
// "available" standing for CONTAINER = $1 AND OWNER IS NULL AND (EXPIRATION = 0 OR
// EXPIRATION > now):
//
//	WITH w AS (      -- the window: what a claim would take, unowned groups included
//	    SELECT m.GROUP_ID FROM SQ_MSGS m
//	    WHERE available AND (m.GROUP_ID IS NULL OR NOT EXISTS (SELECT 1 FROM SQ_GROUPS g
//	          WHERE g.CONTAINER = m.CONTAINER AND g.GROUP_ID = m.GROUP_ID
//	            AND (g.OWNER <> $3 OR g.EPOCH <> $4)))
//	    ORDER BY m.PRIORITY DESC, m.ID LIMIT $2),
//	taken AS (       -- its groups nobody owns become this node's
//	    INSERT INTO SQ_GROUPS SELECT $1, GROUP_ID, $3, $4
//	    FROM (SELECT DISTINCT GROUP_ID FROM w WHERE GROUP_ID IS NOT NULL) d
//	    ORDER BY GROUP_ID ON CONFLICT DO NOTHING RETURNING GROUP_ID),
//	c AS (           -- what it may take: no group, or a group it owns
//	    SELECT m.ID FROM SQ_MSGS m
//	    WHERE available AND (m.GROUP_ID IS NULL OR m.GROUP_ID IN (SELECT * FROM taken)
//	          OR EXISTS (SELECT 1 FROM SQ_GROUPS g WHERE g.CONTAINER = m.CONTAINER
//	             AND g.GROUP_ID = m.GROUP_ID AND g.OWNER = $3 AND g.EPOCH = $4))
//	    ORDER BY m.PRIORITY DESC, m.ID LIMIT $2
//	    FOR UPDATE OF m SKIP LOCKED)
//	UPDATE SQ_MSGS m SET OWNER = $3, EPOCH = $4, LEASED_AT = now FROM c WHERE m.ID = c.ID
//	RETURNING ...
//
// SKIP LOCKED lets concurrent claimers of one queue pass each other's rows instead of
// waiting; a row another claimer took and committed meanwhile fails the re-check of
// OWNER IS NULL and is skipped. So two claims never return the same message, and a
// claim may return fewer than $2 while others run. w and c walk <p>SQ_MSGS_AVAIL in
// its order. Claim returns the messages by priority, then ID. The statement runs
// alone (autocommit): one round trip.
//
// Groups. A message is taken only if its group is this node's (this life's) or none.
// A group nobody owns is taken when one of its messages is in the window, before any
// of its messages is: the INSERT of a group another claimer is inserting waits for
// that claimer's commit and then does nothing, and c, whose snapshot does not see the
// winner's row, leaves the group alone (it is not in taken). Groups are inserted in
// GROUP_ID order, so two claimers never wait on each other in a cycle. Since only the
// owner ever takes a group's messages, and takes them in the order above, a group's
// messages are claimed in order, provided the node runs one Claim of a queue at a
// time (two concurrent claims of one node may skip each other's rows). A group stays
// its owner's until ReleaseGroups, Close, or the reaper once the owner's row is gone;
// ReleaseGroups should come once the node holds no message of the group, or the next
// owner may overtake them.
//
// Expiry. Claim skips expired messages; the reaper deletes the expired messages that
// nobody holds. A leased message that expires stays the holder's to deliver or drop.
// (Expired messages are not moved to a dead-letter queue by this package.)
//
// FIFO. IDs follow INSERT order, and a Send's messages get ascending IDs in the order
// given. Between producers, the order is that of the inserts, not of the commits: a
// message of a transaction that commits late may be claimed after a later one. One
// producer's messages (each Send after the previous one returned) are claimed in
// order within a priority, as JMS asks.
//
// # The reaper
//
// Every ReaperPeriod each node tries to take or keep the reaper lease, pgstore's LOCK
// row idea: UPDATE SQ_LOCK SET NODE_ID = me, EPOCH = mine, TIME = now + LeaseTimeout
// WHERE TIME IS NULL OR TIME < now OR it is already mine. The one that holds it runs,
// in one transaction: delete the SQ_NODES rows whose HEARTBEAT is older than
// LeaseTimeout; return (REDELIVERIES + 1, notify) every lease whose (OWNER, EPOCH) has
// no SQ_NODES row, which also catches a claim that committed just after its node was
// declared dead; delete the groups of such owners; delete expired available messages.
// A reaper that dies is replaced when its TIME passes, at most LeaseTimeout after its
// last round, during which the dead nodes' heartbeats age anyway: a dead node's leases
// are claimable elsewhere within LeaseTimeout + ReaperPeriod of its last heartbeat.
// Two reapers at once (a slow one whose lease ran out) would do no harm: every
// statement re-checks its rows. Close gives the reaper lease up.
//
// # Notifications
//
// One channel for all destinations, <p>sq_msgs (lower case), with the destination as
// the payload: one LISTEN covers every queue, also those a node has never seen, and a
// node need not LISTEN/UNLISTEN as its consumers come and go. The payload is at most
// 250 bytes, far below PostgreSQL's 8000-byte limit. Send, Release, the reaper's
// returns and Close notify in the statement that changed the rows, once per
// destination (PostgreSQL also folds identical notifications of a transaction),
// delivered at commit, to every listening node, the sender included.
//
// The listener holds a connection of its own (outside the pool, with the pool's
// settings) and reconnects, pausing from PollInterval up to 5s. Notifications yields
// the destination names, and "" (try every queue): on every (re)connection, after the
// channel (1024 entries) overflowed, and every PollInterval whether LISTEN is up or not.
//
// Notifications are a shortcut, never the only way a node learns of work: a
// notification can be lost (LISTEN down or reconnecting, the channel full), and a
// claim can come back short although messages are available, when another
// transaction held their rows (SKIP LOCKED) and then let them go without taking them
// (a claim rolled back: its node killed or its statement cancelled) -- no notification
// follows that. The poll bounds both: a node whose queue has room claims within
// PollInterval (plus the claim itself) of a message being available to it, and a dead
// node's leases are claimed on a survivor with room within LeaseTimeout +
// ReaperPeriod + PollInterval of its last heartbeat, with or without NOTIFY. The cost
// is one "" per node per PollInterval, so one claim per queue with idle room per
// PollInterval; a queue without consumers or without room does not claim.
//
// # Topics and durable subscriptions
//
// A durable subscription is a SQ_SUBS row and a container of SQ_MSGS of its own,
// "durable://<client-id>:<name>" (DurableContainer), claimed, acknowledged, released
// and reaped exactly as a queue's. Send of a topic message ("topic://NAME"), in one
// transaction with the call's other messages: reads the subscriptions of its topics,
// inserts one row per subscription whose selector matches (Options.MatchSelector, the
// broker's selector language), and sends the message on the channel <p>sq_topic. So a
// subscription committed before a publish receives it, whichever nodes did either. This
// stores a message once per durable subscription, where the broker's own stores keep
// one copy and a cursor per subscription: the price of claiming a subscription's
// messages with the same statement as a queue's.
//
// A subscription is attached to at most one live node: Subscribe sets (ACTIVE_NODE,
// ACTIVE_EPOCH) under FOR UPDATE and fails with ErrInUse while they name another node's
// life that still has its SQ_NODES row; Detach and Close clear them; a dead node's
// are ignored once the reaper deleted its row. A changed topic or selector replaces the
// subscription and deletes its messages; Unsubscribe deletes both.
//
// Non-durable subscribers are the nodes' own: the notification carries the message,
// "<epoch>:<n>:i:<topic length>:<topic><base64 of the encoded message>", or, when that
// would pass PostgreSQL's 8000 bytes, "...:t:..." with the ID of a SQ_TRANSIT row that
// the reaper deletes after a minute. Each node hands the messages of the other nodes'
// epochs to OnTopic's handler in commit order; its own it skips (the broker delivered
// them). A node hears only what is published while it LISTENs (at most once, as a
// non-durable subscriber that was not connected): the broker starts serving once
// LISTEN is in place (WaitListening).
//
// # Guarantees
//
//   - A message sent (Send returned nil) is delivered until acknowledged: at least once,
//     across the crash of any number of nodes (their leases return within the lease
//     timeout and a reaper period) and of the broker that sent it. A crashed database loses what
//     PostgreSQL loses: nothing Send committed (synchronous_commit on); claims,
//     acknowledgements and releases commit with synchronous_commit off, so a crash of
//     the database server may undo the last ~600 ms of them, which delivers those
//     messages again (at least once, never lost).
//   - An Ack succeeds at most once per message, and only for the lease that holds it:
//     once the message was given to another node, the old lease's Ack reports it lost
//     and deletes nothing. A message is redelivered only if its lease was released as
//     redelivered, its node closed, or its node was declared dead; REDELIVERIES counts
//     those times.
//   - Not given: exactly-once delivery (a node declared dead while delivering hands the
//     message on, and its consumer may still have seen it), FIFO across producers
//     (above), FIFO of a message given back behind ones claimed after it.
//
// # What the broker's queue does with it
//
//   - Open one Node per broker process at start (NodeID unique per process; the host
//     name by default). At shutdown, after the consumers are gone, Release(leases,
//     false) what was claimed but never dispatched, then Close: it gives the rest
//     back counted redelivered (they may have reached a consumer).
//   - A queue with consumers that have room (prefetch) calls Claim(dest, room) and
//     dispatches what it gets; it claims again when room frees up and on a
//     notification for its destination or "" (after a claim that came back short,
//     that is the wait: at most PollInterval), and never holds more leases than its
//     consumers' prefetch allows. One Claim of a queue at a time per node (a
//     group's order depends on it). Messages with a Group go to the consumer the
//     queue picked for that group, as today; when that consumer goes (or
//     JMSXGroupSeq -1), Release its messages of the group, then ReleaseGroups.
//   - On ACK: Ack the leases; a lost lease means the message was redelivered elsewhere
//     (the node had been declared dead): log it and, in a transaction, fail the ACK.
//   - On NACK, or a consumer closing with unacknowledged messages: Release(leases,
//     true). Messages claimed but not yet dispatched (prefetch buffered on the node,
//     consumer gone): Release(leases, false). The redelivery policy (delay, maximum,
//     DLQ) is the broker's: it keeps the lease for the delay, and moves a message over
//     the maximum to the DLQ with Send then Ack (in that order: at-least-once).
//   - Claimed.Message.RedeliveryCount already includes REDELIVERIES (the JMS
//     redelivered flag is RedeliveryCount > 0).
//   - When Lost is closed, every lease is presumed gone: drop the node's in-memory
//     dispatch state, Close and Open again.
//   - Stats, for the console and metrics: available and leased messages per queue
//     (one GROUP BY, not for a hot path).
package pgshared
