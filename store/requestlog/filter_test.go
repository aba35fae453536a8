package requestlog_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/store/requestlog"
)

// TestParseFilter: the analytics query string becomes a filter, and every
// bad parameter is reported by name with a stable code.
func TestParseFilter(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		return v
	}
	now := time.Date(2026, 12, 2, 7, 40, 0, 0, time.UTC)
	opts := requestlog.ParseOptions{Now: func() time.Time { return now }}
	good := []struct {
		query string
		want  requestlog.Filter
	}{
		{"", requestlog.Filter{}},
		{"from=2026-11-30T00:00:00Z&to=2026-12-01T00:00:00%2B01:00", requestlog.Filter{From: at("2026-11-30T00:00:00Z"), To: at("2026-12-01T00:00:00+01:00")}},
		{"to=2026-11-30T09:26:53.5895Z", requestlog.Filter{To: at("2026-11-30T09:26:53.5895Z")}},
		{"from=1970-01-01T00:00:00Z", requestlog.Filter{From: time.Unix(0, 0)}},
		{"org=acme&team=ml&project=chat&served_provider=azure&switch_reason=chain&fallback_reason=throttled",
			requestlog.Filter{Org: "acme", Team: "ml", Project: "chat", ServedProvider: "azure", SwitchReason: "chain", FallbackReason: "throttled"}},
		{"session=6f1c2b9e-0d4a-4c1e-9a57-3e8b2f1d7c40&team=ml", requestlog.Filter{SessionID: "6f1c2b9e-0d4a-4c1e-9a57-3e8b2f1d7c40", Team: "ml"}},
		{"data_policy=zero_retention", requestlog.Filter{DataPolicy: "zero_retention"}},
		{"data_policy=none", requestlog.Filter{DataPolicy: requestlog.DataPolicyNone}},
		{"degraded=true&refused=1&switched=false&limit=1000&cursor=abc",
			requestlog.Filter{Degraded: true, Refused: true, Limit: 1000, Cursor: "abc"}},
		{"from=1h", requestlog.Filter{From: now.Add(-time.Hour)}},
		{"from=-1h", requestlog.Filter{From: now.Add(-time.Hour)}},
		{"from=7d&to=-90m", requestlog.Filter{From: now.AddDate(0, 0, -7), To: now.Add(-90 * time.Minute)}},
		{"from=24h&to=2026-12-02T07:00:00Z", requestlog.Filter{From: now.AddDate(0, 0, -1), To: at("2026-12-02T07:00:00Z")}},
		{"preference_verdict=outside_preference", requestlog.Filter{PreferenceVerdict: requestlog.VerdictOutsidePreference}},
		{"degraded=true&switched=true&match=any", requestlog.Filter{Degraded: true, Switched: true, AnyFlag: true}},
		{"degraded=true&match=all", requestlog.Filter{Degraded: true}},
	}
	for _, tc := range good {
		t.Run(tc.query, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			require.NoError(t, err)
			f, problems := requestlog.ParseFilter(q, opts)
			require.Empty(t, problems)
			require.True(t, tc.want.From.Equal(f.From) && tc.want.To.Equal(f.To), "from %v to %v", f.From, f.To)
			f.From, f.To, tc.want.From, tc.want.To = time.Time{}, time.Time{}, time.Time{}, time.Time{}
			require.Equal(t, tc.want, f)
		})
	}
	bad := []struct{ query, param, code string }{
		{"from=yesterday", "from", "invalid_time"},
		{"to=2026-11-30", "to", "invalid_time"},
		{"to=0001-01-01T00:00:00Z", "to", "invalid_time"},
		{"from=1969-12-31T23:59:59Z", "from", "invalid_time"},
		{"degraded=maybe", "degraded", "invalid_bool"},
		{"data_policy=zdr", "data_policy", "invalid_data_policy"},
		{"limit=0", "limit", "invalid_limit"},
		{"limit=1001", "limit", "invalid_limit"},
		{"limit=ten", "limit", "invalid_limit"},
		{"from=1x", "from", "invalid_time"},
		{"from=0h", "from", "invalid_time"},
		{"from=--1h", "from", "invalid_time"},
		{"from=2026-12-02 06:40", "from", "invalid_time"},
		{"preference_verdict=honoured", "preference_verdict", "invalid_preference_verdict"},
		{"match=either", "match", "invalid_match"},
	}
	for _, tc := range bad {
		t.Run(tc.query, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			require.NoError(t, err)
			_, problems := requestlog.ParseFilter(q, opts)
			require.Len(t, problems, 1)
			require.Equal(t, tc.param, problems[0].Param)
			require.Equal(t, tc.code, problems[0].Code)
		})
	}
	_, problems := requestlog.ParseFilter(url.Values{"from": {"x"}, "limit": {"0"}}, requestlog.ParseOptions{})
	require.Len(t, problems, 2, "every bad parameter is listed")
}

// TestParseFilterDates: with Dates, a bare date is a bound too, and a date
// "to" includes that whole day; years before 1970 stay refused.
func TestParseFilterDates(t *testing.T) {
	f, problems := requestlog.ParseFilter(url.Values{"from": {"2026-11-01"}, "to": {"2026-11-02"}}, requestlog.ParseOptions{Dates: true})
	require.Empty(t, problems)
	require.Equal(t, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), f.From)
	require.Equal(t, time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC), f.To)
	_, problems = requestlog.ParseFilter(url.Values{"from": {"1969-12-31"}}, requestlog.ParseOptions{Dates: true})
	require.Len(t, problems, 1)
	require.Equal(t, "invalid_time", problems[0].Code)
}
