package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/activemq-go/broker/persistence"
)

// schemaVersion is the version of the tables this code reads and writes, kept in the
// <prefix>SCHEMA_VERSION table. Open refuses a database with a higher version; a lower
// one would be migrated (there is none yet).
const schemaVersion = 1

// maxContainer is the length of the CONTAINER columns (varchar(250), as ActiveMQ's).
const maxContainer = 250

// tables holds the table names for one prefix and every statement built from them.
// Names are unquoted, so PostgreSQL folds them to lower case, as it does ActiveMQ's.
type tables struct {
	prefix                                       string
	version, msgs, acks, pending, dests, lock    string
	create                                       []string
	insertMsgs, insertPending                    string
	deleteMsg, deletePendingOfMsg                string
	ackMsgs, ackPending                          string
	ackSubPending, ackSubOrphans, ackSubLast     string
	insertSub, updateSub, removeSubMsgs, dropSub string
	purgeMsgs, purgePending                      string
	updateDests, upsertDests                     string
	leaseCheck, leaseAcquire, leaseRenew         string
	leaseOwner, leaseRelease                     string
	scanQueue, scanTopic, scanSub                string
	countPending                                 string
}

func newTables(prefix string) *tables {
	p := strings.ToLower(prefix)
	t := &tables{
		prefix:  p,
		version: p + "schema_version",
		msgs:    p + "msgs",
		acks:    p + "acks",
		pending: p + "sub_pending",
		dests:   p + "dests",
		lock:    p + "lock",
	}
	r := strings.NewReplacer("{V}", t.version, "{M}", t.msgs, "{A}", t.acks, "{P}", t.pending,
		"{D}", t.dests, "{L}", t.lock, "{p}", p, "{NOW}", dbNowMillis)
	sql := func(s string) string { return r.Replace(s) }
	t.create = []string{
		sql(`CREATE TABLE {V} (ID smallint PRIMARY KEY CHECK (ID = 1), VERSION integer NOT NULL,
			CREATED timestamptz NOT NULL DEFAULT now())`),
		sql(`CREATE TABLE {M} (ID bigint NOT NULL, CONTAINER varchar(250) NOT NULL, MSGID_PROD text,
			MSGID_SEQ bigint, EXPIRATION bigint NOT NULL, MSG bytea NOT NULL, PRIORITY bigint NOT NULL,
			XID varchar(250), SIZE bigint NOT NULL, PRIMARY KEY (CONTAINER, ID))`),
		sql(`CREATE TABLE {A} (SUB_ID bigint PRIMARY KEY, CONTAINER varchar(250) NOT NULL, CLIENT_ID text NOT NULL,
			SUB_NAME text NOT NULL, SELECTOR text, CREATED bigint NOT NULL, LAST_ACKED_ID bigint,
			UNIQUE (CLIENT_ID, SUB_NAME))`),
		sql(`CREATE TABLE {P} (SUB_ID bigint NOT NULL, ID bigint NOT NULL, CONTAINER varchar(250) NOT NULL,
			PRIMARY KEY (SUB_ID, ID))`),
		sql(`CREATE INDEX {p}sub_pending_cidx ON {P} (CONTAINER, ID)`),
		sql(`CREATE TABLE {D} (CONTAINER varchar(250) PRIMARY KEY, LAST_SEQ bigint NOT NULL)`),
		sql(`CREATE TABLE {L} (ID bigint PRIMARY KEY, TIME bigint, BROKER_NAME varchar(250))`),
		sql(`INSERT INTO {L} (ID) VALUES (1)`),
		fmt.Sprintf(sql(`INSERT INTO {V} (ID, VERSION) VALUES (1, %d)`), schemaVersion),
	}

	t.insertMsgs = sql(`INSERT INTO {M} (CONTAINER, ID, MSGID_PROD, MSGID_SEQ, EXPIRATION, MSG, PRIORITY, SIZE)
		SELECT * FROM unnest($1::text[], $2::int8[], $3::text[], $4::int8[], $5::int8[], $6::bytea[], $7::int8[], $8::int8[])`)
	t.insertPending = sql(`INSERT INTO {P} (SUB_ID, ID, CONTAINER) SELECT * FROM unnest($1::int8[], $2::int8[], $3::text[])`)
	t.deleteMsg = sql(`DELETE FROM {M} WHERE CONTAINER = $1 AND ID = $2 RETURNING CONTAINER, SIZE`)
	t.deletePendingOfMsg = sql(`DELETE FROM {P} WHERE CONTAINER = $1 AND ID = $2`)
	t.ackMsgs = sql(`DELETE FROM {M} m USING unnest($1::text[], $2::int8[]) AS k(c, i)
		WHERE m.CONTAINER = k.c AND m.ID = k.i RETURNING m.CONTAINER, m.SIZE`)
	t.ackPending = sql(`DELETE FROM {P} p USING unnest($1::text[], $2::int8[]) AS k(c, i)
		WHERE p.CONTAINER = k.c AND p.ID = k.i`)
	// A topic message always has a pending row (one is not stored without), so a
	// candidate without one left has just been released by its last subscription.
	t.ackSubPending = sql(`DELETE FROM {P} p USING unnest($1::int8[], $2::int8[]) AS k(s, i)
		WHERE p.SUB_ID = k.s AND p.ID = k.i`)
	t.ackSubOrphans = sql(`DELETE FROM {M} m USING unnest($1::text[], $2::int8[]) AS k(c, i)
		WHERE m.CONTAINER = k.c AND m.ID = k.i
		AND NOT EXISTS (SELECT 1 FROM {P} p WHERE p.CONTAINER = k.c AND p.ID = k.i)
		RETURNING m.CONTAINER, m.SIZE`)
	t.ackSubLast = sql(`UPDATE {A} a SET LAST_ACKED_ID = greatest(coalesce(a.LAST_ACKED_ID, 0), k.i)
		FROM (SELECT s, max(i) AS i FROM unnest($1::int8[], $2::int8[]) AS u(s, i) GROUP BY s) AS k
		WHERE a.SUB_ID = k.s`)
	t.insertSub = sql(`INSERT INTO {A} (SUB_ID, CONTAINER, CLIENT_ID, SUB_NAME, SELECTOR, CREATED)
		VALUES ($1, $2, $3, $4, nullif($5, ''), $6)`)
	t.updateSub = sql(`UPDATE {A} SET SELECTOR = nullif($2, ''), CREATED = $3 WHERE SUB_ID = $1`)
	// All statements of the WITH see the same snapshot, so the NOT EXISTS still sees
	// the rows the CTE deletes: those of the removed subscription are excluded by hand.
	t.removeSubMsgs = sql(`WITH gone AS (DELETE FROM {P} WHERE SUB_ID = $1 RETURNING ID)
		DELETE FROM {M} m WHERE m.CONTAINER = $2 AND m.ID IN (SELECT ID FROM gone)
		AND NOT EXISTS (SELECT 1 FROM {P} p WHERE p.CONTAINER = $2 AND p.ID = m.ID AND p.SUB_ID <> $1)
		RETURNING m.CONTAINER, m.SIZE`)
	t.dropSub = sql(`DELETE FROM {A} WHERE SUB_ID = $1`)
	t.purgeMsgs = sql(`DELETE FROM {M} WHERE CONTAINER = $1`)
	t.purgePending = sql(`DELETE FROM {P} WHERE CONTAINER = $1`)
	t.updateDests = sql(`UPDATE {D} d SET LAST_SEQ = k.l FROM unnest($1::text[], $2::int8[]) AS k(c, l)
		WHERE d.CONTAINER = k.c AND d.LAST_SEQ < k.l`)
	t.upsertDests = sql(`INSERT INTO {D} AS d (CONTAINER, LAST_SEQ) SELECT * FROM unnest($1::text[], $2::int8[])
		ON CONFLICT (CONTAINER) DO UPDATE SET LAST_SEQ = greatest(d.LAST_SEQ, EXCLUDED.LAST_SEQ)`)

	// The lease (see lease.go). TIME is milliseconds since the epoch by the database's
	// clock, so the brokers' clocks do not matter. The check is the first statement of
	// every group commit: FOR SHARE makes the commit and a take-over exclude each other
	// (the take-over's UPDATE waits for the commit), and if the lease is not ours the
	// division by zero (SQLSTATE 22012) aborts the whole transaction on the server.
	t.leaseCheck = sql(`WITH lease_held_by_this_broker AS (
		SELECT 1 FROM {L} WHERE ID = 1 AND BROKER_NAME = $1 AND TIME > {NOW} FOR SHARE)
		SELECT 1 / (SELECT count(*) FROM lease_held_by_this_broker)`)
	t.leaseAcquire = sql(`UPDATE {L} SET BROKER_NAME = $1, TIME = {NOW} + $2
		WHERE ID = 1 AND (TIME IS NULL OR TIME < {NOW} OR BROKER_NAME = $1) RETURNING TIME - {NOW}`)
	t.leaseRenew = sql(`UPDATE {L} SET TIME = {NOW} + $2
		WHERE ID = 1 AND BROKER_NAME = $1 AND TIME > {NOW} RETURNING TIME - {NOW}`)
	t.leaseOwner = sql(`SELECT coalesce(BROKER_NAME, ''), coalesce(TIME - {NOW}, 0) FROM {L} WHERE ID = 1`)
	t.leaseRelease = sql(`UPDATE {L} SET BROKER_NAME = NULL, TIME = NULL WHERE ID = 1 AND BROKER_NAME = $1`)

	subsOf := `LEFT JOIN LATERAL (SELECT array_agg(a.CLIENT_ID) AS c, array_agg(a.SUB_NAME) AS n
		FROM {P} p JOIN {A} a ON a.SUB_ID = p.SUB_ID WHERE p.CONTAINER = m.CONTAINER AND p.ID = m.ID) s ON true`
	t.scanQueue = sql(`SELECT m.ID, m.MSG, NULL::text[], NULL::text[] FROM {M} m
		WHERE m.CONTAINER = $1 AND m.ID > $2 ORDER BY m.ID LIMIT $3`)
	t.scanTopic = sql(`SELECT m.ID, m.MSG, s.c, s.n FROM {M} m ` + subsOf + `
		WHERE m.CONTAINER = $1 AND m.ID > $2 ORDER BY m.ID LIMIT $3`)
	t.scanSub = sql(`SELECT m.ID, m.MSG, s.c, s.n FROM {P} q JOIN {M} m ON m.CONTAINER = q.CONTAINER AND m.ID = q.ID ` +
		subsOf + ` WHERE q.SUB_ID = $1 AND q.ID > $2 ORDER BY q.ID LIMIT $3`)
	t.countPending = sql(`SELECT SUB_ID, count(*) FROM {P} GROUP BY SUB_ID`)
	return t
}

