package ui

import (
	"net/url"
	"time"

	"github.com/sluicegw/sluice/store/requestlog"
)

// filterForm is the filter as the form shows it: the raw values, so that a
// page re-renders exactly what the reviewer typed.
type filterForm struct {
	From, To, Org, Team, Project, ServedProvider, SwitchReason, FallbackReason string
	// Session is the session_id filter: one session's turns.
	Session string
	// DataPolicy is the data_policy filter: a restriction's name, any or none.
	DataPolicy string
	// PreferenceVerdict is the preference_verdict filter.
	PreferenceVerdict           string
	Degraded, Refused, Switched bool
	// Match is how the ticked flags combine: "all" (default) or "any".
	Match string
	Limit string
}

// preset is one of the time ranges the pages offer as a link.
type preset struct {
	// From is the relative from it sets ("1h"); Label names it.
	From, Label string
	// Link is the current page with this range; Current marks the one in use.
	Link    string
	Current bool
}

// presetRanges are the ranges offered above each filter form; "custom" is
// the form's own from and to.
var presetRanges = []struct{ from, label string }{{"1h", "Last hour"}, {"24h", "Last 24 h"}, {"7d", "Last 7 days"}}

// presets returns the preset links of a page (path) for the form's other
// filters.
func (ff filterForm) presets(path string) []preset {
	out := make([]preset, 0, len(presetRanges))
	for _, p := range presetRanges {
		q := ff.query()
		q.Set("from", p.from)
		q.Del("to")
		q.Del("limit")
		out = append(out, preset{From: p.from, Label: p.label, Link: path + "?" + q.Encode(), Current: ff.From == p.from && ff.To == ""})
	}
	return out
}

// parseFilter is [parseFilterAt] on the wall clock.
func parseFilter(q url.Values) (requestlog.Filter, filterForm, string) {
	return parseFilterAt(q, time.Now)
}

// parseFilterAt reads the filters of a page's query string with the request
// log's one parser ([requestlog.ParseFilter]), taking a bare date
// (YYYY-MM-DD, UTC) for from and to as well ("to" as a date includes that
// whole day) and relative times counted back from now ("1h", "7d"). It
// returns the filter, the form values and a message for the first
// invalid value.
func parseFilterAt(q url.Values, now func() time.Time) (requestlog.Filter, filterForm, string) {
	f, problems := requestlog.ParseFilter(q, requestlog.ParseOptions{Dates: true, Now: now})
	ff := filterForm{
		From: q.Get("from"), To: q.Get("to"), Org: q.Get("org"), Team: q.Get("team"), Project: q.Get("project"),
		ServedProvider: q.Get("served_provider"), SwitchReason: q.Get("switch_reason"),
		FallbackReason: q.Get("fallback_reason"), Session: q.Get("session"), DataPolicy: q.Get("data_policy"),
		PreferenceVerdict: q.Get("preference_verdict"), Match: q.Get("match"), Limit: q.Get("limit"),
		Degraded: f.Degraded, Refused: f.Refused, Switched: f.Switched,
	}
	if len(problems) > 0 {
		return f, ff, problems[0].Param + " " + problems[0].Message
	}
	return f, ff, ""
}

// query renders the form back as a query string (without a cursor), for
// links that keep the current filter.
func (ff filterForm) query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("from", ff.From)
	set("to", ff.To)
	set("org", ff.Org)
	set("team", ff.Team)
	set("project", ff.Project)
	set("served_provider", ff.ServedProvider)
	set("switch_reason", ff.SwitchReason)
	set("fallback_reason", ff.FallbackReason)
	set("session", ff.Session)
	set("data_policy", ff.DataPolicy)
	set("preference_verdict", ff.PreferenceVerdict)
	set("limit", ff.Limit)
	for _, b := range []struct {
		k string
		v bool
	}{{"degraded", ff.Degraded}, {"refused", ff.Refused}, {"switched", ff.Switched}} {
		if b.v {
			q.Set(b.k, "true")
		}
	}
	if ff.Match == requestlog.MatchAny {
		q.Set("match", requestlog.MatchAny)
	}
	return q
}
