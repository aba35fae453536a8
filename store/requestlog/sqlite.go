package requestlog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// sqliteBusyTimeout is how long a write waits for another writer's lock.
const sqliteBusyTimeout = 5 * time.Second

// sqliteOpenCheckTimeout is how long OpenSQLite waits for the write lock
// before reporting the file as locked: shorter than the busy timeout so a
// misconfigured start fails fast.
const sqliteOpenCheckTimeout = time.Second

var _ Store = (*sqliteStore)(nil)

type sqliteStore struct {
	db   *sql.DB
	path string
	// mu serializes Insert on w, the write connection (see sqliteWriteConn).
	mu sync.Mutex
	w  *sqliteWriteConn
}

// sqliteSchema creates the table as first released; init applies it, then
// sqliteColumns, sqliteIndexes and sqliteMigrations.
var sqliteSchema = []string{
	`CREATE TABLE IF NOT EXISTS requests (
		ts_ms INTEGER NOT NULL,
		request_id TEXT NOT NULL UNIQUE,
		org TEXT NOT NULL DEFAULT '',
		team TEXT NOT NULL DEFAULT '',
		project TEXT NOT NULL DEFAULT '',
		key_id TEXT NOT NULL DEFAULT '',
		session_id TEXT NOT NULL DEFAULT '',
		route TEXT NOT NULL DEFAULT '',
		upstream TEXT NOT NULL DEFAULT '',
		decided_model TEXT NOT NULL DEFAULT '',
		chain TEXT NOT NULL DEFAULT '[]',
		served_model TEXT NOT NULL DEFAULT '',
		served_provider TEXT NOT NULL DEFAULT '',
		routing_switch_reason TEXT NOT NULL DEFAULT '',
		routing_degraded TEXT NOT NULL DEFAULT '[]',
		refused_code TEXT NOT NULL DEFAULT '',
		fallback_reason TEXT NOT NULL DEFAULT '',
		attempts INTEGER NOT NULL DEFAULT 0,
		status INTEGER NOT NULL DEFAULT 0,
		stream INTEGER NOT NULL DEFAULT 0,
		cache_hit INTEGER NOT NULL DEFAULT 0,
		representation_break INTEGER NOT NULL DEFAULT 0,
		cache_discount_applied INTEGER NOT NULL DEFAULT 0,
		prompt_tokens INTEGER NOT NULL DEFAULT 0,
		completion_tokens INTEGER NOT NULL DEFAULT 0,
		cost_usd REAL NOT NULL DEFAULT 0,
		latency_ms REAL NOT NULL DEFAULT 0,
		ttft_ms REAL NOT NULL DEFAULT 0
	)`,
}

// sqliteColumns are the columns added to requests after its first release,
// in order: init adds each one the table lacks (SQLite has no ADD COLUMN IF
// NOT EXISTS), before the indexes that may name them.
var sqliteColumns = []struct{ name, ddl string }{
	{"cost_source", "ALTER TABLE requests ADD COLUMN cost_source TEXT NOT NULL DEFAULT ''"},
	{"request_routing", "ALTER TABLE requests ADD COLUMN request_routing INTEGER NOT NULL DEFAULT 0"},
	{"config_revision", "ALTER TABLE requests ADD COLUMN config_revision TEXT NOT NULL DEFAULT ''"},
	{"api", "ALTER TABLE requests ADD COLUMN api TEXT NOT NULL DEFAULT ''"},
	{"session_key", "ALTER TABLE requests ADD COLUMN session_key TEXT NOT NULL DEFAULT ''"},
	{"session_affinity", "ALTER TABLE requests ADD COLUMN session_affinity TEXT NOT NULL DEFAULT ''"},
	{"cached_tokens", "ALTER TABLE requests ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0"},
	{"reasoning_tokens", "ALTER TABLE requests ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0"},
	{"data_policy", "ALTER TABLE requests ADD COLUMN data_policy TEXT NOT NULL DEFAULT ''"},
	{"data_policy_via", "ALTER TABLE requests ADD COLUMN data_policy_via TEXT NOT NULL DEFAULT ''"},
	{"preference_rank_by", "ALTER TABLE requests ADD COLUMN preference_rank_by TEXT NOT NULL DEFAULT ''"},
	{"preference_preferred", "ALTER TABLE requests ADD COLUMN preference_preferred TEXT NOT NULL DEFAULT '[]'"},
	{"preference_allowed", "ALTER TABLE requests ADD COLUMN preference_allowed TEXT NOT NULL DEFAULT '[]'"},
	{"preference_denied", "ALTER TABLE requests ADD COLUMN preference_denied TEXT NOT NULL DEFAULT '[]'"},
	{"preference_verdict", "ALTER TABLE requests ADD COLUMN preference_verdict TEXT NOT NULL DEFAULT ''"},
	{"refused_message", "ALTER TABLE requests ADD COLUMN refused_message TEXT NOT NULL DEFAULT ''"},
	{"upstream_attempts", "ALTER TABLE requests ADD COLUMN upstream_attempts TEXT NOT NULL DEFAULT ''"},
	{"routing_object", "ALTER TABLE requests ADD COLUMN routing_object TEXT NOT NULL DEFAULT ''"},
	{"served_region", "ALTER TABLE requests ADD COLUMN served_region TEXT NOT NULL DEFAULT ''"},
	{"responses", "ALTER TABLE requests ADD COLUMN responses INTEGER NOT NULL DEFAULT 0"},
	{"close_code", "ALTER TABLE requests ADD COLUMN close_code INTEGER NOT NULL DEFAULT 0"},
	{"closed_by", "ALTER TABLE requests ADD COLUMN closed_by TEXT NOT NULL DEFAULT ''"},
}

