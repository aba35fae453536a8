package requestlog

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The summary rollup, requests_summary_hours: requests per UTC hour and
// combination of the columns the overview counts by or filters on (team,
// org, served provider, data policy, preference verdict, the switch and
// fallback reasons, the degraded, refused and switched flags). The writer
// upserts it once per distinct combination per batch, in the batch's
// transaction, as it does the traffic rollup. [sqliteStore.Summarize]
// reads it for the whole hours of a window instead of the rows; a filter
// on a column it lacks (project, session) is answered from the rows.
//
// Its key starts with the hour, so a window is one range of it. The other
// columns are few-valued in a gateway's traffic (a team's org is fixed,
// the flags and reasons are mostly empty), so an hour holds a few hundred
// combinations rather than thousands of rows. project is left out on
// purpose: it multiplies the combinations, and its filter reads its own
// index (requests_project_ts).
const sqliteSummaryTable = `CREATE TABLE IF NOT EXISTS requests_summary_hours (
		hour INTEGER NOT NULL,
		team TEXT NOT NULL,
		org TEXT NOT NULL,
		served_provider TEXT NOT NULL,
		data_policy TEXT NOT NULL,
		preference_verdict TEXT NOT NULL,
		routing_switch_reason TEXT NOT NULL,
		fallback_reason TEXT NOT NULL,
		degraded INTEGER NOT NULL,
		refused INTEGER NOT NULL,
		switched INTEGER NOT NULL,
		requests INTEGER NOT NULL,
		PRIMARY KEY (` + sqliteSummaryKey + `)
	) WITHOUT ROWID`

// sqliteTeamSummaryTable is the summary rollup's counts per hour and team
// alone, with the overview's counts as columns: what the overview reads for
// a window with no filter but a team (the default view, and an analyst's),
// a few rows an hour. The writer keeps it from the same batch counts.
const sqliteTeamSummaryTable = `CREATE TABLE IF NOT EXISTS requests_team_hours (
		hour INTEGER NOT NULL,
		team TEXT NOT NULL,
		requests INTEGER NOT NULL,
		degraded INTEGER NOT NULL,
		refused INTEGER NOT NULL,
		switched INTEGER NOT NULL,
		fell_back INTEGER NOT NULL,
		first_preferred INTEGER NOT NULL,
		other_preferred INTEGER NOT NULL,
		outside_preference INTEGER NOT NULL,
		PRIMARY KEY (hour, team)
	) WITHOUT ROWID`

// sqliteTeamSummaryColumns are requests_team_hours' columns, in order.
const sqliteTeamSummaryColumns = "hour, team, requests, degraded, refused, switched, fell_back, first_preferred, other_preferred, outside_preference"

// sqliteFillTeamSummary counts the summary rollup into the (empty)
// requests_team_hours.
const sqliteFillTeamSummary = `INSERT INTO requests_team_hours (` + sqliteTeamSummaryColumns + `)
			SELECT hour, team, ` + sqliteSummaryRollupSums + ` FROM requests_summary_hours GROUP BY hour, team`

// sqliteUpsertTeamSummary adds counts to one row of requests_team_hours.
const sqliteUpsertTeamSummary = `INSERT INTO requests_team_hours (` + sqliteTeamSummaryColumns + `)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (hour, team) DO UPDATE SET requests = requests + excluded.requests,
		degraded = degraded + excluded.degraded, refused = refused + excluded.refused,
		switched = switched + excluded.switched, fell_back = fell_back + excluded.fell_back,
		first_preferred = first_preferred + excluded.first_preferred,
		other_preferred = other_preferred + excluded.other_preferred,
		outside_preference = outside_preference + excluded.outside_preference`

// sqliteSummaryRollupSums are the overview's counts of a group of the
// summary rollup's rows, in DaySummary's order, in SQL.
const sqliteSummaryRollupSums = "SUM(requests), SUM(requests * degraded), SUM(requests * refused)," +
	" SUM(requests * switched), SUM(requests * (fallback_reason != ''))," +
	" SUM(requests * (preference_verdict = '" + VerdictFirstPreferred + "')), SUM(requests * (preference_verdict = '" + VerdictOtherPreferred + "'))," +
	" SUM(requests * (preference_verdict = '" + VerdictOutsidePreference + "'))"

