package ui_test

import (
	"bytes"
	"context"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/store/requestlog"
)

var updateUI = flag.Bool("update-ui", false, "rewrite the screenshots under testdata/ui/")

// TestBrowser drives headless Chromium through the pages of a real gateway
// on loopback: log in through the form, read the overview, filter the rows,
// export the CSV, open a row, log out. It checks what the browser shows and
// keeps a screenshot of each page (testdata/ui/*.png with -update-ui).
func TestBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := newEnv(t)
	c := startChrome(t, ctx)

	shotDir := t.TempDir()
	if *updateUI {
		shotDir = filepath.Join("..", "..", "testdata", "ui")
		require.NoError(t, os.MkdirAll(shotDir, 0o755))
	}
	shoot := func(name string) {
		t.Helper()
		b := c.screenshot()
		img, err := png.Decode(bytes.NewReader(b))
		require.NoError(t, err, "%s is a PNG", name)
		require.Equal(t, 1280, img.Bounds().Dx(), name)
		require.Greater(t, img.Bounds().Dy(), 500, name)
		require.NoError(t, os.WriteFile(filepath.Join(shotDir, name+".png"), b, 0o644))
	}

	// No session: the overview sends the browser to the login form.
	c.navigate(e.ts.URL + "/ui/")
	c.waitFor(`location.pathname === "/ui/login"`)
	require.Equal(t, "Log in", c.text("h1"))

	// A wrong token: the form again, with the error.
	c.typeInto("#token", "not-the-token")
	c.clickAndWait("#login-submit")
	require.Contains(t, c.text("#login-error"), "Unknown token")
	shoot("login")

	// The admin token.
	c.typeInto("#token", adminToken)
	c.clickAndWait("#login-submit")
	var path string
	c.mustEval(`location.pathname + location.search`, &path)
	require.Equal(t, "/ui/", path, "no token in the address")
	require.Equal(t, "admin", c.text("#who"))
	var cookies string
	c.mustEval(`document.cookie`, &cookies)
	require.NotContains(t, cookies, "sluice_ui", "the session cookie is HttpOnly")

	require.Equal(t, 3, c.count("figure.chart svg"), "a chart per team")
	require.Equal(t, 9, c.count("#summary tbody tr"), "three teams on three days")
	require.Equal(t, 3*3*5, c.count("figure.chart rect.bar"), "five bars per day and team")
	var teams []string
	c.mustEval(`[...document.querySelectorAll("figure.chart")].map(f => f.dataset.team)`, &teams)
	require.Equal(t, []string{"finance", "ml", "research"}, teams)
	var chartH float64
	c.mustEval(`document.querySelector("figure.chart svg").getBoundingClientRect().height`, &chartH)
	require.Greater(t, chartH, 100.0, "the SVG is laid out")
	var styled string
	c.mustEval(`getComputedStyle(document.querySelector("rect.m-refused")).fill`, &styled)
	require.Equal(t, "rgb(179, 38, 30)", styled, "the embedded stylesheet applies")
	want := expectedTable(e.rows)
	var table []string
	c.mustEval(`[...document.querySelectorAll("#summary tbody tr")].map(tr => [...tr.cells].map(td => td.firstChild.textContent.trim()).join(" "))`, &table)
	require.Equal(t, want, table)
	shoot("overview")

	// Rows: all of them, then only the degraded ones.
	c.clickAndWait("#nav-rows")
	require.Equal(t, len(e.rows), c.count("#rows tbody tr"))
	c.click("#f-degraded")
	c.clickAndWait("#rows-apply")
	var search string
	c.mustEval(`location.search`, &search)
	require.Contains(t, search, "degraded=true")
	degraded := e.matching(func(r requestlog.Row) bool { return len(r.RoutingDegraded) > 0 })
	require.NotEmpty(t, degraded)
	require.Equal(t, len(degraded), c.count("#rows tbody tr"))
	var shown []string
	c.mustEval(`[...document.querySelectorAll("#rows tbody tr a.rid")].map(a => a.textContent)`, &shown)
	require.Equal(t, idsOf(degraded), shown, "newest first")
	var allLabelled bool
	c.mustEval(`[...document.querySelectorAll("#rows tbody tr")].every(tr => tr.querySelector(".label.degraded")?.textContent === "ranking")`, &allLabelled)
	require.True(t, allLabelled, "every row shows its degraded label")
	shoot("rows")

	// At 1,280 px every column of the table is on screen: nothing cut off
	// at the right, the page does not scroll sideways.
	c.navigate(e.ts.URL + "/ui/rows")
	c.waitFor(`document.querySelector("#rows") !== null`)
	var fit struct {
		Viewport, Scroll, TableRight, LastRight float64
		Columns                                 int
	}
	c.mustEval(`(() => { const t = document.querySelector("#rows"); const th = [...t.querySelectorAll("thead th")];
		return {Viewport: document.documentElement.clientWidth, Scroll: document.documentElement.scrollWidth,
			TableRight: t.getBoundingClientRect().right, LastRight: th[th.length-1].getBoundingClientRect().right, Columns: th.length}; })()`, &fit)
	require.Equal(t, 1280.0, fit.Viewport+0, "the window is 1,280 px wide")
	require.LessOrEqual(t, fit.Scroll, fit.Viewport, "no sideways scroll")
	require.LessOrEqual(t, fit.TableRight, fit.Viewport)
	require.LessOrEqual(t, fit.LastRight, fit.Viewport, "the Status column is on screen")
	require.Equal(t, 9, fit.Columns)
	var status string
	c.mustEval(`document.querySelector("#rows thead th:last-child").textContent`, &status)
	require.Equal(t, "Status", status)

	// The "Last hour" preset: one click, the range is in the address and
	// in the form, and every row shown is of the last hour.
	c.clickAndWait(`#presets a[data-from="1h"]`)
	c.mustEval(`location.search`, &search)
	require.Equal(t, "?from=1h", search)
	var from string
	c.mustEval(`document.querySelector("#f-from").value`, &from)
	require.Equal(t, "1h", from)
	require.Equal(t, "Last hour", c.text("#presets a.current"))
	var times []string
	c.mustEval(`[...document.querySelectorAll("#rows tbody td.when")].map(td => td.textContent)`, &times)
	hourAgo := time.Now().UTC().Add(-time.Hour - time.Minute)
	for _, ts := range times {
		when, err := time.Parse("2006-01-02 15:04:05.000", ts)
		require.NoError(t, err)
		require.True(t, when.After(hourAgo), "%s is within the last hour", ts)
	}
	shoot("rows-last-hour")
	c.navigate(e.ts.URL + "/ui/rows?degraded=true")
	c.waitFor(`document.querySelector("#csv-export") !== null`)

	// CSV export of the current filter, through a real download.
	dl := t.TempDir()
	c.browserCall("Browser.setDownloadBehavior", map[string]any{"behavior": "allow", "downloadPath": dl, "eventsEnabled": true}, nil)
	c.click("#csv-export")
	var csvPath string
	deadline := time.Now().Add(20 * time.Second)
	for csvPath == "" && time.Now().Before(deadline) {
		matches, _ := filepath.Glob(filepath.Join(dl, "*.csv"))
		if len(matches) == 1 {
			csvPath = matches[0]
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NotEmpty(t, csvPath, "no CSV downloaded within 20s")
	require.True(t, strings.HasPrefix(filepath.Base(csvPath), "sluice-rows-"))
	got, err := os.ReadFile(csvPath)
	require.NoError(t, err)
	var wantCSV bytes.Buffer
	require.NoError(t, requestlog.WriteRows(&wantCSV, degraded, requestlog.FormatCSV))
	require.Equal(t, wantCSV.String(), string(got))

	// The newest degraded row's detail.
	c.clickAndWait("#rows tbody tr a.rid")
	require.Equal(t, degraded[0].RequestID, c.text("#detail-id"))
	require.Equal(t, degraded[0].Team, c.text(`td[data-field="team"]`))
	require.Equal(t, `["ranking"]`, c.text(`td[data-field="routing_degraded"]`))
	require.Contains(t, c.text("#explain-notice"), "not historical")
	require.Equal(t, "openai/gpt-4o", c.text("#explain-decided"))
	require.Equal(t, len(e.srv.Snapshot().UpstreamNames()), c.count("#compiled tbody tr"))
	require.Greater(t, c.count("#provenance tbody tr"), 0)
	shoot("detail")

	// Log out: the pages send the browser back to the login form.
	c.clickAndWait("#logout")
	c.mustEval(`location.pathname`, &path)
	require.Equal(t, "/ui/login", path)
	c.navigate(e.ts.URL + "/ui/rows")
	c.waitFor(`location.pathname === "/ui/login"`)

	// An analyst sees only the own team.
	c.typeInto("#token", secretAnalyst)
	c.clickAndWait("#login-submit")
	require.Equal(t, "analyst k-analyst (team ml)", c.text("#who"))
	require.Equal(t, 1, c.count("figure.chart"))
	c.clickAndWait("#nav-rows")
	var rowTeams []string
	c.mustEval(`[...document.querySelectorAll("#rows tbody tr td:nth-child(3)")].map(td => td.textContent.split(" / ")[0])`, &rowTeams)
	require.NotEmpty(t, rowTeams)
	for _, team := range rowTeams {
		require.Equal(t, "ml", team)
	}
	c.navigate(e.ts.URL + "/ui/rows/" + e.rows[1].RequestID)
	require.Equal(t, "404 Not Found", c.text("#error-status"), "another team's row")
}

// TestBrowserOIDC signs in through the identity provider in Chromium: the
// login page's single sign-on link, the provider's own login form, the
// redirects back and the callback page that moves on to the overview, which
// names the reviewer and shows only team ml.
func TestBrowserOIDC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, issuer := newOIDCEnv(t)
	c := startChrome(t, ctx)
	host := strings.TrimPrefix(issuer, "http://")
	host = host[:strings.LastIndexByte(host, ':')]

	c.navigate(e.ts.URL + "/ui/login")
	c.clickAndWait("#sso-login")
	var at string
	c.mustEval(`location.origin`, &at)
	require.Equal(t, issuer, at, "the browser is at the provider")
	c.typeInto("#username", "test-user@"+host)
	c.typeInto("#password", oidcPassword)
	c.markDocument()
	c.click(`button[type="submit"]`)
	c.waitFor(`location.origin === ` + jsString(e.ts.URL) + ` && location.pathname === "/ui/" && document.readyState === "complete"`)
	require.Equal(t, "reviewer test-user@zitadel.ch (team ml)", c.text("#who"))
	var teams []string
	c.mustEval(`[...document.querySelectorAll("figure.chart")].map(f => f.dataset.team)`, &teams)
	require.Equal(t, []string{"ml"}, teams, "a team reviewer sees its team only")
	var cookies string
	c.mustEval(`document.cookie`, &cookies)
	require.NotContains(t, cookies, "sluice_ui", "the session cookie is HttpOnly")
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string { return strconv.Quote(s) }
