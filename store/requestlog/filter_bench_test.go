package requestlog

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// The compliance-filter benchmark's log: a million rows over a week, as
// BenchmarkTrafficSQLite1M's, with the filtered columns spread as a
// gateway's are (value shares in complianceLogSQL), and its one-day window:
// the fourth day, about 143,000 rows.
const (
	complianceRows = 1_000_000
	// complianceGenLimit bounds the generation: the benchmark fails
	// rather than run on (the machine is shared).
	complianceGenLimit = 10 * time.Minute
)

var complianceDay = struct{ from, to time.Time }{baseTS.Add(3 * 24 * time.Hour), baseTS.Add(4 * 24 * time.Hour)}

// complianceFilters are the documented compliance filters (ParseFilter's
// parameters: the review pages, `sluice rows`, the analytics API), each
// over the one-day window, with a value of the generated log and its
// share of the rows. The plans test and the benchmark read them.
var complianceFilters = []struct {
	name, query string // the query string, as a reader types it
	share       string // of the rows in the window
}{
	{"window", "", "all"},
	{"org", "org=globex", "10 %"},
	{"team", "team=team-3", "10 %"},
	{"project", "project=p-17", "2 %"},
	{"served_provider", "served_provider=bedrock", "20 %"},
	{"switch_reason", "switch_reason=upstream_5xx", "2 %"},
	{"fallback_reason", "fallback_reason=timeout", "2 %"},
	{"session", "session=s-25003", "12 rows"},
	{"data_policy", "data_policy=zero_retention", "10 %"},
	{"data_policy_any", "data_policy=any", "20 %"},
	{"data_policy_none", "data_policy=none", "80 %"},
	{"preference_verdict", "preference_verdict=outside_preference", "5 %"},
	{"degraded", "degraded=true", "1 %"},
	{"refused", "refused=true", "1 %"},
	{"switched", "switched=true", "3 %"},
	{"any_flag", "degraded=true&refused=true&switched=true&match=any", "5 %"},
	{"all_flags", "degraded=true&refused=true&switched=true", "none"},
	{"team_refused", "team=team-3&refused=true", "0.1 %"},
	{"no_such_team", "team=nobody", "none"},
}

// complianceFilter parses one of complianceFilters over the window.
func complianceFilter(tb testing.TB, query string) Filter {
	tb.Helper()
	q, err := url.ParseQuery(query)
	if err != nil {
		tb.Fatal(err)
	}
	q.Set("from", complianceDay.from.Format(time.RFC3339Nano))
	q.Set("to", complianceDay.to.Format(time.RFC3339Nano))
	f, bad := ParseFilter(q, ParseOptions{})
	if len(bad) > 0 {
		tb.Fatalf("%s: %+v", query, bad)
	}
	return f
}

// complianceLogSQL generates rows [lo, hi) of the log. Each of a to f is
// a random number of its own per row (materialized, so that a column
// read twice is the same number), from which the shares of
// complianceFilters follow; sessions are interleaved, 20 turns over 200
// rows, for 60 % of the rows.
func complianceLogSQL(lo, hi int) string {
	step := (7 * 24 * time.Hour).Milliseconds() / complianceRows
	return fmt.Sprintf(`INSERT INTO requests (ts_ms, request_id, org, team, project, key_id, session_id, route, upstream,
		decided_model, chain, served_model, served_provider, routing_switch_reason, routing_degraded, refused_code,
		fallback_reason, attempts, status, prompt_tokens, completion_tokens, cost_usd, latency_ms, api,
		data_policy, data_policy_via, preference_verdict, upstream_attempts, routing_object)
	WITH RECURSIVE seq(i) AS (SELECT %d UNION ALL SELECT i + 1 FROM seq WHERE i < %d),
	r AS MATERIALIZED (SELECT i, abs(random()) AS a, abs(random()) AS b, abs(random()) AS c, abs(random()) AS d,
		abs(random()) AS e, abs(random()) AS f FROM seq)
	SELECT %d + i * %d, printf('%%016x-%%08d', a, i),
		CASE WHEN a %% 10 = 0 THEN 'globex' ELSE 'acme' END,
		'team-' || (b %% 10), 'p-' || (c %% 50), 'k-' || (d %% 100),
		CASE WHEN e %% 5 < 3 THEN printf('s-%%d', i / 200 * 10 + i %% 10) ELSE '' END,
		CASE WHEN f %% 10 = 0 THEN 'assistant' ELSE '' END, 'up-' || (a / 10 %% 4),
		'author/model-' || (b / 10 %% 40), '["author/model-' || (b / 10 %% 40) || '","other/fallback"]',
		CASE WHEN c / 100 %% 100 = 5 THEN '' WHEN d / 100 %% 100 < 3 THEN 'other/fallback' ELSE 'author/model-' || (b / 10 %% 40) END,
		CASE e / 10 %% 5 WHEN 0 THEN 'openai' WHEN 1 THEN 'anthropic' WHEN 2 THEN 'bedrock' WHEN 3 THEN 'vertex' ELSE 'groq' END,
		CASE WHEN f / 10 %% 100 < 5 THEN 'rate_limited' WHEN f / 10 %% 100 < 7 THEN 'upstream_5xx' ELSE '' END,
		CASE WHEN a / 1000 %% 100 = 4 THEN '["chain"]' ELSE '[]' END,
		CASE WHEN c / 100 %% 100 = 5 THEN 'model_forbidden' ELSE '' END,
		CASE WHEN b / 1000 %% 50 = 3 THEN 'timeout' ELSE '' END,
		1, CASE WHEN c / 100 %% 100 = 5 THEN 403 ELSE 200 END, 100 + d %% 5000, 10 + e %% 800, (f %% 1000) / 1e5, 200 + a %% 3000,
		'chat',
		CASE d / 1000 %% 10 WHEN 0 THEN 'zero_retention,no_training' WHEN 1 THEN 'quantizations' ELSE '' END,
		CASE d / 1000 %% 10 WHEN 0 THEN 'zero_retention=native,no_training=allow_list' WHEN 1 THEN 'quantizations=native' ELSE '' END,
		CASE WHEN e / 1000 %% 20 < 12 THEN 'not_applicable' WHEN e / 1000 %% 20 < 17 THEN 'first_preferred'
			WHEN e / 1000 %% 20 < 19 THEN 'other_preferred' ELSE 'outside_preference' END,
		'[{"upstream":"up-' || (a / 10 %% 4) || '","provider":"p","status":200,"ms":' || (200 + a %% 3000) || '}]',
		CASE WHEN f / 1000 %% 10 = 0 THEN '{"order":["openai","anthropic"],"allow_fallbacks":true,"sort":"price","data_collection":"deny"}' ELSE '' END
	FROM r`, lo, hi-1, baseTS.UnixMilli(), step)
}

