package gateway_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/simulator"
)

// BenchmarkRequestsDuringRefresh serves chat completions through the
// gateway against the simulator (real HTTP on loopback), with no refresh
// ("steady") and while the catalog is refreshed from the simulator's
// listing and swapped in every second or every 50 ms (thousands of times
// more often than any real [catalog] refresh). It reports the requests'
// p50 and p99 and fails on any request that did not answer 200.
func BenchmarkRequestsDuringRefresh(b *testing.B) {
	for _, c := range []struct {
		name  string
		every time.Duration
	}{{"steady", 0}, {"refresh-every-1s", time.Second}, {"refresh-every-50ms", 50 * time.Millisecond}} {
		b.Run(c.name, func(b *testing.B) { benchRefresh(b, c.every) })
	}
}

func benchRefresh(b *testing.B, every time.Duration) {
	refreshing := every > 0
	dir := b.TempDir()
	if err := os.CopyFS(dir, sluice.DemoConfig()); err != nil {
		b.Fatal(err)
	}
	p := dir + "/sluice.toml"
	cfg, _ := os.ReadFile(p)
	s := strings.Replace(string(cfg), "[cache]\nenabled = true", "[cache]\nenabled = false", 1)
	s = strings.Replace(s, "[retry]\n", "[catalog]\nsource = \"openrouter\"\n\n[retry]\n", 1)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		b.Fatal(err)
	}
	cat, diags := guardrails.LoadCatalog(dir)
	if len(diags) > 0 {
		b.Fatal(diags)
	}
	simCfg := simulator.FromCatalog(cat)
	sim := simulator.New(simCfg)
	if _, err := sim.Start(); err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	srv, err := gateway.New(gateway.Options{ConfigDir: dir, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		UpstreamURLs: map[string]string{"market": sim.URL("openrouter")}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	}()
	if err := srv.RefreshCatalog(context.Background()); err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	refreshes := 0
	if refreshing {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if err := srv.RefreshCatalog(context.Background()); err != nil {
						b.Error(err)
						return
					}
					refreshes++
				}
			}
		}()
	}
	body := []byte(`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"Summarise the incident report."}]}`)
	client := ts.Client()
	var lat []time.Duration
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secretChat)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(start))
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d during refresh", resp.StatusCode)
		}
	}
	close(stop)
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(refreshes), "refreshes")
}

// BenchmarkRefreshCatalog is one whole refresh of the demo catalog from
// the simulator's listing (14 models, over loopback HTTP): fetch, validate,
// merge, load the snapshot, swap.
func BenchmarkRefreshCatalog(b *testing.B) {
	r := newRefreshRig(b, refreshDir(b))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := r.srv.RefreshCatalog(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
