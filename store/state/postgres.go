package state

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicegw/sluice/profiles"
)

// postgresMigrations holds the numbered schema files, NNN_name.sql, applied
// in order like the request log's ClickHouse migrations and tracked in
// schema_migrations.
//
//go:embed postgres/*.sql
var postgresMigrations embed.FS

// Channel is the NOTIFY channel a change of the routes is announced on.
const Channel = "sluice_routes"

// migrationLock is the advisory lock that serialises migrations and
// changes across replicas.
const (
	migrationLock = 0x736c7569 // "slui"
	changeLock    = 0x63650000 // "ce"
)

// postgresStore is the state store on PostgreSQL, shared by a fleet.
type postgresStore struct {
	pool *pgxpool.Pool
	cfg  *pgxpool.Config
}

var (
	_ Store    = (*postgresStore)(nil)
	_ Notifier = (*postgresStore)(nil)
)

// OpenPostgres connects to PostgreSQL (url without its password, which is
// passed apart and never logged) and applies the pending migrations.
func OpenPostgres(ctx context.Context, url, password string) (Store, error) {
	return openPostgres(ctx, url, password, true)
}

// OpenPostgresToRead connects to PostgreSQL as OpenPostgres does but
// applies no migration: for a tool that only reads (sluice check), which
// must never change a fleet's shared schema. On a store not migrated yet
// its reads fail.
func OpenPostgresToRead(ctx context.Context, url, password string) (Store, error) {
	return openPostgres(ctx, url, password, false)
}

