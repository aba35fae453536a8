package gateway_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/review/ui"
	"github.com/sluicegw/sluice/simulator"
	"github.com/sluicegw/sluice/store/requestlog"
)

// Demo secrets (testdata/demo/sluice.toml).
const (
	secretChat     = "sk-sluice-demo-chat"
	secretBatch    = "sk-sluice-demo-batch"
	secretFinance  = "sk-sluice-demo-finance"
	secretResearch = "sk-sluice-demo-research"
	secretAnalyst  = "sk-sluice-demo-analyst"
	adminToken     = "admin-token-for-tests-0123456789abcdef"
)

// platformKeys are the upstream credentials the demo config reads from the
// environment.
var platformKeys = map[string]string{
	"OPENROUTER_API_KEY": "sk-or-platform-secret-1",
	"AI_GATEWAY_API_KEY": "vck-platform-secret-2",
	"OPENAI_API_KEY":     "sk-openai-platform-secret-3",
	"ANTHROPIC_API_KEY":  "sk-ant-platform-secret-4",
}

// harness is a real gateway on loopback HTTP in front of the simulator, on a
// copy of the demo configuration, recording into a real SQLite file.
type harness struct {
	t    *testing.T
	dir  string
	sim  *simulator.Server
	srv  *gateway.Server
	ts   *httptest.Server
	logs *syncBuffer
	// level is the logger's level, which the gateway sets from [server]
	// log_level.
	level *slog.LevelVar
	sent  *recorder
}

// recorder is the gateway's upstream transport in tests: it records the
// credential and body of every upstream request.
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	reqs []sentRequest
}

type sentRequest struct {
	URL, Auth, APIKey string
	// Traceparent is the W3C trace context the request carried.
	Traceparent string
	Body        []byte
	// Reused reports that the request went over a pooled connection.
	Reused bool
	// Pooled reports that its connection went back to the idle pool.
	Pooled bool
}

func (rec *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, sentRequest{URL: r.URL.String(), Auth: r.Header.Get("Authorization"), APIKey: r.Header.Get("X-Api-Key"), Traceparent: r.Header.Get("Traceparent"), Body: body})
	i := len(rec.reqs) - 1
	rec.mu.Unlock()
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		rec.mu.Lock()
		if i < len(rec.reqs) {
			rec.reqs[i].Reused = info.Reused
		}
		rec.mu.Unlock()
	}, PutIdleConn: func(err error) {
		rec.mu.Lock()
		if i < len(rec.reqs) && err == nil {
			rec.reqs[i].Pooled = true
		}
		rec.mu.Unlock()
	}}
	return rec.base.RoundTrip(r.WithContext(httptrace.WithClientTrace(r.Context(), trace)))
}

// pooled reports whether the i-th recorded request's connection went back
// to the idle pool.
func (rec *recorder) pooled(i int) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return i < len(rec.reqs) && rec.reqs[i].Pooled
}

