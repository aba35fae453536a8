package gateway_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/store/requestlog"
)

// TestResponseCache: an identical request is answered from the cache without
// contacting a provider, and the hit is recorded with its served fields. The
// cache runs before the expressibility check: after the key moves to an
// upstream that cannot express its restrictions, a cached answer is still
// served while a new request is refused.
func TestResponseCache(t *testing.T) {
	h := newHarness(t)
	body := chatBody("openai/gpt-4o", `,"temperature":0.1`)
	first, _ := h.post(secretChat, body)
	require.Equal(t, 200, first.StatusCode)
	require.Empty(t, first.Header.Get(gateway.HeaderCache))
	// Same request, members in another order: still a hit.
	reordered := `{"temperature":0.1,"messages":[{"role":"user","content":"Hello there"}],"model":"openai/gpt-4o"}`
	second, _ := h.post(secretChat, reordered)
	require.Equal(t, 200, second.StatusCode)
	require.Equal(t, "hit", second.Header.Get(gateway.HeaderCache))
	require.Len(t, h.sim.Calls(), 1, "a hit contacts no provider")
	row := h.row(second.Header.Get(gateway.HeaderRequestID))
	require.True(t, row.CacheHit)
	require.Equal(t, "market", row.Upstream, "the upstream whose answer is replayed")
	require.Equal(t, "openai/gpt-4o", row.ServedModel)
	require.Equal(t, "openai", row.ServedProvider)

	// Streams are never served from the cache.
	s, raw := h.post(secretChat, chatBody("openai/gpt-4o", `,"temperature":0.1,"stream":true`))
	require.Equal(t, 200, s.StatusCode)
	require.Contains(t, string(raw), "data: [DONE]")
	require.Len(t, h.sim.Calls(), 2)

	// Move k-chat to the edge upstream, which cannot express the org's deny list.
	editConfig(t, h.dir, [2]string{"project = \"chat\"\n", "project = \"chat\"\nupstream = \"edge\"\n"})
	require.Empty(t, h.srv.Reload())
	hit, _ := h.post(secretChat, body)
	require.Equal(t, 200, hit.StatusCode, "a cache hit bypasses the refusal check")
	require.Equal(t, "hit", hit.Header.Get(gateway.HeaderCache))
	miss, missBody := h.post(secretChat, chatBody("openai/gpt-4o", `,"temperature":0.9`))
	require.Equal(t, 422, miss.StatusCode, string(missBody))
	require.Len(t, h.sim.Calls(), 2)

	// Another principal never sees k-chat's cached answer.
	other, _ := h.post(secretResearch, body)
	require.Empty(t, other.Header.Get(gateway.HeaderCache))

	// [cache] reloads live: a shorter ttl applies to the answers already
	// cached (k-chat's, cached well over a millisecond ago, expires).
	editConfig(t, h.dir, [2]string{"ttl = \"5m\"", "ttl = \"1ms\""}, [2]string{"project = \"chat\"\nupstream = \"edge\"\n", "project = \"chat\"\n"})
	require.Empty(t, h.srv.Reload())
	require.Equal(t, time.Millisecond, h.srv.Snapshot().Config.Cache.TTL.Duration)
	time.Sleep(5 * time.Millisecond)
	expired, _ := h.post(secretChat, body)
	require.Equal(t, 200, expired.StatusCode)
	require.Empty(t, expired.Header.Get(gateway.HeaderCache), "served from the cache past the reloaded ttl")
}