// dbNowMillis is the database's current time in milliseconds since the epoch.
// clock_timestamp, not now(): now() stands still for the whole transaction.
const dbNowMillis = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`

// ensureSchema checks the schema version and, if allowed, creates missing tables, in
// one transaction under an advisory lock so that brokers starting together do not
// race.
func ensureSchema(ctx context.Context, pool *pgxpool.Pool, t *tables, create bool) error {
	return EnsureTables(ctx, pool, Tables{
		Prefix: t.prefix, VersionTable: t.version, MainTable: t.msgs, Version: schemaVersion,
		Create: t.create, Repair: `INSERT INTO ` + t.lock + ` (ID) VALUES (1) ON CONFLICT DO NOTHING`,
		Hint: "createTablesOnStartup is false: create them by starting once with createTablesOnStartup: true",
	}, create)
}

// Tables describes a versioned set of tables of the jdbc adapter for EnsureTables.
type Tables struct {
	// Prefix is the lower-case prefix of the set's names (it names the advisory
	// lock); VersionTable holds the version row (ID 1, VERSION); MainTable is the one
	// whose presence without VersionTable means tables someone else created.
	Prefix, VersionTable, MainTable string
	// Version is the version this code reads and writes.
	Version int
	// Create creates every table, the version row included, in order.
	Create []string
	// Repair, if not empty, runs when the tables exist (recreating a singleton row
	// someone deleted).
	Repair string
	// Hint ends the ErrNoSchema text: why the tables were not created.
	Hint string
}

// EnsureTables checks the version of the set of tables t and, if create, creates them
// when missing, in one transaction under an advisory lock so that brokers starting
// together do not race. It refuses, with ErrSchemaVersion, a version above t.Version
// (a newer broker wrote them) and a MainTable without VersionTable (not ours), and
// returns ErrNoSchema for missing tables when !create. Package pgshared uses it for
// the shared queues' tables.
func EnsureTables(ctx context.Context, pool *pgxpool.Pool, t Tables, create bool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "activemq-go-broker schema "+t.Prefix); err != nil {
			return err
		}
		var hasVersion, hasMain bool
		err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL`,
			t.VersionTable, t.MainTable).Scan(&hasVersion, &hasMain)
		if err != nil {
			return err
		}
		switch {
		case hasVersion:
			var v int
			if err := tx.QueryRow(ctx, `SELECT VERSION FROM `+t.VersionTable+` WHERE ID = 1`).Scan(&v); err != nil {
				if errors.Is(err, pgx.ErrNoRows) {
					return fmt.Errorf("%w: %s is empty", ErrSchemaVersion, t.VersionTable)
				}
				return err
			}
			if v > t.Version {
				return fmt.Errorf("%w: the tables %s* have schema version %d, this broker knows up to %d: "+
					"a newer broker wrote them; refusing to open", ErrSchemaVersion, t.Prefix, v, t.Version)
			}
			if v < 1 {
				return fmt.Errorf("%w: %s says version %d", ErrSchemaVersion, t.VersionTable, v)
			}
			if t.Repair == "" {
				return nil
			}
			_, err := tx.Exec(ctx, t.Repair)
			return err
		case hasMain:
			return fmt.Errorf("%w: %s exists but %s does not: the tables were not created by this broker "+
				"(ActiveMQ's own?); use another tablePrefix", ErrSchemaVersion, t.MainTable, t.VersionTable)
		case !create:
			return fmt.Errorf("%w: %s* (schema version table %s) in this database, and %s",
				ErrNoSchema, t.Prefix, t.VersionTable, t.Hint)
		}
		for _, stmt := range t.Create {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("pgstore: create tables: %w", err)
			}
		}
		return nil
	})
}

