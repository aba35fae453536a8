package ui

import (
	"net/url"

	"github.com/sluicegw/sluice/store/requestlog"
)

// filterForm is the filter as the form shows it: the raw values, so that a
// page re-renders exactly what the reviewer typed.
type filterForm struct {
	From, To, Org, Team, Project, ServedProvider, SwitchReason, FallbackReason string
	// Session is the session_id filter: one session's turns.
	Session string
	// DataPolicy is the data_policy filter: a restriction's name, any or none.
	DataPolicy                  string
	Degraded, Refused, Switched bool
	Limit                       string
}

// parseFilter reads the filters of a page's query string with the request
// log's one parser ([requestlog.ParseFilter]), taking a bare date
// (YYYY-MM-DD, UTC) for from and to as well: "to" as a date includes that
// whole day. It returns the filter, the form values and a message for the
// first invalid value.
func parseFilter(q url.Values) (requestlog.Filter, filterForm, string) {
	f, problems := requestlog.ParseFilter(q, requestlog.ParseOptions{Dates: true})
	ff := filterForm{
		From: q.Get("from"), To: q.Get("to"), Org: q.Get("org"), Team: q.Get("team"), Project: q.Get("project"),
		ServedProvider: q.Get("served_provider"), SwitchReason: q.Get("switch_reason"),
		FallbackReason: q.Get("fallback_reason"), Session: q.Get("session"), DataPolicy: q.Get("data_policy"), Limit: q.Get("limit"),
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
	set("limit", ff.Limit)
	for _, b := range []struct {
		k string
		v bool
	}{{"degraded", ff.Degraded}, {"refused", ff.Refused}, {"switched", ff.Switched}} {
		if b.v {
			q.Set(b.k, "true")
		}
	}
	return q
}
