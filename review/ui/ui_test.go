package ui_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/store/requestlog"
)

func TestNoSessionRedirectsToLogin(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	for _, path := range []string{"/ui/", "/ui/rows", "/ui/rows.csv", "/ui/rows/req-ml-00", "/ui/rows?degraded=true"} {
		p := b.get(path)
		require.Equal(t, http.StatusSeeOther, p.status, path)
		require.Equal(t, "/ui/login", p.header.Get("Location"), path)
		require.NotContains(t, p.body, "req-ml-00", path)
	}
	p := b.get("/ui")
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/ui/", p.header.Get("Location"))
	p = b.do(http.MethodPost, "/ui/logout", url.Values{"csrf": {"x"}})
	require.Equal(t, http.StatusUnauthorized, p.status)
	// A made-up session cookie is no session either.
	u, _ := url.Parse(e.ts.URL + "/ui/")
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: "sluice_ui", Value: "forged", Path: "/ui"}})
	p = b.get("/ui/")
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/ui/login", p.header.Get("Location"))
}

func TestLoginRefusals(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, token string
		status      int
		message     string
	}{
		{"wrong token", "not-a-token", http.StatusUnauthorized, "Unknown token"},
		{"empty token", "", http.StatusUnauthorized, "Unknown token"},
		{"plain key", secretPlainKey, http.StatusForbidden, "no analyst role"},
		{"admin token with a suffix", adminToken + "x", http.StatusUnauthorized, "Unknown token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := e.browser()
			p := b.login(tc.token)
			require.Equal(t, tc.status, p.status)
			require.Contains(t, p.body, tc.message)
			require.Contains(t, p.body, `id="login-form"`, "the login page again")
			u, _ := url.Parse(e.ts.URL + "/ui/")
			for _, c := range b.c.Jar.Cookies(u) {
				require.NotEqual(t, "sluice_ui", c.Name, "no session after a refused login")
			}
			require.Equal(t, http.StatusSeeOther, b.get("/ui/").status)
		})
	}
}

func TestLoginCSRF(t *testing.T) {
	e := newEnv(t)
	// No login cookie and no field.
	b := e.browser()
	p := b.do(http.MethodPost, "/ui/login", url.Values{"token": {adminToken}})
	require.Equal(t, http.StatusForbidden, p.status)
	require.Contains(t, p.body, "expired")
	// The cookie from the form, but another token in the field.
	b = e.browser()
	require.Equal(t, http.StatusOK, b.get("/ui/login").status)
	p = b.do(http.MethodPost, "/ui/login", url.Values{"token": {adminToken}, "csrf": {"guessed"}})
	require.Equal(t, http.StatusForbidden, p.status)
	require.Equal(t, http.StatusSeeOther, b.get("/ui/").status, "still logged out")
}

func TestAdminLoginSessionCookieAndHeaders(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	form := b.get("/ui/login")
	p := b.do(http.MethodPost, "/ui/login", url.Values{"csrf": {csrfOf(t, form)}, "token": {adminToken}})
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/ui/", p.header.Get("Location"))
	var sess *http.Cookie
	for _, c := range (&http.Response{Header: p.header}).Cookies() {
		if c.Name == "sluice_ui" {
			sess = c
		}
	}
	require.NotNil(t, sess, "session cookie set")
	require.True(t, sess.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, sess.SameSite)
	require.Equal(t, "/ui", sess.Path)
	require.NotContains(t, sess.Value, adminToken)
	require.GreaterOrEqual(t, len(sess.Value), 40, "an opaque random id")
	require.NotContains(t, p.header.Get("Location"), adminToken)

	ov := b.get("/ui/")
	require.Equal(t, http.StatusOK, ov.status)
	require.Contains(t, ov.body, `id="who">admin<`)
	for name, want := range map[string]string{
		"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
	} {
		require.Equal(t, want, ov.header.Get(name), name)
	}
	csp := ov.header.Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'none'")
	require.Contains(t, csp, "style-src 'self'")
	require.Contains(t, csp, "frame-ancestors 'none'")
	require.NotContains(t, csp, "unsafe")
	require.NotContains(t, ov.body, "<script", "the pages run no script")
	require.NotContains(t, ov.body, "http://", "no external resources")
	require.NotContains(t, ov.body, adminToken)
	// The login page of a logged-in browser goes to the overview.
	require.Equal(t, http.StatusSeeOther, b.get("/ui/login").status)

	css := b.get("/ui/static/ui.css")
	require.Equal(t, http.StatusOK, css.status)
	require.Contains(t, css.header.Get("Content-Type"), "text/css")
	require.Contains(t, css.body, ".m-degraded")
	require.Equal(t, http.StatusNotFound, b.get("/ui/nope").status)
}

