package ui

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/snapshot"
	"github.com/sluicegw/sluice/store/requestlog"
)

// defaultPageSize is the rows page's size when the filter sets no limit.
const defaultPageSize = 50

// overviewDays is the default span of the overview: today and the 13 days
// before it (UTC).
const overviewDays = 14

// scope restricts an analyst's filter to their team of their org (team
// names are not global: two orgs may each have an "ml"). It returns false
// when the filter asks for another org or team.
func scope(f *requestlog.Filter, ff *filterForm, v *viewer) bool {
	if v.Admin {
		return true
	}
	if (f.Team != "" && v.Team != "" && f.Team != v.Team) || (f.Org != "" && f.Org != v.Org) {
		return false
	}
	if v.Team != "" { // "": a reviewer of the whole org
		f.Team, ff.Team = v.Team, v.Team
	}
	f.Org, ff.Org = v.Org, v.Org
	return true
}

// readFilter parses and scopes the request's filter. An invalid filter is
// returned as a message for the page to show beside its form (problem);
// a filter outside the analyst's scope is answered with the error page
// itself (ok false).
func (h *handler) readFilter(w http.ResponseWriter, r *http.Request, v *viewer) (f requestlog.Filter, ff filterForm, problem string, ok bool) {
	f, ff, problem = parseFilterAt(r.URL.Query(), h.opts.Now)
	if !scope(&f, &ff, v) {
		h.errorPage(w, r, v, http.StatusForbidden, "An analyst key reads only its own team's rows (team "+v.Team+").")
		return f, ff, "", false
	}
	return f, ff, problem, true
}

// readExportFilter is readFilter for a download, which has no form to show
// a problem beside: an invalid filter gets the error page.
func (h *handler) readExportFilter(w http.ResponseWriter, r *http.Request, v *viewer) (requestlog.Filter, bool) {
	f, _, problem, ok := h.readFilter(w, r, v)
	if ok && problem != "" {
		h.errorPage(w, r, v, http.StatusBadRequest, "Invalid filter: "+problem+".")
		return f, false
	}
	return f, ok
}

func (h *handler) storeFailed(w http.ResponseWriter, r *http.Request, v *viewer, err error) {
	if errors.Is(err, requestlog.ErrBadCursor) {
		h.errorPage(w, r, v, http.StatusBadRequest, "Invalid page cursor; start again from the newest rows.")
		return
	}
	if errors.Is(err, requestlog.ErrOff) {
		h.errorPage(w, r, v, http.StatusNotFound, `The request log is off ([store] kind = "off"): this gateway records no rows.`)
		return
	}
	h.log.Error("ui: request-log read failed", "path", r.URL.Path, "err", err)
	h.errorPage(w, r, v, http.StatusServiceUnavailable, "The request log cannot be read right now.")
}

type overviewData struct {
	base
	Form filterForm
	// FormError is an invalid filter's message, shown beside the form.
	FormError  string
	Presets    []preset
	TeamLocked bool
	// Hourly: the range is short enough to count per hour.
	Hourly   bool
	Rows     []summaryRow
	Charts   []chart
	Metrics  []metric
	RowsLink string
}

// hourlyUpTo is the longest range the overview counts per hour.
const hourlyUpTo = 48 * time.Hour

func (h *handler) overview(w http.ResponseWriter, r *http.Request, v *viewer) {
	q := r.URL.Query()
	if q.Get("from") == "" && q.Get("to") == "" {
		q.Set("from", h.opts.Now().UTC().AddDate(0, 0, 1-overviewDays).Format(time.DateOnly))
	}
	r.URL.RawQuery = q.Encode()
	f, ff, problem, ok := h.readFilter(w, r, v)
	if !ok {
		return
	}
	d := overviewData{base: base{Title: "Overview", Nav: "overview", Viewer: v}, Form: ff, FormError: problem,
		Presets: ff.presets("/ui/"), TeamLocked: !v.Admin, Metrics: metrics}
	if problem != "" {
		h.render(w, http.StatusBadRequest, "overview", d)
		return
	}
	bucket := requestlog.BucketDay
	if end := h.opts.Now(); !f.From.IsZero() && (f.To.IsZero() || f.To.Before(end)) {
		if !f.To.IsZero() {
			end = f.To
		}
		if end.Sub(f.From) <= hourlyUpTo {
			bucket, d.Hourly = requestlog.BucketHour, true
		}
	}
	sums, err := requestlog.Summarize(r.Context(), h.opts.Store, f, bucket)
	if err != nil {
		h.storeFailed(w, r, v, err)
		return
	}
	d.Rows, d.Charts = buildOverview(sums, bucket)
	rowsQ := ff.query()
	rowsQ.Del("limit")
	d.RowsLink = "/ui/rows?" + rowsQ.Encode()
	h.render(w, http.StatusOK, "overview", d)
}

