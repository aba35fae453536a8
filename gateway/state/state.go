// Package state is the gateway's state store: the routes (their source of
// truth once seeded from sluice.toml) and the audit trail of every admin
// change, in a SQLite file in data_dir beside the embedded request log.
// Every change is one transaction: the whole route list with its audit
// entry, so a reader never sees half a change.
package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	_ "modernc.org/sqlite" // the embedded SQLite driver

	"github.com/sluicegw/sluice/profiles"
)

// File is the state store's file name inside data_dir.
const File = "state.db"

// Store is the state store. It is safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string
}

// AuditEntry is one recorded admin change.
type AuditEntry struct {
	// ID orders the entries; it is also the pagination cursor.
	ID int64 `json:"id"`
	// TS is when the change was made (UTC).
	TS time.Time `json:"ts"`
	// Actor identifies who made it: "token:<first 12 hex of the token's
	// sha256>" for the admin API, "import" for a seed import.
	Actor string `json:"actor"`
	// Action is what was done: "route.put", "route.delete", "target.add",
	// "target.delete", "import".
	Action string `json:"action"`
	// RouteID is the route changed ("" for an import of every route).
	RouteID string `json:"route_id"`
	// Before and After are the route before and after the change (null when
	// it did not exist), or the whole route list for an import.
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// Open opens (creating if needed) the state store at path.
func Open(path string) (*Store, error) {
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
	return &Store{db: db, path: path}, nil
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// Seeded reports whether routes were ever imported into the store; until
// then the file's routes are imported at start.
func (s *Store) Seeded(ctx context.Context) (bool, error) {
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

// Routes returns the stored routes in order.
func (s *Store) Routes(ctx context.Context) ([]profiles.Route, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT doc FROM routes ORDER BY position`)
	if err != nil {
		return nil, fmt.Errorf("state: routes: %w", err)
	}
	defer rows.Close()
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

// Replace stores the whole route list and its audit entry in one
// transaction, and marks the store seeded.
func (s *Store) Replace(ctx context.Context, routes []profiles.Route, entry AuditEntry) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
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
	ts := entry.TS
	if ts.IsZero() {
		ts = time.Now()
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO audit (ts_ms, actor, action, route_id, before_doc, after_doc) VALUES (?, ?, ?, ?, ?, ?)`,
		ts.UnixMilli(), entry.Actor, entry.Action, entry.RouteID, nullable(entry.Before), nullable(entry.After)); err != nil {
		return fmt.Errorf("state: audit: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES ('seeded', 'true') ON CONFLICT (k) DO UPDATE SET v = 'true'`); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("state: commit: %w", err)
	}
	return nil
}

func nullable(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// Audit returns up to limit entries, newest first, older than the cursor
// (the ID of the last entry of the previous page; "" for the newest). next
// is "" at the end.
func (s *Store) Audit(ctx context.Context, limit int, cursor string) (entries []AuditEntry, next string, err error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	before := int64(1) << 62
	if cursor != "" {
		if before, err = strconv.ParseInt(cursor, 10, 64); err != nil || before <= 0 {
			return nil, "", ErrBadCursor
		}
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, ts_ms, actor, action, route_id, before_doc, after_doc FROM audit
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
		if err := rows.Scan(&e.ID, &ms, &e.Actor, &e.Action, &e.RouteID, &b, &a); err != nil {
			return nil, "", fmt.Errorf("state: audit: %w", err)
		}
		e.TS = time.UnixMilli(ms).UTC()
		e.Before, e.After = raw(b), raw(a)
		entries = append(entries, e)
	}
	if len(entries) > limit {
		entries = entries[:limit]
		next = strconv.FormatInt(entries[limit-1].ID, 10)
	}
	return entries, next, rows.Err()
}

func raw(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return json.RawMessage("null")
	}
	return json.RawMessage(s.String)
}

// ErrBadCursor is returned by Audit for a cursor it did not produce.
var ErrBadCursor = errors.New("state: invalid cursor")
