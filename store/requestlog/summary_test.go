package requestlog

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// daySpreadRows are sampleRows spread over several UTC days, with rows on
// both sides of a midnight to the millisecond.
func daySpreadRows(n int) []Row {
	rows := sampleRows(n)
	for i := range rows {
		rows[i].TS = baseTS.Add(time.Duration(i) * 7 * time.Hour)
	}
	midnight := time.Date(2025, 3, 20, 0, 0, 0, 0, time.UTC)
	rows[0].TS = midnight.Add(-time.Millisecond)
	rows[1].TS = midnight
	return rows
}

// runSummarizeContract checks a backend's Summarize against SummarizeRows
// of the rows a filter selects.
func runSummarizeContract(t *testing.T, b backend) {
	s := b.open(t)
	sm, ok := s.(Summarizer)
	require.True(t, ok, "%s store must implement Summarizer", b.name)
	in := daySpreadRows(90)
	// Two batches that overlap: the ten rows stored twice count once
	// (SQLite's rollup recounts such a batch from the rows it inserted).
	require.NoError(t, s.Insert(testCtx(t), in[:60]))
	require.NoError(t, s.Insert(testCtx(t), in[50:]))
	// Windows that start and end inside an hour (baseTS is 09:26:53.589):
	// SQLite reads their whole hours from its summary rollup and the part
	// hours from the rows, and adds them up per bucket.
	midFrom, midTo := baseTS.Add(30*time.Hour+17*time.Minute), baseTS.Add(20*24*time.Hour+3*time.Minute)
	for _, tc := range []struct {
		name string
		f    Filter
	}{
		{"none", Filter{}},
		{"team", Filter{Team: "ads"}},
		{"from and to", Filter{From: baseTS.Add(48 * time.Hour), To: baseTS.Add(15 * 24 * time.Hour)}},
		{"degraded", Filter{Degraded: true}},
		{"outside preference", Filter{PreferenceVerdict: VerdictOutsidePreference}},
		{"org and provider", Filter{Org: "acme", ServedProvider: "openai"}},
		{"limit and cursor ignored", Filter{Limit: 1, Cursor: "not a cursor"}},
		{"no match", Filter{Team: "nobody"}},
		{"window inside hours", Filter{From: midFrom, To: midTo}},
		{"from inside an hour", Filter{From: midFrom}},
		{"to inside an hour", Filter{To: midTo}},
		{"on the hour", Filter{From: baseTS.Truncate(time.Hour), To: baseTS.Truncate(time.Hour).Add(300 * time.Hour)}},
		{"within one hour", Filter{From: baseTS.Add(7 * time.Hour), To: baseTS.Add(7*time.Hour + time.Second)}},
		{"a row's own millisecond", Filter{From: daySpreadRows(90)[5].TS, To: daySpreadRows(90)[40].TS}},
		{"team and refused", Filter{Team: "ads", Refused: true, From: midFrom}},
		{"all flags", Filter{Degraded: true, Refused: true, Switched: true}},
		{"any flag", Filter{Degraded: true, Refused: true, Switched: true, AnyFlag: true, To: midTo}},
		{"switched", Filter{Switched: true, From: midFrom, To: midTo}},
		{"switch and fallback reasons", Filter{SwitchReason: "rate_limited", FallbackReason: "upstream_429", From: midFrom}},
		{"data policy", Filter{DataPolicy: "zero_retention", From: midFrom, To: midTo}},
		{"data policy any", Filter{DataPolicy: DataPolicyAny, From: midFrom}},
		{"data policy none", Filter{DataPolicy: DataPolicyNone, To: midTo}},
		{"org, provider and verdict", Filter{Org: "globex", ServedProvider: "anthropic", PreferenceVerdict: VerdictOtherPreferred}},
		// Columns the rollup lacks: answered from the rows.
		{"project (rows)", Filter{Project: "p1", From: midFrom, To: midTo}},
		{"session (rows)", Filter{SessionID: "sess-3", From: midFrom}},
		{"project and flag (rows)", Filter{Project: "p2", Degraded: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []Row
			for _, r := range in {
				if matches(r, tc.f) {
					want = append(want, r)
				}
			}
			f := tc.f
			f.Limit, f.Cursor = 0, ""
			for _, bucket := range []Bucket{BucketDay, BucketHour} {
				got, err := sm.Summarize(testCtx(t), f, bucket)
				require.NoError(t, err)
				require.Equal(t, SummarizeRows(want, bucket), got)
				got, err = Summarize(testCtx(t), s, tc.f, bucket)
				require.NoError(t, err)
				require.Equal(t, SummarizeRows(want, bucket), got)
			}
		})
	}
	all, err := sm.Summarize(testCtx(t), Filter{}, BucketDay)
	require.NoError(t, err)
	require.Greater(t, len(all), 10, "rows must span several days and teams")
	var total, degraded, refused, switched, fellBack, first, other, outside int64
	for _, d := range all {
		require.Equal(t, d.Day, d.Day.Truncate(24*time.Hour), "day is midnight UTC")
		require.Equal(t, time.UTC, d.Day.Location())
		total, degraded, refused = total+d.Total, degraded+d.Degraded, refused+d.Refused
		switched, fellBack = switched+d.Switched, fellBack+d.FellBack
		first, other, outside = first+d.FirstPreferred, other+d.OtherPreferred, outside+d.OutsidePreference
	}
	require.EqualValues(t, len(in), total)
	require.Positive(t, degraded)
	require.Positive(t, refused)
	require.Positive(t, switched)
	require.Positive(t, fellBack)
	require.Positive(t, first)
	require.Positive(t, other)
	require.Positive(t, outside)
	hours, err := sm.Summarize(testCtx(t), Filter{}, BucketHour)
	require.NoError(t, err)
	require.Greater(t, len(hours), len(all), "hours split the days")
	for _, d := range hours {
		require.Equal(t, d.Day, d.Day.Truncate(time.Hour), "an hour's bucket starts on the hour")
	}
}

