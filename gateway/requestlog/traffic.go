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

// trafficGroup is the grouping both backends use; the covering SQLite
// index requests_traffic names the same columns in the same order.
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
	slices.SortFunc(c, func(a, b TrafficCount) int {
		return cmp.Or(cmp.Compare(a.KeyID, b.KeyID), cmp.Compare(a.Team, b.Team),
			cmp.Compare(a.DecidedModel, b.DecidedModel), cmp.Compare(a.Upstream, b.Upstream), cmp.Compare(a.Route, b.Route))
	})
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

// sqliteTrafficSQL is the SQLite query of f and its arguments. It names the
// covering index, so that a team filter cannot steer the planner to the
// team index and a lookup of every row in the table.
func sqliteTrafficSQL(f TrafficFilter) (string, []any) {
	w := trafficWhere(f, func(teams []string) (string, []any) {
		args := make([]any, len(teams))
		for i, t := range teams {
			args[i] = t
		}
		return "team IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(teams)), ", ") + ")", args
	})
	return "SELECT " + trafficGroup + ", COUNT(*), SUM(request_routing) FROM requests INDEXED BY requests_traffic" + w.sql() +
		" GROUP BY " + trafficGroup, w.args
}

// Traffic implements [Store.Traffic]: one grouped query that the covering
// index requests_traffic answers in its own order, without reading the
// table and without sorting.
func (s *sqliteStore) Traffic(ctx context.Context, f TrafficFilter) ([]TrafficCount, error) {
	q, args := sqliteTrafficSQL(f)
	rs, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("requestlog: sqlite traffic: %w", err)
	}
	defer rs.Close()
	out := []TrafficCount{}
	for rs.Next() {
		var c TrafficCount
		if err := rs.Scan(&c.KeyID, &c.Team, &c.DecidedModel, &c.Upstream, &c.Route, &c.Requests, &c.WithRouting); err != nil {
			return nil, fmt.Errorf("requestlog: sqlite traffic: %w", err)
		}
		out = append(out, c)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("requestlog: sqlite traffic: %w", err)
	}
	sortTraffic(out)
	return out, nil
}

// chTrafficHash and chTrafficCheck are two independent 64-bit hashes of a
// combination (variables so that a test can force collisions).
var (
	chTrafficHash  = "cityHash64(key_id, team, decided_model, upstream, route)"
	chTrafficCheck = "cityHash64(route, upstream, decided_model, team, key_id)"
)

// Traffic implements [Store.Traffic]: one GROUP BY aggregate, the ts_ms
// range served by the primary key. It groups by a 64-bit hash of the five
// strings rather than by the strings: ClickHouse 18.16 groups several
// string keys by serializing them row by row, measured 2-3 times slower
// than one integer key (docs/perf.md). The hash cannot be trusted blindly,
// so each group also carries whether a second, independent hash is the same
// on all its rows; a group where it is not held two combinations, and the
// exact query on the strings answers instead. The teams travel as one array
// argument tested with has(), which 18.16 accepts where "IN (?)" with a
// slice is not.
func (s *clickhouseStore) Traffic(ctx context.Context, f TrafficFilter) ([]TrafficCount, error) {
	w := trafficWhere(f, func(teams []string) (string, []any) {
		return "has(?, team)", []any{teams}
	})
	hashed := "SELECT any(key_id), any(team), any(decided_model), any(upstream), any(route)," +
		" count(), countIf(request_routing != 0), min(h2) = max(h2)" +
		" FROM (SELECT " + trafficGroup + ", request_routing, " + chTrafficHash + " AS h, " + chTrafficCheck + " AS h2" +
		" FROM requests" + w.sql() + ") GROUP BY h"
	out, collided, err := s.traffic(ctx, hashed, w.args)
	if err == nil && collided {
		exact := "SELECT " + trafficGroup + ", count(), countIf(request_routing != 0), 1" +
			" FROM requests" + w.sql() + " GROUP BY " + trafficGroup
		out, _, err = s.traffic(ctx, exact, w.args)
	}
	if err != nil {
		return nil, fmt.Errorf("requestlog: clickhouse %s: traffic: %w", s.addr, err)
	}
	sortTraffic(out)
	return out, nil
}

// traffic runs one form of the Traffic query and reports whether a group
// failed its collision check.
func (s *clickhouseStore) traffic(ctx context.Context, q string, args []any) ([]TrafficCount, bool, error) {
	rs, err := s.conn.Query(ctx, q, args...)
	if err != nil {
		return nil, false, err
	}
	defer rs.Close()
	out := []TrafficCount{}
	collided := false
	for rs.Next() {
		var (
			c              TrafficCount
			n, withRouting uint64
			ok             uint8
		)
		if err := rs.Scan(&c.KeyID, &c.Team, &c.DecidedModel, &c.Upstream, &c.Route, &n, &withRouting, &ok); err != nil {
			return nil, false, err
		}
		c.Requests, c.WithRouting = int64(n), int64(withRouting)
		collided = collided || ok == 0
		out = append(out, c)
	}
	return out, collided, rs.Err()
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
