package requestlog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// TrafficFilter selects the rows [Store.Traffic] counts. Zero values mean
// "no constraint".
type TrafficFilter struct {
	// From and To bound ts: From <= ts < To. A zero time leaves that side
	// open.
	From, To time.Time
	// Teams keeps only the rows of these teams (the team recorded on the
	// row); empty keeps every team.
	Teams []string
}

// TrafficCount is how many rows of a window share one combination: the key,
// its team, the decided model, the upstream and the route alias ("" for a
// plain model).
type TrafficCount struct {
	// KeyID, Team, DecidedModel, Upstream and Route are the columns of the
	// same names that the counted rows share.
	KeyID        string `json:"key_id"`
	Team         string `json:"team"`
	DecidedModel string `json:"decided_model"`
	Upstream     string `json:"upstream"`
	Route        string `json:"route"`
	// Requests is the number of rows; always positive.
	Requests int64 `json:"requests"`
	// WithRouting counts those of Requests whose request carried its own
	// routing object (request_routing).
	WithRouting int64 `json:"with_routing"`
}

// trafficGroup is the grouping both backends use; the key of SQLite's
// rollup requests_traffic_hours starts with the same columns in the same
// order.
const trafficGroup = "key_id, team, decided_model, upstream, route"

// trafficWhere builds the conditions of f. teams renders the team test for
// n teams in the backend's dialect, taking the bound arguments it returns.
func trafficWhere(f TrafficFilter, teams func([]string) (string, []any)) *where {
	w := &where{}
	if !f.From.IsZero() {
		w.add("ts_ms >= ?", ceilMilli(f.From))
	}
	if !f.To.IsZero() {
		w.add("ts_ms < ?", ceilMilli(f.To))
	}
	if len(f.Teams) > 0 {
		cond, args := teams(f.Teams)
		w.add(cond, args...)
	}
	return w
}

// sortTraffic orders counts by their combination, so that both backends
// answer the same list.
func sortTraffic(c []TrafficCount) {
	slices.SortFunc(c, compareTraffic)
}

// compareTraffic orders counts by their combination.
func compareTraffic(a, b TrafficCount) int {
	return cmp.Or(cmp.Compare(a.KeyID, b.KeyID), cmp.Compare(a.Team, b.Team),
		cmp.Compare(a.DecidedModel, b.DecidedModel), cmp.Compare(a.Upstream, b.Upstream), cmp.Compare(a.Route, b.Route))
}

// CountTraffic counts rows in memory, with the same semantics and order as
// [Store.Traffic]: the reference the stores are tested against.
func CountTraffic(rows []Row, f TrafficFilter) []TrafficCount {
	type key struct{ key, team, model, upstream, route string }
	n := map[key]*TrafficCount{}
	for _, r := range rows {
		r = r.normalized()
		if !f.From.IsZero() && r.TS.Before(f.From) || !f.To.IsZero() && !r.TS.Before(f.To) {
			continue
		}
		if len(f.Teams) > 0 && !slices.Contains(f.Teams, r.Team) {
			continue
		}
		k := key{r.KeyID, r.Team, r.DecidedModel, r.Upstream, r.Route}
		c := n[k]
		if c == nil {
			c = &TrafficCount{KeyID: k.key, Team: k.team, DecidedModel: k.model, Upstream: k.upstream, Route: k.route}
			n[k] = c
		}
		c.Requests++
		c.WithRouting += b2i(r.RequestRouting)
	}
	out := make([]TrafficCount, 0, len(n))
	for _, c := range n {
		out = append(out, *c)
	}
	sortTraffic(out)
	return out
}

// trafficQuery is one SQL query and its arguments.
type trafficQuery struct {
	sql  string
	args []any
}