// take returns and forgets the recorded requests.
func (rec *recorder) take() []sentRequest {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := rec.reqs
	rec.reqs = nil
	return out
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// testEdits make the demo config fast and bounded for tests. The demo's
// cache already stores every answer (store_after = 1), so that a test's
// second identical request is a hit; TestResponseCacheSecondSighting and
// TestResponseCacheSecondSightingFleet hold the default (2).
var testEdits = [][2]string{
	{"[store]\n", "[store]\nflush_interval = \"10ms\"\nbatch_size = 50\n"},
	{"[server]\n", "[server]\nmax_body_bytes = 65536\nshutdown_timeout = \"5s\"\nlog_requests = \"all\"\n"},
	{"name = \"openai\"\nconnector = \"openai\"\n", "name = \"openai\"\nconnector = \"openai\"\nfirst_byte_timeout = \"1s\"\ntimeout = \"3s\"\n"},
	{"name = \"anthropic\"\nconnector = \"anthropic\"\n", "name = \"anthropic\"\nconnector = \"anthropic\"\nfirst_byte_timeout = \"1s\"\ntimeout = \"3s\"\n"},
	{"name = \"market\"\nconnector = \"openrouter\"\n", "name = \"market\"\nconnector = \"openrouter\"\nfirst_byte_timeout = \"1s\"\ntimeout = \"3s\"\n"},
}

func newHarness(t *testing.T, edits ...[2]string) *harness {
	t.Helper()
	return newHarnessPrep(t, nil, edits...)
}

// newHarnessPrep is newHarness with a hook that may change the copied
// config directory (say, the catalog) before the gateway loads it.
func newHarnessPrep(t *testing.T, prep func(dir string), edits ...[2]string) *harness {
	t.Helper()
	return newHarnessSim(t, prep, nil, edits...)
}

// newHarnessSim is newHarnessPrep with a hook that may change the
// simulator's configuration.
func newHarnessSim(t *testing.T, prep func(dir string), simCfg func(*simulator.Config), edits ...[2]string) *harness {
	t.Helper()
	return newHarnessOpts(t, prep, simCfg, nil, edits...)
}

// newHarnessOpts is newHarnessSim with a hook that may change the gateway's
// options (tracing, say).
func newHarnessOpts(t *testing.T, prep func(dir string), simCfg func(*simulator.Config), opts func(*gateway.Options), edits ...[2]string) *harness {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, sluice.DemoConfig()))
	editConfig(t, dir, append(append([][2]string{}, testEdits...), edits...)...)
	if prep != nil {
		prep(dir)
	}
	// Platform keys the demo config names; the tests check none of them leaks.
	for env, v := range platformKeys {
		t.Setenv(env, v)
	}
	cat, diags := guardrails.LoadCatalog(dir)
	require.Empty(t, diags)
	cfg := simulator.FromCatalog(cat)
	if simCfg != nil {
		simCfg(&cfg)
	}
	sim := simulator.New(cfg)
	_, err := sim.Start()
	require.NoError(t, err)
	logs := &syncBuffer{}
	level := new(slog.LevelVar)
	sent := &recorder{base: gateway.NewTransport()}
	o := gateway.Options{
		Transport:  sent,
		ConfigDir:  dir,
		Logger:     slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: level})),
		LogLevel:   level,
		AdminToken: adminToken,
		Pages: func(g gateway.PagesEnv) http.Handler {
			return ui.New(ui.Options{Store: g.Store, AdminToken: g.AdminToken, Snapshot: g.Snapshot, Logger: g.Logger, OverTLS: g.OverTLS})
		},
		UpstreamURLs: map[string]string{"market": sim.URL("openrouter"), "edge": sim.URL("vercel"),
			"openai": sim.URL("openai"), "anthropic": sim.URL("anthropic")},
	}
	if opts != nil {
		opts(&o)
	}
	srv, err := gateway.New(o)
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	h := &harness{t: t, dir: dir, sim: sim, srv: srv, ts: ts, logs: logs, level: level, sent: sent}
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
		sim.Close()
	})
	return h
}

// editConfig applies literal replacements to sluice.toml; each must match.
func editConfig(t *testing.T, dir string, edits ...[2]string) {
	t.Helper()
	p := filepath.Join(dir, "sluice.toml")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	s := string(b)
	for _, e := range edits {
		require.Contains(t, s, e[0], "config edit does not apply")
		s = strings.Replace(s, e[0], e[1], 1)
	}
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
}

// post sends a chat-completions request.
func (h *harness) post(secret, body string, headers ...string) (*http.Response, []byte) {
	h.t.Helper()
	return h.do(http.MethodPost, "/v1/chat/completions", secret, body, append([]string{"Content-Type", "application/json"}, headers...)...)
}

// do sends a request with a bearer token (none when token is "") and the
// given header name/value pairs, and reads the whole answer.
func (h *harness) do(method, path, token, body string, headers ...string) (*http.Response, []byte) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.ts.URL+path, strings.NewReader(body))
	require.NoError(h.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := h.ts.Client().Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return resp, b
}

// scrape reads the metrics as the scrape on [server] metrics_listen does.
func scrape(t *testing.T, srv *gateway.Server) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.Bytes()
}

// get sends a GET with a bearer token.
func (h *harness) get(path, token string) (*http.Response, []byte) {
	h.t.Helper()
	return h.do(http.MethodGet, path, token, "")
}

// row waits (bounded) for the request's row to reach the store.
func (h *harness) row(requestID string) requestlog.Row {
	h.t.Helper()
	require.NotEmpty(h.t, requestID)
	deadline := time.Now().Add(5 * time.Second)
	for {
		page, err := h.srv.Store().Query(context.Background(), requestlog.Filter{Limit: requestlog.MaxLimit})
		require.NoError(h.t, err)
		for _, r := range page.Rows {
			if r.RequestID == requestID {
				return r
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no request-log row for %s after 5s", requestID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rowCount waits until the store holds n rows, then returns them.
func (h *harness) rows(n int) []requestlog.Row {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		page, err := h.srv.Store().Query(context.Background(), requestlog.Filter{Limit: requestlog.MaxLimit})
		require.NoError(h.t, err)
		if len(page.Rows) >= n || time.Now().After(deadline) {
			require.Len(h.t, page.Rows, n)
			return page.Rows
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func chatBody(model string, extra string) string {
	return `{"model":"` + model + `","messages":[{"role":"user","content":"Hello there"}]` + extra + `}`
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