var complianceLog struct {
	once sync.Once
	dir  string
	err  error
}

// complianceLogPath generates the log once per test binary (in a folder
// TestMain removes), in chunks of 100,000 rows, with the store's schema.
func complianceLogPath(b *testing.B) string {
	b.Helper()
	complianceLog.once.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-compliance-")
		if err != nil {
			complianceLog.err = err
			return
		}
		complianceLog.dir = dir
		path := filepath.Join(dir, "requests.db")
		s, err := OpenSQLite(path)
		if err != nil {
			complianceLog.err = err
			return
		}
		defer s.Close()
		start := time.Now()
		for lo := 0; lo < complianceRows; lo += 100_000 {
			if time.Since(start) > complianceGenLimit {
				complianceLog.err = fmt.Errorf("generating the log took over %v", complianceGenLimit)
				return
			}
			if _, err := s.(*sqliteStore).db.Exec(complianceLogSQL(lo, lo+100_000)); err != nil {
				complianceLog.err = err
				return
			}
		}
		// Rows written around the writer: the summary rollup is filled
		// from them, as the migration does for a log written before it.
		for _, fill := range []string{sqliteFillSummary, sqliteFillTeamSummary} {
			if _, err := s.(*sqliteStore).db.Exec(fill); err != nil {
				complianceLog.err = err
				return
			}
		}
		b.Logf("generated %d rows in %v", complianceRows, time.Since(start).Round(time.Millisecond))
	})
	if complianceLog.err != nil {
		b.Fatal(complianceLog.err)
	}
	return filepath.Join(complianceLog.dir, "requests.db")
}

// removeComplianceLog removes the generated log (TestMain).
func removeComplianceLog() {
	if complianceLog.dir != "" {
		_ = os.RemoveAll(complianceLog.dir)
	}
}