// sqliteSummaryKey is the summary rollup's key, in its order.
const sqliteSummaryKey = "hour, team, org, served_provider, data_policy, preference_verdict, routing_switch_reason, fallback_reason, degraded, refused, switched"

// sqliteSummaryFlags are a row's degraded, refused and switched flags, as
// the filters and SummarizeRows define them, in SQL.
const sqliteSummaryFlags = "routing_degraded != '[]', refused_code != '', (served_model != '' AND served_model != decided_model)"

// sqliteSummaryOfRow is a row's key in the summary rollup, in SQL, in
// sqliteSummaryKey's order.
const sqliteSummaryOfRow = sqliteHourOf + ", team, org, served_provider, data_policy, preference_verdict, routing_switch_reason, fallback_reason, " + sqliteSummaryFlags

// sqliteFillSummary counts every row into the (empty) summary rollup.
const sqliteFillSummary = `INSERT INTO requests_summary_hours (` + sqliteSummaryKey + `, requests)
			SELECT ` + sqliteSummaryOfRow + `, COUNT(*) FROM requests GROUP BY ` + sqliteSummaryOfRow

// sqliteUpsertSummary adds a count to one row of the summary rollup.
const sqliteUpsertSummary = `INSERT INTO requests_summary_hours (` + sqliteSummaryKey + `, requests)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (` + sqliteSummaryKey + `) DO UPDATE SET requests = requests + excluded.requests`

// summaryHour is one row of requests_summary_hours without its count.
type summaryHour struct {
	hour                                                                   int64
	team, org, provider, dataPolicy, verdict, switchReason, fallbackReason string
	degraded, refused, switched                                            bool
}

// summaryHourOf is r's key in the summary rollup; r is normalized.
func summaryHourOf(r *Row) summaryHour {
	return summaryHour{
		hour: hourOf(r.TS.UnixMilli()), team: r.Team, org: r.Org, provider: r.ServedProvider,
		dataPolicy: r.DataPolicy, verdict: r.PreferenceVerdict, switchReason: r.RoutingSwitchReason,
		fallbackReason: r.FallbackReason, degraded: len(r.RoutingDegraded) > 0, refused: r.RefusedCode != "",
		switched: r.ServedModel != "" && r.ServedModel != r.DecidedModel,
	}
}

// upsertSums adds the batch's counts to the summary rollup: one statement
// per combination and hour.
func (c *sqliteWriteConn) upsertSums() error {
	if len(c.sums.keys) == 0 {
		return nil
	}
	st, err := c.stmt(&c.upsertSum, sqliteUpsertSummary)
	if err != nil {
		return err
	}
	return c.upsertEach(st, len(c.sums.keys), "summary rollup", func(b *rowBinder, i int) {
		k := &c.sums.keys[i]
		b.int(k.hour)
		b.text(k.team)
		b.text(k.org)
		b.text(k.provider)
		b.text(k.dataPolicy)
		b.text(k.verdict)
		b.text(k.switchReason)
		b.text(k.fallbackReason)
		b.bool(k.degraded)
		b.bool(k.refused)
		b.bool(k.switched)
		b.int(c.sums.counts[i])
	})
}

// teamHour is one row of requests_team_hours: an hour's and team's counts.
type teamHour struct {
	hour   int64
	team   string
	counts [8]int64 // DaySummary's counts, in order
}

// upsertTeamSums adds the batch's counts, those of the summary rollup's
// combinations summed per hour and team, to requests_team_hours.
func (c *sqliteWriteConn) upsertTeamSums() error {
	c.teams = c.teams[:0]
	for i := range c.sums.keys {
		k, n := &c.sums.keys[i], c.sums.counts[i]
		j := len(c.teams) - 1
		for ; j >= 0 && (c.teams[j].hour != k.hour || c.teams[j].team != k.team); j-- {
		}
		if j < 0 {
			c.teams = append(c.teams, teamHour{hour: k.hour, team: k.team})
			j = len(c.teams) - 1
		}
		t := &c.teams[j].counts
		t[0] += n
		t[1] += n * b2i(k.degraded)
		t[2] += n * b2i(k.refused)
		t[3] += n * b2i(k.switched)
		t[4] += n * b2i(k.fallbackReason != "")
		t[5] += n * b2i(k.verdict == VerdictFirstPreferred)
		t[6] += n * b2i(k.verdict == VerdictOtherPreferred)
		t[7] += n * b2i(k.verdict == VerdictOutsidePreference)
	}
	defer clear(c.teams) // hold no strings past the batch
	if len(c.teams) == 0 {
		return nil
	}
	st, err := c.stmt(&c.upsertTeam, sqliteUpsertTeamSummary)
	if err != nil {
		return err
	}
	return c.upsertEach(st, len(c.teams), "team summary rollup", func(b *rowBinder, i int) {
		th := &c.teams[i]
		b.int(th.hour)
		b.text(th.team)
		for _, n := range th.counts {
			b.int(n)
		}
	})
}