var summaryRowRE = regexp.MustCompile(`(?s)<tr>\s*<td>(\d{4}-\d\d-\d\d)</td><td>([^<]*)</td><td class="num">(\d+)</td>\s*<td class="num">(\d+) <span class="pct">[^<]*</span></td>\s*<td class="num">(\d+) <span class="pct">[^<]*</span></td>\s*<td class="num">(\d+) <span class="pct">[^<]*</span></td>\s*<td class="num">(\d+) <span class="pct">[^<]*</span></td>\s*<td class="num">(\d+) <span class="pct">[^<]*</span></td>\s*<td class="num">(\d+) <span class="pct">[^<]*</span></td>\s*<td class="num outside">(\d+) <span`)

// overviewTable reads the overview table as "day team total degraded
// refused switched fellback" lines.
func overviewTable(body string) []string {
	var out []string
	for _, m := range summaryRowRE.FindAllStringSubmatch(body, -1) {
		out = append(out, strings.Join(m[1:], " "))
	}
	return out
}

func expectedTable(rows []requestlog.Row) []string {
	var out []string
	for _, d := range requestlog.SummarizeRows(rows, requestlog.BucketDay) {
		out = append(out, fmt.Sprintf("%s %s %d %d %d %d %d %d %d %d", d.Day.Format(time.DateOnly), d.Team, d.Total, d.Degraded, d.Refused, d.Switched, d.FellBack,
			d.FirstPreferred, d.OtherPreferred, d.OutsidePreference))
	}
	return out
}

func TestOverviewAdminAndAnalyst(t *testing.T) {
	e := newEnv(t)
	admin := e.browser()
	admin.mustLogin(adminToken)
	p := admin.get("/ui/")
	require.Equal(t, http.StatusOK, p.status)
	want := expectedTable(e.rows)
	require.Len(t, want, 9, "three teams on three days")
	require.Equal(t, want, overviewTable(p.body))
	require.Equal(t, 3, strings.Count(p.body, "<figure class=\"chart\""), "one chart per team")
	require.Contains(t, p.body, "<svg")
	require.Contains(t, p.body, `class="bar m-refused"`)

	an := e.browser()
	an.mustLogin(secretAnalyst)
	p = an.get("/ui/")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "analyst k-analyst (team ml)")
	var ml []requestlog.Row
	for _, r := range e.rows {
		if r.Team == "ml" {
			ml = append(ml, r)
		}
	}
	require.Equal(t, expectedTable(ml), overviewTable(p.body))
	require.Equal(t, 1, strings.Count(p.body, "<figure class=\"chart\""))
	require.NotContains(t, p.body, "research")
	require.NotContains(t, p.body, "finance")
	require.Equal(t, http.StatusForbidden, an.get("/ui/?team=research").status)
	require.Equal(t, http.StatusBadRequest, an.get("/ui/?from=yesterday").status)
}

