package requestlog

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/ext"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// clickhouseMigrations holds the numbered schema files, NNN_name.sql.
//
//go:embed clickhouse/*.sql
var clickhouseMigrations embed.FS

// Options configures the ClickHouse backend.
type Options struct {
	// Addr is the native-protocol address (host:port). Default "127.0.0.1:9000".
	// The HTTP protocol is not supported: clickhouse-go's HTTP client fails
	// against ClickHouse 18.16.
	Addr string
	// Database holds the tables; it is created if missing. Default "sluice".
	// Letters, digits and underscores only.
	Database string
	// Username defaults to "default"; Password defaults to empty.
	Username string
	// Password authenticates Username.
	Password string
	// TLS enables TLS when non-nil. Default plaintext.
	TLS *tls.Config
	// DialTimeout bounds connecting. Default 5 s.
	DialTimeout time.Duration
	// ReadTimeout bounds waiting for a server reply. Default 30 s.
	ReadTimeout time.Duration
	// MaxOpenConns caps the connection pool. Default 4.
	MaxOpenConns int
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// withDefaults returns o with unset fields filled in, or an error for
// invalid values.
func (o Options) withDefaults() (Options, error) {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:9000"
	}
	if o.Database == "" {
		o.Database = "sluice"
	}
	if !identRE.MatchString(o.Database) {
		return o, fmt.Errorf("requestlog: clickhouse database name %q: want letters, digits and underscores", o.Database)
	}
	if o.Username == "" {
		o.Username = "default"
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 30 * time.Second
	}
	if o.MaxOpenConns <= 0 {
		o.MaxOpenConns = 4
	}
	return o, nil
}

func (o Options) open(database string) (driver.Conn, error) {
	conn, err := clickhouse.Open(&clickhouse.Options{
		Protocol:     clickhouse.Native,
		Addr:         []string{o.Addr},
		Auth:         clickhouse.Auth{Database: database, Username: o.Username, Password: o.Password},
		TLS:          o.TLS,
		DialTimeout:  o.DialTimeout,
		ReadTimeout:  o.ReadTimeout,
		MaxOpenConns: o.MaxOpenConns,
		MaxIdleConns: o.MaxOpenConns,
	})
	if err != nil {
		return nil, fmt.Errorf("requestlog: clickhouse %s: %w", o.Addr, err)
	}
	return conn, nil
}

// ClickHouse's error codes that connect explains.
const (
	chUnknownDatabase      = 81
	chUnknownUser          = 192
	chWrongPassword        = 193
	chRequiredPassword     = 194
	chIPAddressNotAllowed  = 195
	chAuthenticationFailed = 516 // current releases, for every refused login
)

// connect returns a pool bound to o.Database, creating the database first
// when the server says it does not exist. It is created over a connection
// that names no database (the server's default for the user, whose access
// is not checked at login), so that a user allowed only its own databases
// can create it; a user who may not create databases still connects to one
// made for it.
func connect(ctx context.Context, o Options) (driver.Conn, error) {
	conn, err := o.dial(ctx, o.Database)
	var ex *clickhouse.Exception
	if errors.As(err, &ex) && ex.Code == chUnknownDatabase {
		boot, err := o.dial(ctx, "")
		if err != nil {
			return nil, err
		}
		err = boot.Exec(ctx, "CREATE DATABASE IF NOT EXISTS `"+o.Database+"`")
		_ = boot.Close()
		if err != nil {
			return nil, fmt.Errorf("requestlog: clickhouse %s: create database %s: %w", o.Addr, o.Database, err)
		}
		return o.dial(ctx, o.Database)
	}
	if err != nil {
		return nil, err
	}
	return conn, nil
}

// dial opens a pool bound to database and logs in with a ping, returning
// the login's error explained (see explainConnError).
func (o Options) dial(ctx context.Context, database string) (driver.Conn, error) {
	conn, err := o.open(database)
	if err != nil {
		return nil, err
	}
	if err := conn.Ping(ctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("requestlog: clickhouse %s: %w", o.Addr, o.explainConnError(err))
	}
	return conn, nil
}

