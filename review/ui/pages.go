package ui

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

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

// readFilter parses and scopes the request's filter, answering the error page
// itself when it cannot.
func (h *handler) readFilter(w http.ResponseWriter, r *http.Request, v *viewer) (requestlog.Filter, filterForm, bool) {
	f, ff, bad := parseFilter(r.URL.Query())
	if bad != "" {
		h.errorPage(w, r, v, http.StatusBadRequest, "Invalid filter: "+bad+".")
		return f, ff, false
	}
	if !scope(&f, &ff, v) {
		h.errorPage(w, r, v, http.StatusForbidden, "An analyst key reads only its own team's rows (team "+v.Team+").")
		return f, ff, false
	}
	return f, ff, true
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
	// DataPolicies are the data_policy filter's choices.
	DataPolicies []string
	TeamLocked   bool
	Rows         []summaryRow
	Charts       []chart
	Metrics      []metric
	RowsLink     string
}

func (h *handler) overview(w http.ResponseWriter, r *http.Request, v *viewer) {
	q := r.URL.Query()
	if q.Get("from") == "" && q.Get("to") == "" {
		q.Set("from", h.opts.Now().UTC().AddDate(0, 0, 1-overviewDays).Format(time.DateOnly))
	}
	r.URL.RawQuery = q.Encode()
	f, ff, ok := h.readFilter(w, r, v)
	if !ok {
		return
	}
	sums, err := requestlog.Summarize(r.Context(), h.opts.Store, f)
	if err != nil {
		h.storeFailed(w, r, v, err)
		return
	}
	rows, charts := buildOverview(sums)
	rowsQ := ff.query()
	rowsQ.Del("limit")
	h.render(w, http.StatusOK, "overview", overviewData{
		base: base{Title: "Overview", Nav: "overview", Viewer: v}, Form: ff, TeamLocked: !v.Admin,
		Rows: rows, Charts: charts, Metrics: metrics, RowsLink: "/ui/rows?" + rowsQ.Encode(),
	})
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
	// DataPolicies are the data_policy filter's choices.
	DataPolicies []string
	TeamLocked   bool
	Rows         []rowView
	NextLink     string
	FirstLink    string
	CSVLink      string
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
	f, ff, ok := h.readFilter(w, r, v)
	if !ok {
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
	d := rowsData{base: base{Title: "Rows", Nav: "rows", Viewer: v}, Form: ff, DataPolicies: requestlog.DataPolicyValues, TeamLocked: !v.Admin, Paged: f.Cursor != ""}
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
	h.render(w, http.StatusOK, "rows", d)
}

// rowsCSV exports every row of the filter (all pages, newest first) as
// requestlog.WriteRows' CSV: one header line, then the rows.
func (h *handler) rowsCSV(w http.ResponseWriter, r *http.Request, v *viewer) {
	f, _, ok := h.readFilter(w, r, v)
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
			h.log.Error("ui: csv export failed mid-way", "err", err)
			panic(http.ErrAbortHandler)
		}
		buf.Reset()
		if err := requestlog.WriteRows(&buf, p.Rows, requestlog.FormatCSV); err != nil {
			h.log.Error("ui: csv export failed", "err", err)
			panic(http.ErrAbortHandler)
		}
		out := buf.Bytes()
		if pageNo == 0 {
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
			w.Header().Set("Content-Disposition", `attachment; filename="sluice-rows-`+h.opts.Now().UTC().Format("20060102T150405Z")+`.csv"`)
		} else if i := bytes.IndexByte(out, '\n'); i >= 0 {
			// Every page after the first drops WriteRows' header line (the
			// column names, which hold no quotes or newlines).
			out = out[i+1:]
		}
		if _, err := w.Write(out); err != nil {
			return
		}
		if p.NextCursor == "" {
			return
		}
		f.Cursor = p.NextCursor
	}
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
		e, err := explainRow(r.Context(), snap, key, row.DecidedModel)
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
	h.render(w, http.StatusOK, "detail", d)
}

// explainRow re-runs the compile of a recorded request on the current
// configuration: the row's key and decided model, no routing object (the
// recorded request's body is not kept).
func explainRow(ctx context.Context, snap *snapshot.Snapshot, key *profiles.Key, model string) (*snapshot.Explanation, error) {
	e, err := snap.ExplainModel(ctx, key, model)
	if err != nil {
		return nil, fmt.Errorf("explain %s for key %s: %w", model, key.ID, err)
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
