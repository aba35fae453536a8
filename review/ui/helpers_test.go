package ui_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/review/diff"
	"github.com/sluicegw/sluice/review/ui"
	"github.com/sluicegw/sluice/store/requestlog"
)

// Demo secrets (testdata/demo/sluice.toml): k-analyst has the analyst role
// in team ml; k-chat is a plain key.
const (
	adminToken     = "admin-token-for-ui-tests-0123456789abcdef"
	secretAnalyst  = "sk-sluice-demo-analyst"
	secretPlainKey = "sk-sluice-demo-chat"
)

// env is a real gateway on loopback, on a copy of the demo configuration,
// with seeded request-log rows.
type env struct {
	t    *testing.T
	dir  string
	srv  *gateway.Server
	ts   *httptest.Server
	rows []requestlog.Row
	now  time.Time
}

// newEnv starts the gateway and inserts the seed rows into its store.
func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvStore(t, nil)
}

// newEnvStore is newEnv with the given request-log store (nil: the
// configured one).
func newEnvStore(t *testing.T, store requestlog.Store) *env {
	t.Helper()
	return newEnvConfig(t, store, nil)
}

// newEnvConfig is newEnvStore with edit applied to the configuration copy
// first; edit learns the gateway's base URL (its listener is open already).
func newEnvConfig(t *testing.T, store requestlog.Store, edit func(dir, base string)) *env {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, sluice.DemoConfig()))
	ts := httptest.NewUnstartedServer(nil)
	if edit != nil {
		edit(dir, "http://"+ts.Listener.Addr().String())
	}
	for k, v := range map[string]string{
		"OPENROUTER_API_KEY": "sk-or-ui-test", "AI_GATEWAY_API_KEY": "vck-ui-test",
		"OPENAI_API_KEY": "sk-openai-ui-test", "ANTHROPIC_API_KEY": "sk-ant-ui-test",
	} {
		t.Setenv(k, v)
	}
	srv, err := gateway.New(gateway.Options{
		ConfigDir:  dir,
		Logger:     slog.New(slog.NewTextHandler(testLogWriter{t}, nil)),
		AdminToken: adminToken,
		Store:      store,
		Pages: func(g gateway.PagesEnv) http.Handler {
			return ui.New(ui.Options{Store: g.Store, AdminToken: g.AdminToken, Snapshot: g.Snapshot,
				Logger: g.Logger, OverTLS: g.OverTLS, WhatIf: diff.WhatIf})
		},
	})
	require.NoError(t, err)
	ts.Config.Handler = srv.Handler()
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})
	e := &env{t: t, dir: dir, srv: srv, ts: ts, now: time.Now().UTC()}
	e.rows = seedRows(e.now)
	e.insert(e.rows)
	return e
}

func (e *env) insert(rows []requestlog.Row) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(e.t, e.srv.Store().Insert(ctx, rows))
}

var seedTeams = []struct{ team, key, project string }{
	{"ml", "k-chat", "chat"}, {"research", "k-research", "notebooks"}, {"finance", "k-finance", "ledger"},
}