func TestRowsFilterPaginationAndScope(t *testing.T) {
	e := newEnv(t)
	admin := e.browser()
	admin.mustLogin(adminToken)

	p := admin.get("/ui/rows")
	require.Equal(t, http.StatusOK, p.status)
	require.Equal(t, idsOf(e.matching(func(requestlog.Row) bool { return true })), rowIDs(p.body))
	require.Len(t, rowIDs(p.body), len(e.rows))

	degraded := idsOf(e.matching(func(r requestlog.Row) bool { return len(r.RoutingDegraded) > 0 }))
	p = admin.get("/ui/rows?degraded=true")
	require.Equal(t, degraded, rowIDs(p.body))
	require.NotEmpty(t, degraded)
	require.Contains(t, p.body, `<a class="label degraded" href="/ui/glossary#degraded-ranking"><abbr title="degraded: The provider ranking`, "a badge explains itself and links to the glossary")

	// The data-policy filter: only rows a zero-retention restriction bound,
	// each labelled with how it was held.
	zdr := idsOf(e.matching(func(r requestlog.Row) bool { return r.DataPolicy == "zero_retention" }))
	require.NotEmpty(t, zdr)
	p = admin.get("/ui/rows?data_policy=zero_retention")
	require.Equal(t, zdr, rowIDs(p.body))
	require.Contains(t, p.body, `<a class="label data" href="/ui/glossary#data"><abbr title="zero_retention=native">zero_retention</abbr></a>`)
	require.Contains(t, p.body, `<option value="zero_retention" selected>`)
	p = admin.get("/ui/rows?data_policy=none")
	require.Len(t, rowIDs(p.body), len(e.rows)-len(zdr))
	require.Equal(t, http.StatusBadRequest, admin.get("/ui/rows?data_policy=zdr").status)

	switched := e.matching(func(r requestlog.Row) bool { return r.ServedModel != "" && r.ServedModel != r.DecidedModel })
	p = admin.get("/ui/rows?switched=true&team=ml")
	var want []string
	for _, r := range switched {
		if r.Team == "ml" {
			want = append(want, r.RequestID)
		}
	}
	require.NotEmpty(t, want)
	require.Equal(t, want, rowIDs(p.body))
	require.Contains(t, p.body, `<strong>anthropic/claude-sonnet-4.5</strong>`)
	require.Contains(t, p.body, `<abbr title="fell back: The gateway sent the request on to another target after a failure; the badge names the failure (a status class, a timeout, a connection error).">throttled</abbr>`)

	// Pages of 4 with the cursor: every row once, newest first.
	all := idsOf(e.matching(func(requestlog.Row) bool { return true }))
	var paged []string
	next := "/ui/rows?limit=4"
	linkRE := regexp.MustCompile(`<a href="([^"]+)" id="next-page">`)
	for range 20 {
		p = admin.get(next)
		require.Equal(t, http.StatusOK, p.status)
		ids := rowIDs(p.body)
		require.LessOrEqual(t, len(ids), 4)
		paged = append(paged, ids...)
		m := linkRE.FindStringSubmatch(p.body)
		if m == nil {
			break
		}
		next = strings.ReplaceAll(m[1], "&amp;", "&")
	}
	require.Equal(t, all, paged)
	require.Equal(t, http.StatusBadRequest, admin.get("/ui/rows?cursor=garbage").status)
	require.Equal(t, http.StatusBadRequest, admin.get("/ui/rows?refused=maybe").status)

	an := e.browser()
	an.mustLogin(secretAnalyst)
	p = an.get("/ui/rows")
	ml := idsOf(e.matching(func(r requestlog.Row) bool { return r.Team == "ml" }))
	require.Equal(t, ml, rowIDs(p.body))
	require.Contains(t, p.body, `name="team" value="ml" readonly`)
	p = an.get("/ui/rows?team=research")
	require.Equal(t, http.StatusForbidden, p.status)
	require.NotContains(t, p.body, "req-research")
	require.Equal(t, http.StatusForbidden, an.get("/ui/rows.csv?team=finance").status)
}

