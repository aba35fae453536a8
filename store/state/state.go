// Package state is the gateway's state store: the routes (their source of
// truth once seeded from sluice.toml) and the audit trail of every admin
// change. It is a SQLite file in data_dir beside the embedded request log
// (one per replica; the default), or a PostgreSQL database that every
// replica of a fleet shares ([state] kind = "postgres"), which tells every
// replica when the routes change (LISTEN/NOTIFY). Every change is one
// transaction: the whole route list with its audit entry, so a reader never
// sees half a change.
package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	_ "modernc.org/sqlite" // the embedded SQLite driver

	"github.com/sluicegw/sluice/profiles"
)

// File is the SQLite state store's file name inside data_dir.
const File = "state.db"

// Store is the state store. Implementations are safe for concurrent use.
type Store interface {
	// Seeded reports whether routes were ever imported into the store; until
	// then the file's routes are imported at start.
	Seeded(ctx context.Context) (bool, error)
	// Routes returns the stored routes in order.
	Routes(ctx context.Context) ([]profiles.Route, error)
	// Replace stores the whole route list and its audit entry in one
	// transaction, and marks the store seeded.
	Replace(ctx context.Context, routes []profiles.Route, entry AuditEntry) error
	// Update changes the stored routes in one transaction, serialised with
	// every other change (of any replica sharing the store): change gets the
	// routes stored now and returns the new list and its audit entry, or an
	// error that leaves the store as it was.
	Update(ctx context.Context, change func(cur []profiles.Route) ([]profiles.Route, AuditEntry, error)) error
	// Append stores an audit entry alone, for an event that changes no
	// stored route (a configuration reload).
	Append(ctx context.Context, entry AuditEntry) error
	// Audit returns up to limit entries, newest first, older than the
	// cursor ("" for the newest); next is "" at the end.
	Audit(ctx context.Context, limit int, cursor string) (entries []AuditEntry, next string, err error)
	// Ping reports whether the store answers.
	Ping(ctx context.Context) error
	// Where names the store in messages: the SQLite file, or "postgres".
	Where() string
	// Close closes the store.
	Close() error
}

// Notifier is a store shared by several gateways: Watch calls listening
// once, when it first listens (a change made from then on is heard: a
// gateway loads its routes after that, so that none made while it starts
// is missed), and changed whenever any of them changed the routes (and once
// after a lost connection comes back, since changes may have been missed),
// until ctx ends.
type Notifier interface {
	Watch(ctx context.Context, listening, changed func())
}

// OpenToRead opens the configured store for reading only: PostgreSQL
// without applying its migrations (see [OpenPostgresToRead]), SQLite as
// [Open] does (its file is the replica's own).
func OpenToRead(ctx context.Context, cfg *profiles.Config) (Store, error) {
	if cfg.State.Kind == "postgres" {
		pw, err := cfg.State.PostgresPassword()
		if err != nil {
			return nil, fmt.Errorf("state: [state] postgres_password_env: %w", err)
		}
		return OpenPostgresToRead(ctx, cfg.State.PostgresURL, pw)
	}
	return Open(ctx, cfg)
}

// Open opens the state store a configuration's [state] names: SQLite in
// data_dir (creating it), or PostgreSQL (applying its migrations). The
// gateway, sluice import and sluice check all open it here.
func Open(ctx context.Context, cfg *profiles.Config) (Store, error) {
	if cfg.State.Kind == "postgres" {
		pw, err := cfg.State.PostgresPassword()
		if err != nil {
			return nil, fmt.Errorf("state: [state] postgres_password_env: %w", err)
		}
		return OpenPostgres(ctx, cfg.State.PostgresURL, pw)
	}
	if err := os.MkdirAll(cfg.Store.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("state: data_dir %s: %w", cfg.Store.DataDir, err)
	}
	return OpenSQLite(filepath.Join(cfg.Store.DataDir, File))
}

// sqliteStore is the state store in a SQLite file.
type sqliteStore struct {
	db   *sql.DB
	path string
}

var _ Store = (*sqliteStore)(nil)

