package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/guardrails/listing"
	"github.com/sluicegw/sluice/simulator"
	"github.com/sluicegw/sluice/snapshot"
)

// newModel is a model the marketplace lists and the demo catalog does not;
// the ml team's guardrail pattern meta-llama/** covers it.
const newModel = "meta-llama/llama-4-scout"

// refreshRig is a gateway whose [catalog] refreshes from the simulator's
// OpenRouter listing, through a proxy that can break the listing.
type refreshRig struct {
	dir     string
	sim     *simulator.Server
	srv     *gateway.Server
	ts      *httptest.Server
	broken  atomic.Bool  // the proxy answers the model list in a shape that fails validation
	fetches atomic.Int64 // the model list's fetches
	logs    *syncBuffer
	level   *slog.LevelVar // set from [server] log_level on every swap
}

func newRefreshRig(t testing.TB, dir string) *refreshRig {
	t.Helper()
	for env, v := range platformKeys {
		t.Setenv(env, v)
	}
	cat, diags := guardrails.LoadCatalog(dir)
	require.Empty(t, diags)
	cfg := simulator.FromCatalog(cat)
	for i := range cfg.Models {
		if cfg.Models[i].Slug == "openai/gpt-4o" {
			cfg.Models[i].Endpoints[0].PriceIn = 5 // the marketplace's price moved
		}
	}
	cfg.Models = append(cfg.Models, simulator.Model{Slug: newModel, ContextWindow: 1 << 20, Endpoints: []simulator.Endpoint{
		{Provider: "groq", PriceIn: 0.11, PriceOut: 0.34, LatencyMs: 180, ThroughputTPS: 460}}})
	sim := simulator.New(cfg)
	_, err := sim.Start()
	require.NoError(t, err)
	r := &refreshRig{dir: dir, sim: sim, logs: &syncBuffer{}, level: new(slog.LevelVar)}
	target, err := url.Parse(sim.BaseURL())
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		if q.URL.Path == "/openrouter/api/v1/models" {
			r.fetches.Add(1)
		}
		if r.broken.Load() && q.URL.Path == "/openrouter/api/v1/models" {
			_, _ = w.Write([]byte(`{"data":[{"id":"openai/gpt-4o","pricing":{"prompt":"0.0000025","completion":"ten dollars"}}]}`))
			return
		}
		proxy.ServeHTTP(w, q)
	}))
	r.srv, err = gateway.New(gateway.Options{
		ConfigDir: dir, Logger: slog.New(slog.NewJSONHandler(r.logs, nil)), LogLevel: r.level, AdminToken: adminToken,
		UpstreamURLs: map[string]string{"market": front.URL + "/openrouter/api/v1", "edge": sim.URL("vercel"),
			"openai": sim.URL("openai"), "anthropic": sim.URL("anthropic")},
	})
	require.NoError(t, err)
	r.ts = httptest.NewServer(r.srv.Handler())
	t.Cleanup(func() {
		r.ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.srv.Close(ctx)
		front.Close()
		sim.Close()
	})
	return r
}

func (r *refreshRig) do(t *testing.T, method, path, secret, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, r.ts.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

func (r *refreshRig) ready(t *testing.T) gateway.Readiness {
	t.Helper()
	code, b := r.do(t, http.MethodGet, "/readyz", "", "")
	require.Equal(t, http.StatusOK, code, string(b))
	var rd gateway.Readiness
	require.NoError(t, json.Unmarshal(b, &rd))
	return rd
}

// refreshDir copies the demo configuration with the test edits and
// [catalog] source set.
func refreshDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, sluice.DemoConfig()))
	p := filepath.Join(dir, "sluice.toml")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	s := string(b)
	// The test edits but the upstreams' 1 s deadlines, which a loaded
	// machine (the race detector's runs) can miss without any refresh.
	edits := append([][2]string{}, testEdits[:2]...)
	edits = append(edits, [2]string{"[retry]\n", "[catalog]\nsource = \"openrouter\"\nrefresh = \"1h\"\n\n[retry]\n"})
	for _, e := range edits {
		require.Contains(t, s, e[0])
		s = strings.Replace(s, e[0], e[1], 1)
	}
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	return dir
}