func TestCSVExportEqualsFilteredRows(t *testing.T) {
	e := newEnv(t)
	// More rows than one store page, so the export must follow the cursor.
	extra := make([]requestlog.Row, 0, requestlog.MaxLimit+150)
	for i := range requestlog.MaxLimit + 150 {
		extra = append(extra, requestlog.Row{
			TS: e.now.Add(-time.Duration(i) * time.Second), RequestID: fmt.Sprintf("bulk-%05d", i),
			Org: "acme", Team: []string{"ml", "research"}[i%2], KeyID: "k-chat", DecidedModel: "openai/gpt-4o",
			ServedModel: "openai/gpt-4o", RoutingDegraded: []string{"ranking", "chain"}[i%2:], Status: 200,
		})
	}
	e.insert(extra)
	admin := e.browser()
	admin.mustLogin(adminToken)
	check := func(b *browser, query string, keep func(requestlog.Row) bool) {
		t.Helper()
		p := b.get("/ui/rows.csv?" + query)
		require.Equal(t, http.StatusOK, p.status, p.body)
		require.Equal(t, "text/csv; charset=utf-8", p.header.Get("Content-Type"))
		require.Contains(t, p.header.Get("Content-Disposition"), "attachment")
		want := e.matching(keep)
		var buf bytes.Buffer
		require.NoError(t, requestlog.WriteRows(&buf, want, requestlog.FormatCSV))
		require.Equal(t, buf.String(), p.body, query)
		require.Equal(t, len(want)+1, strings.Count(p.body, "\n"), "one header line, then the rows")
	}
	check(admin, "degraded=true", func(r requestlog.Row) bool { return len(r.RoutingDegraded) > 0 })
	check(admin, "", func(requestlog.Row) bool { return true })
	check(admin, "team=finance&refused=true", func(r requestlog.Row) bool { return r.Team == "finance" && r.RefusedCode != "" })
	an := e.browser()
	an.mustLogin(secretAnalyst)
	check(an, "degraded=true", func(r requestlog.Row) bool { return r.Team == "ml" && len(r.RoutingDegraded) > 0 })
}

func TestRowDetail(t *testing.T) {
	e := newEnv(t)
	admin := e.browser()
	admin.mustLogin(adminToken)
	row := e.rows[3] // ml, switched, fell back
	require.Equal(t, "ml", row.Team)
	link := fmt.Sprintf("/ui/rows/%s?ts=%d", row.RequestID, row.TS.UnixMilli())
	p := admin.get("/ui/rows")
	require.Contains(t, p.body, strings.ReplaceAll(link, "&", "&amp;"), "the list links to the detail with its ts")

	for _, path := range []string{link, "/ui/rows/" + row.RequestID} {
		p = admin.get(path)
		require.Equal(t, http.StatusOK, p.status, path)
		require.Contains(t, p.body, `<code id="detail-id">`+row.RequestID+`</code>`)
		for _, f := range []string{"ts", "key_id", "decided_model", "served_model", "routing_switch_reason", "fallback_reason", "routing_degraded", "cost_usd", "ttft_ms", "served_region"} {
			require.Contains(t, p.body, `data-field="`+f+`"`, f)
		}
		require.Contains(t, p.body, `<td data-field="fallback_reason">throttled</td>`)
		require.Contains(t, p.body, `<td data-field="served_region">swedencentral</td>`)
		require.Contains(t, p.body, "Current configuration (revision")
		require.Contains(t, p.body, "not historical")
		require.Contains(t, p.body, `<code id="explain-decided">openai/gpt-4o</code>`)
		names := e.srv.Snapshot().UpstreamNames()
		require.Len(t, regexp.MustCompile(`<tr data-upstream="`).FindAllString(p.body, -1), len(names), "one compiled row per upstream")
		for _, n := range names {
			require.Contains(t, p.body, `<tr data-upstream="`+n+`">`)
		}
		require.Regexp(t, `(?s)<table class="data" id="provenance">.*<tbody>\s*<tr><td>`, p.body, "a provenance row")
	}

	p = admin.get("/ui/rows/req-ml-gone")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `id="key-missing"`)
	require.Contains(t, p.body, "k-removed")

	require.Equal(t, http.StatusNotFound, admin.get("/ui/rows/no-such-request").status)
	require.Equal(t, http.StatusNotFound, admin.get(fmt.Sprintf("/ui/rows/%s?ts=%d", row.RequestID, row.TS.UnixMilli()+1)).status, "the wrong ts finds nothing")

	an := e.browser()
	an.mustLogin(secretAnalyst)
	require.Equal(t, http.StatusOK, an.get(link).status, "own team's row")
	other := e.rows[1]
	require.Equal(t, "research", other.Team)
	for _, path := range []string{
		"/ui/rows/" + other.RequestID,
		fmt.Sprintf("/ui/rows/%s?ts=%d", other.RequestID, other.TS.UnixMilli()),
	} {
		p = an.get(path)
		require.Equal(t, http.StatusNotFound, p.status, path)
		require.NotContains(t, p.body, "notebooks")
	}
}