// sqliteIndexes follow the columns; every statement is idempotent. Each
// index serves a compliance query (docs/perf.md, "Compliance filters"
// holds each filter's plan and time): every one costs each row a B-tree
// insert.
var sqliteIndexes = []string{
	// Newest-first paging walks this index backwards.
	`CREATE INDEX IF NOT EXISTS requests_ts ON requests (ts_ms, request_id)`,
	`CREATE INDEX IF NOT EXISTS requests_org_ts ON requests (org, ts_ms)`,
	`CREATE INDEX IF NOT EXISTS requests_team_ts ON requests (team, ts_ms)`,
	`CREATE INDEX IF NOT EXISTS requests_project_ts ON requests (project, ts_ms)`,
	`CREATE INDEX IF NOT EXISTS requests_provider_ts ON requests (served_provider, ts_ms)`,
	// One session's turns, read together (?session=, the compliance
	// pages). Only rows that have a session are indexed; the session
	// filter repeats the condition so that the planner may use it.
	`DROP INDEX IF EXISTS requests_session_ts`,
	`CREATE INDEX IF NOT EXISTS requests_session ON requests (session_id, ts_ms) WHERE session_id != ''`,
	// The rows out of the ordinary (refused, degraded, served by another
	// model, fallen back, switched): the flag and reason filters walk
	// these alone, newest first, instead of every row of the window. The
	// index holds the columns those filters test, so that the walk reads
	// a row from the table only when it meets them: a combination that
	// few or no rows meet (all three flags; a team's refusals) costs the
	// window's exceptional index entries, not as many table reads.
	// requests_exceptions was the same index without those columns.
	`DROP INDEX IF EXISTS requests_exceptions`,
	`CREATE INDEX IF NOT EXISTS requests_exceptional ON requests (ts_ms, request_id, ` + sqliteExceptionalColumns + `) WHERE ` + sqliteExceptional,
	`CREATE TABLE IF NOT EXISTS requestlog_meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)`,
	// The traffic rollup: requests per combination and UTC hour, kept by
	// the writer in each batch's transaction (traffic.go). Its key is in
	// the grouping order of the Traffic query, so that the groups stream
	// out of one walk with the hour tested in place.
	`CREATE TABLE IF NOT EXISTS requests_traffic_hours (
		key_id TEXT NOT NULL,
		team TEXT NOT NULL,
		decided_model TEXT NOT NULL,
		upstream TEXT NOT NULL,
		route TEXT NOT NULL,
		request_routing INTEGER NOT NULL,
		hour INTEGER NOT NULL,
		requests INTEGER NOT NULL,
		PRIMARY KEY (key_id, team, decided_model, upstream, route, request_routing, hour)
	) WITHOUT ROWID`,
	// The summary rollup (sqlite_summary.go): requests per hour and
	// combination of what the overview counts and filters, read by
	// Summarize instead of the rows.
	sqliteSummaryTable,
	sqliteTeamSummaryTable,
}