// TestResponseCacheStoresWhatCanBeHitAgain: the cache keeps only what can
// be hit again. Each case sends the same request twice (the first with
// first's headers, the second plain) and counts the upstream calls: 1 when
// the first answer was stored and served to the second, 2 when it was not.
func TestResponseCacheStoresWhatCanBeHitAgain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  [][2]string
		first []string
		calls int
	}{
		{name: "stored", calls: 1},
		{name: "no-store not kept", first: []string{"Cache-Control", "no-store"}, calls: 2},
		{name: "no-store among directives", first: []string{"Cache-Control", "max-age=0, No-Store"}, calls: 2},
		{name: "no-cache is not no-store", first: []string{"Cache-Control", "no-cache"}, calls: 1},
		{name: "over max_answer_bytes", edit: [][2]string{{"ttl = \"5m\"", "ttl = \"5m\"\nmax_answer_bytes = 64"}}, calls: 2},
		{name: "within max_answer_bytes", edit: [][2]string{{"ttl = \"5m\"", "ttl = \"5m\"\nmax_answer_bytes = 65536"}}, calls: 1},
		{name: "store_after = 2: a first sighting is not kept", edit: [][2]string{{"store_after = 1", "store_after = 2"}}, calls: 2},
		{name: "store_after unset: 2, the default", edit: [][2]string{{"store_after = 1\n", ""}}, calls: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.edit...)
			body := chatBody("openai/gpt-4o", `,"temperature":0.3`)
			first, raw := h.post(secretChat, body, tc.first...)
			require.Equal(t, 200, first.StatusCode, string(raw))
			second, _ := h.post(secretChat, body)
			require.Equal(t, 200, second.StatusCode)
			require.Len(t, h.sim.Calls(), tc.calls)
			if tc.calls == 1 {
				require.Equal(t, "hit", second.Header.Get(gateway.HeaderCache))
			}
		})
	}
	// A no-store request is still answered from what the cache holds.
	h := newHarness(t)
	body := chatBody("openai/gpt-4o", `,"temperature":0.4`)
	_, _ = h.post(secretChat, body)
	hit, _ := h.post(secretChat, body, "Cache-Control", "no-store")
	require.Equal(t, "hit", hit.Header.Get(gateway.HeaderCache))
	require.Len(t, h.sim.Calls(), 1)
}

// TestSessionsAndRepresentationBreaks: a session is pinned to the provider
// that served its last turn; a fallback to another model is a
// representation break that moves the pin. The simulator reports no cached
// tokens, so no turn has anything priced at the cache price
// (cache_discount_applied false throughout; TestPricingMatrix prices
// recorded cached counts).
func TestSessionsAndRepresentationBreaks(t *testing.T) {
	h := newHarness(t, [2]string{"[cache]\nenabled = true", "[cache]\nenabled = false"})
	turn := func(content, fault string) requestlog.Row {
		hdr := []string{"X-Session-Id", "sess-42"}
		if fault != "" {
			hdr = append(hdr, "X-Sim-Fault", fault)
		}
		resp, b := h.post(secretChat, `{"model":"openai/gpt-4o","messages":[{"role":"user","content":"`+content+`"}]}`, hdr...)
		require.Equal(t, 200, resp.StatusCode, string(b))
		return h.row(resp.Header.Get(gateway.HeaderRequestID))
	}
	// Turn 1: openai's endpoint is down, the marketplace serves the same model via azure.
	r1 := turn("one", "status=503;provider=openai")
	require.Equal(t, "azure", r1.ServedProvider)
	require.False(t, r1.RepresentationBreak)
	require.False(t, r1.CacheDiscountApplied, "nothing cached")
	require.Equal(t, "X-Session-Id", r1.SessionKey)
	// Turn 2: the pin puts azure first although the team prefers openai.
	r2 := turn("two", "")
	require.Equal(t, "azure", r2.ServedProvider)
	require.False(t, r2.CacheDiscountApplied, "a pin prices nothing the upstream did not report cached")
	require.Equal(t, "sess-42", r2.SessionID)
	// Turn 3: the model fails everywhere, the chain serves another model.
	r3 := turn("three", "status=503;model=openai/gpt-4o")
	require.Equal(t, "anthropic/claude-sonnet-4.5", r3.ServedModel)
	require.Equal(t, "chain", r3.RoutingSwitchReason)
	require.True(t, r3.RepresentationBreak)
	require.False(t, r3.CacheDiscountApplied)
	// Turn 4: back on the decided model, whose prompt cache is cold for this
	// session: no discount; the pin moves back.
	r4 := turn("four", "")
	require.Equal(t, "openai/gpt-4o", r4.ServedModel)
	require.False(t, r4.RepresentationBreak)
	require.False(t, r4.CacheDiscountApplied)
	r5 := turn("five", "")
	require.Equal(t, "openai/gpt-4o", r5.ServedModel)
	require.False(t, r5.CacheDiscountApplied)
	require.Greater(t, r5.CostUSD, 0.0)
}