// summaryRollupWhere is f's conditions on the summary rollup, without the
// window; ok is false for a filter the rollup cannot answer (a project or
// a session: columns it lacks).
func summaryRollupWhere(f Filter) (w *where, ok bool) {
	if f.Project != "" || f.SessionID != "" {
		return nil, false
	}
	w = &where{}
	for _, eq := range []struct{ col, val string }{
		{"org", f.Org}, {"team", f.Team}, {"served_provider", f.ServedProvider},
		{"routing_switch_reason", f.SwitchReason}, {"fallback_reason", f.FallbackReason},
	} {
		if eq.val != "" {
			w.add(eq.col+" = ?", eq.val)
		}
	}
	var flags []string
	for _, fl := range []struct {
		on  bool
		col string
	}{{f.Degraded, "degraded != 0"}, {f.Refused, "refused != 0"}, {f.Switched, "switched != 0"}} {
		if fl.on {
			flags = append(flags, fl.col)
		}
	}
	if len(flags) > 1 && f.AnyFlag {
		w.add("(" + strings.Join(flags, " OR ") + ")")
	} else {
		for _, c := range flags {
			w.add(c)
		}
	}
	if f.PreferenceVerdict != "" {
		w.add("preference_verdict = ?", f.PreferenceVerdict)
	}
	switch f.DataPolicy {
	case "":
	case DataPolicyAny:
		w.add("data_policy != ''")
	case DataPolicyNone:
		w.add("data_policy = ''")
	default:
		w.add(sqliteDialect.listHas, "%,"+f.DataPolicy+",%")
	}
	return w, true
}

// sqliteSummaryOfRows counts the rows of f per bucket and team, unordered.
func sqliteSummaryOfRows(f Filter, bucket Bucket) (string, []any) {
	w := filterWhere(f, nil, sqliteDialect)
	return "SELECT ts_ms / " + strconv.FormatInt(int64(bucket.valid()), 10) + " AS day, team, " + summaryCountsOfRows +
		" FROM requests" + w.sql() + " GROUP BY day, team", w.args
}

// summaryCounts are the summary's count columns c0 to c7, in DaySummary's
// order, over the rows and over the rollup.
var (
	summaryCountsOfRows = countColumns("COUNT(*)", "SUM(routing_degraded != '[]')", "SUM(refused_code != '')",
		"SUM(served_model != '' AND served_model != decided_model)", "SUM(fallback_reason != '')",
		"SUM(preference_verdict = '"+VerdictFirstPreferred+"')", "SUM(preference_verdict = '"+VerdictOtherPreferred+"')",
		"SUM(preference_verdict = '"+VerdictOutsidePreference+"')")
	summaryCountsOfRollup = countColumns(strings.Split(sqliteSummaryRollupSums, ", ")...)
	summaryCountsOfTeams  = countColumns("SUM(requests)", "SUM(degraded)", "SUM(refused)", "SUM(switched)", "SUM(fell_back)",
		"SUM(first_preferred)", "SUM(other_preferred)", "SUM(outside_preference)")
	summaryCountsAdded = countColumns("SUM(c0)", "SUM(c1)", "SUM(c2)", "SUM(c3)", "SUM(c4)", "SUM(c5)", "SUM(c6)", "SUM(c7)")
)

// countColumns is exprs as a select list, named c0, c1 and on.
func countColumns(exprs ...string) string {
	for i := range exprs {
		exprs[i] += " AS c" + strconv.Itoa(i)
	}
	return strings.Join(exprs, ", ")
}