// explainConnError prefixes err, from logging in, with what went wrong in
// the operator's terms when it is a refused login or a TLS mismatch. It
// never includes the password.
func (o Options) explainConnError(err error) error {
	var (
		ex       *clickhouse.Exception
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &ex) && slices.Contains([]int32{chUnknownUser, chWrongPassword, chRequiredPassword, chIPAddressNotAllowed, chAuthenticationFailed}, ex.Code):
		return fmt.Errorf("authentication failed for user %q (check clickhouse_user and the password in clickhouse_password_env): %w", o.Username, err)
	case errors.As(err, &hostname):
		return fmt.Errorf("TLS: the server's certificate is not for %q, the host of clickhouse_addr (address the server by a name its certificate lists): %w", hostname.Host, err)
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &invalid):
		return fmt.Errorf("TLS: the server's certificate is not trusted (clickhouse_ca_file names the CAs that sign it; without it, the system's roots): %w", err)
	case errors.As(err, &record):
		return fmt.Errorf("TLS: the server does not speak TLS on this port (the secure native port, tcp_port_secure, is 9440 by convention): %w", err)
	case o.TLS == nil && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)):
		return fmt.Errorf("the server hung up on the login (a secure port needs clickhouse_tls = true; ClickHouse 18 also hangs up on a database the user may not use): %w", err)
	}
	return err
}

var _ Store = (*clickhouseStore)(nil)

type clickhouseStore struct {
	conn driver.Conn
	addr string
	// exactTraffic counts Traffic queries answered by the exact grouping
	// on the strings (a hash collision, or hashes without their strings).
	exactTraffic atomic.Int64
}

// OpenClickHouse connects to ClickHouse over the native protocol, creates
// the database if missing, applies pending migrations (see
// MigrateClickHouse) and returns the store. It works with ClickHouse 18.16
// and current releases.
func OpenClickHouse(ctx context.Context, opts Options) (Store, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	conn, err := connect(ctx, o)
	if err != nil {
		return nil, err
	}
	if _, err := migrate(ctx, conn, clickhouseMigrations); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("requestlog: clickhouse %s: %w", o.Addr, err)
	}
	return &clickhouseStore{conn: conn, addr: o.Addr}, nil
}

// MigrateClickHouse creates the database if missing and applies, in order,
// the embedded migrations not yet listed in its schema_migrations table. It
// returns the names (like "001_create_requests") it applied; running it again
// applies nothing. It is what `sluice migrate` runs.
func MigrateClickHouse(ctx context.Context, opts Options) (applied []string, err error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	conn, err := connect(ctx, o)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	applied, err = migrate(ctx, conn, clickhouseMigrations)
	if err != nil {
		return applied, fmt.Errorf("requestlog: clickhouse %s: %w", o.Addr, err)
	}
	return applied, nil
}

// migration is one numbered schema file.
type migration struct {
	version int
	name    string // file name without ".sql"
	stmts   []string
}

var migrationNameRE = regexp.MustCompile(`^(\d{3})_[a-z0-9_]+\.sql$`)

// loadMigrations reads NNN_name.sql files from the root of fsys (or from its
// "clickhouse" folder when present) in version order.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	if sub, err := fs.Sub(fsys, "clickhouse"); err == nil {
		if _, err := fs.Stat(sub, "."); err == nil {
			fsys = sub
		}
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []migration
	seen := map[int]string{}
	for _, e := range entries {
		m := migrationNameRE.FindStringSubmatch(e.Name())
		if m == nil {
			if strings.HasSuffix(e.Name(), ".sql") {
				return nil, fmt.Errorf("migration %s: name must be NNN_lower_snake.sql", e.Name())
			}
			continue
		}
		v, _ := strconv.Atoi(m[1])
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", prev, e.Name(), v)
		}
		seen[v] = e.Name()
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		stmts := splitStatements(string(b))
		if len(stmts) == 0 {
			return nil, fmt.Errorf("migration %s: no statements", e.Name())
		}
		ms = append(ms, migration{version: v, name: strings.TrimSuffix(e.Name(), ".sql"), stmts: stmts})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	return ms, nil
}

// splitStatements drops "--" comment lines and splits on ';' at line ends:
// ClickHouse 18.16 runs one statement per query.
func splitStatements(src string) []string {
	var stmts []string
	var cur strings.Builder
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			stmts = append(stmts, s)
		}
		cur.Reset()
	}
	for line := range strings.Lines(src) {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") {
			continue
		}
		if s, ok := strings.CutSuffix(trimmed, ";"); ok {
			cur.WriteString(s)
			flush()
			continue
		}
		cur.WriteString(line)
	}
	flush()
	return stmts
}

