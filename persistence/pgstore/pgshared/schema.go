package pgshared

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/activemq-go/broker/persistence/pgstore"
)

// schemaVersion is the version of the tables this code reads and writes, kept in the
// <prefix>SQ_VERSION table. Open refuses a database with a higher version.
const schemaVersion = 1

// maxContainer is the length of the CONTAINER columns (varchar(250), as pgstore's).
const maxContainer = 250

// dbNow is the database's current time in milliseconds since the epoch.
// clock_timestamp, not now(): now() stands still for the whole transaction.
const dbNow = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`

// tables holds the table names for one prefix and every statement built from them.
type tables struct {
	prefix                             string
	version, msgs, nodes, groups, lock string
	subs, transit                      string
	channel, topicChannel              string
	create                             []string

	insert                                       string
	claim                                        string
	ack, release, releaseGroups                  string
	register, heartbeat, returnOld, dropOldGroup string
	leaveLeases, leaveGroups, leaveNode          string
	reapNodes, reapLeases, reapGroups, reapExp   string
	lockTake, lockRelease                        string
	stats                                        string

	// Topics (topics.go).
	subsFor, subInsert, subLock, subReplace    string
	subActivate, subDetach, subDelete, subMsgs string
	subLeave, subList                          string
	transitPut, transitGet, reapTransit        string
	topicNotify                                string
}

func newTables(prefix string) *tables {
	p := strings.ToLower(prefix) + "sq_"
	t := &tables{
		prefix:  p,
		version: p + "version",
		msgs:    p + "msgs",
		nodes:   p + "nodes",
		groups:  p + "groups",
		lock:    p + "lock",
		subs:    p + "subs",
		transit: p + "transit",
		channel: p + "msgs",
		// topicChannel carries topic messages to the other nodes (topics.go).
		topicChannel: p + "topic",
	}
	r := strings.NewReplacer("{V}", t.version, "{M}", t.msgs, "{N}", t.nodes, "{G}", t.groups,
		"{L}", t.lock, "{S}", t.subs, "{X}", t.transit, "{p}", p, "{NOW}", dbNow)
	sql := func(s string) string { return r.Replace(s) }
	t.create = []string{
		sql(`CREATE TABLE {V} (ID smallint PRIMARY KEY CHECK (ID = 1), VERSION integer NOT NULL,
			CREATED timestamptz NOT NULL DEFAULT now())`),
		sql(`CREATE TABLE {M} (ID bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			CONTAINER varchar(250) NOT NULL, PRIORITY smallint NOT NULL, MSG bytea NOT NULL,
			GROUP_ID text, EXPIRATION bigint NOT NULL, REDELIVERIES integer NOT NULL DEFAULT 0,
			OWNER text, EPOCH bigint, LEASED_AT bigint)`),
		sql(`CREATE INDEX {p}msgs_avail ON {M} (CONTAINER, PRIORITY DESC, ID) WHERE OWNER IS NULL`),
		sql(`CREATE INDEX {p}msgs_leased ON {M} (OWNER, EPOCH) WHERE OWNER IS NOT NULL`),
		sql(`CREATE INDEX {p}msgs_expiring ON {M} (EXPIRATION) WHERE EXPIRATION <> 0 AND OWNER IS NULL`),
		sql(`CREATE SEQUENCE {p}epoch`),
		sql(`CREATE TABLE {N} (NODE_ID text PRIMARY KEY, EPOCH bigint NOT NULL, HEARTBEAT bigint NOT NULL,
			STARTED bigint NOT NULL)`),
		sql(`CREATE TABLE {G} (CONTAINER varchar(250) NOT NULL, GROUP_ID text NOT NULL, OWNER text NOT NULL,
			EPOCH bigint NOT NULL, PRIMARY KEY (CONTAINER, GROUP_ID))`),
		sql(`CREATE INDEX {p}groups_owner ON {G} (OWNER, EPOCH)`),
		sql(`CREATE TABLE {L} (ID bigint PRIMARY KEY, TIME bigint, NODE_ID text, EPOCH bigint)`),
		sql(`INSERT INTO {L} (ID) VALUES (1)`),
		sql(`CREATE TABLE {S} (CONTAINER varchar(250) PRIMARY KEY, CLIENT_ID text NOT NULL, NAME text NOT NULL,
			TOPIC varchar(250) NOT NULL, SELECTOR text NOT NULL, CREATED bigint NOT NULL,
			ACTIVE_NODE text, ACTIVE_EPOCH bigint)`),
		sql(`CREATE INDEX {p}subs_topic ON {S} (TOPIC)`),
		sql(`CREATE TABLE {X} (ID bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, MSG bytea NOT NULL,
			CREATED bigint NOT NULL)`),
		fmt.Sprintf(sql(`INSERT INTO {V} (ID, VERSION) VALUES (1, %d)`), schemaVersion),
	}

	// Send: WITH ORDINALITY and ORDER BY make the identity follow the order of the
	// call, and RETURNING gives the rows back in that order.
	t.insert = withNotify(sql(`INSERT INTO {M} (CONTAINER, PRIORITY, MSG, GROUP_ID, EXPIRATION)
		SELECT c, p, m, nullif(g, ''), e FROM unnest($1::text[], $2::int2[], $3::bytea[], $4::text[], $5::int8[])
		WITH ORDINALITY AS k(c, p, m, g, e, o) ORDER BY o RETURNING ID, CONTAINER`), "$6", "r.ID", "ORDER BY r.ID")

	// Claim: see the package comment. $1 dest, $2 max, $3 node, $4 epoch. w is the
	// window of what the claim would take ignoring unowned groups; its unowned groups
	// are taken (in GROUP_ID order, so that two claimers never wait on each other in
	// a cycle); c takes what is in groups this node owns, took now, or none.
	avail := `m.CONTAINER = $1 AND m.OWNER IS NULL AND (m.EXPIRATION = 0 OR m.EXPIRATION > {NOW})`
	t.claim = sql(`WITH w AS (
			SELECT m.GROUP_ID FROM {M} m
			WHERE ` + avail + `
			AND (m.GROUP_ID IS NULL OR NOT EXISTS (SELECT 1 FROM {G} g
				WHERE g.CONTAINER = m.CONTAINER AND g.GROUP_ID = m.GROUP_ID
				AND (g.OWNER <> $3 OR g.EPOCH <> $4)))
			ORDER BY m.PRIORITY DESC, m.ID
			LIMIT $2),
		taken AS (
			INSERT INTO {G} (CONTAINER, GROUP_ID, OWNER, EPOCH)
			SELECT $1, GROUP_ID, $3, $4 FROM (SELECT DISTINCT GROUP_ID FROM w WHERE GROUP_ID IS NOT NULL) AS d
			ORDER BY GROUP_ID
			ON CONFLICT DO NOTHING RETURNING GROUP_ID),
		c AS (
			SELECT m.ID FROM {M} m
			WHERE ` + avail + `
			AND (m.GROUP_ID IS NULL OR m.GROUP_ID IN (SELECT GROUP_ID FROM taken) OR EXISTS (SELECT 1 FROM {G} g
				WHERE g.CONTAINER = m.CONTAINER AND g.GROUP_ID = m.GROUP_ID AND g.OWNER = $3 AND g.EPOCH = $4))
			ORDER BY m.PRIORITY DESC, m.ID
			LIMIT $2
			FOR UPDATE OF m SKIP LOCKED)
		UPDATE {M} m SET OWNER = $3, EPOCH = $4, LEASED_AT = {NOW}
		FROM c WHERE m.ID = c.ID
		RETURNING m.ID, m.MSG, m.REDELIVERIES, coalesce(m.GROUP_ID, '')`)

	t.ack = sql(`DELETE FROM {M} m USING unnest($1::int8[], $2::int8[]) AS k(i, e)
		WHERE m.ID = k.i AND m.OWNER = $3 AND m.EPOCH = k.e RETURNING m.ID`)
	t.release = withNotify(sql(`UPDATE {M} m SET OWNER = NULL, EPOCH = NULL, LEASED_AT = NULL,
		REDELIVERIES = m.REDELIVERIES + $4
		FROM unnest($1::int8[], $2::int8[]) AS k(i, e)
		WHERE m.ID = k.i AND m.OWNER = $3 AND m.EPOCH = k.e RETURNING m.ID, m.CONTAINER`), "$5", "r.ID", "")
	t.releaseGroups = sql(`DELETE FROM {G} WHERE CONTAINER = $1 AND GROUP_ID = ANY($2::text[])
		AND OWNER = $3 AND EPOCH = $4`)

	// The node's life. Epochs come from one sequence, so no two lives of any nodes
	// share one, even after the reaper deleted a node's row.
	t.register = sql(`INSERT INTO {N} AS n (NODE_ID, EPOCH, HEARTBEAT, STARTED)
		VALUES ($1, nextval('{p}epoch'), {NOW}, {NOW})
		ON CONFLICT (NODE_ID) DO UPDATE SET EPOCH = EXCLUDED.EPOCH, HEARTBEAT = EXCLUDED.HEARTBEAT,
			STARTED = EXCLUDED.STARTED
		RETURNING EPOCH`)
	t.heartbeat = sql(`UPDATE {N} SET HEARTBEAT = {NOW} WHERE NODE_ID = $1 AND EPOCH = $2`)
	t.returnOld = withNotify(sql(`UPDATE {M} SET OWNER = NULL, EPOCH = NULL, LEASED_AT = NULL, REDELIVERIES = REDELIVERIES + 1
		WHERE OWNER = $1 AND EPOCH <> $2 RETURNING ID, CONTAINER`), "$3", "count(*)", "")
	t.dropOldGroup = sql(`DELETE FROM {G} WHERE OWNER = $1 AND EPOCH <> $2`)
	t.leaveLeases = withNotify(sql(`UPDATE {M} SET OWNER = NULL, EPOCH = NULL, LEASED_AT = NULL, REDELIVERIES = REDELIVERIES + 1
		WHERE OWNER = $1 AND EPOCH = $2 RETURNING ID, CONTAINER`), "$3", "count(*)", "")
	t.leaveGroups = sql(`DELETE FROM {G} WHERE OWNER = $1 AND EPOCH = $2`)
	t.leaveNode = sql(`DELETE FROM {N} WHERE NODE_ID = $1 AND EPOCH = $2`)

	// The reaper, statement by statement in one transaction (each sees what the
	// previous one did).
	t.reapNodes = sql(`DELETE FROM {N} WHERE HEARTBEAT < {NOW} - $1 RETURNING NODE_ID, EPOCH`)
	t.reapLeases = withNotify(sql(`UPDATE {M} m SET OWNER = NULL, EPOCH = NULL, LEASED_AT = NULL,
		REDELIVERIES = m.REDELIVERIES + 1
		WHERE m.OWNER IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM {N} n WHERE n.NODE_ID = m.OWNER AND n.EPOCH = m.EPOCH)
		RETURNING m.ID, m.CONTAINER`), "$1", "count(*)", "")
	t.reapGroups = sql(`DELETE FROM {G} g
		WHERE NOT EXISTS (SELECT 1 FROM {N} n WHERE n.NODE_ID = g.OWNER AND n.EPOCH = g.EPOCH)`)
	t.reapExp = sql(`DELETE FROM {M} WHERE EXPIRATION <> 0 AND EXPIRATION <= {NOW} AND OWNER IS NULL`)

	// The reaper's lease, pgstore's LOCK row idea: whoever holds an unexpired TIME.
	t.lockTake = sql(`UPDATE {L} SET NODE_ID = $1, EPOCH = $2, TIME = {NOW} + $3
		WHERE ID = 1 AND (TIME IS NULL OR TIME < {NOW} OR (NODE_ID = $1 AND EPOCH = $2))
		RETURNING 1`)
	t.lockRelease = sql(`UPDATE {L} SET NODE_ID = NULL, EPOCH = NULL, TIME = NULL
		WHERE ID = 1 AND NODE_ID = $1 AND EPOCH = $2`)

	t.stats = sql(`SELECT CONTAINER, count(*) FILTER (WHERE OWNER IS NULL),
		count(*) FILTER (WHERE OWNER IS NOT NULL) FROM {M} GROUP BY CONTAINER`)

	// Durable subscriptions and topic messages (topics.go). A subscription is active
	// while (ACTIVE_NODE, ACTIVE_EPOCH) names a node's life that still has its row.
	alive := `EXISTS (SELECT 1 FROM {N} n WHERE n.NODE_ID = s.ACTIVE_NODE AND n.EPOCH = s.ACTIVE_EPOCH)`
	t.subsFor = sql(`SELECT CONTAINER, TOPIC, SELECTOR FROM {S} WHERE TOPIC = ANY($1::text[]) ORDER BY CONTAINER`)
	t.subInsert = sql(`INSERT INTO {S} (CONTAINER, CLIENT_ID, NAME, TOPIC, SELECTOR, CREATED)
		VALUES ($1, $2, $3, $4, $5, {NOW}) ON CONFLICT (CONTAINER) DO NOTHING`)
	t.subLock = sql(`SELECT TOPIC, SELECTOR, coalesce(ACTIVE_NODE, ''), coalesce(ACTIVE_EPOCH, 0), ` + alive + `
		FROM {S} s WHERE CONTAINER = $1 FOR UPDATE`)
	t.subReplace = sql(`UPDATE {S} SET TOPIC = $2, SELECTOR = $3, CREATED = {NOW} WHERE CONTAINER = $1`)
	t.subActivate = sql(`UPDATE {S} SET ACTIVE_NODE = $2, ACTIVE_EPOCH = $3 WHERE CONTAINER = $1`)
	t.subDetach = sql(`UPDATE {S} SET ACTIVE_NODE = NULL, ACTIVE_EPOCH = NULL
		WHERE CONTAINER = $1 AND ACTIVE_NODE = $2 AND ACTIVE_EPOCH = $3`)
	t.subDelete = sql(`DELETE FROM {S} WHERE CONTAINER = $1`)
	t.subMsgs = sql(`DELETE FROM {M} WHERE CONTAINER = $1`)
	t.subLeave = sql(`UPDATE {S} SET ACTIVE_NODE = NULL, ACTIVE_EPOCH = NULL WHERE ACTIVE_NODE = $1 AND ACTIVE_EPOCH = $2`)
	t.subList = sql(`SELECT s.CONTAINER, s.CLIENT_ID, s.NAME, s.TOPIC, s.SELECTOR, s.CREATED,
		CASE WHEN ` + alive + ` THEN s.ACTIVE_NODE ELSE '' END,
		(SELECT count(*) FROM {M} m WHERE m.CONTAINER = s.CONTAINER)
		FROM {S} s ORDER BY s.CONTAINER`)
	t.transitPut = sql(`INSERT INTO {X} (MSG, CREATED) VALUES ($1, {NOW}) RETURNING ID`)
	t.transitGet = sql(`SELECT MSG FROM {X} WHERE ID = $1`)
	t.reapTransit = sql(`DELETE FROM {X} WHERE CREATED < {NOW} - $1`)
	t.topicNotify = `SELECT count(pg_notify($1, p)) FROM unnest($2::text[]) WITH ORDINALITY AS k(p, o)`
	return t
}

// withNotify wraps stmt, a data-modifying statement RETURNING ID and CONTAINER, so
// that the same statement notifies the channel (parameter ch) once per destination it
// touched, and selects sel (over its rows r) with tail (ORDER BY ...). The notify CTE
// is referenced by the final SELECT, so PostgreSQL evaluates it; notifications are
// delivered at commit, and identical ones of a transaction are sent once.
func withNotify(stmt, ch, sel, tail string) string {
	return `WITH r AS (` + stmt + `),
		n AS (SELECT count(pg_notify(` + ch + `, d.c)) AS k FROM (SELECT DISTINCT CONTAINER AS c FROM r) AS d)
		SELECT ` + sel + ` FROM r, n ` + tail
}

// ensureSchema checks the schema version and, if allowed, creates missing tables
// (pgstore.EnsureTables: one transaction under an advisory lock).
func ensureSchema(ctx context.Context, pool *pgxpool.Pool, t *tables, create bool) error {
	return pgstore.EnsureTables(ctx, pool, pgstore.Tables{
		Prefix: t.prefix, VersionTable: t.version, MainTable: t.msgs, Version: schemaVersion,
		Create: t.create, Repair: `INSERT INTO ` + t.lock + ` (ID) VALUES (1) ON CONFLICT DO NOTHING`,
		Hint: "table creation is off (SkipCreateTables)",
	}, create)
}
