package requestlog

import (
	"fmt"
	"time"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// hourMillis is the rollup's bucket, one hour in milliseconds.
const hourMillis = 3_600_000

// hourOf is the UTC hour holding Unix millisecond ms, rounded down.
func hourOf(ms int64) int64 {
	h := ms / hourMillis
	if ms%hourMillis < 0 {
		h--
	}
	return h
}

// hourSplit is a window [from, to) (an end unbounded when zero) cut at
// whole UTC hours: the whole hours a rollup answers, as conditions on its
// hour column, and the part hours at either end, which only the rows
// answer, as millisecond ranges.
type hourSplit struct {
	// whole is false when the window holds no whole hour: the rows
	// answer it all (edges holds the window, when it is not empty).
	whole bool
	conds []string
	args  []any
	edges [][2]int64 // [from, to) in milliseconds
}

// splitHours cuts the window [from, to) at whole hours.
func splitHours(from, to time.Time) (h hourSplit) {
	var fromMS, toMS, hourLo, hourHi int64
	if !from.IsZero() {
		fromMS = ceilMilli(from)
		hourLo = hourOf(fromMS + hourMillis - 1) // the first hour that starts in the window
	}
	if !to.IsZero() {
		toMS = ceilMilli(to)
		hourHi = hourOf(toMS) // the first hour that does not end in it
	}
	if !from.IsZero() && !to.IsZero() && hourLo >= hourHi {
		if fromMS < toMS {
			h.edges = append(h.edges, [2]int64{fromMS, toMS})
		}
		return h
	}
	h.whole = true
	if !from.IsZero() {
		h.conds, h.args = append(h.conds, "hour >= ?"), append(h.args, hourLo)
		if fromMS < hourLo*hourMillis {
			h.edges = append(h.edges, [2]int64{fromMS, hourLo * hourMillis})
		}
	}
	if !to.IsZero() {
		h.conds, h.args = append(h.conds, "hour < ?"), append(h.args, hourHi)
		if hourHi*hourMillis < toMS {
			h.edges = append(h.edges, [2]int64{hourHi * hourMillis, toMS})
		}
	}
	return h
}

// trafficHour is one row of requests_traffic_hours without its count: a
// combination in an hour.
type trafficHour struct {
	key, team, model, upstream, route string
	routing                           bool
	hour                              int64
}

// hourCounts counts one batch's rows per rollup key (a combination in an
// hour), for a rollup's upserts at the end of the batch's transaction. It
// holds the rows' strings until reset.
type hourCounts[K comparable] struct {
	idx    map[K]int
	keys   []K
	counts []int64
	last   int // index of the last key added, -1 for none
}

// reset forgets every count, keeping the storage.
func (t *hourCounts[K]) reset() {
	clear(t.idx)
	clear(t.keys) // hold no strings past the batch
	t.keys, t.counts, t.last = t.keys[:0], t.counts[:0], -1
}

// add counts n rows of key k. Rows of one key tend to come together (one
// client's burst), so the last one is checked first.
func (t *hourCounts[K]) add(k K, n int64) {
	if t.last >= 0 && t.last < len(t.keys) && t.keys[t.last] == k {
		t.counts[t.last] += n
		return
	}
	i, ok := t.idx[k]
	if !ok {
		if t.idx == nil {
			t.idx = map[K]int{}
		}
		i = len(t.keys)
		t.idx[k] = i
		t.keys = append(t.keys, k)
		t.counts = append(t.counts, 0)
	}
	t.counts[i] += n
	t.last = i
}

// trafficHourOf is r's key in the traffic rollup; r is normalized.
func trafficHourOf(r *Row) trafficHour {
	return trafficHour{r.KeyID, r.Team, r.DecidedModel, r.Upstream, r.Route, r.RequestRouting, hourOf(r.TS.UnixMilli())}
}

// sqliteUpsertHour adds a count to one row of the rollup.
const sqliteUpsertHour = `INSERT INTO requests_traffic_hours (key_id, team, decided_model, upstream, route, request_routing, hour, requests)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (key_id, team, decided_model, upstream, route, request_routing, hour) DO UPDATE SET requests = requests + excluded.requests`

// sqliteInsertedSince reads back the rollups' columns of the rows a
// transaction inserted: rowids above the largest before it (SQLite gives a
// new row the largest rowid plus one; the transaction holds the write
// lock).
const sqliteInsertedSince = `SELECT key_id, team, decided_model, upstream, route, request_routing, ts_ms,
	org, served_provider, data_policy, preference_verdict, routing_switch_reason, fallback_reason,
	` + sqliteSummaryFlags + ` FROM requests WHERE rowid > ?`

// lastRowid is the largest rowid of requests, 0 when it is empty.
func (c *sqliteWriteConn) lastRowid() (int64, error) {
	st, err := c.stmt(&c.maxRowid, "SELECT coalesce(max(rowid), 0) FROM requests")
	if err != nil {
		return 0, err
	}
	defer sqlite3.Xsqlite3_reset(c.tls, st)
	if rc := sqlite3.Xsqlite3_step(c.tls, st); rc != sqlite3.SQLITE_ROW {
		return 0, c.err(rc)
	}
	return sqlite3.Xsqlite3_column_int64(c.tls, st, 0), nil
}

// recountInserted replaces the batch's counts (both rollups') by those of the rows the
// transaction inserted (rowid > since): the way to count a batch of which
// some rows were already stored and skipped.
func (c *sqliteWriteConn) recountInserted(since int64) error {
	c.hours.reset()
	c.sums.reset()
	st, err := c.stmt(&c.inserted, sqliteInsertedSince)
	if err != nil {
		return err
	}
	defer sqlite3.Xsqlite3_reset(c.tls, st)
	if rc := sqlite3.Xsqlite3_bind_int64(c.tls, st, 1, since); rc != sqlite3.SQLITE_OK {
		return c.err(rc)
	}
	text := func(i int32) string { return libc.GoString(sqlite3.Xsqlite3_column_text(c.tls, st, i)) }
	for {
		switch rc := sqlite3.Xsqlite3_step(c.tls, st); rc {
		case sqlite3.SQLITE_ROW:
			hour := hourOf(sqlite3.Xsqlite3_column_int64(c.tls, st, 6))
			team := text(1)
			c.hours.add(trafficHour{text(0), team, text(2), text(3), text(4),
				sqlite3.Xsqlite3_column_int64(c.tls, st, 5) != 0, hour}, 1)
			c.sums.add(summaryHour{hour: hour, team: team, org: text(7), provider: text(8), dataPolicy: text(9),
				verdict: text(10), switchReason: text(11), fallbackReason: text(12),
				degraded: sqlite3.Xsqlite3_column_int64(c.tls, st, 13) != 0, refused: sqlite3.Xsqlite3_column_int64(c.tls, st, 14) != 0,
				switched: sqlite3.Xsqlite3_column_int64(c.tls, st, 15) != 0}, 1)
		case sqlite3.SQLITE_DONE:
			return nil
		default:
			return c.err(rc)
		}
	}
}

// upsertHours adds the batch's counts to the rollup: one statement per
// combination and hour.
func (c *sqliteWriteConn) upsertHours() error {
	if len(c.hours.keys) == 0 {
		return nil
	}
	st, err := c.stmt(&c.upsert, sqliteUpsertHour)
	if err != nil {
		return err
	}
	return c.upsertEach(st, len(c.hours.keys), "traffic rollup", func(b *rowBinder, i int) {
		k := &c.hours.keys[i]
		b.text(k.key)
		b.text(k.team)
		b.text(k.model)
		b.text(k.upstream)
		b.text(k.route)
		b.bool(k.routing)
		b.int(k.hour)
		b.int(c.hours.counts[i])
	})
}

// upsertEach runs st, an upsert of a rollup, once for each of n rows:
// bind binds row i's values in parameter order, once measuring them and
// once binding them into the arena (see [rowBinder]). what names the
// rollup in an error.
func (c *sqliteWriteConn) upsertEach(st uintptr, n int, what string, bind func(b *rowBinder, i int)) error {
	b := &c.bind
	for i := range n {
		b.c, b.stmt, b.measure, b.need, b.param = c, st, true, 0, 1
		bind(b, i)
		if err := c.growArena(b.need); err != nil {
			return err
		}
		b.measure, b.arena, b.off, b.param, b.rc = false, c.arenaBytes(), 0, 1, sqlite3.SQLITE_OK
		bind(b, i)
		if b.rc != sqlite3.SQLITE_OK {
			return c.err(b.rc)
		}
		if err := c.run(st); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}