// sqliteTrafficSQL is the SQLite queries of f. The whole hours inside the
// window are read from the rollup requests_traffic_hours, in its key's
// order (the grouping's: nothing is sorted, the rows are never read); the
// part hours at either end of the window, from the rows in them (a range
// of requests_ts). The first query is the rollup's; the others, when the
// window has part hours, are the rows'.
func sqliteTrafficSQL(f TrafficFilter) []trafficQuery {
	teams := func(w *where) {
		if len(f.Teams) == 0 {
			return
		}
		args := make([]any, len(f.Teams))
		for i, t := range f.Teams {
			args[i] = t
		}
		w.add("team IN ("+strings.TrimSuffix(strings.Repeat("?, ", len(f.Teams)), ", ")+")", args...)
	}
	rows := func(from, to int64) trafficQuery {
		w := &where{}
		w.add("ts_ms >= ? AND ts_ms < ?", from, to)
		teams(w)
		return trafficQuery{"SELECT " + trafficGroup + ", COUNT(*), SUM(request_routing) FROM requests INDEXED BY requests_ts" + w.sql() +
			" GROUP BY " + trafficGroup, w.args}
	}
	split := splitHours(f.From, f.To)
	roll := &where{}
	if !split.whole {
		roll.add("0") // no whole hour: only rows
	}
	for i, c := range split.conds {
		roll.add(c, split.args[i])
	}
	var edges []trafficQuery
	for _, e := range split.edges {
		edges = append(edges, rows(e[0], e[1]))
	}
	teams(roll)
	return append([]trafficQuery{{"SELECT " + trafficGroup + ", SUM(requests), SUM(requests * request_routing) FROM requests_traffic_hours" + roll.sql() +
		" GROUP BY " + trafficGroup, roll.args}}, edges...)
}

// Traffic implements [Store.Traffic]: the rollup's counts of the whole
// hours in the window, plus the rows of the part hours at its ends, whose
// few groups are added to the rollup's in place.
func (s *sqliteStore) Traffic(ctx context.Context, f TrafficFilter) ([]TrafficCount, error) {
	out := []TrafficCount{}
	var extra []TrafficCount // groups of the part hours the rollup lacks
	sorted := false
	for i, q := range sqliteTrafficSQL(f) {
		if err := s.trafficQuery(ctx, q, func(c TrafficCount) {
			if i == 0 {
				out = append(out, c)
				return
			}
			if !sorted {
				// SQLite groups in its BINARY collation's order, bytewise
				// as Go compares strings; sorting a sorted list is one pass.
				sortTraffic(out)
				sorted = true
			}
			if j, ok := slices.BinarySearchFunc(out, c, compareTraffic); ok {
				out[j].Requests += c.Requests
				out[j].WithRouting += c.WithRouting
				return
			}
			extra = append(extra, c)
		}); err != nil {
			return nil, fmt.Errorf("requestlog: sqlite traffic: %w", err)
		}
	}
	if len(extra) > 0 {
		// A group can be new to the rollup in both part hours: add them
		// up once sorted.
		sortTraffic(extra)
		for _, c := range extra {
			if n := len(out); n > 0 && compareTraffic(out[n-1], c) == 0 {
				out[n-1].Requests += c.Requests
				out[n-1].WithRouting += c.WithRouting
				continue
			}
			out = append(out, c)
		}
	}
	sortTraffic(out)
	return out, nil
}

// trafficQuery runs q, a grouped count, passing each group to add.
func (s *sqliteStore) trafficQuery(ctx context.Context, q trafficQuery, add func(TrafficCount)) error {
	rs, err := s.db.QueryContext(ctx, q.sql, q.args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var c TrafficCount
		if err := rs.Scan(&c.KeyID, &c.Team, &c.DecidedModel, &c.Upstream, &c.Route, &c.Requests, &c.WithRouting); err != nil {
			return err
		}
		add(c)
	}
	return rs.Err()
}

