package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/gateway/shared/redistest"
)

// BenchmarkSharedState serves non-streaming chat completions at
// concurrency 32 (RunParallel with 16 goroutines a core on the 2-core
// machine) through the whole request path, with the state in process and
// with it on Redis, side by side in one run: a key with a monthly budget and
// a rate limit (so admission reserves and checks), a session pin, and the
// response cache on (every request a miss: each body is distinct). The
// upstream is canned (no network), so the comparison isolates what the
// shared state costs the gateway; the request log is off. The ratio of the
// two req/s is the perf budget (Redis within 15 % of in-process). Each mode
// also reports its median request latency (p50-µs) and, with Redis, the
// server's CPU per request (redis-µs/req: INFO cpu's user and system
// seconds over the run, the writes behind flushed, over the requests
// served; SLUICE_BENCH_COMMANDSTATS=1 logs INFO commandstats too).
func BenchmarkSharedState(b *testing.B) {
	rd := redistest.Start(b)
	for _, mode := range []string{"in-process", "redis"} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			if err := os.CopyFS(dir, sluice.DemoConfig()); err != nil {
				b.Fatal(err)
			}
			p := dir + "/sluice.toml"
			cfg, _ := os.ReadFile(p)
			s := string(cfg)
			s = strings.Replace(s, "kind = \"sqlite\"\n", "kind = \"off\"\n", 1)
			s = strings.Replace(s, "project = \"chat\"\n", "project = \"chat\"\nmonthly_budget_usd = 1000000.0\nrate_limit = { rpm = 100000000, max_parallel = 100000 }\n", 1)
			if mode == "redis" {
				s = strings.Replace(s, "[retry]\n", fmt.Sprintf("[shared]\nredis_url = %q\nkey_prefix = \"bench%d:\"\n\n[retry]\n", rd.URL(), time.Now().UnixNano()), 1)
			}
			_ = os.WriteFile(p, []byte(s), 0o644)
			answer := []byte(`{"id":"gen-1","object":"chat.completion","created":1,"model":"openai/gpt-4o","provider":"openai",` +
				`"choices":[{"index":0,"message":{"role":"assistant","content":"Three bullet points."},"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":42,"completion_tokens":12,"total_tokens":54}}`)
			srv, err := gateway.New(gateway.Options{ConfigDir: dir, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Transport: cannedTransport{answer},
				UpstreamURLs: map[string]string{"market": "http://upstream.invalid/api/v1"}})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = srv.Close(ctx)
			}()
			h := srv.Handler()
			rdb := redis.NewClient(&redis.Options{Addr: rd.Addr()})
			defer rdb.Close()
			var cpu0 float64
			if mode == "redis" {
				if err := rdb.ConfigResetStat(context.Background()).Err(); err != nil {
					b.Fatal(err)
				}
				cpu0 = redisCPU(b, rdb)
			}
			var lat latencies
			var seq atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(16)
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := seq.Add(1)
					body := fmt.Sprintf(`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"Summarise report %d."}],"max_tokens":64}`, i)
					req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader([]byte(body)))
					req.Header.Set("Authorization", "Bearer sk-sluice-demo-chat")
					req.Header.Set("X-Session-Id", fmt.Sprintf("s%d", i%64))
					rec := httptest.NewRecorder()
					t0 := time.Now()
					h.ServeHTTP(rec, req)
					lat.add(time.Since(t0))
					if rec.Code != 200 {
						b.Fatal(rec.Code, rec.Body.String())
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
			b.ReportMetric(float64(lat.median().Microseconds()), "p50-µs")
			if mode == "redis" {
				// Flush what the replica writes behind before reading.
				_ = srv.Close(context.Background())
				b.ReportMetric((redisCPU(b, rdb)-cpu0)*1e6/float64(b.N), "redis-µs/req")
				info, err := rdb.Info(context.Background(), "commandstats").Result()
				if err != nil {
					b.Fatal(err)
				}
				if os.Getenv("SLUICE_BENCH_COMMANDSTATS") != "" {
					b.Logf("N=%d\n%s", b.N, info)
				}
			}
		})
	}
}

// latencies collects request durations from many goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) median() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	slices.Sort(l.d)
	return l.d[len(l.d)/2]
}

// redisCPU is the CPU seconds redis-server used so far (INFO cpu: user
// and system, its main thread and the protocol's work included).
func redisCPU(b *testing.B, rdb *redis.Client) float64 {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}