// TestModelsList lists what the caller's decision allows, plus the route
// aliases it may use: a route none of whose ordinary targets the caller's
// guardrail allows is not listed to it.
func TestModelsList(t *testing.T) {
	h := newHarness(t, [2]string{"[[routes]]\nmodel = \"assistant\"", "[[routes]]\nmodel = \"gemini-only\"\ntargets = [{upstream = \"market\", model = \"google/gemini-2.5-pro\"}]\n\n[[routes]]\nmodel = \"assistant\""})
	ids := func(secret string) []string {
		resp, b := h.get("/v1/models", secret)
		require.Equal(t, 200, resp.StatusCode)
		require.Regexp(t, `^[0-9a-f]{32}$`, resp.Header.Get(gateway.HeaderRequestID))
		var l struct {
			Data []struct{ ID string } `json:"data"`
		}
		require.NoError(t, json.Unmarshal(b, &l))
		var out []string
		for _, d := range l.Data {
			out = append(out, d.ID)
		}
		return out
	}
	chat := ids(secretChat)
	require.Contains(t, chat, "openai/gpt-4o")
	require.Contains(t, chat, "assistant")
	require.NotContains(t, chat, "x-ai/grok-4")
	require.NotContains(t, chat, "google/gemini-2.5-pro", "the ml team may not use google models")
	require.Contains(t, ids(secretResearch), "google/gemini-2.5-pro")
	require.NotContains(t, chat, "gemini-only", "the ml team may use no target of the route")
	require.Contains(t, ids(secretResearch), "gemini-only")
	resp, _ := h.get("/v1/models", "")
	require.Equal(t, 401, resp.StatusCode)
	// A refused request carries its id too ("on every answer").
	require.Regexp(t, `^[0-9a-f]{32}$`, resp.Header.Get(gateway.HeaderRequestID))
	resp, _ = h.post("sk-not-a-key", chatBody("openai/gpt-4o", ""))
	require.Equal(t, 401, resp.StatusCode)
	require.Regexp(t, `^[0-9a-f]{32}$`, resp.Header.Get(gateway.HeaderRequestID))
}