// rowView is one line of the rows table.
type rowView struct {
	requestlog.Row
	Link, When string
	// SessionLink lists the row's session's turns ("" without a session).
	SessionLink string
	Switched    bool
	Cost        string
}

type rowsData struct {
	base
	Form filterForm
	// FormError is an invalid filter's message, shown beside the form.
	FormError string
	Presets   []preset
	// DataPolicies and Verdicts are the select filters' choices.
	DataPolicies []string
	Verdicts     []string
	TeamLocked   bool
	Rows         []rowView
	NextLink     string
	FirstLink    string
	CSVLink      string
	JSONLink     string
	Paged        bool
}

// sessionLink is the rows page of one session's turns, read together
// (models served, representation breaks, cost); "" without a session.
func sessionLink(r requestlog.Row) string {
	if r.SessionID == "" {
		return ""
	}
	return "/ui/rows?" + url.Values{"session": {r.SessionID}}.Encode()
}

func detailLink(r requestlog.Row) string {
	return "/ui/rows/" + url.PathEscape(r.RequestID) + "?ts=" + strconv.FormatInt(r.TS.UnixMilli(), 10)
}

func (h *handler) rows(w http.ResponseWriter, r *http.Request, v *viewer) {
	f, ff, problem, ok := h.readFilter(w, r, v)
	if !ok {
		return
	}
	d := rowsData{base: base{Title: "Rows", Nav: "rows", Viewer: v}, Form: ff, FormError: problem, Presets: ff.presets("/ui/rows"),
		DataPolicies: requestlog.DataPolicyValues, Verdicts: requestlog.PreferenceVerdicts, TeamLocked: !v.Admin, Paged: f.Cursor != ""}
	if problem != "" {
		h.render(w, http.StatusBadRequest, "rows", d)
		return
	}
	if f.Limit == 0 {
		f.Limit = defaultPageSize
	}
	p, err := h.opts.Store.Query(r.Context(), f)
	if err != nil {
		h.storeFailed(w, r, v, err)
		return
	}
	for _, row := range p.Rows {
		d.Rows = append(d.Rows, rowView{Row: row, Link: detailLink(row), When: row.TS.Format("2006-01-02 15:04:05.000"),
			SessionLink: sessionLink(row), Switched: row.ServedModel != "" && row.ServedModel != row.DecidedModel,
			Cost: strconv.FormatFloat(row.CostUSD, 'f', -1, 64)})
	}
	q := ff.query()
	d.FirstLink = "/ui/rows?" + q.Encode()
	if p.NextCursor != "" {
		q.Set("cursor", p.NextCursor)
		d.NextLink = "/ui/rows?" + q.Encode()
		q.Del("cursor")
	}
	q.Del("limit")
	d.CSVLink = "/ui/rows.csv?" + q.Encode()
	d.JSONLink = "/ui/rows.json?" + q.Encode()
	h.render(w, http.StatusOK, "rows", d)
}

// rowsCSV exports every row of the filter (all pages, newest first) as
// requestlog.WriteRows' CSV: one header line, then the rows.
func (h *handler) rowsCSV(w http.ResponseWriter, r *http.Request, v *viewer) {
	h.export(w, r, v, requestlog.FormatCSV)
}

// rowsJSON exports every row of the filter (all pages, newest first) as
// one JSON array of rows, each as the analytics API returns it.
func (h *handler) rowsJSON(w http.ResponseWriter, r *http.Request, v *viewer) {
	h.export(w, r, v, requestlog.FormatJSON)
}

