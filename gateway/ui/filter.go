package ui

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/sluicegw/sluice/gateway/requestlog"
)

// filterForm is the filter as the form shows it: the raw values, so that a
// page re-renders exactly what the reviewer typed.
type filterForm struct {
	From, To, Org, Team, Project, ServedProvider, SwitchReason, FallbackReason string
	Degraded, Refused, Switched                                                bool
	Limit                                                                      string
}

// parseFilter reads the analytics filters from a query string, as the
// analytics API does, and additionally accepts a bare date (YYYY-MM-DD, UTC)
// for from and to: "to" as a date includes that whole day. It returns the
// filter, the form values and a message for the first invalid value.
func parseFilter(q url.Values) (requestlog.Filter, filterForm, string) {
	var f requestlog.Filter
	ff := filterForm{
		From: q.Get("from"), To: q.Get("to"), Org: q.Get("org"), Team: q.Get("team"), Project: q.Get("project"),
		ServedProvider: q.Get("served_provider"), SwitchReason: q.Get("switch_reason"),
		FallbackReason: q.Get("fallback_reason"), Limit: q.Get("limit"),
	}
	var bad string
	fail := func(msg string) {
		if bad == "" {
			bad = msg
		}
	}
	parseTime := func(name, v string, endOfDay bool) time.Time {
		if v == "" {
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			if t, err = time.Parse(time.DateOnly, v); err == nil && endOfDay {
				t = t.AddDate(0, 0, 1)
			}
		}
		if err == nil && requestlog.ValidBound(t) {
			return t
		}
		fail(name + " must be a date (2026-11-30) or an RFC 3339 time (2026-11-30T00:00:00Z), from 1970 on")
		return time.Time{}
	}
	f.From = parseTime("from", ff.From, false)
	f.To = parseTime("to", ff.To, true)
	f.Org, f.Team, f.Project = ff.Org, ff.Team, ff.Project
	f.ServedProvider, f.SwitchReason, f.FallbackReason = ff.ServedProvider, ff.SwitchReason, ff.FallbackReason
	for _, bf := range []struct {
		name string
		dst  *bool
		form *bool
	}{{"degraded", &f.Degraded, &ff.Degraded}, {"refused", &f.Refused, &ff.Refused}, {"switched", &f.Switched, &ff.Switched}} {
		if v := q.Get(bf.name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				fail(bf.name + " must be true or false")
			}
			*bf.dst, *bf.form = b, b
		}
	}
	if ff.Limit != "" {
		n, err := strconv.Atoi(ff.Limit)
		if err != nil || n < 1 || n > requestlog.MaxLimit {
			fail(fmt.Sprintf("limit must be an integer from 1 to %d", requestlog.MaxLimit))
		}
		f.Limit = n
	}
	f.Cursor = q.Get("cursor")
	return f, ff, bad
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