// TestAnalyticsAccess: the admin token reads every row, an analyst key only
// its own team's and cannot widen its filter; anyone else is refused.
func TestAnalyticsAccess(t *testing.T) {
	h := newHarness(t)
	ok, _ := h.post(secretChat, chatBody("openai/gpt-4o", ""))
	deg, _ := h.post(secretBatch, chatBody("openai/gpt-4o-mini", ""))
	ref, _ := h.post(secretFinance, chatBody("anthropic/claude-sonnet-4.5", ""))
	sw, _ := h.post(secretChat, chatBody("openai/gpt-4o", `,"user":"switch"`), "X-Sim-Fault", "status=503;model=openai/gpt-4o",
		"X-Claude-Code-Session-Id", "sess-analytics")
	h.rows(4)
	query := func(token string, q url.Values) (int, gateway.Invocations) {
		resp, b := h.get("/api/v1/analytics/invocations?"+q.Encode(), token)
		var inv gateway.Invocations
		if resp.StatusCode == 200 {
			require.NoError(t, json.Unmarshal(b, &inv), string(b))
		}
		return resp.StatusCode, inv
	}
	idsOf := func(inv gateway.Invocations) []string {
		var out []string
		for _, r := range inv.Data {
			out = append(out, r.RequestID)
		}
		return out
	}
	rid := func(r *http.Response) string { return r.Header.Get(gateway.HeaderRequestID) }
	tests := []struct {
		name   string
		token  string
		q      url.Values
		status int
		want   []string
	}{
		{"admin sees all", adminToken, url.Values{}, 200, []string{rid(sw), rid(ref), rid(deg), rid(ok)}},
		// The ml team's order makes its ranking inert on the marketplace.
		{"degraded", adminToken, url.Values{"degraded": {"true"}}, 200, []string{rid(ok), rid(deg), rid(sw)}},
		{"refused", adminToken, url.Values{"refused": {"true"}}, 200, []string{rid(ref)}},
		{"switched", adminToken, url.Values{"switched": {"true"}}, 200, []string{rid(sw)}},
		{"switch reason", adminToken, url.Values{"switch_reason": {"chain"}}, 200, []string{rid(sw)}},
		{"team", adminToken, url.Values{"team": {"finance"}}, 200, []string{rid(ref)}},
		{"session", adminToken, url.Values{"session": {"sess-analytics"}}, 200, []string{rid(sw)}},
		{"unknown session", adminToken, url.Values{"session": {"sess-none"}}, 200, nil},
		{"time window excludes", adminToken, url.Values{"to": {"2000-01-01T00:00:00Z"}}, 200, nil},
		{"analyst sees own team", secretAnalyst, url.Values{}, 200, []string{rid(sw), rid(deg), rid(ok)}},
		{"analyst cannot widen", secretAnalyst, url.Values{"team": {"finance"}}, 403, nil},
		{"plain key refused", secretChat, url.Values{}, 403, nil},
		{"no token", "", url.Values{}, 401, nil},
		{"wrong token", "nope", url.Values{}, 401, nil},
		{"bad filter", adminToken, url.Values{"degraded": {"maybe"}}, 400, nil},
		{"bad cursor", adminToken, url.Values{"cursor": {"garbage"}}, 400, nil},
		{"the last hour", adminToken, url.Values{"from": {"-1h"}}, 200, []string{rid(sw), rid(ref), rid(deg), rid(ok)}},
		{"before the last hour", adminToken, url.Values{"to": {"-1h"}}, 200, nil},
		{"first preferred", adminToken, url.Values{"preference_verdict": {"first_preferred"}}, 200, []string{rid(ok)}},
		{"outside the preference", adminToken, url.Values{"from": {"1h"}, "preference_verdict": {"outside_preference"}}, 200, []string{rid(sw)}},
		{"refused or switched", adminToken, url.Values{"refused": {"true"}, "switched": {"true"}, "match": {"any"}}, 200, []string{rid(ref), rid(sw)}},
		{"refused and switched", adminToken, url.Values{"refused": {"true"}, "switched": {"true"}}, 200, nil},
		{"bad verdict", adminToken, url.Values{"preference_verdict": {"honoured"}}, 400, nil},
		{"bad match", adminToken, url.Values{"match": {"either"}}, 400, nil},
		{"bad relative time", adminToken, url.Values{"from": {"1 hour"}}, 400, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, inv := query(tc.token, tc.q)
			require.Equal(t, tc.status, status)
			if status == 200 {
				// Rows of the same millisecond order by request id: compare as sets.
				require.ElementsMatch(t, tc.want, idsOf(inv))
			}
		})
	}
	t.Run("cursor pagination", func(t *testing.T) {
		var got []string
		q := url.Values{"limit": {"1"}}
		for i := 0; i < 10; i++ {
			_, inv := query(adminToken, q)
			got = append(got, idsOf(inv)...)
			if inv.NextCursor == "" {
				break
			}
			q.Set("cursor", inv.NextCursor)
		}
		require.Len(t, got, 4, "every row once, none twice")
		require.ElementsMatch(t, []string{rid(sw), rid(ref), rid(deg), rid(ok)}, got)
	})
}