// sqliteExceptionalColumns are the columns the flag and reason filters
// test, which the partial index requests_exceptional holds.
const sqliteExceptionalColumns = "refused_code, routing_degraded, served_model, decided_model, fallback_reason, routing_switch_reason"

// sqliteExceptional is the condition of the partial index
// requests_exceptional: a row that the degraded, refused or switched flag,
// or a fallback or switch reason, can select. A filter repeats it word for
// word (sqliteDialect), which is how SQLite knows the index covers it.
const sqliteExceptional = "(refused_code != '' OR routing_degraded != '[]' OR (served_model != '' AND served_model != decided_model)" +
	" OR fallback_reason != '' OR routing_switch_reason != '')"

// sqliteMigrations run after sqliteIndexes, each once per log: its name is
// recorded in requestlog_meta as "migration:<name>" with the statements,
// in the schema's transaction.
var sqliteMigrations = []struct {
	name  string
	stmts []string
}{
	// The rollup replaces the covering index requests_traffic (key_id,
	// team, decided_model, upstream, route, ts_ms, request_routing): filled
	// from the rows once (through that index when it is there, so in its
	// order), then the index goes.
	{"traffic_rollup", []string{
		`DELETE FROM requests_traffic_hours`,
		sqliteFillRollup,
		`DROP INDEX IF EXISTS requests_traffic`,
	}},
	// The summary rollup, filled from the rows once.
	{"summary_rollup", []string{
		`DELETE FROM requests_summary_hours`,
		sqliteFillSummary,
		`DELETE FROM requests_team_hours`,
		sqliteFillTeamSummary,
	}},
}

// sqliteFillRollup counts every row into the (empty) rollup.
const sqliteFillRollup = `INSERT INTO requests_traffic_hours (key_id, team, decided_model, upstream, route, request_routing, hour, requests)
			SELECT key_id, team, decided_model, upstream, route, request_routing != 0, ` + sqliteHourOf + `, COUNT(*)
			FROM requests GROUP BY key_id, team, decided_model, upstream, route, request_routing != 0, ` + sqliteHourOf

// sqliteHourOf is the UTC hour of a row's ts_ms, rounded down (as
// [hourOf]), in SQL.
const sqliteHourOf = "(ts_ms - ((ts_ms % 3600000) + 3600000) % 3600000) / 3600000"

// sqliteLastOpen records the open: a real write, since BEGIN IMMEDIATE
// alone succeeds on a read-only file, and the statements before it write
// nothing once the schema exists.
const sqliteLastOpen = `INSERT OR REPLACE INTO requestlog_meta (k, v) VALUES ('last_open', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`

// rowColumns lists the stored columns in insert and select order; ts_ms
// holds Row.TS as Unix milliseconds in both backends.
var rowColumns = []string{
	"ts_ms", "request_id", "org", "team", "project", "key_id", "session_id", "route",
	"upstream", "decided_model", "chain", "served_model", "served_provider",
	"routing_switch_reason", "routing_degraded", "refused_code", "fallback_reason",
	"attempts", "status", "stream", "cache_hit", "representation_break",
	"cache_discount_applied", "prompt_tokens", "completion_tokens", "cost_usd",
	"latency_ms", "ttft_ms", "cost_source", "request_routing", "config_revision", "api",
	"session_key", "session_affinity", "cached_tokens", "reasoning_tokens",
	"data_policy", "data_policy_via",
	"preference_rank_by", "preference_preferred", "preference_allowed", "preference_denied",
	"preference_verdict", "refused_message", "upstream_attempts", "routing_object",
	"served_region",
	"responses", "close_code", "closed_by",
}

// OpenSQLite opens (creating if needed) the SQLite request log at path, in
// WAL mode with a 5 s busy timeout. It checks at once that the file is
// writable and not locked by another writer, so a read-only or locked file
// fails here, with an error naming path, rather than on the first insert.
func OpenSQLite(path string) (Store, error) {
	return openSQLiteDSN(path, "")
}

// openSQLiteDSN opens path with extra URI parameters (for tests).
func openSQLiteDSN(path, extra string) (Store, error) {
	if path == "" {
		return nil, errors.New("requestlog: sqlite path is empty")
	}
	if dir := filepath.Dir(path); dir != "" {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("requestlog: open sqlite %q: %w", path, err)
		}
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	if extra != "" {
		dsn += "&" + extra
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("requestlog: open sqlite %q: %w", path, err)
	}
	// One writer at a time is all SQLite allows; a few readers can run beside
	// it in WAL mode.
	db.SetMaxOpenConns(4)
	s := &sqliteStore{db: db, path: path}
	if err := s.init(); err != nil {
		_ = db.Close()
		return nil, err
	}
	if s.w, err = openRawSQLite(path); err != nil {
		_ = db.Close()
		return nil, s.openErr(err)
	}
	return s, nil
}

