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
	"syscall"
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
// -cache-off modes are the same with [cache] enabled = false (the
// cache's miss-heavy budget compares in-process with in-process-cache-off),
// and redis-hits repeats 64 bodies, warmed before the clock starts, so
// that every request is a cache hit. The cache is as configured by default
// ([cache] store_after = 2: every request a miss stores nothing); with Redis each mode also reports
// redis-cmds/req (INFO stats' commands processed over the requests: a
// coalesced MGET counts once for all the requests it reads for). The
// upstream is canned (no network), so the comparison isolates what the
// shared state costs the gateway; the request log is off. The ratio of the
// two req/s is the perf budget (Redis within 15 % of in-process). Each mode
// also reports its median request latency (p50-µs), the test process's CPU
// per request (cpu-µs/req: the gateway and the load together, the figure
// that holds on a machine shared with other work) and, with Redis, the
// server's CPU per request (redis-µs/req: INFO cpu's user and system
// seconds over the run, the writes behind flushed, over the requests
// served; SLUICE_BENCH_COMMANDSTATS=1 logs INFO commandstats too).
func BenchmarkSharedState(b *testing.B) {
	rd := redistest.Start(b)
	for _, mode := range []string{"in-process-cache-off", "in-process", "redis-cache-off", "redis", "redis-hits"} {
		b.Run(mode, func(b *testing.B) {
			onRedis, hits := strings.HasPrefix(mode, "redis"), mode == "redis-hits"
			dir := b.TempDir()
			if err := os.CopyFS(dir, sluice.DemoConfig()); err != nil {
				b.Fatal(err)
			}
			p := dir + "/sluice.toml"
			cfg, _ := os.ReadFile(p)
			s := string(cfg)
			s = strings.Replace(s, "kind = \"sqlite\"\n", "kind = \"off\"\n", 1)
			s = strings.Replace(s, "project = \"chat\"\n", "project = \"chat\"\nmonthly_budget_usd = 1000000.0\nrate_limit = { rpm = 100000000, max_parallel = 100000 }\n", 1)
			if strings.HasSuffix(mode, "-cache-off") {
				s = strings.Replace(s, "[cache]\nenabled = true", "[cache]\nenabled = false", 1)
			}
			prefix := fmt.Sprintf("bench%d:", time.Now().UnixNano())
			if onRedis {
				s = strings.Replace(s, "[retry]\n", fmt.Sprintf("[shared]\nredis_url = %q\nkey_prefix = %q\n\n[retry]\n", rd.URL(), prefix), 1)
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
			bodyOf := func(i int64) string {
				if hits {
					i %= 64
				}
				return fmt.Sprintf(`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"Summarise report %d."}],"max_tokens":64}`, i)
			}
			if hits {
				// Warm the cache: each body answered twice (store_after
				// = 2 stores on the second sighting), its answer landed
				// in Redis and in the replica's filter.
				for i := range int64(128) {
					serveOne(b, h, bodyOf(i/2))
				}
				for end := time.Now().Add(10 * time.Second); rdb.ZCard(context.Background(), prefix+"cx").Val() < 64; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(end) {
						b.Fatal("the warm-up answers did not land in the shared cache")
					}
				}
			}
			var cpu0 float64
			var cmds0 int64
			if onRedis {
				if err := rdb.ConfigResetStat(context.Background()).Err(); err != nil {
					b.Fatal(err)
				}
				cpu0, cmds0 = redisCPU(b, rdb), redisCommands(b, rdb)
			}
			var lat latencies
			var seq atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(16)
			cpuStart := processCPU()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := seq.Add(1)
					body := bodyOf(i)
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
					if hits && rec.Header().Get(gateway.HeaderCache) != "hit" {
						b.Fatal("not a cache hit")
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
			b.ReportMetric((processCPU()-cpuStart).Seconds()*1e6/float64(b.N), "cpu-µs/req")
			b.ReportMetric(float64(lat.median().Microseconds()), "p50-µs")
			if onRedis {
				// Flush what the replica writes behind before reading.
				_ = srv.Close(context.Background())
				// Less the INFO stats of cmds0.
				b.ReportMetric(float64(redisCommands(b, rdb)-cmds0-1)/float64(b.N), "redis-cmds/req")
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

// redisCommands is the commands redis-server processed so far (INFO
// stats' total_commands_processed).
func redisCommands(b *testing.B, rdb *redis.Client) int64 {
	info, err := rdb.Info(context.Background(), "stats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatal("no total_commands_processed in INFO stats")
	return 0
}

// processCPU is the CPU time this process used so far (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
