package requestlog

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/libc/sys/types"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteWriteConn is the SQLite store's write connection: the same SQLite library
// the database/sql driver runs (modernc.org/sqlite/lib), called directly.
// Through the driver a row's 36 values cost more than SQLite's own work:
// each text value is copied into a fresh C allocation, bound under the
// connection's mutex, unbound and freed after the statement, and every
// statement is prepared again for each batch. Here the INSERTs are prepared
// once, the connection has no mutex (it is used by one goroutine at a time:
// sqliteStore.mu), and a statement's text values are copied into one
// buffer that lives as long as the connection and bound in place.
//
// A sqliteWriteConn is not safe for concurrent use.
type sqliteWriteConn struct {
	tls *libc.TLS
	db  uintptr
	// Prepared statements, made on first use and kept until close.
	begin, commit, rollback, many, one uintptr
	// The traffic rollup's statements (sqlite_rollup.go).
	upsert, maxRowid, inserted uintptr
	// The summary rollups' upserts (sqlite_summary.go).
	upsertSum, upsertTeam uintptr
	// hours and sums count the running batch's rows for the traffic
	// rollup and the summary rollup.
	hours hourCounts[trafficHour]
	sums  hourCounts[summaryHour]
	teams []teamHour // sums per hour and team, while they are upserted
	// arena holds the text values of the statement being run, bound with
	// SQLITE_STATIC: SQLite reads them in place until the next bind.
	arena    uintptr
	arenaCap int
	bind     rowBinder
	norm     []Row // the statement's rows, normalized
	// ctx is the running insert's, for the busy handler.
	ctx context.Context
}

// writeConns maps an open write connection's handle to it, for the busy
// handler (SQLite passes it the handle).
var writeConns sync.Map // uintptr -> *sqliteWriteConn

// busyDelays are the waits, in milliseconds, between tries of a lock another
// connection holds, the last repeated until the busy timeout (SQLite's own
// default handler's steps).
var busyDelays = [...]int{1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100}

// writeBusyHandler is the write connection's busy handler: it waits as
// SQLite's default handler does, up to sqliteBusyTimeout, and stops waiting
// (so the statement fails with SQLITE_BUSY) when the insert's context ends.
func writeBusyHandler(_ *libc.TLS, db uintptr, count int32) int32 {
	var waited int
	for i := range int(count) {
		waited += busyDelays[min(i, len(busyDelays)-1)]
	}
	delay := busyDelays[min(int(count), len(busyDelays)-1)]
	if limit := int(sqliteBusyTimeout.Milliseconds()); waited >= limit {
		return 0
	} else if waited+delay > limit {
		delay = limit - waited
	}
	var done <-chan struct{}
	if v, ok := writeConns.Load(db); ok {
		if ctx := v.(*sqliteWriteConn).ctx; ctx != nil {
			done = ctx.Done()
		}
	}
	t := time.NewTimer(time.Duration(delay) * time.Millisecond)
	defer t.Stop()
	select {
	case <-done:
		return 0
	case <-t.C:
		return 1
	}
}

// cFuncPointer returns f as the function pointer the SQLite library calls:
// a func value is a pointer to its code's address (golang.org/s/go11func),
// which the library's call-through reads back.
func cFuncPointer[T any](f T) uintptr { return *(*uintptr)(unsafe.Pointer(&struct{ f T }{f})) }

