package requestlog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Bucket is the span a summary counts over, in milliseconds since the epoch
// (UTC): [BucketDay] or [BucketHour].
type Bucket int64

// Summary buckets.
const (
	// BucketDay counts per UTC day.
	BucketDay Bucket = 24 * 60 * 60 * 1000
	// BucketHour counts per hour.
	BucketHour Bucket = 60 * 60 * 1000
)

// valid returns b, or BucketDay for any span but the two defined.
func (b Bucket) valid() Bucket {
	if b != BucketHour {
		return BucketDay
	}
	return b
}

// DaySummary counts one team's requests in one bucket (a UTC day or an
// hour): how many there were and how many of them lost something or were
// served by something other than what was decided or preferred. The
// categories overlap: one request can count in several.
type DaySummary struct {
	// Day is the bucket's start: midnight UTC for a day, the hour's start
	// for an hour.
	Day time.Time `json:"day"`
	// Team is the principal's team ("" for rows recorded without one).
	Team string `json:"team"`
	// Total counts every row of the day and team.
	Total int64 `json:"total"`
	// Degraded counts rows whose routing_degraded is non-empty.
	Degraded int64 `json:"degraded"`
	// Refused counts rows with a refused_code.
	Refused int64 `json:"refused"`
	// Switched counts rows served by a model other than the decided one
	// (served_model != "" and != decided_model).
	Switched int64 `json:"switched"`
	// FellBack counts rows with a fallback_reason.
	FellBack int64 `json:"fell_back"`
	// FirstPreferred, OtherPreferred and OutsidePreference count rows by
	// preference_verdict: the first preferred provider served, a later
	// one, or one outside the preference.
	FirstPreferred    int64 `json:"first_preferred"`
	OtherPreferred    int64 `json:"other_preferred"`
	OutsidePreference int64 `json:"outside_preference"`
}

// Summarizer is implemented by stores that aggregate in the database. Both
// built-in stores implement it; [Summarize] falls back to paging through
// [Store.Query] for stores that do not.
type Summarizer interface {
	// Summarize returns one DaySummary per (bucket, team) that has rows
	// matching f, ordered by bucket then team. f.Limit and f.Cursor are
	// ignored; a bucket other than BucketHour counts per day.
	Summarize(ctx context.Context, f Filter, bucket Bucket) ([]DaySummary, error)
}

var (
	_ Summarizer = (*sqliteStore)(nil)
	_ Summarizer = (*clickhouseStore)(nil)
)

// Summarize aggregates the rows of s matching f per bucket and team: in the
// database when s is a [Summarizer], otherwise by reading every matching row.
func Summarize(ctx context.Context, s Store, f Filter, bucket Bucket) ([]DaySummary, error) {
	f.Cursor, f.Limit = "", 0
	if sm, ok := s.(Summarizer); ok {
		return sm.Summarize(ctx, f, bucket)
	}
	f.Limit = MaxLimit
	var rows []Row
	for {
		p, err := s.Query(ctx, f)
		if err != nil {
			return nil, err
		}
		rows = append(rows, p.Rows...)
		if p.NextCursor == "" {
			return SummarizeRows(rows, bucket), nil
		}
		f.Cursor = p.NextCursor
	}
}

// SummarizeRows aggregates rows in memory, with the same semantics and order
// as [Summarizer.Summarize].
func SummarizeRows(rows []Row, bucket Bucket) []DaySummary {
	span := time.Duration(bucket.valid()) * time.Millisecond
	type key struct {
		day  int64
		team string
	}
	byKey := map[key]*DaySummary{}
	for _, r := range rows {
		r = r.normalized()
		day := r.TS.Truncate(span)
		k := key{day.Unix(), r.Team}
		s := byKey[k]
		if s == nil {
			s = &DaySummary{Day: day, Team: r.Team}
			byKey[k] = s
		}
		s.Total++
		s.Degraded += b2i(len(r.RoutingDegraded) > 0)
		s.Refused += b2i(r.RefusedCode != "")
		s.Switched += b2i(r.ServedModel != "" && r.ServedModel != r.DecidedModel)
		s.FellBack += b2i(r.FallbackReason != "")
		s.FirstPreferred += b2i(r.PreferenceVerdict == VerdictFirstPreferred)
		s.OtherPreferred += b2i(r.PreferenceVerdict == VerdictOtherPreferred)
		s.OutsidePreference += b2i(r.PreferenceVerdict == VerdictOutsidePreference)
	}
	out := make([]DaySummary, 0, len(byKey))
	for _, s := range byKey {
		out = append(out, *s)
	}
	sortSummaries(out)
	return out
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func sortSummaries(s []DaySummary) {
	slices.SortFunc(s, func(a, b DaySummary) int {
		if c := a.Day.Compare(b.Day); c != 0 {
			return c
		}
		return cmp.Compare(a.Team, b.Team)
	})
}

// Summarize implements [Summarizer.Summarize]. The day is computed from
// ts_ms with intDiv rather than toDate(ts): ts_ms is what the filters
// compare, and the result does not depend on the server's time zone. The
// SQL (intDiv, countIf) runs on ClickHouse 18.16 as well as current releases.
func (s *clickhouseStore) Summarize(ctx context.Context, f Filter, bucket Bucket) ([]DaySummary, error) {
	bucket = bucket.valid()
	w := filterWhere(f, nil, clickhouseDialect)
	q := "SELECT intDiv(ts_ms, " + strconv.FormatInt(int64(bucket), 10) + ") AS day, team, count()," +
		" countIf(length(routing_degraded) > 0), countIf(refused_code != '')," +
		" countIf(served_model != '' AND served_model != decided_model), countIf(fallback_reason != '')," +
		" countIf(preference_verdict = '" + VerdictFirstPreferred + "'), countIf(preference_verdict = '" + VerdictOtherPreferred + "')," +
		" countIf(preference_verdict = '" + VerdictOutsidePreference + "')" +
		" FROM requests" + w.sql() + " GROUP BY day, team ORDER BY day, team"
	rs, err := s.conn.Query(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("requestlog: clickhouse %s: summarize: %w", s.addr, err)
	}
	defer rs.Close()
	out := []DaySummary{}
	for rs.Next() {
		var (
			d                                            DaySummary
			days                                         int64
			total, degraded, refused, switched, fellBack uint64
			first, other, outside                        uint64
		)
		if err := rs.Scan(&days, &d.Team, &total, &degraded, &refused, &switched, &fellBack, &first, &other, &outside); err != nil {
			return nil, fmt.Errorf("requestlog: clickhouse %s: summarize: %w", s.addr, err)
		}
		d.Day = time.UnixMilli(days * int64(bucket)).UTC()
		d.Total, d.Degraded, d.Refused = int64(total), int64(degraded), int64(refused)
		d.Switched, d.FellBack = int64(switched), int64(fellBack)
		d.FirstPreferred, d.OtherPreferred, d.OutsidePreference = int64(first), int64(other), int64(outside)
		out = append(out, d)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("requestlog: clickhouse %s: summarize: %w", s.addr, err)
	}
	return out, nil
}