// queryPlan is SQLite's EXPLAIN QUERY PLAN of q, one step a line.
func queryPlan(tb testing.TB, s *sqliteStore, q string, args ...any) string {
	tb.Helper()
	rs, err := s.db.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		tb.Fatal(err)
	}
	defer rs.Close()
	var plan []string
	for rs.Next() {
		var id, parent, notused int
		var detail string
		if err := rs.Scan(&id, &parent, &notused, &detail); err != nil {
			tb.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rs.Err(); err != nil {
		tb.Fatal(err)
	}
	return strings.Join(plan, "; ")
}

// pageSQL is the SQL of Query's first page of f.
func pageSQL(f Filter) (string, []any) {
	w := filterWhere(f, nil, sqliteDialect)
	return "SELECT " + strings.Join(rowColumns, ", ") + " FROM requests" + w.sql() +
		" ORDER BY ts_ms DESC, request_id DESC LIMIT ?", append(w.args, f.limit()+1)
}

// countRows runs q and reads every column of every row it returns.
func countRows(s *sqliteStore, q string, args ...any) (int, error) {
	rs, err := s.db.Query(q, args...)
	if err != nil {
		return 0, err
	}
	defer rs.Close()
	cols := make([]any, len(rowColumns))
	raw := make([]sql.RawBytes, len(rowColumns))
	for i := range cols {
		cols[i] = &raw[i]
	}
	n := 0
	for rs.Next() {
		if err := rs.Scan(cols...); err != nil {
			return 0, err
		}
		n++
	}
	return n, rs.Err()
}

// BenchmarkComplianceFilters1M answers each documented compliance filter
// over a one-day window of a million-row SQLite log (a week of traffic):
// page, the first page (Query, 100 rows, as the rows page, `sluice rows`
// and the API read it); summary, the overview's hourly counts
// (Summarize); page-by-time, for a filter whose page reads its own
// index, the same page by walking the time index instead (what that
// index buys); summary-by-rows, for a filter the summary rollup answers,
// the same counts from the rows (what the rollup buys). Each sub-benchmark logs its query plans and the rows its
// answer holds (-v).
func BenchmarkComplianceFilters1M(b *testing.B) {
	path := complianceLogPath(b)
	st, err := OpenSQLite(path)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	s := st.(*sqliteStore)
	ctx := context.Background()
	for _, cf := range complianceFilters {
		f := complianceFilter(b, cf.query)
		b.Run(cf.name+"/page", func(b *testing.B) {
			q, args := pageSQL(f)
			b.Logf("%s: plan: %s", cf.query, queryPlan(b, s, q, args...))
			var p Page
			for b.Loop() {
				if p, err = s.Query(ctx, f); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(p.Rows)), "rows")
		})
		if q, args := pageSQL(f); !strings.Contains(queryPlan(b, s, q, args...), "USING INDEX requests_ts ") {
			// What the filter's own index buys: the same page read by
			// walking the time index, as without it.
			q = strings.Replace(q, " FROM requests ", " FROM requests INDEXED BY requests_ts ", 1)
			b.Run(cf.name+"/page-by-time", func(b *testing.B) {
				b.Logf("%s: plan: %s", cf.query, queryPlan(b, s, q, args...))
				var n int
				for b.Loop() {
					if n, err = countRows(s, q, args...); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n), "rows")
			})
		}
		b.Run(cf.name+"/summary", func(b *testing.B) {
			q, args, _ := sqliteSummarySQL(f, BucketHour)
			b.Logf("%s: plan: %s", cf.query, queryPlan(b, s, q, args...))
			var sums []DaySummary
			for b.Loop() {
				if sums, err = s.Summarize(ctx, f, BucketHour); err != nil {
					b.Fatal(err)
				}
			}
			var n int64
			for _, d := range sums {
				n += d.Total
			}
			b.ReportMetric(float64(n), "rows")
		})
		if _, _, rollup := sqliteSummarySQL(f, BucketHour); rollup {
			// What the summary rollup buys: the same counts from the
			// rows of the window, as before it.
			q, args := sqliteSummaryOfRows(f, BucketHour)
			q += " ORDER BY day, team"
			// The rollup's answer is the rows' answer.
			want, err := s.summaries(ctx, BucketHour, q, args...)
			if err != nil {
				b.Fatal(err)
			}
			if got, err := s.Summarize(ctx, f, BucketHour); err != nil || !reflect.DeepEqual(got, want) {
				b.Fatalf("%s: the rollup's summary differs from the rows' (%v):\n%+v\n%+v", cf.query, err, got, want)
			}
			b.Run(cf.name+"/summary-by-rows", func(b *testing.B) {
				b.Logf("%s: plan: %s", cf.query, queryPlan(b, s, q, args...))
				var n int
				for b.Loop() {
					rs, err := s.db.Query(q, args...)
					if err != nil {
						b.Fatal(err)
					}
					n = 0
					for rs.Next() {
						n++
					}
					if err := rs.Err(); err != nil {
						b.Fatal(err)
					}
					rs.Close()
				}
				b.ReportMetric(float64(n), "groups")
			})
		}
	}
}

// TestComplianceFilterPlans: every compliance filter over a window is a
// search of an index (the time index, or a filtered column's), never a
// scan of the table; a session's page reads the partial session index, a
// flag's or a reason's the partial index of the rows out of the ordinary.
func TestComplianceFilterPlans(t *testing.T) {
	s := openSQLiteForTest(t).(*sqliteStore)
	wantIndex := map[string]string{"session": "requests_session", "switch_reason": "requests_exceptional",
		"fallback_reason": "requests_exceptional", "degraded": "requests_exceptional", "refused": "requests_exceptional",
		"switched": "requests_exceptional", "any_flag": "requests_exceptional", "all_flags": "requests_exceptional", "team_refused": "requests_exceptional"}
	for _, cf := range complianceFilters {
		f := complianceFilter(t, cf.query)
		q, args := pageSQL(f)
		plan := queryPlan(t, s, q, args...)
		t.Logf("%s: %s", cf.name, plan)
		if !strings.HasPrefix(plan, "SEARCH requests USING INDEX ") || strings.Contains(plan, "SCAN requests") {
			t.Errorf("%s: plan %q: want a search of an index", cf.name, plan)
		}
		if want := wantIndex[cf.name]; want != "" && !strings.Contains(plan, "USING INDEX "+want+" ") {
			t.Errorf("%s: plan %q: want the index %s", cf.name, plan, want)
		}
	}
}
