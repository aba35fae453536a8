package requestlog

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FilterParams are the query parameters [ParseFilter] reads, in the order
// the analytics API documents them.
var FilterParams = []string{"from", "to", "org", "team", "project", "served_provider", "switch_reason",
	"fallback_reason", "session", "data_policy", "preference_verdict", "degraded", "refused", "switched", "match", "limit", "cursor"}

// Values of the match parameter: how degraded, refused and switched combine.
const (
	// MatchAll keeps rows with every flag asked for (the default).
	MatchAll = "all"
	// MatchAny keeps rows with any flag asked for.
	MatchAny = "any"
)

// FilterProblem is one invalid filter parameter.
type FilterProblem struct {
	// Param is the parameter's name, e.g. "from".
	Param string
	// Code is stable: invalid_time, invalid_bool, invalid_limit,
	// invalid_data_policy, invalid_preference_verdict or invalid_match.
	Code string
	// Message says what the value must be.
	Message string
}

// ParseOptions adjust [ParseFilter] to the form a reader uses.
type ParseOptions struct {
	// Dates also accepts a bare date (YYYY-MM-DD, UTC) for from and to; a
	// date "to" includes that whole day. Default false: RFC 3339 times only,
	// as the analytics API and `sluice rows` take them.
	Dates bool
	// Now is the clock relative times ("1h", "-7d") count back from.
	// Default time.Now.
	Now func() time.Time
}

// ParseTime reads a filter's time bound: an RFC 3339 time, or a time
// relative to now: a duration back from now, with or without a leading
// "-" ("1h", "-1h", "90m", "7d"; units s, m, h and d, a day being 24 h).
// With dates, a bare date (YYYY-MM-DD, UTC) as well; end makes a date mean
// the end of that day (the "to" of a range). ok is false for anything else,
// and for a time before 1970.
func ParseTime(v string, now time.Time, dates, end bool) (t time.Time, ok bool) {
	if d, rel := parseAgo(v); rel {
		t = now.Add(-d)
		return t, ValidBound(t)
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil && dates {
		if t, err = time.Parse(time.DateOnly, v); err == nil && end {
			t = t.AddDate(0, 0, 1)
		}
	}
	return t, err == nil && ValidBound(t)
}

// parseAgo reads a relative time: an optional "-", then a positive Go
// duration or a whole number of days ("7d").
func parseAgo(v string) (time.Duration, bool) {
	v = strings.TrimPrefix(v, "-")
	if v == "" || v[0] < '0' || v[0] > '9' {
		return 0, false
	}
	if n, ok := strings.CutSuffix(v, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days <= 0 || days > 100*365 {
			return 0, false
		}
		return time.Duration(days) * 24 * time.Hour, true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, false
	}
	return d, true
}

// ParseFilter reads the request-log filters from a query string: from and to
// (RFC 3339 from 1970 on, or relative to now: "1h", "-1h", "7d"; see
// [ParseTime]), org, team, project, served_provider,
// switch_reason, fallback_reason, session (the session_id; exact matches),
// data_policy (a restriction's name, any or none), preference_verdict (one
// of [PreferenceVerdicts]), degraded, refused, switched (true/false), match
// (all or any: how those three combine), limit (1 to MaxLimit) and cursor. The analytics API,
// the compliance pages and `sluice rows` all read filters here. Every invalid
// parameter is reported, in the order of [FilterParams].
func ParseFilter(q url.Values, opts ParseOptions) (Filter, []FilterProblem) {
	var f Filter
	var bad []FilterProblem
	timeMsg := "must be an RFC 3339 time from 1970 on, such as 2026-11-30T00:00:00Z, or a time back from now, such as 1h or 7d"
	if opts.Dates {
		timeMsg = "must be a date (2026-11-30), an RFC 3339 time (2026-11-30T00:00:00Z) from 1970 on, or a time back from now (1h, 24h, 7d)"
	}
	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	for _, tf := range []struct {
		name     string
		dst      *time.Time
		endOfDay bool
	}{{"from", &f.From, false}, {"to", &f.To, true}} {
		v := q.Get(tf.name)
		if v == "" {
			continue
		}
		t, ok := ParseTime(v, now, opts.Dates, tf.endOfDay)
		if !ok {
			bad = append(bad, FilterProblem{Param: tf.name, Code: "invalid_time", Message: timeMsg})
			continue
		}
		*tf.dst = t
	}
	f.Org, f.Team, f.Project = q.Get("org"), q.Get("team"), q.Get("project")
	f.ServedProvider, f.SwitchReason, f.FallbackReason = q.Get("served_provider"), q.Get("switch_reason"), q.Get("fallback_reason")
	f.SessionID = q.Get("session")
	if v := q.Get("data_policy"); v != "" {
		if !slices.Contains(DataPolicyValues, v) {
			bad = append(bad, FilterProblem{Param: "data_policy", Code: "invalid_data_policy", Message: "must be one of " + strings.Join(DataPolicyValues, ", ")})
		} else {
			f.DataPolicy = v
		}
	}
	if v := q.Get("preference_verdict"); v != "" {
		if !slices.Contains(PreferenceVerdicts, v) {
			bad = append(bad, FilterProblem{Param: "preference_verdict", Code: "invalid_preference_verdict", Message: "must be one of " + strings.Join(PreferenceVerdicts, ", ")})
		} else {
			f.PreferenceVerdict = v
		}
	}
	for _, bf := range []struct {
		name string
		dst  *bool
	}{{"degraded", &f.Degraded}, {"refused", &f.Refused}, {"switched", &f.Switched}} {
		if v := q.Get(bf.name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				bad = append(bad, FilterProblem{Param: bf.name, Code: "invalid_bool", Message: "must be true or false"})
			}
			*bf.dst = b
		}
	}
	switch v := q.Get("match"); v {
	case "", MatchAll:
	case MatchAny:
		f.AnyFlag = true
	default:
		bad = append(bad, FilterProblem{Param: "match", Code: "invalid_match", Message: "must be all or any"})
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			bad = append(bad, FilterProblem{Param: "limit", Code: "invalid_limit", Message: fmt.Sprintf("must be an integer from 1 to %d", MaxLimit)})
		}
		f.Limit = n
	}
	f.Cursor = q.Get("cursor")
	return f, bad
}