func TestSummarizeRowsByHand(t *testing.T) {
	day1 := time.Date(2026, 1, 2, 23, 59, 59, 999_000_000, time.UTC)
	day2 := day1.Add(time.Millisecond)
	rows := []Row{
		{TS: day1, RequestID: "a", Team: "ml", DecidedModel: "m1", ServedModel: "m1"},
		{TS: day1, RequestID: "b", Team: "ml", DecidedModel: "m1", ServedModel: "m2", FallbackReason: "upstream_429"},
		{TS: day1, RequestID: "c", Team: "ads", DecidedModel: "m1", RefusedCode: "model_forbidden"},
		{TS: day2, RequestID: "d", Team: "ml", DecidedModel: "m1", ServedModel: "m1", RoutingDegraded: []string{"zdr"}, PreferenceVerdict: VerdictOutsidePreference},
		{TS: day1.Add(-2 * time.Hour), RequestID: "e", Team: "ml", DecidedModel: "m1", ServedModel: "m1", PreferenceVerdict: VerdictFirstPreferred},
	}
	got := SummarizeRows(rows, BucketDay)
	d1 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	require.Equal(t, []DaySummary{
		{Day: d1, Team: "ads", Total: 1, Refused: 1},
		{Day: d1, Team: "ml", Total: 3, Switched: 1, FellBack: 1, FirstPreferred: 1},
		{Day: d1.AddDate(0, 0, 1), Team: "ml", Total: 1, Degraded: 1, OutsidePreference: 1},
	}, got)
	h23 := d1.Add(23 * time.Hour)
	require.Equal(t, []DaySummary{
		{Day: d1.Add(21 * time.Hour), Team: "ml", Total: 1, FirstPreferred: 1},
		{Day: h23, Team: "ads", Total: 1, Refused: 1},
		{Day: h23, Team: "ml", Total: 2, Switched: 1, FellBack: 1},
		{Day: h23.Add(time.Hour), Team: "ml", Total: 1, Degraded: 1, OutsidePreference: 1},
	}, SummarizeRows(rows, BucketHour))
	require.Empty(t, SummarizeRows(nil, BucketDay))
}

// queryOnly hides a store's Summarizer so Summarize takes the paging path.
type queryOnly struct{ Store }

func TestSummarizeFallsBackToQuery(t *testing.T) {
	s := openSQLiteForTest(t)
	in := daySpreadRows(2*MaxLimit + 10)
	require.NoError(t, s.Insert(context.Background(), in))
	got, err := Summarize(context.Background(), queryOnly{s}, Filter{Team: "infra", Limit: 3}, BucketDay)
	require.NoError(t, err)
	var want []Row
	for _, r := range in {
		if r.Team == "infra" {
			want = append(want, r)
		}
	}
	require.Equal(t, SummarizeRows(want, BucketDay), got)
	require.NotEmpty(t, got)
}