// TestReloadKeepsLastGoodConfig: a broken file keeps the last good
// configuration serving and shows the failure in /readyz and a metric; a good
// one takes effect for the next request.
func TestReloadKeepsLastGoodConfig(t *testing.T) {
	h := newHarness(t)
	good := h.srv.Snapshot().Revision
	broken := []struct {
		name   string
		break_ func(dir string)
		code   string
	}{
		{"toml syntax", func(d string) { appendFile(t, d, "sluice.toml", "\n[server\n") }, "toml_syntax"},
		{"schema", func(d string) { appendFile(t, d, "profiles/org.toml", "\nbogus = 1\n") }, "schema"},
		{"rego", func(d string) { appendFile(t, d, "guardrails/org.rego", "\nallow_models contains x if {\n") }, "rego_parse_error"},
		{"all targets restricted", func(d string) {
			editConfig(t, d, [2]string{"model = \"meta-llama/llama-3.1-70b-instruct\"\n", "model = \"meta-llama/llama-3.1-70b-instruct\"\ntakes_over = [\"throttled\"]\n"})
		}, "all_targets_restricted"},
		{"empty catalog", func(d string) { writeFile(t, d, "catalog.json", `{"models": []}`) }, "empty_catalog"},
		{"catalog deleted mid-write", func(d string) { writeFile(t, d, "catalog.json", `{"models": [{"slug": "a/b", "endpo`) }, "json_syntax"},
	}
	for _, tc := range broken {
		t.Run(tc.name, func(t *testing.T) {
			snapshotDir(t, h.dir, func() {
				tc.break_(h.dir)
				diags := h.srv.Reload()
				require.NotEmpty(t, diags)
				require.Contains(t, diags.Error(), tc.code)
				require.Equal(t, good, h.srv.Snapshot().Revision, "the last good config keeps serving")
				resp, b := h.post(secretChat, chatBody("openai/gpt-4o", `,"user":"`+tc.name+`"`))
				require.Equal(t, 200, resp.StatusCode, string(b))
				rr, rb := h.get("/readyz", "")
				require.Equal(t, 200, rr.StatusCode)
				var rd gateway.Readiness
				require.NoError(t, json.Unmarshal(rb, &rd))
				require.True(t, rd.Config.LastReloadFailed)
				require.Contains(t, strings.Join(rd.Config.Errors, "\n"), tc.code)
				mb := scrape(t, h.srv)
				require.Contains(t, string(mb), "sluice_config_last_reload_ok 0")
			})
		})
	}
	// A good reload takes effect for the next request.
	require.Empty(t, h.srv.Reload())
	editConfig(t, h.dir, [2]string{"project = \"chat\"\n", "project = \"chat\"\nupstream = \"openai\"\n"})
	require.Empty(t, h.srv.Reload())
	require.NotEqual(t, good, h.srv.Snapshot().Revision)
	resp, _ := h.post(secretChat, chatBody("openai/gpt-4o", `,"user":"after"`))
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "openai", resp.Header.Get(gateway.HeaderUpstream))
	_, rb := h.get("/readyz", "")
	require.Contains(t, string(rb), `"last_reload_failed":false`)
}