// seedRows are 30 rows over three teams and the last three UTC days (around
// noon, so that no row crosses a midnight), with every kind of loss, plus one
// row whose key no longer exists.
func seedRows(now time.Time) []requestlog.Row {
	now = now.Truncate(24 * time.Hour).Add(12 * time.Hour)
	var rows []requestlog.Row
	for i := range 30 {
		st := seedTeams[i%3]
		day := (i / 3) % 3
		r := requestlog.Row{
			TS:        now.Add(-time.Duration(day)*24*time.Hour - time.Duration(i)*time.Minute),
			RequestID: fmt.Sprintf("req-%s-%02d", st.team, i),
			Org:       "acme", Team: st.team, Project: st.project, KeyID: st.key,
			Upstream:     "market",
			DecidedModel: "openai/gpt-4o", Chain: []string{"openai/gpt-4o", "anthropic/claude-sonnet-4.5"},
			ServedModel: "openai/gpt-4o", ServedProvider: "openai",
			RoutingDegraded: []string{},
			Attempts:        1, Status: 200, PromptTokens: 12, CompletionTokens: 34, CostUSD: 0.0012, LatencyMS: 210.5,
		}
		if i%4 == 1 {
			r.RoutingDegraded = []string{"ranking"}
		}
		if i%7 == 0 {
			r.DataPolicy, r.DataPolicyVia = "zero_retention", "zero_retention=native"
		}
		if i%5 == 2 {
			r.RefusedCode, r.Status, r.ServedModel, r.ServedProvider = "model_forbidden", 403, "", ""
		}
		if i%6 == 3 {
			r.ServedModel, r.ServedProvider = "anthropic/claude-sonnet-4.5", "anthropic"
			r.RoutingSwitchReason, r.FallbackReason, r.Attempts = "target_fallback", "throttled", 2
			r.ServedRegion = "swedencentral"
		}
		// ml prefers openai then azure (testdata/demo/profiles/teams/ml.toml).
		r.PreferencePreferred, r.PreferenceVerdict = []string{"openai", "azure"}, requestlog.VerdictNotApplicable
		switch {
		case r.RefusedCode != "":
			r.RefusedMessage = "model \"openai/gpt-4o\" is forbidden for team " + st.team + " by its guardrail"
		case i%8 == 5:
			r.ServedProvider, r.PreferenceVerdict = "azure", requestlog.VerdictOtherPreferred
			r.UpstreamAttempts = "openai/gpt-4o@OpenAI 503, openai/gpt-4o@Azure 200"
		case r.ServedProvider == "openai":
			r.PreferenceVerdict = requestlog.VerdictFirstPreferred
		default:
			r.PreferenceVerdict = requestlog.VerdictOutsidePreference
		}
		if st.team == "ml" && i < 15 { // one agent session's turns: 0, 3, 6, 9, 12
			r.SessionID, r.SessionKey, r.SessionAffinity = "sess-ml-agent", "x-claude-code-session-id", "pin"
			r.RepresentationBreak = r.ServedModel != "" && r.ServedModel != r.DecidedModel
			r.CacheDiscountApplied = !r.RepresentationBreak && r.RefusedCode == ""
		}
		rows = append(rows, r)
	}
	rows = append(rows, requestlog.Row{
		TS: now.Add(-5 * time.Hour), RequestID: "req-ml-gone", Org: "acme", Team: "ml", Project: "old",
		KeyID: "k-removed", Upstream: "market", DecidedModel: "openai/gpt-4o", Chain: []string{"openai/gpt-4o"},
		ServedModel: "openai/gpt-4o", ServedProvider: "openai", RoutingDegraded: []string{}, Attempts: 1, Status: 200,
	})
	return rows
}

// matching returns the seeded rows selected by keep, newest first.
func (e *env) matching(keep func(requestlog.Row) bool) []requestlog.Row {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []requestlog.Row
	f := requestlog.Filter{Limit: requestlog.MaxLimit}
	for {
		p, err := e.srv.Store().Query(ctx, f)
		require.NoError(e.t, err)
		for _, r := range p.Rows {
			if keep(r) {
				out = append(out, r)
			}
		}
		if p.NextCursor == "" {
			return out
		}
		f.Cursor = p.NextCursor
	}
}

// browser is an HTTP client with a cookie jar that does not follow redirects.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func (e *env) browser() *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(e.t, err)
	return &browser{t: e.t, base: e.ts.URL, c: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// page is a fetched answer.
type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, path string, form url.Values) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	require.NoError(b.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.c.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return page{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}

func (b *browser) get(path string) page { b.t.Helper(); return b.do(http.MethodGet, path, nil) }

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf returns the CSRF token a page's form carries.
func csrfOf(t *testing.T, p page) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(p.body)
	require.NotNil(t, m, "no csrf field in page:\n%s", p.body)
	return m[1]
}

// login fills the login form with token and returns the answer.
func (b *browser) login(token string) page {
	b.t.Helper()
	form := b.get("/ui/login")
	require.Equal(b.t, http.StatusOK, form.status)
	return b.do(http.MethodPost, "/ui/login", url.Values{"csrf": {csrfOf(b.t, form)}, "token": {token}})
}

// mustLogin logs in and checks the redirect to the overview.
func (b *browser) mustLogin(token string) {
	b.t.Helper()
	p := b.login(token)
	require.Equal(b.t, http.StatusSeeOther, p.status, p.body)
	require.Equal(b.t, "/ui/", p.header.Get("Location"))
}

var rowIDRE = regexp.MustCompile(`<tr class="row[^"]*" data-request-id="([^"]+)"`)

// rowIDs returns the request ids listed on a rows page, in order.
func rowIDs(body string) []string {
	var out []string
	for _, m := range rowIDRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func idsOf(rows []requestlog.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.RequestID
	}
	return out
}

// testLogWriter sends the gateway's log to the test log.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