// export writes every row of the filter in format (CSV or JSON), page by
// page with requestlog.WriteRows, joined into one file.
func (h *handler) export(w http.ResponseWriter, r *http.Request, v *viewer, format string) {
	f, ok := h.readExportFilter(w, r, v)
	if !ok {
		return
	}
	f.Limit, f.Cursor = requestlog.MaxLimit, ""
	var buf bytes.Buffer
	for pageNo := 0; ; pageNo++ {
		p, err := h.opts.Store.Query(r.Context(), f)
		if err != nil {
			if pageNo == 0 {
				h.storeFailed(w, r, v, err)
				return
			}
			// Part of the file is sent: abort the connection so the
			// download fails rather than looks complete.
			h.log.Error("ui: export failed mid-way", "format", format, "err", err)
			panic(http.ErrAbortHandler)
		}
		buf.Reset()
		if err := requestlog.WriteRows(&buf, p.Rows, format); err != nil {
			h.log.Error("ui: export failed", "format", format, "err", err)
			panic(http.ErrAbortHandler)
		}
		out := buf.Bytes()
		last := p.NextCursor == ""
		if format == requestlog.FormatJSON {
			out = jsonPart(out, pageNo == 0, last)
		}
		if pageNo == 0 {
			name := "sluice-rows-" + h.opts.Now().UTC().Format("20060102T150405Z") + "." + format
			ctype := "text/csv; charset=utf-8"
			if format == requestlog.FormatJSON {
				ctype = "application/json"
			}
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
		} else if format == requestlog.FormatCSV {
			if i := bytes.IndexByte(out, '\n'); i >= 0 {
				// Every page after the first drops WriteRows' header line (the
				// column names, which hold no quotes or newlines).
				out = out[i+1:]
			}
		}
		if _, err := w.Write(out); err != nil {
			return
		}
		if last {
			return
		}
		f.Cursor = p.NextCursor
	}
}

// jsonPart turns one page's JSON array into its part of the whole file's
// array: the first page keeps its "[", the last its "]", and pages are
// joined by a comma (an empty page adds nothing).
func jsonPart(page []byte, first, last bool) []byte {
	page = bytes.TrimSpace(page)
	inner := bytes.TrimSpace(page[1 : len(page)-1])
	var out []byte
	if first {
		out = append(out, '[')
	}
	if len(inner) > 0 {
		if !first {
			out = append(out, ',')
		}
		out = append(out, '\n')
		out = append(out, inner...)
	}
	if last {
		out = append(out, "\n]\n"...)
	}
	return out
}

// maxScanRows bounds the search for a row opened without its ts (links from
// the list carry it, so this is only for hand-typed addresses).
const maxScanRows = 20 * requestlog.MaxLimit

// findRow finds a request's row within the viewer's scope: by its exact
// millisecond when ts is given, else among the newest maxScanRows rows.
func (h *handler) findRow(ctx context.Context, id, ts string, v *viewer) (*requestlog.Row, error) {
	f := requestlog.Filter{Limit: requestlog.MaxLimit}
	if !v.Admin {
		f.Org, f.Team = v.Org, v.Team
	}
	if ts != "" {
		ms, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			return nil, nil
		}
		f.From, f.To = time.UnixMilli(ms), time.UnixMilli(ms+1)
	}
	for seen := 0; seen < maxScanRows; {
		p, err := h.opts.Store.Query(ctx, f)
		if err != nil {
			return nil, err
		}
		for i := range p.Rows {
			if p.Rows[i].RequestID == id {
				return &p.Rows[i], nil
			}
		}
		seen += len(p.Rows)
		if p.NextCursor == "" {
			break
		}
		f.Cursor = p.NextCursor
	}
	return nil, nil
}

type field struct{ Name, Value string }

type compiledRow struct {
	snapshot.CompiledView
	RefusedCode, RefusedMessage string
}

type provenanceRow struct{ Field, Rung, File string }