// loadState reads what the store keeps in memory: destinations with LastSeq and
// counters, subscriptions, the next subscription id. One repeatable-read snapshot, so
// the parts agree.
func loadState(ctx context.Context, pool *pgxpool.Pool, t *tables) (*state, error) {
	st := newState()
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT CONTAINER, LAST_SEQ FROM `+t.dests)
		var (
			name string
			last int64
		)
		_, err := pgx.ForEachRow(rows, []any{&name, &last}, func() error {
			st.dests[name] = &destState{lastSeq: uint64(last), persisted: uint64(last), inDests: true, added: true}
			return nil
		})
		if err != nil {
			return err
		}
		var msgs, bytes, maxID int64
		rows, _ = tx.Query(ctx, `SELECT CONTAINER, count(*), coalesce(sum(SIZE), 0)::bigint, max(ID) FROM `+t.msgs+` GROUP BY CONTAINER`)
		_, err = pgx.ForEachRow(rows, []any{&name, &msgs, &bytes, &maxID}, func() error {
			d := st.dests[name]
			if d == nil { // messages, never a deletion: no DESTS row yet
				d = &destState{added: true}
				st.dests[name] = d
			}
			d.msgs, d.bytes = msgs, bytes
			d.lastSeq = max(d.lastSeq, uint64(maxID))
			return nil
		})
		if err != nil {
			return err
		}
		var (
			id      int64
			info    persistence.SubInfo
			created int64
		)
		rows, _ = tx.Query(ctx, `SELECT SUB_ID, CONTAINER, CLIENT_ID, SUB_NAME, coalesce(SELECTOR, ''), CREATED FROM `+t.acks)
		_, err = pgx.ForEachRow(rows, []any{&id, &info.Dest, &info.Key.ClientID, &info.Key.Name, &info.Selector, &created}, func() error {
			info.Created = created
			st.subs[info.Key] = &subRec{id: id, info: info}
			return nil
		})
		if err != nil {
			return err
		}
		var maxSub int64
		err = tx.QueryRow(ctx, `SELECT greatest(coalesce((SELECT max(SUB_ID) FROM `+t.acks+`), 0),
			coalesce((SELECT max(SUB_ID) FROM `+t.pending+`), 0))`).Scan(&maxSub)
		st.nextSubID = maxSub + 1
		return err
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}