// init checks writability with a short lock wait, then applies the schema.
func (s *sqliteStore) init() error {
	ctx, cancel := context.WithTimeout(context.Background(), sqliteBusyTimeout+5*time.Second)
	defer cancel()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return s.openErr(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", sqliteOpenCheckTimeout.Milliseconds())); err != nil {
		return s.openErr(err)
	}
	// BEGIN IMMEDIATE takes the write lock: it fails (after the short
	// timeout) on a file another process is writing. The schema's final
	// write fails on a read-only file.
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return s.openErr(err)
	}
	if err := applySQLiteSchema(ctx, conn); err != nil {
		_, _ = conn.ExecContext(ctx, "ROLLBACK")
		return s.openErr(err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		_, _ = conn.ExecContext(ctx, "ROLLBACK")
		return s.openErr(err)
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", sqliteBusyTimeout.Milliseconds())); err != nil {
		return s.openErr(err)
	}
	return nil
}

// applySQLiteSchema creates the table, adds the columns it lacks, creates
// the indexes and runs the migrations not yet run, inside the caller's
// transaction.
func applySQLiteSchema(ctx context.Context, conn *sql.Conn) error {
	for _, stmt := range sqliteSchema {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	for _, c := range sqliteColumns {
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM pragma_table_info('requests') WHERE name = ?", c.name).Scan(&n); err != nil {
			return fmt.Errorf("check column %s: %w", c.name, err)
		}
		if n > 0 {
			continue
		}
		if _, err := conn.ExecContext(ctx, c.ddl); err != nil {
			return fmt.Errorf("add column %s: %w", c.name, err)
		}
	}
	for _, stmt := range sqliteIndexes {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	for _, m := range sqliteMigrations {
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM requestlog_meta WHERE k = ?", "migration:"+m.name).Scan(&n); err != nil {
			return fmt.Errorf("check migration %s: %w", m.name, err)
		}
		if n > 0 {
			continue
		}
		for _, stmt := range m.stmts {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO requestlog_meta (k, v) VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))", "migration:"+m.name); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	_, err := conn.ExecContext(ctx, sqliteLastOpen)
	return err
}

func (s *sqliteStore) openErr(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "readonly") || strings.Contains(msg, "read-only"):
		return fmt.Errorf("requestlog: sqlite %q is read-only: %w", s.path, err)
	case strings.Contains(msg, "locked") || strings.Contains(msg, "busy"):
		return fmt.Errorf("requestlog: sqlite %q is locked by another process: %w", s.path, err)
	}
	return fmt.Errorf("requestlog: open sqlite %q: %w", s.path, err)
}

// sqliteRowsPerInsert is how many rows one INSERT statement carries, so
// that a statement's fixed work (opening the table's and indexes' cursors)
// is shared; on the write connection 8, 64 and 128 measured the same as 32
// (docs/perf.md, "The compliance row"). 32 rows × len(rowColumns) stays far
// below SQLite's bound on parameters.
const sqliteRowsPerInsert = 32

// sqliteInsertSQL returns an INSERT of n rows.
func sqliteInsertSQL(n int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(rowColumns)), ", ") + ")"
	// OR IGNORE skips a row that breaks any constraint, not only a repeated
	// request_id; the only other ones are NOT NULL, and every value is bound
	// from a Go value that cannot be NULL once normalized (non-finite floats,
	// which SQLite stores as NULL, become 0). ON CONFLICT (request_id) DO
	// NOTHING would say so in SQL, but measured a third slower.
	return "INSERT OR IGNORE INTO requests (" + strings.Join(rowColumns, ", ") + ") VALUES " +
		strings.TrimSuffix(strings.Repeat(one+", ", n), ", ")
}

var (
	sqliteInsertOne  = sqliteInsertSQL(1)
	sqliteInsertMany = sqliteInsertSQL(sqliteRowsPerInsert)
)