type detailData struct {
	base
	Row      requestlog.Row
	Fields   []field
	Revision string
	// RevisionChanged: the row records the revision that served it, and the
	// configuration serving now is another.
	RevisionChanged bool
	KeyMissing      bool
	NoModel         bool
	ExplainErr      string
	Explain         *snapshot.Explanation
	Compiled        []compiledRow
	Provenance      []provenanceRow
	BackLink        string
	// SessionLink lists the row's session's turns ("" without a session).
	SessionLink string
	// Story tells the request in a few sentences, before the raw columns.
	Story []string
	// Replayed: the re-run replays the request's own routing object.
	// RoutingLost: the request carried one and the row does not keep it,
	// so the re-run cannot replay it.
	Replayed, RoutingLost bool
}

func (h *handler) detail(w http.ResponseWriter, r *http.Request, v *viewer) {
	id := r.PathValue("id")
	row, err := h.findRow(r.Context(), id, r.URL.Query().Get("ts"), v)
	if err != nil {
		h.storeFailed(w, r, v, err)
		return
	}
	if row == nil {
		h.errorPage(w, r, v, http.StatusNotFound, "No request "+id+" in the request log you can read.")
		return
	}
	d := detailData{base: base{Title: "Request " + row.RequestID, Nav: "rows", Viewer: v}, Row: *row,
		Fields: rowFields(*row), BackLink: "/ui/rows", SessionLink: sessionLink(*row)}
	snap := h.opts.Snapshot()
	d.Revision = snap.Revision
	d.RevisionChanged = row.ConfigRevision != "" && row.ConfigRevision != snap.Revision
	key := snap.Config.KeyByID(row.KeyID)
	switch {
	case key == nil:
		d.KeyMissing = true
	case row.DecidedModel == "":
		d.NoModel = true
	default:
		d.Replayed = row.RoutingObject != ""
		d.RoutingLost = row.RequestRouting && row.RoutingObject == ""
		e, err := explainRow(r.Context(), snap, key, row.DecidedModel, row.RoutingObject)
		if err != nil {
			d.ExplainErr = err.Error()
			break
		}
		d.Explain = e
		for _, c := range e.Compiled {
			cr := compiledRow{CompiledView: c}
			if c.Refused != nil {
				cr.RefusedCode, cr.RefusedMessage = c.Refused.Code, c.Refused.Message
			}
			d.Compiled = append(d.Compiled, cr)
		}
		for _, k := range sortedKeys(e.Provenance) {
			d.Provenance = append(d.Provenance, provenanceRow{Field: k, Rung: e.Provenance[k], File: e.Sources[k]})
		}
	}
	d.Story = story(*row, d.Explain, !d.RevisionChanged)
	h.render(w, http.StatusOK, "detail", d)
}

// explainRow re-runs the compile of a recorded request on the current
// configuration: the row's key and decided model, and the request's own
// routing object when the row keeps it (routing, "" for none; the rest of
// the body is not kept).
func explainRow(ctx context.Context, snap *snapshot.Snapshot, key *profiles.Key, model, routing string) (*snapshot.Explanation, error) {
	if routing == "" {
		e, err := snap.ExplainModel(ctx, key, model)
		if err != nil {
			return nil, fmt.Errorf("explain %s for key %s: %w", model, key.ID, err)
		}
		return e, nil
	}
	rt, diags := profiles.ParseRouting(json.RawMessage(routing))
	if len(diags) > 0 {
		return nil, fmt.Errorf("the recorded routing object no longer parses: %s", diags[0].Message)
	}
	model = strings.ToLower(strings.TrimSpace(model))
	e, err := snap.Explain(ctx, key, &compiler.Request{Model: model, Routing: rt}, snapshot.ModelBody(model), "")
	if err != nil {
		return nil, fmt.Errorf("explain %s for key %s with its routing object: %w", model, key.ID, err)
	}
	return e, nil
}

// rowFields lists every recorded column of the row with its value, in the
// CSV export's order and formatting.
func rowFields(r requestlog.Row) []field {
	var buf bytes.Buffer
	if err := requestlog.WriteRows(&buf, []requestlog.Row{r}, requestlog.FormatCSV); err != nil {
		return nil
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(recs) != 2 || len(recs[0]) != len(recs[1]) {
		return nil
	}
	out := make([]field, len(recs[0]))
	for i := range recs[0] {
		out[i] = field{recs[0][i], recs[1][i]}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