// sqliteSummarySQL is the SQLite query of Summarize(f, bucket) and its
// arguments. A filter the rollup can answer reads the whole hours of the
// window from requests_summary_hours and the part hours at either end
// from the rows (through filterWhere, as Query reads them); the two are
// added up per bucket and team. Any other filter is counted from the rows.
// rollup reports whether the rollup is read.
func sqliteSummarySQL(f Filter, bucket Bucket) (q string, args []any, rollup bool) {
	bucket = bucket.valid()
	rows := func(f Filter) (string, []any) { return sqliteSummaryOfRows(f, bucket) }
	roll, ok := summaryRollupWhere(f)
	if !ok {
		q, args := rows(f)
		return q + " ORDER BY day, team", args, false
	}
	// The window's whole hours from the rollup; the part hours before and
	// after them, from the rows.
	split := splitHours(f.From, f.To)
	if !split.whole {
		q, args := rows(f)
		return q + " ORDER BY day, team", args, false
	}
	var edges []Filter
	for _, e := range split.edges {
		ef := f
		ef.From, ef.To = time.UnixMilli(e[0]), time.UnixMilli(e[1])
		edges = append(edges, ef)
	}
	span, spanArgs := split.conds, split.args
	// The window's conditions first, in the key's order, so that the
	// planner searches the key by hour.
	roll.conds = append(span, roll.conds...)
	roll.args = append(spanArgs, roll.args...)
	day := "hour" // an hour's bucket is the hour itself: grouped in the key's order
	if bucket != BucketHour {
		day = "hour / " + strconv.FormatInt(int64(bucket)/hourMillis, 10)
	}
	table, counts := "requests_summary_hours", summaryCountsOfRollup
	if f == (Filter{From: f.From, To: f.To, Team: f.Team, AnyFlag: f.AnyFlag, Limit: f.Limit, Cursor: f.Cursor}) {
		// No condition but the window and the team: the counts per hour
		// and team.
		table, counts = "requests_team_hours", summaryCountsOfTeams
	}
	q = "SELECT " + day + " AS day, team, " + counts + " FROM " + table + roll.sql() + " GROUP BY day, team"
	args = roll.args
	if len(edges) == 0 {
		return q + " ORDER BY day, team", args, true
	}
	parts := []string{q}
	for _, e := range edges {
		eq, eargs := rows(e)
		parts, args = append(parts, eq), append(args, eargs...)
	}
	return "SELECT day, team, " + summaryCountsAdded + " FROM (" + strings.Join(parts, " UNION ALL ") +
		") GROUP BY day, team ORDER BY day, team", args, true
}

// Summarize implements [Summarizer.Summarize]: from the summary rollup
// and the part hours' rows when the rollup can answer f, otherwise from
// the rows (sqliteSummarySQL). The bucket is ts_ms divided by the
// bucket's milliseconds (UTC days or hours since the epoch).
func (s *sqliteStore) Summarize(ctx context.Context, f Filter, bucket Bucket) ([]DaySummary, error) {
	bucket = bucket.valid()
	q, args, _ := sqliteSummarySQL(f, bucket)
	return s.summaries(ctx, bucket, q, args...)
}

// summaries runs q, a summary query of bucket (day, team and the counts
// c0 to c7, ordered by day and team), and reads its answer.
func (s *sqliteStore) summaries(ctx context.Context, bucket Bucket, q string, args ...any) ([]DaySummary, error) {
	rs, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("requestlog: sqlite summarize: %w", err)
	}
	defer rs.Close()
	out := []DaySummary{}
	for rs.Next() {
		var (
			d    DaySummary
			days int64
		)
		if err := rs.Scan(&days, &d.Team, &d.Total, &d.Degraded, &d.Refused, &d.Switched, &d.FellBack,
			&d.FirstPreferred, &d.OtherPreferred, &d.OutsidePreference); err != nil {
			return nil, fmt.Errorf("requestlog: sqlite summarize: %w", err)
		}
		d.Day = time.UnixMilli(days * int64(bucket)).UTC()
		out = append(out, d)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("requestlog: sqlite summarize: %w", err)
	}
	return out, nil
}