// TestCatalogRefresh: a refresh merges the marketplace's listing over the
// hand-written catalog and swaps it in — a newly listed model becomes
// servable for a team whose guardrail pattern covers it (the decision is
// issued anew for the new catalog revision), a moved price is the new
// one — without touching catalog.json; a listing that fails validation
// keeps the last good catalog serving, visible in /readyz and the
// metrics; a restart serves the kept listing before any refresh.
func TestCatalogRefresh(t *testing.T) {
	dir := refreshDir(t)
	handWritten, err := os.ReadFile(filepath.Join(dir, "catalog.json"))
	require.NoError(t, err)
	r := newRefreshRig(t, dir)
	chat := `{"model":"` + newModel + `","messages":[{"role":"user","content":"hi"}]}`

	rd := r.ready(t)
	require.Equal(t, "openrouter", rd.Catalog.Source)
	require.Equal(t, "1h0m0s", rd.Catalog.Refresh)
	var listed struct{ Models []json.RawMessage }
	require.NoError(t, json.Unmarshal(handWritten, &listed))
	models := len(listed.Models) // the hand-written catalog's
	require.Equal(t, models, rd.Catalog.Models)
	require.True(t, rd.Catalog.ListingFetchedAt.IsZero())
	code, b := r.do(t, http.MethodPost, "/v1/chat/completions", secretChat, chat)
	require.Equal(t, http.StatusNotFound, code, "not in the catalog yet (model_not_in_catalog): %s", b)

	before := r.srv.Snapshot()
	require.NoError(t, r.srv.RefreshCatalog(context.Background()))
	after := r.srv.Snapshot()
	require.NotEqual(t, before.Revision, after.Revision)
	require.NotEqual(t, before.Catalog.Revision(), after.Catalog.Revision())
	m, ok := after.Catalog.Model(newModel)
	require.True(t, ok)
	require.Equal(t, 180, m.Endpoints[0].LatencyMS)
	gpt, _ := after.Catalog.Model("openai/gpt-4o")
	require.Equal(t, 5.0, gpt.Endpoints[0].PriceIn)
	require.Equal(t, "openrouter", gpt.Endpoints[0].Source)

	code, b = r.do(t, http.MethodPost, "/v1/chat/completions", secretChat, chat)
	require.Equal(t, http.StatusOK, code, string(b))
	rd = r.ready(t)
	require.Equal(t, models+1, rd.Catalog.Models)
	require.False(t, rd.Catalog.LastRefreshFailed)
	require.False(t, rd.Catalog.ListingFetchedAt.IsZero())
	metricsBody := scrape(t, r.srv)
	require.Contains(t, string(metricsBody), `sluice_catalog_refreshes_total{result="ok"} 1`)
	require.Contains(t, string(metricsBody), "sluice_catalog_last_refresh_ok 1")
	now, err := os.ReadFile(filepath.Join(dir, "catalog.json"))
	require.NoError(t, err)
	require.Equal(t, string(handWritten), string(now), "serve never writes catalog.json")
	_, err = os.Stat(gateway.ListingPath(filepath.Join(dir, "data"), "openrouter"))
	require.NoError(t, err, "the listing is kept in data_dir")

	// A listing that fails validation: the last good catalog keeps serving.
	r.broken.Store(true)
	err = r.srv.RefreshCatalog(context.Background())
	require.ErrorContains(t, err, `/openrouter/api/v1/models#/data/0/pricing/completion: listing_shape: "ten dollars" is not a decimal number`)
	require.Equal(t, after.Revision, r.srv.Snapshot().Revision)
	code, b = r.do(t, http.MethodPost, "/v1/chat/completions", secretChat, chat)
	require.Equal(t, http.StatusOK, code, string(b))
	rd = r.ready(t)
	require.True(t, rd.Ready, "a failed refresh does not make the gateway unready")
	require.True(t, rd.Catalog.LastRefreshFailed)
	require.Equal(t, []string{"listing_shape"}, rd.Catalog.Errors, "without the admin token, /readyz shows the stable code only")
	code, b = r.do(t, http.MethodGet, "/readyz", adminToken, "")
	require.Equal(t, http.StatusOK, code)
	var detail gateway.Readiness
	require.NoError(t, json.Unmarshal(b, &detail))
	require.Len(t, detail.Catalog.Errors, 1)
	require.Contains(t, detail.Catalog.Errors[0], `/openrouter/api/v1/models#/data/0/pricing/completion: listing_shape: "ten dollars" is not a decimal number`,
		"the admin token sees the located error")
	require.Equal(t, models+1, rd.Catalog.Models)
	require.Contains(t, r.logs.String(), "catalog refresh failed; the last good catalog keeps serving")
	metricsBody = scrape(t, r.srv)
	require.Contains(t, string(metricsBody), `sluice_catalog_refreshes_total{result="failed"} 1`)
	require.Contains(t, string(metricsBody), "sluice_catalog_last_refresh_ok 0")

	// A reload (the file watcher's, SIGHUP's) keeps the listing merged.
	require.Empty(t, r.srv.Reload())
	_, ok = r.srv.Snapshot().Catalog.Model(newModel)
	require.True(t, ok)

	// A restart serves the kept listing at once.
	r2 := newRefreshRig(t, dir)
	_, ok = r2.srv.Snapshot().Catalog.Model(newModel)
	require.True(t, ok)
	require.False(t, r2.ready(t).Catalog.ListingFetchedAt.IsZero())
}

