package ui

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicegw/sluice/snapshot"
	"github.com/sluicegw/sluice/store/requestlog"
)

// WhatIfInput is what a what-if run weighs: the change from Base (the
// configuration serving) to Head, by the requests Store recorded in
// [From, To), of Teams (every team when empty).
type WhatIfInput struct {
	// Base is the configuration serving, Head the one weighed against it.
	Base, Head *snapshot.Snapshot
	// Store is the request log read.
	Store requestlog.Store
	// From and To bound the window: From <= ts < To.
	From, To time.Time
	// Teams keeps only these teams' requests; empty keeps every team.
	Teams []string
}

// WhatIfFunc weighs a change by recorded traffic, as `sluice diff --traffic`
// does. Package diff provides it (diff.WhatIf): it sits after the gateway in
// the pipeline, so the binary hands it to the pages through [Options].
type WhatIfFunc func(ctx context.Context, in WhatIfInput) (*WhatIfResult, error)

// WhatIfResult is the weighed report as the what-if page shows it.
type WhatIfResult struct {
	// Changed reports whether the head revision changes anything at all.
	Changed bool
	// Window describes the window and team filter in words.
	Window string
	// Requests, Affected and RequestRouting count the requests recorded,
	// those on a changed combination, and those of them that brought their
	// own routing object.
	Requests, Affected, RequestRouting int64
	// Refused counts the requests that would be refused.
	Refused int64
	// Totals are the non-empty totals by effect (refusals always).
	Totals []WhatIfTotal
	// Teams are the teams with an effect, heaviest first.
	Teams []WhatIfTeam
	// Impacts are the effects on combinations with traffic, heaviest first.
	Impacts []WhatIfImpact
	// Untouched describes the changes no recorded request used, one a line.
	Untouched []string
	// Report is the whole report as `sluice diff --traffic` prints it.
	Report string
}

// WhatIfTotal is one total of the what-if page.
type WhatIfTotal struct {
	// Label names the effect; Requests and PerDay are formatted counts.
	Label            string
	Requests, PerDay string
}

// WhatIfTeam is one team's line: its counts by effect, already formatted.
type WhatIfTeam struct {
	// Team is the team; the other fields are its formatted counts.
	Team                                                                         string
	Refused, Unrefused, Degraded, Undegraded, ChainDropped, ChainAdded, Rerouted string
}

// WhatIfImpact is one line of the heaviest-first table.
type WhatIfImpact struct {
	// Requests and PerDay are formatted counts; Effect the effect's
	// constant (for styling), Change it in words; the rest say whose
	// requests.
	Requests, PerDay, Effect, Change, Team, Key, Model, Route, Upstream string
	// RequestRouting counts (formatted) the requests that brought their
	// own routing object; "" when none did.
	RequestRouting string
}

// whatIfTimeout bounds one what-if run (loading the head revision, reading
// the log, comparing).
const whatIfTimeout = 2 * time.Minute

type whatIfData struct {
	base
	Dir, From, To, Team string
	Enabled             bool
	Ran                 bool
	Error               string
	Diagnostics         []string
	Result              *WhatIfResult
}

// whatIf shows the form and, when it names a directory, the change from
// the serving configuration to the one there, weighed by the request log.
// Admin only: the directory is read on the server's disk. One run at a
// time: a run compiles every key, model and upstream twice.
func (h *handler) whatIf(w http.ResponseWriter, r *http.Request, v *viewer) {
	if !v.Admin {
		h.errorPage(w, r, v, http.StatusForbidden, "The what-if view is for the admin: it reads a directory on the server's disk.")
		return
	}
	q := r.URL.Query()
	d := whatIfData{base: base{Title: "What if", Nav: "whatif", Viewer: v}, Enabled: h.opts.WhatIf != nil,
		Dir: q.Get("dir"), From: q.Get("from"), To: q.Get("to"), Team: q.Get("team")}
	if !d.Enabled || d.Dir == "" {
		h.render(w, http.StatusOK, "whatif", d)
		return
	}
	d.Ran = true
	status := http.StatusOK
	fail := func(code int, msg string) {
		status, d.Error = code, msg
	}
	in, msg := h.whatIfInput(q)
	switch {
	case msg != "":
		fail(http.StatusBadRequest, msg)
	case !filepath.IsAbs(d.Dir):
		fail(http.StatusBadRequest, "The head directory must be an absolute path on the server.")
	default:
		select {
		case h.whatIfSlot <- struct{}{}:
			defer func() { <-h.whatIfSlot }()
			head, diags := snapshot.Load(filepath.Clean(d.Dir))
			if len(diags) > 0 {
				fail(http.StatusUnprocessableEntity, "The head configuration does not load.")
				for _, dg := range diags {
					d.Diagnostics = append(d.Diagnostics, dg.String())
				}
				break
			}
			in.Base, in.Head = h.opts.Snapshot(), head
			ctx, cancel := context.WithTimeout(r.Context(), whatIfTimeout)
			defer cancel()
			res, err := h.opts.WhatIf(ctx, in)
			switch {
			case errors.Is(err, requestlog.ErrOff):
				fail(http.StatusNotFound, `The request log is off ([store] kind = "off"): there is no traffic to weigh by.`)
			case err != nil:
				h.log.Error("ui: what-if failed", "dir", d.Dir, "err", err)
				fail(http.StatusServiceUnavailable, "The what-if run failed: "+err.Error())
			default:
				d.Result = res
			}
		default:
			fail(http.StatusTooManyRequests, "Another what-if run is in progress; try again when it ends.")
		}
	}
	h.render(w, status, "whatif", d)
}

// whatIfInput reads the window and teams of the form: from and to as the
// other pages take them (a date "to" includes its day), by default the last
// 7 days.
func (h *handler) whatIfInput(q url.Values) (WhatIfInput, string) {
	wq := url.Values{"from": {q.Get("from")}, "to": {q.Get("to")}}
	f, _, bad := parseFilter(wq)
	if bad != "" {
		return WhatIfInput{}, "Invalid window: " + bad + "."
	}
	in := WhatIfInput{Store: h.opts.Store, From: f.From, To: f.To}
	if in.To.IsZero() {
		in.To = h.opts.Now().UTC()
	}
	if in.From.IsZero() {
		in.From = in.To.Add(-7 * 24 * time.Hour)
	}
	if !in.From.Before(in.To) {
		return WhatIfInput{}, "Invalid window: from must be before to."
	}
	for _, t := range strings.Split(q.Get("team"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			in.Teams = append(in.Teams, t)
		}
	}
	return in, ""
}
