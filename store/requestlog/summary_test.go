package requestlog

import (
	"context"
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
	require.NoError(t, s.Insert(testCtx(t), in))
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