// TestCatalogRefreshSwapsAsAReloadDoes: a refresh changes the live
// configuration through the same steps as a reload — it takes the
// directory's [server] log_level, and a directory that loads clean ends
// the failure an earlier reload left in /readyz.
func TestCatalogRefreshSwapsAsAReloadDoes(t *testing.T) {
	dir := refreshDir(t)
	r := newRefreshRig(t, dir)
	require.Equal(t, slog.LevelInfo, r.level.Level())
	p := filepath.Join(dir, "sluice.toml")
	good, err := os.ReadFile(p)
	require.NoError(t, err)

	require.NoError(t, os.WriteFile(p, []byte("[server\n"), 0o644))
	require.NotEmpty(t, r.srv.Reload())
	require.True(t, r.ready(t).Config.LastReloadFailed)

	require.Contains(t, string(good), "[server]\n")
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(good), "[server]\n", "[server]\nlog_level = \"debug\"\n", 1)), 0o644))
	require.NoError(t, r.srv.RefreshCatalog(context.Background()))
	_, ok := r.srv.Snapshot().Catalog.Model(newModel)
	require.True(t, ok, "the listing is merged")
	require.Equal(t, slog.LevelDebug, r.level.Level(), "the refresh applied the directory's log level")
	rd := r.ready(t)
	require.False(t, rd.Config.LastReloadFailed, "the directory loaded clean: %v", rd.Config.Errors)
	require.Equal(t, r.srv.Snapshot().Revision, rd.Config.Revision)
}

// TestCatalogRefreshUnderLoad: refreshes swapping the catalog while
// requests are in flight fail none of them. Bounded: 4 workers × 40
// requests, 6 refreshes.
func TestCatalogRefreshUnderLoad(t *testing.T) {
	r := newRefreshRig(t, refreshDir(t))
	var wg sync.WaitGroup
	var failed atomic.Int32
	var firstFailure atomic.Value
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				req, _ := http.NewRequest(http.MethodPost, r.ts.URL+"/v1/chat/completions",
					strings.NewReader(`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
				req.Header.Set("Authorization", "Bearer "+secretChat)
				resp, err := r.ts.Client().Do(req)
				if err != nil {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, err.Error())
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%d %s", resp.StatusCode, b))
				}
			}
		}()
	}
	for i := range 6 {
		r.broken.Store(i == 3) // one failed refresh among them
		_ = r.srv.RefreshCatalog(context.Background())
	}
	wg.Wait()
	require.Zero(t, failed.Load(), "first failure: %v", firstFailure.Load())
	metricsBody := scrape(t, r.srv)
	require.Contains(t, string(metricsBody), `sluice_catalog_refreshes_total{result="ok"} 5`)
}

// TestCatalogRefreshLoopFetchesAtStart: with [catalog] source set and no
// listing kept yet, the background loop refreshes at once, and stops with
// its context.
func TestCatalogRefreshLoopFetchesAtStart(t *testing.T) {
	r := newRefreshRig(t, refreshDir(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		r.srv.RefreshCatalogLoop(ctx)
		close(done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := r.srv.Snapshot().Catalog.Model(newModel); ok {
			break
		}
		require.True(t, time.Now().Before(deadline), "no refresh within 10s")
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	require.False(t, r.ready(t).Catalog.LastRefreshFailed)
}

// TestCatalogStartWithABadStoredListing: a listing kept in data_dir that
// cannot be read, or no longer merges over catalog.json, is logged and left
// out at start: the gateway serves catalog.json until its first refresh.
func TestCatalogStartWithABadStoredListing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, path string)
		log   string
	}{
		{"unreadable", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o644))
		}, "the stored catalog listing is unreadable"},
		{"does not merge", func(t *testing.T, path string) {
			require.NoError(t, listing.SaveImport(path, &listing.Import{Source: "openrouter", Listed: 1,
				Models: []*guardrails.Model{{Slug: "acme/broken", Endpoints: []guardrails.Endpoint{{Provider: "", PriceIn: -1}}}}}))
		}, "the stored catalog listing does not merge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := refreshDir(t)
			data := filepath.Join(dir, "data")
			require.NoError(t, os.MkdirAll(data, 0o755))
			tc.write(t, gateway.ListingPath(data, "openrouter"))
			r := newRefreshRig(t, dir)
			require.Contains(t, r.logs.String(), tc.log)
			_, ok := r.srv.Snapshot().Catalog.Model("acme/broken")
			require.False(t, ok)
			plain, diags := snapshot.Load(dir)
			require.Empty(t, diags)
			require.Equal(t, plain.Catalog.Revision(), r.srv.Snapshot().Catalog.Revision(), "catalog.json alone serves")
			require.True(t, r.ready(t).Catalog.ListingFetchedAt.IsZero())
			// The first refresh replaces it.
			require.NoError(t, r.srv.RefreshCatalog(context.Background()))
			_, ok = r.srv.Snapshot().Catalog.Model(newModel)
			require.True(t, ok)
		})
	}
}