func TestLogoutNeedsCSRFAndEndsSession(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	b.mustLogin(adminToken)
	ov := b.get("/ui/")
	tok := csrfOf(t, ov)
	require.Equal(t, http.StatusForbidden, b.do(http.MethodPost, "/ui/logout", url.Values{}).status)
	require.Equal(t, http.StatusForbidden, b.do(http.MethodPost, "/ui/logout", url.Values{"csrf": {"wrong"}}).status)
	require.Equal(t, http.StatusOK, b.get("/ui/").status, "a refused logout keeps the session")

	// The session id itself, replayed after logout, is dead server-side.
	u, _ := url.Parse(e.ts.URL + "/ui/")
	var sid string
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "sluice_ui" {
			sid = c.Value
		}
	}
	require.NotEmpty(t, sid)
	p := b.do(http.MethodPost, "/ui/logout", url.Values{"csrf": {tok}})
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/ui/login", p.header.Get("Location"))
	require.Equal(t, http.StatusSeeOther, b.get("/ui/").status)
	replay := e.browser()
	replay.c.Jar.SetCookies(u, []*http.Cookie{{Name: "sluice_ui", Value: sid, Path: "/ui"}})
	require.Equal(t, http.StatusSeeOther, replay.get("/ui/rows").status)

	// Another browser's session token does not log this one out.
	b2 := e.browser()
	b2.mustLogin(secretAnalyst)
	b3 := e.browser()
	b3.mustLogin(adminToken)
	other := csrfOf(t, b3.get("/ui/"))
	require.Equal(t, http.StatusForbidden, b2.do(http.MethodPost, "/ui/logout", url.Values{"csrf": {other}}).status)
	require.Equal(t, http.StatusOK, b2.get("/ui/").status)
	require.True(t, slices.Contains([]int{http.StatusOK}, b3.get("/ui/").status))
}

func TestSessionEndsWhenKeyLosesAnalystRole(t *testing.T) {
	e := newEnv(t)
	an := e.browser()
	an.mustLogin(secretAnalyst)
	require.Equal(t, http.StatusOK, an.get("/ui/rows").status)

	p := filepath.Join(e.dir, "sluice.toml")
	raw, err := os.ReadFile(p)
	require.NoError(t, err)
	const role = "project = \"dashboards\"\nroles = [\"analyst\"]\n"
	require.Contains(t, string(raw), role)
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(raw), role, "project = \"dashboards\"\n", 1)), 0o644))
	require.Empty(t, e.srv.Reload())

	res := an.get("/ui/rows")
	require.Equal(t, http.StatusSeeOther, res.status, "the reloaded configuration ends the session")
	require.Equal(t, "/ui/login", res.header.Get("Location"))
	require.Equal(t, http.StatusForbidden, e.browser().login(secretAnalyst).status, "and the key cannot log in again")
}

// TestRequestLogOff: with the request log off every page that reads rows
// says so with 404, instead of reporting a failing store.
func TestRequestLogOff(t *testing.T) {
	e := newEnvStore(t, requestlog.Off())
	admin := e.browser()
	admin.mustLogin(adminToken)
	for _, path := range []string{"/ui/", "/ui/rows", "/ui/rows.csv", "/ui/whatif?dir=" + url.QueryEscape(e.dir)} {
		p := admin.get(path)
		require.Equal(t, http.StatusNotFound, p.status, path)
		require.Contains(t, p.body, "The request log is off", path)
	}
}

