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
	"fallback_reason", "session", "data_policy", "degraded", "refused", "switched", "limit", "cursor"}

// FilterProblem is one invalid filter parameter.
type FilterProblem struct {
	// Param is the parameter's name, e.g. "from".
	Param string
	// Code is stable: invalid_time, invalid_bool, invalid_limit or
	// invalid_data_policy.
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
}

// ParseFilter reads the request-log filters from a query string: from and to
// (RFC 3339, from 1970 on), org, team, project, served_provider,
// switch_reason, fallback_reason, session (the session_id; exact matches),
// data_policy (a restriction's name, any or none), degraded, refused,
// switched (true/false), limit (1 to MaxLimit) and cursor. The analytics API,
// the compliance pages and `sluice rows` all read filters here. Every invalid
// parameter is reported, in the order of [FilterParams].
func ParseFilter(q url.Values, opts ParseOptions) (Filter, []FilterProblem) {
	var f Filter
	var bad []FilterProblem
	timeMsg := "must be an RFC 3339 time from 1970 on, such as 2026-11-30T00:00:00Z"
	if opts.Dates {
		timeMsg = "must be a date (2026-11-30) or an RFC 3339 time (2026-11-30T00:00:00Z), from 1970 on"
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
		t, err := time.Parse(time.RFC3339, v)
		if err != nil && opts.Dates {
			if t, err = time.Parse(time.DateOnly, v); err == nil && tf.endOfDay {
				t = t.AddDate(0, 0, 1)
			}
		}
		if err != nil || !ValidBound(t) {
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