// TestWatchReloadsOnFileChange edits a profile on disk and waits (bounded)
// for the watcher to pick it up.
func TestWatchReloadsOnFileChange(t *testing.T) {
	h := newHarness(t)
	watch(t, h.srv)
	before := h.srv.Snapshot().Revision
	appendFile(t, h.dir, "profiles/projects/chat.toml", "\n# touched\n")
	deadline := time.Now().Add(5 * time.Second)
	for h.srv.Snapshot().Revision == before {
		require.True(t, time.Now().Before(deadline), "watcher did not reload within 5s")
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHealthAndMetrics checks the operational endpoints.
func TestHealthAndMetrics(t *testing.T) {
	h := newHarness(t)
	resp, _ := h.get("/healthz", "")
	require.Equal(t, 200, resp.StatusCode)
	resp, b := h.get("/readyz", "")
	require.Equal(t, 200, resp.StatusCode, string(b))
	var rd gateway.Readiness
	require.NoError(t, json.Unmarshal(b, &rd))
	require.True(t, rd.Ready)
	require.True(t, rd.Store.Reachable)
	h.post(secretBatch, chatBody("openai/gpt-4o-mini", ""))
	h.post(secretChat, chatBody("x-ai/grok-4", ""))
	h.post("", chatBody("x-ai/grok-4", ""))
	h.rows(2)
	m := scrape(t, h.srv)
	for _, want := range []string{
		`sluice_requests_total{status="200",upstream="openai"} 1`,
		`sluice_refused_total{code="model_forbidden"} 1`,
		`sluice_degraded_total{item="chain"} 1`,
		`sluice_auth_failures_total 1`,
		`sluice_requestlog_written_rows_total`,
		`sluice_request_duration_seconds_bucket`,
		`sluice_tokens_total{model="openai/gpt-4o-mini",provider="openai",team="ml",type="input"} 3`,
		`sluice_cost_usd_total{model="openai/gpt-4o-mini",provider="openai",source="catalog",team="ml"}`,
		`gen_ai_server_request_duration_seconds_count{error_type="",gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="openai/gpt-4o-mini"} 1`,
		`gen_ai_server_request_duration_seconds_count{error_type="model_forbidden",gen_ai_operation_name="chat",gen_ai_provider_name="",gen_ai_request_model="x-ai/grok-4"} 1`,
		`sluice_build_info{commit="unknown",goversion="go`,
	} {
		require.Contains(t, string(m), want)
	}
}

// TestSecretsNeverLeak: key secrets and platform keys appear in no log line,
// row, error body or metric.
func TestSecretsNeverLeak(t *testing.T) {
	h := newHarness(t)
	var bodies []string
	for _, secret := range []string{secretChat, secretFinance, "sk-sluice-unknown-secret"} {
		_, b := h.post(secret, chatBody("openai/gpt-4o", ""))
		bodies = append(bodies, string(b))
		_, b = h.post(secret, chatBody("x-ai/grok-4", ""))
		bodies = append(bodies, string(b))
	}
	h.rows(4)
	m := scrape(t, h.srv)
	_, a := h.get("/api/v1/analytics/invocations", adminToken)
	_, r := h.get("/readyz", "")
	everything := h.logs.String() + strings.Join(bodies, "\n") + string(m) + string(a) + string(r)
	require.NotEmpty(t, h.logs.String())
	secrets := []string{secretChat, secretFinance, "sk-sluice-unknown-secret", adminToken}
	for _, v := range platformKeys {
		secrets = append(secrets, v)
	}
	for _, s := range secrets {
		require.NotContains(t, everything, s)
	}
}

// TestRequestStringsCannotInjectLogLines: a model name with a newline stays
// one JSON log line and one header value.
func TestRequestStringsCannotInjectLogLines(t *testing.T) {
	h := newHarness(t)
	resp, _ := h.post(secretChat, chatBody(`openai/gpt-4o\n{\"level\":\"ERROR\",\"msg\":\"forged\"}`, ""))
	require.Equal(t, 404, resp.StatusCode, "not in the catalog")
	for _, line := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &v), "every log line is one JSON object: %q", line)
		require.NotEqual(t, "forged", v["msg"])
	}
}

func appendFile(t *testing.T, dir, name, s string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func writeFile(t *testing.T, dir, name, s string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644))
}

// snapshotDir restores the config directory's files after fn.
func snapshotDir(t *testing.T, dir string, fn func()) {
	t.Helper()
	saved := map[string][]byte{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.Contains(p, string(filepath.Separator)+"data"+string(filepath.Separator)) {
			b, rerr := os.ReadFile(p)
			require.NoError(t, rerr)
			saved[p] = b
		}
		return nil
	}))
	defer func() {
		for p, b := range saved {
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}
	}()
	fn()
}