// addColumnRE recognises "ALTER TABLE t ADD COLUMN c ...", which 18.16 cannot
// guard with IF NOT EXISTS; migrate checks system.columns instead, so a
// migration interrupted between statements can be rerun.
var addColumnRE = regexp.MustCompile("(?is)^ALTER\\s+TABLE\\s+`?([A-Za-z0-9_]+)`?\\s+ADD\\s+COLUMN\\s+`?([A-Za-z0-9_]+)`?\\s")

const schemaMigrationsDDL = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version UInt32,
    name String,
    applied_at DateTime('UTC')
) ENGINE = MergeTree() ORDER BY version`

// migrate applies the migrations of fsys that schema_migrations lacks.
func migrate(ctx context.Context, conn driver.Conn, fsys fs.FS) ([]string, error) {
	ms, err := loadMigrations(fsys)
	if err != nil {
		return nil, err
	}
	if err := conn.Exec(ctx, schemaMigrationsDDL); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	done := map[int]bool{}
	rs, err := conn.Query(ctx, "SELECT DISTINCT version FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	for rs.Next() {
		var v uint32
		if err := rs.Scan(&v); err != nil {
			rs.Close()
			return nil, fmt.Errorf("read schema_migrations: %w", err)
		}
		done[int(v)] = true
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	applied := []string{}
	for _, m := range ms {
		if done[m.version] {
			continue
		}
		for i, stmt := range m.stmts {
			if skip, err := columnExists(ctx, conn, stmt); err != nil {
				return applied, fmt.Errorf("migration %s statement %d: %w", m.name, i+1, err)
			} else if skip {
				continue
			}
			if err := conn.Exec(ctx, stmt); err != nil {
				return applied, fmt.Errorf("migration %s statement %d: %w", m.name, i+1, err)
			}
		}
		b, err := conn.PrepareBatch(ctx, "INSERT INTO schema_migrations (version, name, applied_at)")
		if err != nil {
			return applied, fmt.Errorf("record migration %s: %w", m.name, err)
		}
		if err := b.Append(uint32(m.version), m.name, time.Now().UTC()); err != nil {
			_ = b.Abort()
			return applied, fmt.Errorf("record migration %s: %w", m.name, err)
		}
		if err := b.Send(); err != nil {
			return applied, fmt.Errorf("record migration %s: %w", m.name, err)
		}
		applied = append(applied, m.name)
	}
	return applied, nil
}

// columnExists reports whether stmt adds a column that already exists.
func columnExists(ctx context.Context, conn driver.Conn, stmt string) (bool, error) {
	m := addColumnRE.FindStringSubmatch(stmt)
	if m == nil {
		return false, nil
	}
	var n uint64
	if err := conn.QueryRow(ctx,
		"SELECT count() FROM system.columns WHERE database = currentDatabase() AND table = ? AND name = ?",
		m[1], m[2]).Scan(&n); err != nil {
		return false, fmt.Errorf("check column %s.%s: %w", m[1], m[2], err)
	}
	return n > 0, nil
}

// chInsertColumns are the columns the store writes: ts plus rowColumns.
var chInsertSQL = "INSERT INTO requests (ts, " + strings.Join(rowColumns, ", ") + ")"

// Insert implements [Store.Insert]. Before sending a batch it asks which of
// its request_ids are already stored (within the batch's ts range, which the
// primary key serves) and leaves those out, so a batch retried after a lost
// acknowledgement is not stored twice.
func (s *clickhouseStore) Insert(ctx context.Context, rows []Row) error {
	rows = dedupe(rows)
	if len(rows) == 0 {
		return nil
	}
	existing, err := s.existingIDs(ctx, rows)
	if err != nil {
		return err
	}
	if len(existing) > 0 {
		rows = slices.DeleteFunc(rows, func(r Row) bool {
			_, ok := existing[r.RequestID]
			return ok
		})
		if len(rows) == 0 {
			return nil
		}
	}
	b, err := s.conn.PrepareBatch(ctx, chInsertSQL)
	if err != nil {
		return fmt.Errorf("requestlog: clickhouse %s: prepare insert: %w", s.addr, err)
	}
	if err := appendColumns(b, rows); err != nil {
		_ = b.Abort()
		return fmt.Errorf("requestlog: clickhouse %s: append: %w", s.addr, err)
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("requestlog: clickhouse %s: insert %d rows: %w", s.addr, len(rows), err)
	}
	return nil
}

// existingIDs returns which request_ids of rows (normalized) are stored.
// The candidate ids travel as an external table (a data block beside the
// query) rather than in the query text: a 10k-id literal costs hundreds of
// milliseconds to parse on 18.16 and can pass max_query_size, and "IN (?)"
// with a slice is rejected there. The ts range lets the primary key skip
// everything outside the batch's time span.
func (s *clickhouseStore) existingIDs(ctx context.Context, rows []Row) (map[string]struct{}, error) {
	ids, err := ext.NewTable("batch_ids", ext.Column("request_id", "String"))
	if err != nil {
		return nil, fmt.Errorf("requestlog: clickhouse: external table: %w", err)
	}
	minTS, maxTS := rows[0].TS.UnixMilli(), rows[0].TS.UnixMilli()
	for _, r := range rows {
		ts := r.TS.UnixMilli()
		minTS, maxTS = min(minTS, ts), max(maxTS, ts)
		if err := ids.Append(r.RequestID); err != nil {
			return nil, fmt.Errorf("requestlog: clickhouse: external table: %w", err)
		}
	}
	qctx := clickhouse.Context(ctx, clickhouse.WithExternalTable(ids))
	rs, err := s.conn.Query(qctx,
		"SELECT request_id FROM requests WHERE ts_ms >= ? AND ts_ms <= ? AND request_id IN (SELECT request_id FROM batch_ids)",
		minTS, maxTS)
	if err != nil {
		return nil, fmt.Errorf("requestlog: clickhouse %s: check existing ids: %w", s.addr, err)
	}
	defer rs.Close()
	existing := map[string]struct{}{}
	for rs.Next() {
		var id string
		if err := rs.Scan(&id); err != nil {
			return nil, fmt.Errorf("requestlog: clickhouse %s: check existing ids: %w", s.addr, err)
		}
		existing[id] = struct{}{}
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("requestlog: clickhouse %s: check existing ids: %w", s.addr, err)
	}
	return existing, nil
}

// appendColumns appends rows column by column, the driver's fastest path.
func appendColumns(b driver.Batch, rows []Row) error {
	n := len(rows)
	var (
		ts                                    = make([]time.Time, n)
		tsMS, prompt, completion              = make([]int64, n), make([]int64, n), make([]int64, n)
		cached, reasoning                     = make([]int64, n), make([]int64, n)
		chain, degraded                       = make([][]string, n), make([][]string, n)
		preferred, allowed, denied            = make([][]string, n), make([][]string, n), make([][]string, n)
		attempts, status                      = make([]int32, n), make([]int32, n)
		stream, cacheHit, reprBreak, discount = make([]uint8, n), make([]uint8, n), make([]uint8, n), make([]uint8, n)
		routing                               = make([]uint8, n)
		cost, latency, ttft                   = make([]float64, n), make([]float64, n), make([]float64, n)
		strs                                  [28][]string
		responses, closeCode                  = make([]int32, n), make([]int32, n)
	)
	for i := range strs {
		strs[i] = make([]string, n)
	}
	b2u := func(v bool) uint8 {
		if v {
			return 1
		}
		return 0
	}
	for i, r := range rows {
		ts[i], tsMS[i] = r.TS, r.TS.UnixMilli()
		for j, v := range []string{r.RequestID, r.Org, r.Team, r.Project, r.KeyID, r.SessionID, r.Route,
			r.Upstream, r.DecidedModel, r.ServedModel, r.ServedProvider, r.RoutingSwitchReason,
			r.RefusedCode, r.FallbackReason, r.CostSource, r.ConfigRevision, r.API,
			r.SessionKey, r.SessionAffinity, r.DataPolicy, r.DataPolicyVia,
			r.PreferenceRankBy, r.PreferenceVerdict, r.RefusedMessage, r.UpstreamAttempts, r.RoutingObject, r.ServedRegion, r.ClosedBy} {
			strs[j][i] = v
		}
		chain[i], degraded[i] = r.Chain, r.RoutingDegraded
		preferred[i], allowed[i], denied[i] = r.PreferencePreferred, r.PreferenceAllowed, r.PreferenceDenied
		attempts[i], status[i] = int32(r.Attempts), int32(r.Status)
		stream[i], cacheHit[i] = b2u(r.Stream), b2u(r.CacheHit)
		reprBreak[i], discount[i] = b2u(r.RepresentationBreak), b2u(r.CacheDiscountApplied)
		prompt[i], completion[i] = r.PromptTokens, r.CompletionTokens
		cached[i], reasoning[i] = r.CachedTokens, r.ReasoningTokens
		cost[i], latency[i], ttft[i] = r.CostUSD, r.LatencyMS, r.TTFTMS
		routing[i] = b2u(r.RequestRouting)
		responses[i], closeCode[i] = int32(r.Responses), int32(r.CloseCode)
	}
	// Order matches chInsertSQL: ts, then rowColumns.
	cols := []any{ts, tsMS,
		strs[0], strs[1], strs[2], strs[3], strs[4], strs[5], strs[6], strs[7], strs[8],
		chain, strs[9], strs[10], strs[11], degraded, strs[12], strs[13],
		attempts, status, stream, cacheHit, reprBreak, discount,
		prompt, completion, cost, latency, ttft, strs[14], routing, strs[15], strs[16],
		strs[17], strs[18], cached, reasoning, strs[19], strs[20],
		strs[21], preferred, allowed, denied, strs[22], strs[23], strs[24], strs[25], strs[26],
		responses, closeCode, strs[27]}
	for i, c := range cols {
		if err := b.Column(i).Append(c); err != nil {
			return fmt.Errorf("column %d: %w", i, err)
		}
	}
	return nil
}

// Query implements [Store.Query].
func (s *clickhouseStore) Query(ctx context.Context, f Filter) (Page, error) {
	c, err := decodeCursor(f.Cursor)
	if err != nil {
		return Page{}, err
	}
	w := filterWhere(f, c, clickhouseDialect)
	limit := f.limit()
	q := "SELECT " + strings.Join(rowColumns, ", ") + " FROM requests" + w.sql() +
		" ORDER BY ts_ms DESC, request_id DESC LIMIT " + strconv.Itoa(limit+1)
	rs, err := s.conn.Query(ctx, q, w.args...)
	if err != nil {
		return Page{}, fmt.Errorf("requestlog: clickhouse %s: query: %w", s.addr, err)
	}
	defer rs.Close()
	var rows []Row
	for rs.Next() {
		var (
			r                                     Row
			tsMS                                  int64
			attempts, status                      int32
			stream, cacheHit, reprBreak, discount uint8
			routing                               uint8
			responses, closeCode                  int32
		)
		if err := rs.Scan(&tsMS, &r.RequestID, &r.Org, &r.Team, &r.Project, &r.KeyID, &r.SessionID, &r.Route,
			&r.Upstream, &r.DecidedModel, &r.Chain, &r.ServedModel, &r.ServedProvider,
			&r.RoutingSwitchReason, &r.RoutingDegraded, &r.RefusedCode, &r.FallbackReason,
			&attempts, &status, &stream, &cacheHit, &reprBreak,
			&discount, &r.PromptTokens, &r.CompletionTokens, &r.CostUSD,
			&r.LatencyMS, &r.TTFTMS, &r.CostSource, &routing, &r.ConfigRevision, &r.API,
			&r.SessionKey, &r.SessionAffinity, &r.CachedTokens, &r.ReasoningTokens,
			&r.DataPolicy, &r.DataPolicyVia,
			&r.PreferenceRankBy, &r.PreferencePreferred, &r.PreferenceAllowed, &r.PreferenceDenied,
			&r.PreferenceVerdict, &r.RefusedMessage, &r.UpstreamAttempts, &r.RoutingObject, &r.ServedRegion,
			&responses, &closeCode, &r.ClosedBy); err != nil {
			return Page{}, fmt.Errorf("requestlog: clickhouse %s: scan: %w", s.addr, err)
		}
		r.TS = time.UnixMilli(tsMS).UTC()
		r.Attempts, r.Status = int(attempts), int(status)
		r.Responses, r.CloseCode = int(responses), int(closeCode)
		r.Stream, r.CacheHit = stream != 0, cacheHit != 0
		r.RepresentationBreak, r.CacheDiscountApplied = reprBreak != 0, discount != 0
		r.RequestRouting = routing != 0
		rows = append(rows, r.normalized())
	}
	if err := rs.Err(); err != nil {
		return Page{}, fmt.Errorf("requestlog: clickhouse %s: query: %w", s.addr, err)
	}
	return page(rows, limit), nil
}

// Ping implements [Store.Ping].
func (s *clickhouseStore) Ping(ctx context.Context) error {
	if err := s.conn.Ping(ctx); err != nil {
		return fmt.Errorf("requestlog: clickhouse %s: ping: %w", s.addr, err)
	}
	return nil
}

// Close implements [Store.Close].
func (s *clickhouseStore) Close() error {
	if err := s.conn.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("requestlog: clickhouse %s: close: %w", s.addr, err)
	}
	return nil
}