// cmem returns p, an address libc's allocator returned, as a pointer. Such
// memory is outside Go's heap (never moved or collected), which is what
// makes the conversion sound; go vet cannot tell it from a Go address held
// as a uintptr, so the conversion reads p's bits through a pointer.
func cmem(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// sqliteError is an error SQLite reported, with its extended result code.
type sqliteError struct {
	code int32
	msg  string
}

func (e *sqliteError) Error() string { return fmt.Sprintf("%s (%d)", e.msg, e.code) }

// openRawSQLite opens the existing database at path for writing, with the
// busy timeout and synchronous setting of the store's other connections
// (journal_mode WAL is the file's own, set when it was first opened).
func openRawSQLite(path string) (_ *sqliteWriteConn, err error) {
	c := &sqliteWriteConn{tls: libc.NewTLS()}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	name, err := libc.CString(path)
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(c.tls, name)
	pdb := libc.Xmalloc(c.tls, types.Size_t(unsafe.Sizeof(uintptr(0))))
	if pdb == 0 {
		return nil, fmt.Errorf("sqlite open %q: out of memory", path)
	}
	defer libc.Xfree(c.tls, pdb)
	rc := sqlite3.Xsqlite3_open_v2(c.tls, name, pdb, sqlite3.SQLITE_OPEN_READWRITE|sqlite3.SQLITE_OPEN_NOMUTEX, 0)
	c.db = *(*uintptr)(cmem(pdb))
	if rc != sqlite3.SQLITE_OK {
		return nil, c.err(rc)
	}
	sqlite3.Xsqlite3_extended_result_codes(c.tls, c.db, 1)
	writeConns.Store(c.db, c)
	if rc := sqlite3.Xsqlite3_busy_handler(c.tls, c.db, cFuncPointer(writeBusyHandler), c.db); rc != sqlite3.SQLITE_OK {
		return nil, c.err(rc)
	}
	for _, pragma := range []string{"PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL"} {
		if err := c.exec(pragma); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// err is the error of result code rc, with the connection's message.
func (c *sqliteWriteConn) err(rc int32) error {
	if c.db == 0 {
		return &sqliteError{code: rc, msg: libc.GoString(sqlite3.Xsqlite3_errstr(c.tls, rc))}
	}
	return &sqliteError{code: sqlite3.Xsqlite3_extended_errcode(c.tls, c.db), msg: libc.GoString(sqlite3.Xsqlite3_errmsg(c.tls, c.db))}
}

// prepare compiles query; the statement lives until close.
func (c *sqliteWriteConn) prepare(query string) (uintptr, error) {
	z, err := libc.CString(query)
	if err != nil {
		return 0, err
	}
	defer libc.Xfree(c.tls, z)
	pp := libc.Xmalloc(c.tls, types.Size_t(unsafe.Sizeof(uintptr(0))))
	if pp == 0 {
		return 0, fmt.Errorf("sqlite prepare: out of memory")
	}
	defer libc.Xfree(c.tls, pp)
	if rc := sqlite3.Xsqlite3_prepare_v2(c.tls, c.db, z, -1, pp, 0); rc != sqlite3.SQLITE_OK {
		return 0, c.err(rc)
	}
	return *(*uintptr)(cmem(pp)), nil
}

// run steps stmt, which returns no rows, to its end and resets it.
func (c *sqliteWriteConn) run(stmt uintptr) error {
	rc := sqlite3.Xsqlite3_step(c.tls, stmt)
	if rc == sqlite3.SQLITE_DONE {
		sqlite3.Xsqlite3_reset(c.tls, stmt)
		return nil
	}
	err := c.err(rc)
	sqlite3.Xsqlite3_reset(c.tls, stmt)
	return err
}

// exec prepares, runs and finalizes query (set-up statements).
func (c *sqliteWriteConn) exec(query string) error {
	st, err := c.prepare(query)
	if err != nil {
		return err
	}
	defer sqlite3.Xsqlite3_finalize(c.tls, st)
	for {
		switch rc := sqlite3.Xsqlite3_step(c.tls, st); rc {
		case sqlite3.SQLITE_ROW:
			continue
		case sqlite3.SQLITE_DONE:
			return nil
		default:
			return c.err(rc)
		}
	}
}

// stmt returns the statement *p, preparing query into it on first use.
func (c *sqliteWriteConn) stmt(p *uintptr, query string) (uintptr, error) {
	if *p == 0 {
		st, err := c.prepare(query)
		if err != nil {
			return 0, err
		}
		*p = st
	}
	return *p, nil
}

// insert writes rows in one transaction, sqliteRowsPerInsert rows a
// statement. ctx ends a wait for another writer's lock and is checked
// before each statement.
func (c *sqliteWriteConn) insert(ctx context.Context, rows []Row) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.ctx = ctx
	defer func() {
		c.ctx = nil
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
	}()
	begin, err := c.stmt(&c.begin, "BEGIN IMMEDIATE")
	if err != nil {
		return err
	}
	if err := c.run(begin); err != nil {
		return err
	}
	defer func() {
		c.hours.reset()
		c.sums.reset()
		if err != nil && sqlite3.Xsqlite3_get_autocommit(c.tls, c.db) == 0 {
			if rb, rerr := c.stmt(&c.rollback, "ROLLBACK"); rerr == nil {
				_ = c.run(rb)
			}
		}
	}()
	// The rollup counts the rows this transaction inserts: every row of
	// the batch, unless some were already stored (a retry, the spool's
	// replay, an id repeated in the batch) and skipped.
	c.hours.reset()
	c.sums.reset()
	since, err := c.lastRowid()
	if err != nil {
		return err
	}
	want, inserted := len(rows), 0
	for len(rows) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, p, query := sqliteRowsPerInsert, &c.many, sqliteInsertMany
		if len(rows) < n {
			n, p, query = 1, &c.one, sqliteInsertOne
		}
		st, err := c.stmt(p, query)
		if err != nil {
			return err
		}
		if err := c.bindRows(st, rows[:n]); err != nil {
			return err
		}
		if err := c.run(st); err != nil {
			return fmt.Errorf("insert of %d rows from %q: %w", n, rows[0].RequestID, err)
		}
		inserted += int(sqlite3.Xsqlite3_changes(c.tls, c.db))
		rows = rows[n:]
	}
	if inserted != want {
		if err := c.recountInserted(since); err != nil {
			return fmt.Errorf("rollups: %w", err)
		}
	}
	if err := c.upsertHours(); err != nil {
		return err
	}
	if err := c.upsertSums(); err != nil {
		return err
	}
	if err := c.upsertTeamSums(); err != nil {
		return err
	}
	commit, err := c.stmt(&c.commit, "COMMIT")
	if err != nil {
		return err
	}
	return c.run(commit)
}

// bindRows binds rows, normalized as stores keep them, to st's parameters:
// len(rowColumns) a row, in rowColumns order.
func (c *sqliteWriteConn) bindRows(st uintptr, rows []Row) error {
	c.norm = c.norm[:0]
	for i := range rows {
		c.norm = append(c.norm, rows[i].normalizedToRead())
		r := &c.norm[len(c.norm)-1]
		c.hours.add(trafficHourOf(r), 1)
		c.sums.add(summaryHourOf(r), 1)
	}
	b := &c.bind
	b.c, b.stmt, b.measure, b.need, b.param = c, st, true, 1, 1
	for i := range c.norm {
		bindRow(b, &c.norm[i])
	}
	if want := int32(len(rows)*len(rowColumns)) + 1; b.param != want {
		clear(c.norm)
		return fmt.Errorf("sqlite insert: %d values for %d rows of %d columns (bindRow and rowColumns disagree)", b.param-1, len(rows), len(rowColumns))
	}
	if err := c.growArena(b.need); err != nil {
		return err
	}
	b.measure, b.arena, b.off, b.param, b.rc = false, c.arenaBytes(), 0, 1, sqlite3.SQLITE_OK
	for i := range c.norm {
		bindRow(b, &c.norm[i])
	}
	clear(c.norm) // hold no strings past the statement
	if b.rc != sqlite3.SQLITE_OK {
		return c.err(b.rc)
	}
	return nil
}

// growArena makes the arena hold at least need bytes. A statement bound
// to the old arena is bound again before it is next run.
func (c *sqliteWriteConn) growArena(need int) error {
	if need <= c.arenaCap && c.arena != 0 {
		return nil
	}
	size := max(need, 2*c.arenaCap, 64<<10)
	p := libc.Xrealloc(c.tls, c.arena, types.Size_t(size))
	if p == 0 {
		return fmt.Errorf("sqlite insert: cannot allocate %d bytes", size)
	}
	c.arena, c.arenaCap = p, size
	return nil
}

// arenaBytes is the arena as a byte slice.
func (c *sqliteWriteConn) arenaBytes() []byte {
	return unsafe.Slice((*byte)(cmem(c.arena)), c.arenaCap)
}

// close finalizes the statements and closes the connection.
func (c *sqliteWriteConn) close() error {
	var err error
	if c.db != 0 {
		for _, st := range []*uintptr{&c.begin, &c.commit, &c.rollback, &c.many, &c.one, &c.upsert, &c.upsertSum, &c.upsertTeam, &c.maxRowid, &c.inserted} {
			if *st != 0 {
				sqlite3.Xsqlite3_finalize(c.tls, *st)
				*st = 0
			}
		}
		if rc := sqlite3.Xsqlite3_close_v2(c.tls, c.db); rc != sqlite3.SQLITE_OK {
			err = c.err(rc)
		}
		writeConns.Delete(c.db)
		c.db = 0
	}
	if c.arena != 0 {
		libc.Xfree(c.tls, c.arena)
		c.arena, c.arenaCap = 0, 0
	}
	if c.tls != nil {
		c.tls.Close()
		c.tls = nil
	}
	return err
}

// rowBinder binds one statement's values in parameter order. It runs over
// the rows twice: measuring (need: an upper bound of the text bytes), then
// binding, each text copied into the arena and bound in place.
type rowBinder struct {
	c       *sqliteWriteConn
	stmt    uintptr
	measure bool
	need    int
	arena   []byte
	off     int
	param   int32
	rc      int32 // the first failed bind's result code
	json    []byte
}

// check keeps the first failure of a bind and moves to the next parameter.
func (b *rowBinder) check(rc int32) {
	if rc != sqlite3.SQLITE_OK && b.rc == sqlite3.SQLITE_OK {
		b.rc = rc
	}
	b.param++
}

// text binds s as TEXT.
func (b *rowBinder) text(s string) {
	if b.measure {
		b.need += len(s)
		b.param++
		return
	}
	n := copy(b.arena[b.off:], s)
	// The pointer is never NULL (the arena exists), so "" binds '' rather than NULL.
	b.check(sqlite3.Xsqlite3_bind_text(b.c.tls, b.stmt, b.param, b.c.arena+uintptr(b.off), int32(n), sqlite3.SQLITE_STATIC))
	b.off += n
}

// int binds v as INTEGER.
func (b *rowBinder) int(v int64) {
	if b.measure {
		b.param++
		return
	}
	b.check(sqlite3.Xsqlite3_bind_int64(b.c.tls, b.stmt, b.param, v))
}

// bool binds v as INTEGER 0 or 1, as the driver binds a bool.
func (b *rowBinder) bool(v bool) {
	if v {
		b.int(1)
	} else {
		b.int(0)
	}
}

// real binds v as REAL.
func (b *rowBinder) real(v float64) {
	if b.measure {
		b.param++
		return
	}
	b.check(sqlite3.Xsqlite3_bind_double(b.c.tls, b.stmt, b.param, v))
}

// list binds l as TEXT holding its JSON array, the bytes json.Marshal gives.
func (b *rowBinder) list(l []string) {
	if b.measure {
		// No string's JSON is longer than 6 bytes a byte ("\u00XX") plus
		// its quotes and comma.
		b.need += 2
		for _, s := range l {
			b.need += 6*len(s) + 3
		}
		b.param++
		return
	}
	b.json = appendJSONStrings(b.json[:0], l)
	b.text(unsafe.String(unsafe.SliceData(b.json), len(b.json)))
}

// bindRow binds r's values in rowColumns order: a new column is its name
// in rowColumns and one line here, at the same place.
func bindRow(b *rowBinder, r *Row) {
	b.int(r.TS.UnixMilli())
	b.text(r.RequestID)
	b.text(r.Org)
	b.text(r.Team)
	b.text(r.Project)
	b.text(r.KeyID)
	b.text(r.SessionID)
	b.text(r.Route)
	b.text(r.Upstream)
	b.text(r.DecidedModel)
	b.list(r.Chain)
	b.text(r.ServedModel)
	b.text(r.ServedProvider)
	b.text(r.RoutingSwitchReason)
	b.list(r.RoutingDegraded)
	b.text(r.RefusedCode)
	b.text(r.FallbackReason)
	b.int(int64(r.Attempts))
	b.int(int64(r.Status))
	b.bool(r.Stream)
	b.bool(r.CacheHit)
	b.bool(r.RepresentationBreak)
	b.bool(r.CacheDiscountApplied)
	b.int(r.PromptTokens)
	b.int(r.CompletionTokens)
	b.real(r.CostUSD)
	b.real(r.LatencyMS)
	b.real(r.TTFTMS)
	b.text(r.CostSource)
	b.bool(r.RequestRouting)
	b.text(r.ConfigRevision)
	b.text(r.API)
	b.text(r.SessionKey)
	b.text(r.SessionAffinity)
	b.int(r.CachedTokens)
	b.int(r.ReasoningTokens)
	b.text(r.DataPolicy)
	b.text(r.DataPolicyVia)
	b.text(r.PreferenceRankBy)
	b.list(r.PreferencePreferred)
	b.list(r.PreferenceAllowed)
	b.list(r.PreferenceDenied)
	b.text(r.PreferenceVerdict)
	b.text(r.RefusedMessage)
	b.text(r.UpstreamAttempts)
	b.text(r.RoutingObject)
	b.text(r.ServedRegion)
	b.int(int64(r.Responses))
	b.int(int64(r.CloseCode))
	b.text(r.ClosedBy)
}

// appendJSONStrings appends l as json.Marshal encodes a []string (a nil l
// as [], as stores keep it). A string of printable ASCII that JSON and
// json.Marshal's HTML escaping leave alone is copied; any other string is
// encoded by encoding/json itself.
func appendJSONStrings(dst []byte, l []string) []byte {
	dst = append(dst, '[')
	for i, s := range l {
		if i > 0 {
			dst = append(dst, ',')
		}
		if plainJSON(s) {
			dst = append(dst, '"')
			dst = append(dst, s...)
			dst = append(dst, '"')
			continue
		}
		q, _ := json.Marshal(s) // a string always encodes
		dst = append(dst, q...)
	}
	return append(dst, ']')
}

// plainJSON reports whether s is printable ASCII without the bytes JSON
// escapes ('"', '\\') or json.Marshal escapes as HTML ('<', '>', '&').
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= utf8.RuneSelf, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