// Insert implements [Store.Insert]: one transaction, sqliteRowsPerInsert
// rows per statement, on the store's write connection ([sqliteWriteConn]).
func (s *sqliteStore) Insert(ctx context.Context, rows []Row) error {
	if len(rows) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return fmt.Errorf("requestlog: sqlite insert into %q: the store is closed", s.path)
	}
	if err := s.w.insert(ctx, rows); err != nil {
		return fmt.Errorf("requestlog: sqlite insert: %w", err)
	}
	return nil
}

// Query implements [Store.Query].
func (s *sqliteStore) Query(ctx context.Context, f Filter) (Page, error) {
	c, err := decodeCursor(f.Cursor)
	if err != nil {
		return Page{}, err
	}
	w := filterWhere(f, c, sqliteDialect)
	limit := f.limit()
	q := "SELECT " + strings.Join(rowColumns, ", ") + " FROM requests" + w.sql() +
		" ORDER BY ts_ms DESC, request_id DESC LIMIT ?"
	rs, err := s.db.QueryContext(ctx, q, append(w.args, limit+1)...)
	if err != nil {
		return Page{}, fmt.Errorf("requestlog: sqlite query: %w", err)
	}
	defer rs.Close()
	var rows []Row
	for rs.Next() {
		var (
			r                          Row
			tsMS                       int64
			chain, degraded            string
			preferred, allowed, denied string
		)
		if err := rs.Scan(&tsMS, &r.RequestID, &r.Org, &r.Team, &r.Project, &r.KeyID, &r.SessionID, &r.Route,
			&r.Upstream, &r.DecidedModel, &chain, &r.ServedModel, &r.ServedProvider,
			&r.RoutingSwitchReason, &degraded, &r.RefusedCode, &r.FallbackReason,
			&r.Attempts, &r.Status, &r.Stream, &r.CacheHit, &r.RepresentationBreak,
			&r.CacheDiscountApplied, &r.PromptTokens, &r.CompletionTokens, &r.CostUSD,
			&r.LatencyMS, &r.TTFTMS, &r.CostSource, &r.RequestRouting, &r.ConfigRevision, &r.API,
			&r.SessionKey, &r.SessionAffinity, &r.CachedTokens, &r.ReasoningTokens,
			&r.DataPolicy, &r.DataPolicyVia,
			&r.PreferenceRankBy, &preferred, &allowed, &denied,
			&r.PreferenceVerdict, &r.RefusedMessage, &r.UpstreamAttempts, &r.RoutingObject, &r.ServedRegion,
			&r.Responses, &r.CloseCode, &r.ClosedBy); err != nil {
			return Page{}, fmt.Errorf("requestlog: sqlite scan: %w", err)
		}
		r.TS = time.UnixMilli(tsMS).UTC()
		if err := json.Unmarshal([]byte(chain), &r.Chain); err != nil {
			return Page{}, fmt.Errorf("requestlog: sqlite row %q: chain: %w", r.RequestID, err)
		}
		if err := json.Unmarshal([]byte(degraded), &r.RoutingDegraded); err != nil {
			return Page{}, fmt.Errorf("requestlog: sqlite row %q: routing_degraded: %w", r.RequestID, err)
		}
		for _, l := range []struct {
			col string
			src string
			dst *[]string
		}{{"preference_preferred", preferred, &r.PreferencePreferred}, {"preference_allowed", allowed, &r.PreferenceAllowed}, {"preference_denied", denied, &r.PreferenceDenied}} {
			if err := json.Unmarshal([]byte(l.src), l.dst); err != nil {
				return Page{}, fmt.Errorf("requestlog: sqlite row %q: %s: %w", r.RequestID, l.col, err)
			}
		}
		rows = append(rows, r.normalized())
	}
	if err := rs.Err(); err != nil {
		return Page{}, fmt.Errorf("requestlog: sqlite query: %w", err)
	}
	return page(rows, limit), nil
}

// Ping implements [Store.Ping].
func (s *sqliteStore) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("requestlog: sqlite ping %q: %w", s.path, err)
	}
	return nil
}

// Close implements [Store.Close].
func (s *sqliteStore) Close() error {
	s.mu.Lock()
	w := s.w
	s.w = nil
	s.mu.Unlock()
	if w != nil {
		if err := w.close(); err != nil {
			_ = s.db.Close()
			return fmt.Errorf("requestlog: close sqlite %q: %w", s.path, err)
		}
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("requestlog: close sqlite %q: %w", s.path, err)
	}
	return nil
}