func openPostgres(ctx context.Context, url, password string, migrate bool) (Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("state: postgres_url: %w", err)
	}
	if password != "" {
		cfg.ConnConfig.Password = password
	}
	cfg.MaxConns = 4
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("state: postgres: %w", err)
	}
	s := &postgresStore{pool: pool, cfg: cfg}
	if !migrate {
		return s, nil
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

var pgMigrationRE = regexp.MustCompile(`^(\d{3})_[a-z0-9_]+\.sql$`)

// migrate applies, in one transaction under an advisory lock (replicas
// starting together apply each migration once), the migrations not yet in
// schema_migrations.
func (s *postgresStore) migrate(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("state: postgres: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
		return fmt.Errorf("state: postgres: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("state: postgres: %w", err)
	}
	entries, err := fs.ReadDir(postgresMigrations, "postgres")
	if err != nil {
		return err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		m := pgMigrationRE.FindStringSubmatch(e.Name())
		if m == nil {
			return fmt.Errorf("state: migration %s: name must be NNN_lower_snake.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		var done bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, v).Scan(&done); err != nil {
			return fmt.Errorf("state: postgres: %w", err)
		}
		if done {
			continue
		}
		b, err := postgresMigrations.ReadFile("postgres/" + e.Name())
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, string(b)); err != nil {
			return fmt.Errorf("state: migration %s: %w", e.Name(), err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, v, strings.TrimSuffix(e.Name(), ".sql")); err != nil {
			return fmt.Errorf("state: postgres: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("state: postgres: %w", err)
	}
	return nil
}

// Close implements [Store.Close].
func (s *postgresStore) Close() error { s.pool.Close(); return nil }

// Ping implements [Store.Ping].
func (s *postgresStore) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Where implements [Store.Where].
func (s *postgresStore) Where() string { return "postgres" }

// Seeded implements [Store.Seeded].
func (s *postgresStore) Seeded(ctx context.Context) (bool, error) {
	var v string
	err := s.pool.QueryRow(ctx, `SELECT v FROM meta WHERE k = 'seeded'`).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("state: %w", err)
	}
	return v == "true", nil
}

type pgQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func pgRoutes(ctx context.Context, q pgQuerier) ([]profiles.Route, error) {
	rows, err := q.Query(ctx, `SELECT doc::text FROM routes ORDER BY position`)
	if err != nil {
		return nil, fmt.Errorf("state: routes: %w", err)
	}
	defer rows.Close()
	return scanRoutes(rows)
}

// Routes implements [Store.Routes].
func (s *postgresStore) Routes(ctx context.Context) ([]profiles.Route, error) {
	return pgRoutes(ctx, s.pool)
}

// Replace implements [Store.Replace].
func (s *postgresStore) Replace(ctx context.Context, routes []profiles.Route, entry AuditEntry) error {
	return s.Update(ctx, func([]profiles.Route) ([]profiles.Route, AuditEntry, error) { return routes, entry, nil })
}

// Update implements [Store.Update]: under a transaction-scoped advisory
// lock, so changes from every replica serialise; the commit notifies every
// replica listening on [Channel].
func (s *postgresStore) Update(ctx context.Context, change func([]profiles.Route) ([]profiles.Route, AuditEntry, error)) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, changeLock); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	cur, err := pgRoutes(ctx, tx)
	if err != nil {
		return err
	}
	routes, entry, err := change(cur)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM routes`); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	for i, r := range routes {
		doc, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("state: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO routes (id, position, doc) VALUES ($1, $2, $3::json)`, r.Model, i, string(doc)); err != nil {
			return fmt.Errorf("state: route %q: %w", r.Model, err)
		}
	}
	if err := pgAppend(ctx, tx, entry); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO meta (k, v) VALUES ('seeded', 'true') ON CONFLICT (k) DO UPDATE SET v = 'true'`); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, Channel, entry.Action); err != nil {
		return fmt.Errorf("state: notify: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("state: commit: %w", err)
	}
	return nil
}

type pgExecer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func pgAppend(ctx context.Context, db pgExecer, entry AuditEntry) error {
	ts := entry.TS
	if ts.IsZero() {
		ts = time.Now()
	}
	if _, err := db.Exec(ctx, `INSERT INTO audit (ts, actor, client, request_id, action, route_id, before_doc, after_doc) VALUES ($1, $2, $3, $4, $5, $6, $7::json, $8::json)`,
		ts.UTC(), entry.Actor, entry.Client, entry.RequestID, entry.Action, entry.RouteID, nullable(entry.Before), nullable(entry.After)); err != nil {
		return fmt.Errorf("state: audit: %w", err)
	}
	return nil
}

// Append implements [Store.Append]: no notification, since no route
// changed.
func (s *postgresStore) Append(ctx context.Context, entry AuditEntry) error {
	return pgAppend(ctx, s.pool, entry)
}

// Audit implements [Store.Audit].
func (s *postgresStore) Audit(ctx context.Context, limit int, cursor string) (entries []AuditEntry, next string, err error) {
	limit, before, err := auditWindow(limit, cursor)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.pool.Query(ctx, `SELECT id, ts, actor, client, request_id, action, route_id, before_doc::text, after_doc::text FROM audit
		WHERE id < $1 ORDER BY id DESC LIMIT $2`, before, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("state: audit: %w", err)
	}
	defer rows.Close()
	entries = []AuditEntry{}
	for rows.Next() {
		var e AuditEntry
		var b, a sql.NullString
		if err := rows.Scan(&e.ID, &e.TS, &e.Actor, &e.Client, &e.RequestID, &e.Action, &e.RouteID, &b, &a); err != nil {
			return nil, "", fmt.Errorf("state: audit: %w", err)
		}
		e.TS = e.TS.UTC()
		e.Before, e.After = raw(b), raw(a)
		entries = append(entries, e)
	}
	entries, next = auditPage(entries, limit)
	return entries, next, rows.Err()
}

// Watch implements [Notifier.Watch]: a connection of its own LISTENs on
// [Channel] (listening is called once the first LISTEN has returned);
// when it is lost, it reconnects (every second until it can) and calls
// changed once, since a change may have come meanwhile.
func (s *postgresStore) Watch(ctx context.Context, listening, changed func()) {
	missed := false
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, s.cfg.ConnConfig.Copy())
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+Channel)
		}
		if err == nil {
			if listening != nil {
				listening()
				listening = nil
			}
			if missed {
				changed()
			}
			for {
				if _, err = conn.WaitForNotification(ctx); err != nil {
					break
				}
				changed()
			}
		}
		if conn != nil {
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = conn.Close(cctx)
			cancel()
		}
		missed = true
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