// TestRequestLogOff: [store] kind = "off" serves requests, records nothing
// (no database file), says so at start, and the analytics API answers that
// the log is off instead of an empty page.
func TestRequestLogOff(t *testing.T) {
	h := newHarness(t, [2]string{`kind = "sqlite"`, `kind = "off"`})
	resp, b := h.post(secretChat, chatBody("openai/gpt-4o", ""))
	require.Equal(t, 200, resp.StatusCode, string(b))
	require.NotEmpty(t, resp.Header.Get(gateway.HeaderRequestID))
	require.Contains(t, h.logs.String(), "the request log is off")

	resp, b = h.get("/api/v1/analytics/invocations", adminToken)
	require.Equal(t, 404, resp.StatusCode, string(b))
	var e errBody
	require.NoError(t, json.Unmarshal(b, &e))
	require.Equal(t, "not_found", e.Error.Code)
	require.Contains(t, e.Error.Message, `kind = "off"`)

	_, err := os.Stat(filepath.Join(h.dir, "data", "requests.db"))
	require.ErrorIs(t, err, fs.ErrNotExist, "no request-log database is created")
	_, err = os.Stat(filepath.Join(h.dir, "data", "spool"))
	require.ErrorIs(t, err, fs.ErrNotExist, "no spool either")
}

// TestLogLevel: [server] log_level sets the level of the gateway's logger,
// and a reload changes it live. The per-request lines are "info": "warn"
// silences them, "debug" lets them through again.
func TestLogLevel(t *testing.T) {
	h := newHarness(t, [2]string{"[server]\n", "[server]\nlog_level = \"warn\"\n"})
	require.Equal(t, slog.LevelWarn, h.level.Level())
	quiet, _ := h.post(secretChat, chatBody("openai/gpt-4o", ""))
	require.Equal(t, 200, quiet.StatusCode)
	h.rows(1)

	editConfig(t, h.dir, [2]string{`log_level = "warn"`, `log_level = "debug"`})
	require.Empty(t, h.srv.Reload())
	require.Equal(t, slog.LevelDebug, h.level.Level())
	loud, _ := h.post(secretChat, chatBody("openai/gpt-4o", `,"temperature":0.5`))
	require.Equal(t, 200, loud.StatusCode)
	h.rows(2)
	// The row is queryable once a batch is written, after the line.
	require.Eventually(t, func() bool { return strings.Contains(h.logs.String(), loud.Header.Get(gateway.HeaderRequestID)) },
		5*time.Second, 10*time.Millisecond, "a request line at debug level")
	require.NotContains(t, h.logs.String(), quiet.Header.Get(gateway.HeaderRequestID), "no request line at warn level")

	// A broken reload keeps the level of the configuration that serves.
	editConfig(t, h.dir, [2]string{`log_level = "debug"`, `log_level = "loud"`})
	require.NotEmpty(t, h.srv.Reload())
	require.Equal(t, slog.LevelDebug, h.level.Level())
}

// TestLogRequests: [server] log_requests picks which requests get a log
// line; the request log has a row for each either way (a 401 has a line
// but no row).
func TestLogRequests(t *testing.T) {
	for _, tc := range []struct {
		setting string
		want    []string // request ids with a "request" line, by name
	}{
		{"all", []string{"ok", "refused", "unauthorized"}},
		{"errors", []string{"refused", "unauthorized"}},
		{"off", nil},
	} {
		t.Run(tc.setting, func(t *testing.T) {
			h := newHarness(t, [2]string{`log_requests = "all"`, fmt.Sprintf("log_requests = %q", tc.setting)})
			ok, _ := h.post(secretChat, chatBody("openai/gpt-4o", ""))
			require.Equal(t, 200, ok.StatusCode)
			refused, _ := h.post(secretFinance, chatBody("anthropic/claude-sonnet-4.5", ""))
			require.Equal(t, 422, refused.StatusCode) // refused by the finance team's guardrail
			unauthorized, _ := h.post("sk-not-a-key", chatBody("openai/gpt-4o", ""))
			require.Equal(t, 401, unauthorized.StatusCode)
			ids := map[string]string{"ok": ok.Header.Get(gateway.HeaderRequestID), "refused": refused.Header.Get(gateway.HeaderRequestID),
				"unauthorized": unauthorized.Header.Get(gateway.HeaderRequestID)}
			h.rows(2)
			var logged []string
			for _, line := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
				if line == "" {
					continue
				}
				var l struct {
					RequestID string `json:"request_id"`
				}
				require.NoError(t, json.Unmarshal([]byte(line), &l), line)
				for name, id := range ids {
					if l.RequestID == id && strings.Contains(line, `"msg":"request"`) {
						logged = append(logged, name)
					}
				}
			}
			sort.Strings(logged)
			require.Equal(t, tc.want, logged)
		})
	}
}