// TestWhatIf: the admin points the what-if view at a directory whose
// guardrail forbids the ml team's model; the page weighs the change by the
// seeded rows, as sluice diff --traffic does. Analysts cannot use it, and a
// directory that is relative or does not load is refused with the reason.
func TestWhatIf(t *testing.T) {
	e := newEnv(t)
	head := t.TempDir()
	require.NoError(t, os.CopyFS(head, sluice.DemoConfig()))
	require.NoError(t, os.WriteFile(filepath.Join(head, "guardrails", "whatif.rego"), []byte(
		"package sluice.guardrails\n\ndeny_models contains \"openai/gpt-4o\" if input.principal.team == \"ml\"\n"), 0o644))
	broken := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(broken, "sluice.toml"), []byte("[[keys]\n"), 0o644))
	window := url.Values{"from": {e.now.AddDate(0, 0, -6).Format(time.DateOnly)}, "to": {e.now.Format(time.DateOnly)}}
	link := func(dir string, extra ...string) string {
		q := url.Values{"dir": {dir}, "from": window["from"], "to": window["to"]}
		for i := 0; i+1 < len(extra); i += 2 {
			q.Set(extra[i], extra[i+1])
		}
		return "/ui/whatif?" + q.Encode()
	}

	analyst := e.browser()
	analyst.mustLogin(secretAnalyst)
	p := analyst.get("/ui/")
	require.NotContains(t, p.body, `id="nav-whatif"`)
	p = analyst.get(link(head))
	require.Equal(t, http.StatusForbidden, p.status)
	require.NotContains(t, p.body, "whatif-result")

	admin := e.browser()
	admin.mustLogin(adminToken)
	p = admin.get("/ui/whatif")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `id="nav-whatif" class="current"`)
	require.Contains(t, p.body, `id="whatif-form"`)
	require.NotContains(t, p.body, "whatif-result")

	// Ten seeded requests of k-chat (team ml) asked for openai/gpt-4o.
	want := len(e.matching(func(r requestlog.Row) bool { return r.KeyID == "k-chat" && r.DecidedModel == "openai/gpt-4o" }))
	require.Equal(t, 10, want)
	p = admin.get(link(head))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<tr class="impact refused" data-effect="refused" data-key="k-chat" data-model="openai/gpt-4o"><td class="num">10</td>`)
	require.Contains(t, p.body, `<tr data-team="ml"><td>ml</td><td class="num">10</td>`)
	require.Contains(t, p.body, "would refuse 10 requests")
	require.Contains(t, p.body, "31 requests recorded", "every seeded row of the window, the removed key's too")
	require.NotContains(t, p.body, `data-key="k-research"`)

	// Another team's traffic only: the change weighs nothing.
	p = admin.get(link(head, "team", "research"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "10 requests recorded, <strong>0</strong> on changed combinations")

	for _, tc := range []struct {
		name, path string
		status     int
		want       string
	}{
		{"relative directory", link("testdata/demo"), http.StatusBadRequest, "must be an absolute path"},
		{"directory that does not load", link(broken), http.StatusUnprocessableEntity, "sluice.toml:1"},
		{"missing directory", link(filepath.Join(head, "nope")), http.StatusUnprocessableEntity, "read_error"},
		{"bad window", link(head, "from", "yesterday"), http.StatusBadRequest, "Invalid window"},
		{"reversed window", link(head, "from", e.now.Format(time.DateOnly), "to", e.now.AddDate(0, 0, -3).Format(time.DateOnly)), http.StatusBadRequest, "from must be before to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := admin.get(tc.path)
			require.Equal(t, tc.status, p.status, p.body)
			require.Contains(t, p.body, tc.want)
			require.NotContains(t, p.body, "whatif-result")
		})
	}
}

// TestRowDetailSaysWhenTheRevisionChanged: a row records the configuration
// revision that served it, and its page says whether the explain re-run
// compiles on the same one.
func TestRowDetailSaysWhenTheRevisionChanged(t *testing.T) {
	e := newEnv(t)
	current := e.srv.Snapshot().Revision
	base := e.rows[0]
	for _, tc := range []struct {
		id, revision, want, notWant string
	}{
		{"req-rev-old", "0123456789abcdef", `id="revision-changed"`, `id="revision-same"`},
		{"req-rev-same", current, `id="revision-same"`, `id="revision-changed"`},
		{"req-rev-none", "", "", `id="revision-`},
	} {
		r := base
		r.RequestID, r.ConfigRevision = tc.id, tc.revision
		e.insert([]requestlog.Row{r})
		admin := e.browser()
		admin.mustLogin(adminToken)
		p := admin.get("/ui/rows/" + tc.id)
		require.Equal(t, http.StatusOK, p.status, tc.id)
		if tc.want != "" {
			require.Contains(t, p.body, tc.want, tc.id)
		}
		require.NotContains(t, p.body, tc.notWant, tc.id)
		if tc.revision != "" {
			require.Contains(t, p.body, `<td data-field="config_revision">`+tc.revision+`</td>`)
		}
	}
}