// Traffic implements [Store.Traffic]: one GROUP BY aggregate over the
// window (the ts_ms range served by the primary key) on the traffic_key
// column, a 64-bit hash of the combination the server computes at insert,
// joined with traffic_keys for the strings (migration 003). ClickHouse
// 18.16 groups several String keys by serializing them row by row; on ten
// million rows grouping by the integer instead measured about three times
// faster (docs/perf.md). A hash cannot be trusted blindly: when two
// combinations share one (the join answers the hash twice) or a hash has no
// strings (rows written around the view), the exact query on the strings
// answers instead. The teams travel as one array argument tested with
// has(), which 18.16 accepts where "IN (?)" with a slice is not.
func (s *clickhouseStore) Traffic(ctx context.Context, f TrafficFilter) ([]TrafficCount, error) {
	w := trafficWhere(f, func(teams []string) (string, []any) {
		return "has(?, team)", []any{teams}
	})
	out, ok, err := s.trafficByKey(ctx, w)
	if err == nil && !ok {
		s.exactTraffic.Add(1)
		out, err = s.trafficExact(ctx, w)
	}
	if err != nil {
		return nil, fmt.Errorf("requestlog: clickhouse %s: traffic: %w", s.addr, err)
	}
	sortTraffic(out)
	return out, nil
}

// trafficByKey counts by traffic_key and reports whether every hash named
// exactly one combination.
func (s *clickhouseStore) trafficByKey(ctx context.Context, w *where) ([]TrafficCount, bool, error) {
	q := "SELECT traffic_key, n, with_routing, known, " + trafficGroup +
		" FROM (SELECT traffic_key, count() AS n, countIf(request_routing != 0) AS with_routing FROM requests" + w.sql() +
		" GROUP BY traffic_key)" +
		" ALL LEFT JOIN (SELECT DISTINCT traffic_key, " + trafficGroup + ", toUInt8(1) AS known FROM traffic_keys) USING traffic_key"
	rs, err := s.conn.Query(ctx, q, w.args...)
	if err != nil {
		return nil, false, err
	}
	defer rs.Close()
	out := []TrafficCount{}
	seen := map[uint64]struct{}{}
	ok := true
	for rs.Next() {
		var (
			c              TrafficCount
			key            uint64
			n, withRouting uint64
			known          uint8
		)
		if err := rs.Scan(&key, &n, &withRouting, &known, &c.KeyID, &c.Team, &c.DecidedModel, &c.Upstream, &c.Route); err != nil {
			return nil, false, err
		}
		if _, dup := seen[key]; dup || known == 0 {
			ok = false
		}
		seen[key] = struct{}{}
		c.Requests, c.WithRouting = int64(n), int64(withRouting)
		out = append(out, c)
	}
	return out, ok, rs.Err()
}

// trafficExact groups by the strings themselves.
func (s *clickhouseStore) trafficExact(ctx context.Context, w *where) ([]TrafficCount, error) {
	q := "SELECT " + trafficGroup + ", count(), countIf(request_routing != 0) FROM requests" + w.sql() + " GROUP BY " + trafficGroup
	rs, err := s.conn.Query(ctx, q, w.args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := []TrafficCount{}
	for rs.Next() {
		var (
			c              TrafficCount
			n, withRouting uint64
		)
		if err := rs.Scan(&c.KeyID, &c.Team, &c.DecidedModel, &c.Upstream, &c.Route, &n, &withRouting); err != nil {
			return nil, err
		}
		c.Requests, c.WithRouting = int64(n), int64(withRouting)
		out = append(out, c)
	}
	return out, rs.Err()
}

// Traffic implements [Store.Traffic].
func (l *lazyStore) Traffic(ctx context.Context, f TrafficFilter) ([]TrafficCount, error) {
	s, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return s.Traffic(ctx, f)
}

// Traffic implements [Store.Traffic]: always [ErrOff].
func (offStore) Traffic(context.Context, TrafficFilter) ([]TrafficCount, error) { return nil, ErrOff }