// TestAgentSessionHeaders: each coding agent's own session header
// (testdata/sessions/agents.json, names read from the agents' published
// packages) keys a session with the default [sessions] headers: turn 1 fails
// over to azure and pins it, turn 2 stays on azure although the team prefers
// openai, and both rows name the session and the header that carried it.
func TestAgentSessionHeaders(t *testing.T) {
	raw, err := os.ReadFile("../testdata/sessions/agents.json")
	require.NoError(t, err)
	var agents []struct{ Agent, Header, Value string }
	require.NoError(t, json.Unmarshal(raw, &agents))
	require.Len(t, agents, 3)
	h := newHarness(t, [2]string{"[cache]\nenabled = true", "[cache]\nenabled = false"})
	for _, a := range agents {
		t.Run(a.Agent, func(t *testing.T) {
			turn := func(content string, hdr ...string) requestlog.Row {
				resp, b := h.post(secretChat, `{"model":"openai/gpt-4o","messages":[{"role":"user","content":"`+content+`"}]}`,
					append([]string{a.Header, a.Value}, hdr...)...)
				require.Equal(t, 200, resp.StatusCode, string(b))
				return h.row(resp.Header.Get(gateway.HeaderRequestID))
			}
			r1 := turn("one", "X-Sim-Fault", "status=503;provider=openai")
			require.Equal(t, "azure", r1.ServedProvider)
			r2 := turn("two")
			require.Equal(t, "azure", r2.ServedProvider, "the pin held")
			for _, r := range []requestlog.Row{r1, r2} {
				require.Equal(t, a.Value, r.SessionID)
				require.True(t, strings.EqualFold(a.Header, r.SessionKey), "session_key %q", r.SessionKey)
				require.Equal(t, "pin", r.SessionAffinity, "k-chat's profile orders providers: no sticky routing claimed")
			}
		})
	}
	// Without a session header nothing is pinned, and the row says so.
	resp, b := h.post(secretChat, `{"model":"openai/gpt-4o","messages":[{"role":"user","content":"none"}]}`)
	require.Equal(t, 200, resp.StatusCode, string(b))
	r := h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Empty(t, r.SessionID)
	require.Empty(t, r.SessionKey)
	require.Empty(t, r.SessionAffinity)
}

// TestSessionAffinityKnobs: the row records the upstream's own stickiness
// knob the request was sent with. On the marketplace a session's first turn
// carries session_id (no provider order: k-research's profile sets none);
// once pinned, the pin is a provider order, under which the marketplace
// uses no sticky routing, so the row claims the pin alone. OpenAI takes
// prompt_cache_key on every turn.
func TestSessionAffinityKnobs(t *testing.T) {
	h := newHarness(t, [2]string{"[cache]\nenabled = true", "[cache]\nenabled = false"})
	for _, c := range []struct {
		name, secret, model, session string
		want                         []string // session_affinity of turns 1 and 2
		upstream                     string
	}{
		{"marketplace without order", secretResearch, "openai/gpt-4o", "sess-knob-market", []string{"pin+session_id", "pin"}, "market"},
		{"marketplace with the team's order", secretChat, "openai/gpt-4o", "sess-knob-ordered", []string{"pin", "pin"}, "market"},
		{"direct openai", secretBatch, "openai/gpt-4o-mini", "sess-knob-openai", []string{"pin+prompt_cache_key", "pin+prompt_cache_key"}, "openai"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i, want := range c.want {
				resp, b := h.post(c.secret, chatBody(c.model, fmt.Sprintf(`,"user":"turn-%d"`, i)), "X-Session-Id", c.session)
				require.Equal(t, 200, resp.StatusCode, string(b))
				r := h.row(resp.Header.Get(gateway.HeaderRequestID))
				require.Equal(t, c.upstream, r.Upstream)
				require.Equal(t, want, r.SessionAffinity, "turn %d", i+1)
			}
		})
	}
}