// TestRowsOfOneSession: the rows page filters by session, each row of a
// session links to its session's turns, and the detail page links there
// too, so a reviewer reads one session's turns together — the models
// served, the representation breaks, the cost.
func TestRowsOfOneSession(t *testing.T) {
	e := newEnv(t)
	admin := e.browser()
	admin.mustLogin(adminToken)
	turns := e.matching(func(r requestlog.Row) bool { return r.SessionID == "sess-ml-agent" })
	require.Len(t, turns, 5)
	sessionURL := "/ui/rows?session=sess-ml-agent"

	p := admin.get(sessionURL)
	require.Equal(t, http.StatusOK, p.status)
	require.Equal(t, idsOf(turns), rowIDs(p.body))
	require.Contains(t, p.body, `name="session" value="sess-ml-agent" id="f-session"`, "the form keeps the filter")
	require.Contains(t, p.body, `>representation break</abbr></a>`, "turn 3 switched model")
	require.Contains(t, p.body, `<strong>anthropic/claude-sonnet-4.5</strong>`)
	require.Contains(t, p.body, `<td class="num cost">0.0012 <a class="label cache"`)
	require.Equal(t, len(turns), strings.Count(p.body, `<a href="`+sessionURL+`" class="session">sess-ml-agent</a>`), "each turn links to its session")
	require.Equal(t, http.StatusOK, admin.get(sessionURL+"&team=research").status)
	require.Empty(t, rowIDs(admin.get(sessionURL+"&team=research").body), "the session is the ml team's")

	link := func(r requestlog.Row) string { return fmt.Sprintf("/ui/rows/%s?ts=%d", r.RequestID, r.TS.UnixMilli()) }
	d := admin.get(link(turns[0]))
	require.Equal(t, http.StatusOK, d.status)
	require.Contains(t, d.body, `<p id="session-link">Turn of session <code>sess-ml-agent</code> (named in x-claude-code-session-id): <a href="`+sessionURL+`">`)
	require.Contains(t, d.body, `<td data-field="session_key">x-claude-code-session-id</td>`)
	require.Contains(t, d.body, `<td data-field="session_affinity">pin</td>`)
	noSession := e.matching(func(r requestlog.Row) bool { return r.SessionID == "" && r.KeyID == "k-research" })[0]
	require.NotContains(t, admin.get(link(noSession)).body, `id="session-link"`)

	// The CSV export of a session is its turns.
	c := admin.get("/ui/rows.csv?session=sess-ml-agent")
	require.Equal(t, http.StatusOK, c.status)
	require.Equal(t, len(turns)+1, strings.Count(c.body, "\n"))
}