// AuditEntry is one recorded admin change.
type AuditEntry struct {
	// ID orders the entries; it is also the pagination cursor.
	ID int64 `json:"id"`
	// TS is when the change was made (UTC).
	TS time.Time `json:"ts"`
	// Actor identifies who made it: "admin:<fingerprint>" for the admin
	// token (12 hex digits of a digest of it, never a part of the secret),
	// "import" for a seed import, "file-watch" or "sighup" for a reload.
	Actor string `json:"actor"`
	// Client is the address the change came from: the connection's peer,
	// or the first hop X-Forwarded-For names before the trusted proxies
	// ([server] trusted_proxies) when the peer is one of them. "" when the
	// change came from no request (an import, a reload), and for entries
	// written before it was recorded.
	Client string `json:"client"`
	// RequestID is the request's id (its X-Request-Id answer header); ""
	// as for Client.
	RequestID string `json:"request_id"`
	// Action is what was done: "route.put", "route.delete", "target.add",
	// "target.delete", "import", "config.reload".
	Action string `json:"action"`
	// RouteID is the route changed ("" for an import of every route and a
	// reload).
	RouteID string `json:"route_id"`
	// Before and After are the route before and after the change (null when
	// it did not exist), or the whole route list for an import. For a
	// reload Before is null and After says what happened: {"outcome":
	// "applied" or "refused", "changed": the configuration files changed
	// since the last good load, and for a refusal "errors" (how many) and
	// "first" (the first, located)}.
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// OpenSQLite opens (creating if needed) the SQLite state store at path.
func OpenSQLite(path string) (Store, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("state: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	for _, stmt := range []string{
		`CREATE TABLE IF NOT EXISTS routes (id TEXT PRIMARY KEY, position INTEGER NOT NULL, doc TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY AUTOINCREMENT, ts_ms INTEGER NOT NULL, actor TEXT NOT NULL,
			action TEXT NOT NULL, route_id TEXT NOT NULL, before_doc TEXT, after_doc TEXT)`,
		`CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			db.Close()
			return nil, fmt.Errorf("state: %s: %w", path, err)
		}
	}
	if err := addAuditOrigin(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("state: %s: %w", path, err)
	}
	return &sqliteStore{db: db, path: path}, nil
}

// addAuditOrigin adds the audit trail's client and request_id columns to a
// file made before them; its rows keep, and read them as "".
func addAuditOrigin(db *sql.DB) error {
	have := map[string]bool{}
	rows, err := db.Query(`SELECT name FROM pragma_table_info('audit')`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		have[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, col := range []string{"client", "request_id"} {
		if !have[col] {
			if _, err := db.Exec(`ALTER TABLE audit ADD COLUMN ` + col + ` TEXT NOT NULL DEFAULT ''`); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close implements [Store.Close].
func (s *sqliteStore) Close() error { return s.db.Close() }

// Ping implements [Store.Ping].
func (s *sqliteStore) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// Where implements [Store.Where].
func (s *sqliteStore) Where() string { return s.path }

// Seeded implements [Store.Seeded].
func (s *sqliteStore) Seeded(ctx context.Context) (bool, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'seeded'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("state: %w", err)
	}
	return v == "true", nil
}

// Routes implements [Store.Routes].
func (s *sqliteStore) Routes(ctx context.Context) ([]profiles.Route, error) {
	return readRoutes(ctx, s.db)
}

// querier is a database or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func readRoutes(ctx context.Context, db querier) ([]profiles.Route, error) {
	rows, err := db.QueryContext(ctx, `SELECT doc FROM routes ORDER BY position`)
	if err != nil {
		return nil, fmt.Errorf("state: routes: %w", err)
	}
	defer rows.Close()
	return scanRoutes(rows)
}

// routeRows is what both stores' query results offer: database/sql's rows
// and pgx's.
type routeRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// scanRoutes reads the routes of a query selecting each route's JSON
// document, in order.
func scanRoutes(rows routeRows) ([]profiles.Route, error) {
	out := []profiles.Route{}
	for rows.Next() {
		var doc string
		if err := rows.Scan(&doc); err != nil {
			return nil, fmt.Errorf("state: routes: %w", err)
		}
		var r profiles.Route
		if err := json.Unmarshal([]byte(doc), &r); err != nil {
			return nil, fmt.Errorf("state: a stored route is corrupt: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Replace implements [Store.Replace].
func (s *sqliteStore) Replace(ctx context.Context, routes []profiles.Route, entry AuditEntry) error {
	return s.Update(ctx, func([]profiles.Route) ([]profiles.Route, AuditEntry, error) { return routes, entry, nil })
}

// Update implements [Store.Update]: one immediate transaction (the
// connection's _txlock), so concurrent changes serialise.
func (s *sqliteStore) Update(ctx context.Context, change func([]profiles.Route) ([]profiles.Route, AuditEntry, error)) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	cur, err := readRoutes(ctx, tx)
	if err != nil {
		return err
	}
	routes, entry, err := change(cur)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM routes`); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	for i, r := range routes {
		doc, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("state: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO routes (id, position, doc) VALUES (?, ?, ?)`, r.Model, i, string(doc)); err != nil {
			return fmt.Errorf("state: route %q: %w", r.Model, err)
		}
	}
	if err := sqliteAppend(ctx, tx, entry); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES ('seeded', 'true') ON CONFLICT (k) DO UPDATE SET v = 'true'`); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("state: commit: %w", err)
	}
	return nil
}

// execer is a database or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func sqliteAppend(ctx context.Context, db execer, entry AuditEntry) error {
	ts := entry.TS
	if ts.IsZero() {
		ts = time.Now()
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO audit (ts_ms, actor, client, request_id, action, route_id, before_doc, after_doc) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		ts.UnixMilli(), entry.Actor, entry.Client, entry.RequestID, entry.Action, entry.RouteID, nullable(entry.Before), nullable(entry.After)); err != nil {
		return fmt.Errorf("state: audit: %w", err)
	}
	return nil
}

// Append implements [Store.Append].
func (s *sqliteStore) Append(ctx context.Context, entry AuditEntry) error {
	return sqliteAppend(ctx, s.db, entry)
}

func nullable(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// Audit implements [Store.Audit]: the cursor is the ID of the last entry of
// the previous page.
func (s *sqliteStore) Audit(ctx context.Context, limit int, cursor string) (entries []AuditEntry, next string, err error) {
	limit, before, err := auditWindow(limit, cursor)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, ts_ms, actor, client, request_id, action, route_id, before_doc, after_doc FROM audit
		WHERE id < ? ORDER BY id DESC LIMIT ?`, before, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("state: audit: %w", err)
	}
	defer rows.Close()
	entries = []AuditEntry{}
	for rows.Next() {
		var e AuditEntry
		var ms int64
		var b, a sql.NullString
		if err := rows.Scan(&e.ID, &ms, &e.Actor, &e.Client, &e.RequestID, &e.Action, &e.RouteID, &b, &a); err != nil {
			return nil, "", fmt.Errorf("state: audit: %w", err)
		}
		e.TS = time.UnixMilli(ms).UTC()
		e.Before, e.After = raw(b), raw(a)
		entries = append(entries, e)
	}
	entries, next = auditPage(entries, limit)
	return entries, next, rows.Err()
}

// auditWindow is the page an Audit call asks for: limit clamped to 1..1000
// (100 outside it) and the ID the entries are older than, from the cursor
// ("" for the newest), or ErrBadCursor.
func auditWindow(limit int, cursor string) (int, int64, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	before := int64(1) << 62
	if cursor != "" {
		var err error
		if before, err = strconv.ParseInt(cursor, 10, 64); err != nil || before <= 0 {
			return 0, 0, ErrBadCursor
		}
	}
	return limit, before, nil
}

// auditPage cuts entries, read with one beyond limit, to the page and the
// cursor of the next one ("" at the end).
func auditPage(entries []AuditEntry, limit int) ([]AuditEntry, string) {
	if len(entries) <= limit {
		return entries, ""
	}
	entries = entries[:limit]
	return entries, strconv.FormatInt(entries[limit-1].ID, 10)
}

// raw is a nullable JSON column as a document: JSON null for NULL.
func raw(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return json.RawMessage("null")
	}
	return json.RawMessage(s.String)
}

// ErrBadCursor is returned by Audit for a cursor it did not produce.
var ErrBadCursor = errors.New("state: invalid cursor")
