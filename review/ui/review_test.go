package ui_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/store/requestlog"
)

// TestReviewerQuestions: which requests of the last hour were served
// outside the preference, or degraded, and why — read off the pages.
func TestReviewerQuestions(t *testing.T) {
	e := newEnv(t)
	// Rows relative to now: half an hour ago and two hours ago.
	recent := []requestlog.Row{
		{TS: e.now.Add(-30 * time.Minute), RequestID: "req-recent-outside", Org: "acme", Team: "ml", Project: "chat", KeyID: "k-chat",
			Upstream: "market", DecidedModel: "openai/gpt-4o", ServedModel: "openai/gpt-4o", ServedProvider: "together", Status: 200,
			PreferencePreferred: []string{"openai", "azure"}, PreferenceVerdict: requestlog.VerdictOutsidePreference,
			UpstreamAttempts: "openai/gpt-4o@OpenAI 503, openai/gpt-4o@Azure 429, openai/gpt-4o@Together 200",
			RequestRouting:   true, RoutingObject: `{"fallbacks":[]}`},
		{TS: e.now.Add(-2 * time.Hour), RequestID: "req-earlier-lost", Org: "acme", Team: "ml", Project: "chat", KeyID: "k-chat",
			Upstream: "market", DecidedModel: "openai/gpt-4o", ServedModel: "openai/gpt-4o", ServedProvider: "openai", Status: 200,
			PreferenceVerdict: requestlog.VerdictFirstPreferred, RequestRouting: true},
		{TS: e.now.Add(-3 * time.Hour), RequestID: "req-refused-early", Org: "acme", Team: "ml", Project: "chat", KeyID: "k-chat",
			Status: 400, RefusedCode: "invalid_json", RefusedMessage: "request body is not a JSON object", PreferenceVerdict: requestlog.VerdictNotApplicable},
	}
	e.insert(recent)
	all := append(append([]requestlog.Row{}, e.rows...), recent...)
	admin := e.browser()
	admin.mustLogin(adminToken)

	t.Run("last hour", func(t *testing.T) {
		before := time.Now()
		p := admin.get("/ui/rows?from=1h")
		after := time.Now()
		require.Equal(t, http.StatusOK, p.status)
		got := rowIDs(p.body)
		require.Contains(t, got, "req-recent-outside")
		require.NotContains(t, got, "req-earlier-lost")
		for _, r := range all {
			switch {
			case !r.TS.Before(after.Add(-time.Hour)):
				require.Contains(t, got, r.RequestID, "in the last hour")
			case r.TS.Before(before.Add(-time.Hour)):
				require.NotContains(t, got, r.RequestID, "older than an hour")
			}
		}
		require.Contains(t, p.body, `<a href="/ui/rows?from=1h" class="preset current" data-from="1h">Last hour</a>`)
		require.Contains(t, p.body, `<a href="/ui/rows?from=7d" class="preset" data-from="7d">Last 7 days</a>`)
		// The presets keep the other filters.
		p = admin.get("/ui/rows?team=ml&degraded=true")
		require.Contains(t, p.body, `href="/ui/rows?degraded=true&amp;from=24h&amp;team=ml"`)
	})

	t.Run("outside the preference", func(t *testing.T) {
		p := admin.get("/ui/rows?from=1h&preference_verdict=outside_preference")
		got := rowIDs(p.body)
		require.Contains(t, got, "req-recent-outside")
		for _, r := range all {
			if slices.Contains(got, r.RequestID) {
				require.Equal(t, requestlog.VerdictOutsidePreference, r.PreferenceVerdict, r.RequestID)
				require.False(t, r.TS.Before(e.now.Add(-time.Hour)), r.RequestID)
			}
		}
		require.Contains(t, p.body, `<option value="outside_preference" selected>`)
		want := 0
		for _, r := range all {
			if r.PreferenceVerdict == requestlog.VerdictOutsidePreference {
				want++
			}
		}
		require.Len(t, rowIDs(admin.get("/ui/rows?preference_verdict=outside_preference").body), want)
	})

	t.Run("flags combine as chosen", func(t *testing.T) {
		for _, tc := range []struct {
			query string
			keep  func(requestlog.Row) bool
		}{
			{"degraded=true&refused=true", func(r requestlog.Row) bool { return len(r.RoutingDegraded) > 0 && r.RefusedCode != "" }},
			{"degraded=true&refused=true&match=all", func(r requestlog.Row) bool { return len(r.RoutingDegraded) > 0 && r.RefusedCode != "" }},
			{"degraded=true&refused=true&match=any", func(r requestlog.Row) bool { return len(r.RoutingDegraded) > 0 || r.RefusedCode != "" }},
		} {
			want := idsOf(e.matching(tc.keep))
			require.NotEmpty(t, want, tc.query)
			p := admin.get("/ui/rows?" + tc.query)
			require.Equal(t, want, rowIDs(p.body), tc.query)
			any := strings.Contains(tc.query, "match=any")
			require.Equal(t, any, strings.Contains(p.body, `<option value="any" selected>any ticked flag</option>`), "the form shows the choice")
		}
	})

	t.Run("a bad filter is shown beside the kept form", func(t *testing.T) {
		for _, path := range []string{"/ui/rows", "/ui/"} {
			p := admin.get(path + "?" + url.Values{"from": {"2026-12-02 06:40"}, "team": {"ml"}}.Encode())
			require.Equal(t, http.StatusBadRequest, p.status, path)
			require.Contains(t, p.body, `id="filter-error"`, path)
			require.Contains(t, p.body, "from must be a date (2026-11-30), an RFC 3339 time", path)
			require.Contains(t, p.body, `name="from" value="2026-12-02 06:40"`, "the form keeps what was typed")
			require.Contains(t, p.body, `name="team" value="ml"`, path)
			require.Contains(t, p.body, `id="presets"`, path)
		}
	})

	t.Run("the model column is filled in", func(t *testing.T) {
		p := admin.get("/ui/rows?team=ml&from=4h")
		require.NotContains(t, p.body, `<td class="model"></td>`)
		require.Contains(t, p.body, `<td class="model"><span class="muted" title="The request was refused before its body was read, so no model was recorded.">(not read)</span></td>`)
		require.Contains(t, p.body, `<td class="model">openai/gpt-4o <span class="provider">(together)</span></td>`)
	})

	t.Run("export as JSON", func(t *testing.T) {
		p := admin.get("/ui/rows.json?team=research&limit=3")
		require.Equal(t, http.StatusOK, p.status)
		require.Equal(t, "application/json", p.header.Get("Content-Type"))
		require.Contains(t, p.header.Get("Content-Disposition"), `.json"`)
		var got []requestlog.Row
		require.NoError(t, json.Unmarshal([]byte(p.body), &got), p.body)
		want := e.matching(func(r requestlog.Row) bool { return r.Team == "research" })
		require.Equal(t, idsOf(want), idsOf(got), "every page of the filter, not the page size")
		require.Equal(t, http.StatusBadRequest, admin.get("/ui/rows.json?from=yesterday").status)
	})

	t.Run("every badge is explained", func(t *testing.T) {
		g := admin.get("/ui/glossary")
		require.Equal(t, http.StatusOK, g.status)
		rows := admin.get("/ui/rows?limit=1000")
		links := glossaryLinkRE.FindAllStringSubmatch(rows.body, -1)
		require.NotEmpty(t, links)
		for _, l := range links {
			require.Contains(t, g.body, `<dt id="`+l[1]+`">`, "the glossary has an entry for #%s", l[1])
		}
		for _, v := range requestlog.PreferenceVerdicts {
			require.Contains(t, g.body, `<dt id="verdict-`+v+`">`)
		}
		require.Equal(t, strings.Count(rows.body, `class="label `), strings.Count(rows.body, `<abbr title="`), "every badge has inline help")
	})

	t.Run("the detail page tells the story", func(t *testing.T) {
		outside := recent[0]
		d := admin.get(fmt.Sprintf("/ui/rows/%s?ts=%d", outside.RequestID, outside.TS.UnixMilli()))
		require.Equal(t, http.StatusOK, d.status)
		story := d.body[strings.Index(d.body, `id="story"`):strings.Index(d.body, `id="fields"`)]
		for _, want := range []string{
			"Key k-chat (team ml, project chat, org acme) asked for openai/gpt-4o on the chat API, with its own routing object.",
			"Its provider preference: preferred openai then azure.",
			"Upstream market answered with openai/gpt-4o via together (status 200): a provider outside the preference.",
			"The upstream reported its attempts (model@provider status): openai/gpt-4o@OpenAI 503, openai/gpt-4o@Azure 429, openai/gpt-4o@Together 200.",
		} {
			require.Contains(t, htmlText(story), want)
		}
		// The re-run replays the request's routing object: no chain.
		require.Contains(t, d.body, `id="routing-replayed"`)
		require.Contains(t, d.body, `<code id="explain-decided">openai/gpt-4o</code>.</p>`, "the recorded fallbacks = [] replayed")
		require.NotContains(t, d.body, `>sent<`)

		lost := recent[1]
		d = admin.get(fmt.Sprintf("/ui/rows/%s?ts=%d", lost.RequestID, lost.TS.UnixMilli()))
		require.Contains(t, d.body, `id="routing-lost"`, "the row does not keep the routing object: the page says so")
		require.Contains(t, d.body, `<code id="explain-decided">openai/gpt-4o</code>; chain`)

		refused := e.matching(func(r requestlog.Row) bool { return r.RefusedCode == "model_forbidden" && r.Team == "ml" })[0]
		d = admin.get(fmt.Sprintf("/ui/rows/%s?ts=%d", refused.RequestID, refused.TS.UnixMilli()))
		require.Contains(t, htmlText(d.body), `The gateway refused it (status 403, model_forbidden): model "openai/gpt-4o" is forbidden for team ml by its guardrail.`)
		require.Contains(t, d.body, `id="recorded-refusal"`)
		require.Contains(t, d.body, "would be sent now", "never a bare sent beside a refusal")
		require.NotContains(t, d.body, `<span class="label ok">sent</span>`)
	})

	t.Run("hourly overview for short ranges", func(t *testing.T) {
		p := admin.get("/ui/?from=24h")
		require.Equal(t, http.StatusOK, p.status)
		require.Contains(t, p.body, "<th>Hour (UTC)</th>")
		hours := hourRowRE.FindAllStringSubmatch(p.body, -1)
		require.NotEmpty(t, hours)
		var want []string
		start := time.Now().Add(-24 * time.Hour)
		var in []requestlog.Row
		for _, r := range all {
			if r.TS.After(start.Add(time.Minute)) { // well inside the range
				in = append(in, r)
			}
		}
		for _, s := range requestlog.SummarizeRows(in, requestlog.BucketHour) {
			want = append(want, s.Day.Format("2006-01-02 15:00")+" "+s.Team)
		}
		var got []string
		for _, h := range hours {
			got = append(got, h[1]+" "+h[2])
		}
		for _, w := range want {
			require.True(t, slices.Contains(got, w), "hour %s in %v", w, got)
		}
		require.Contains(t, admin.get("/ui/?from=7d").body, "<th>Day</th>", "a week is counted per day")
	})
}

var (
	glossaryLinkRE = regexp.MustCompile(`href="/ui/glossary#([a-z_-]+)"`)
	hourRowRE      = regexp.MustCompile(`<tr>\s*<td>(\d{4}-\d\d-\d\d \d\d:00)</td><td>([^<]*)</td>`)
	tagRE          = regexp.MustCompile(`<[^>]+>`)
)

// htmlText is an HTML fragment's text: tags dropped, entities decoded.
func htmlText(s string) string {
	return html.UnescapeString(tagRE.ReplaceAllString(s, ""))
}