// TestSQLiteSummaryReadsTheRollup: Summarize reads the summary rollup (its
// counts per hour and team when the filter has no other condition) by
// the hour of its key for every filter it can answer (an hour's buckets
// in the key's order, nothing sorted), the part hours of the window from
// the rows by an index, and a filter on a column the rollup lacks from the
// rows alone.
func TestSQLiteSummaryReadsTheRollup(t *testing.T) {
	s := openSQLiteForTest(t).(*sqliteStore)
	hour := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	day := Filter{From: hour, To: hour.Add(24 * time.Hour)}
	with := func(f Filter, q string) Filter {
		v, err := url.ParseQuery(q)
		require.NoError(t, err)
		g, bad := ParseFilter(v, ParseOptions{})
		require.Empty(t, bad)
		g.From, g.To = f.From, f.To
		return g
	}
	for _, tc := range []struct {
		f      Filter
		bucket Bucket
		rollup bool
		want   []string // in the plan, in order
	}{
		{day, BucketHour, true, []string{"SEARCH requests_team_hours USING PRIMARY KEY (hour>? AND hour<?)"}},
		{with(day, "team=ads"), BucketHour, true, []string{"SEARCH requests_team_hours USING PRIMARY KEY (hour>? AND hour<?)"}},
		{with(day, "org=acme"), BucketHour, true, []string{"SEARCH requests_summary_hours USING PRIMARY KEY (hour>? AND hour<?)"}},
		{with(day, "team=ads&refused=true&data_policy=zero_retention"), BucketHour, true, []string{"SEARCH requests_summary_hours USING PRIMARY KEY (hour>? AND hour<?)"}},
		{day, BucketDay, true, []string{"SEARCH requests_team_hours USING PRIMARY KEY (hour>? AND hour<?)", "TEMP B-TREE FOR GROUP BY"}},
		{with(day, "preference_verdict=first_preferred"), BucketDay, true, []string{"SEARCH requests_summary_hours USING PRIMARY KEY (hour>? AND hour<?)", "TEMP B-TREE FOR GROUP BY"}},
		{Filter{From: hour.Add(time.Minute), To: hour.Add(24*time.Hour + time.Minute)}, BucketHour, true, []string{
			"SEARCH requests_team_hours USING PRIMARY KEY (hour>? AND hour<?)",
			"SEARCH requests USING INDEX requests_ts (ts_ms>? AND ts_ms<?)",
			"SEARCH requests USING INDEX requests_ts (ts_ms>? AND ts_ms<?)"}},
		{with(Filter{From: hour.Add(time.Minute)}, "switched=true"), BucketHour, true, []string{
			"SEARCH requests_summary_hours USING PRIMARY KEY (hour>?)",
			"SEARCH requests USING INDEX requests_exceptional (ts_ms>? AND ts_ms<?)"}},
		{Filter{From: hour.Add(time.Minute), To: hour.Add(2 * time.Minute)}, BucketHour, false, []string{"SEARCH requests USING INDEX requests_ts (ts_ms>? AND ts_ms<?)"}},
		{with(day, "project=p1"), BucketHour, false, []string{"SEARCH requests USING INDEX requests_project_ts (project=? AND ts_ms>? AND ts_ms<?)"}},
		{with(day, "session=s-1"), BucketHour, false, []string{"SEARCH requests USING INDEX requests_session (session_id=? AND ts_ms>? AND ts_ms<?)"}},
	} {
		q, args, rollup := sqliteSummarySQL(tc.f, tc.bucket)
		require.Equal(t, tc.rollup, rollup, "filter %+v", tc.f)
		plan := queryPlan(t, s, q, args...)
		t.Logf("%+v: %s", tc.f, plan)
		rest := plan
		for _, w := range tc.want {
			i := strings.Index(rest, w)
			require.GreaterOrEqual(t, i, 0, "plan %q: want %q (filter %+v)", plan, w, tc.f)
			rest = rest[i+len(w):]
		}
		require.NotContains(t, plan, "SCAN requests", "filter %+v", tc.f)
		if tc.bucket == BucketHour && tc.rollup && !strings.Contains(plan, "UNION") {
			require.NotContains(t, plan, "TEMP B-TREE", "an hour's groups stream out of the rollup: filter %+v", tc.f)
		}
	}
}
