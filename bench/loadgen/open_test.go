package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseGoroutines(t *testing.T) {
	cases := []struct {
		name, page string
		want       int
		wantErr    bool
	}{
		{"sluice /metrics", "# HELP go_gc_duration_seconds x\ngo_gc_duration_seconds{quantile=\"0\"} 1e-05\n" +
			"# HELP go_goroutines Number of goroutines that currently exist.\n# TYPE go_goroutines gauge\ngo_goroutines 8123\ngo_info{version=\"go1.26\"} 1\n", 8123, false},
		{"float notation", "go_goroutines 1.23e+02\n", 123, false},
		{"with labels", "go_goroutines{instance=\"a\"} 42\n", 42, false},
		{"with a timestamp", "go_goroutines 7 1700000000000\n", 7, false},
		{"a longer name first", "go_goroutines_total 5\ngo_goroutines 6\n", 6, false},
		{"pprof goroutine page", "goroutine profile: total 4051\n1 @ 0x1\n", 4051, false},
		{"missing", "go_threads 9\n", 0, true},
		{"empty", "", 0, true},
		{"fraction", "go_goroutines 1.5\n", 0, true},
		{"negative", "go_goroutines -1\n", 0, true},
		{"garbage", "go_goroutines many\n", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseGoroutines(tc.page)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("parseGoroutines = %d, %v; want %d, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestCoreBusy(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	a := parseCoreTimes("cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 100 0 100 800 0 0 0 0 0 0\ncpu1 0 0 0 1000 0 0 0 0 0 0\nintr 5\n")
	b := parseCoreTimes("cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 150 0 150 800 100 0 0 0 9 9\ncpu1 100 0 0 1050 0 25 25 50 0 0\nintr 5\n")
	if len(a) != 2 || len(b) != 2 {
		t.Fatalf("parsed %d and %d CPUs, want 2 (the aggregate line is skipped)", len(a), len(b))
	}
	got := coreBusy(a, b)
	// cpu0: busy +100 of +200 (iowait not busy, guest not counted twice);
	// cpu1: busy +150 of +250 (steal not busy).
	if len(got) != 2 || got[0] != 50 || got[1] != 60 {
		t.Fatalf("coreBusy = %v, want [50 60]", got)
	}
	if coreBusy(a, b[:1]) != nil || coreBusy(nil, nil) != nil {
		t.Fatal("coreBusy of mismatched readings must be nil")
	}
	if cs, err := readCoreTimes(); err != nil || len(cs) == 0 {
		t.Fatalf("own /proc/stat: %v, %d CPUs", err, len(cs))
	}
}

func TestParseStatusThreads(t *testing.T) {
	st := parseStatus("Name:\tnode\nVmHWM:\t 100 kB\nVmRSS:\t 90 kB\nThreads:\t11\n")
	if st.threads != 11 || st.rss != 90 || st.hwm != 100 {
		t.Fatalf("parseStatus = %+v", st)
	}
}

func TestRampStartSpreadsWorkers(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ramp := 4 * time.Second
	for _, tc := range []struct {
		w, n int
		want time.Duration
	}{{0, 8, 0}, {1, 8, 500 * time.Millisecond}, {4, 8, 2 * time.Second}, {7, 8, 3500 * time.Millisecond}, {7999, 8000, 3999500 * time.Microsecond}} {
		if got := rampStart(t0, ramp, tc.w, tc.n).Sub(t0); got != tc.want {
			t.Errorf("worker %d of %d starts at +%v, want +%v", tc.w, tc.n, got, tc.want)
		}
	}
	if got := rampStart(t0, 0, 5, 10); !got.Equal(t0) {
		t.Errorf("no ramp: worker starts at %v, want the start", got)
	}
}

func TestSummarizeOpen(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rampEnd := t0.Add(time.Second)
	ms := time.Millisecond
	samples := []sample{
		{start: t0, lat: 5 * time.Second, ttfb: 900 * ms, chunks: 22},                          // in the ramp: latency, not TTFB
		{start: rampEnd, lat: 5 * time.Second, ttfb: 310 * ms, chunks: 22},                     // steady
		{start: rampEnd.Add(ms), lat: 5 * time.Second, ttfb: 330 * ms, chunks: 22},             // steady
		{start: rampEnd.Add(2 * ms), err: "unexpected EOF", chunks: 5},                         // an error still counts its events
		{start: rampEnd.Add(3 * ms), lat: 5100 * time.Millisecond, ttfb: 320 * ms, chunks: 22}, // steady
	}
	res := summarizeOpen(samples, 10*time.Second, rampEnd, 300*ms)
	o := res.Open
	if res.Requests != 5 || res.OK != 4 || res.Errors != 1 || o.Streams != 5 || o.SteadyStreams != 3 {
		t.Fatalf("requests %d ok %d errors %d streams %d steady %d", res.Requests, res.OK, res.Errors, o.Streams, o.SteadyStreams)
	}
	if o.Chunks != 93 || o.ChunksPerStream != 18.6 {
		t.Fatalf("chunks %d (%v a stream), want 93 (18.6)", o.Chunks, o.ChunksPerStream)
	}
	if res.TTFB.P50 != 320 || res.TTFB.Max != 330 || o.TTFBAdded.P50 != 20 || o.TTFBAdded.P99 != 30 || o.UpstreamTTFBMs != 300 {
		t.Fatalf("ttfb %+v added %+v", res.TTFB, o.TTFBAdded)
	}
	// No stream started after the ramp: TTFB falls back to every stream.
	res = summarizeOpen(samples[:1], time.Second, rampEnd, 300*ms)
	if res.Open.SteadyStreams != 0 || res.TTFB.P50 != 900 || res.Open.TTFBAdded.P50 != 600 {
		t.Fatalf("fallback: steady %d ttfb %+v added %+v", res.Open.SteadyStreams, res.TTFB, res.Open.TTFBAdded)
	}
}

func TestPerStreamAndChunk(t *testing.T) {
	perStream, perChunk := perStreamAndChunk(1500, 1000, 22000)
	if perStream != 1.5 || perChunk != 68.182 {
		t.Fatalf("1500 ms over 1000 streams, 22000 events = %v ms, %v µs; want 1.5, 68.182", perStream, perChunk)
	}
	if s, c := perStreamAndChunk(10, 0, 0); s != 0 || c != 0 {
		t.Fatalf("nothing carried: %v, %v", s, c)
	}
}

func TestOpenConfigBounds(t *testing.T) {
	base := OpenConfig{Config: Config{URL: "http://127.0.0.1:1/v1/chat/completions", Timeout: time.Second},
		Workers: 100, Ramp: time.Second, Hold: time.Second}
	if err := base.validate(20000); err != nil {
		t.Fatalf("base config refused: %v", err)
	}
	cases := map[string]func(*OpenConfig){
		"non-loopback URL":        func(c *OpenConfig) { c.URL = "http://192.0.2.1/v1/chat/completions" },
		"non-loopback goroutines": func(c *OpenConfig) { c.GoroutinesURL = "http://example.com/metrics" },
		"non-loopback stats":      func(c *OpenConfig) { c.UpstreamStatsURL = "http://10.1.1.1/stats" },
		"no workers":              func(c *OpenConfig) { c.Workers = 0 },
		"too many workers":        func(c *OpenConfig) { c.Workers = maxOpenWorkers + 1 },
		"beyond the file limit":   func(c *OpenConfig) { c.Workers = 20000 - fdMargin + 1 },
		"no hold":                 func(c *OpenConfig) { c.Hold = 0 },
		"negative ramp":           func(c *OpenConfig) { c.Ramp = -time.Second },
		"unbounded":               func(c *OpenConfig) { c.Hold = maxDuration },
		"warm-up too long":        func(c *OpenConfig) { c.Warmup = maxWarmup + 1 },
		"no timeout":              func(c *OpenConfig) { c.Timeout = 0 },
		"negative upstream TTFB":  func(c *OpenConfig) { c.UpstreamTTFB = -time.Millisecond },
	}
	for name, mutate := range cases {
		cfg := base
		mutate(&cfg)
		if err := cfg.validate(20000); err == nil {
			t.Errorf("%s: accepted, want a refusal", name)
		}
	}
	if lim, err := raiseNoFile(); err != nil || lim == 0 {
		t.Fatalf("raiseNoFile = %d, %v", lim, err)
	}
}

// TestRunOpenAgainstStreams holds a few streams open against a loopback
// server that streams a fixed number of events, and checks what is counted;
// nothing here depends on how long anything took.
func TestRunOpenAgainstStreams(t *testing.T) {
	const events = 5 // data events before [DONE]
	var open atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		open.Add(1)
		defer open.Add(-1)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range events {
			fmt.Fprintf(w, "data: {\"i\":%d}\n\n", i)
			w.(http.Flusher).Flush()
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "go_goroutines %d\n", 10+open.Load())
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"served":0,"open":%d}`, open.Load())
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cfg := OpenConfig{
		Config: Config{URL: srv.URL + "/v1/chat/completions", Model: "m", Timeout: 5 * time.Second,
			Warmup: 3, Watch: []int{os.Getpid()}, Meta: map[string]string{"target": "t"}},
		Workers: 8, Ramp: 40 * time.Millisecond, Hold: time.Second, UpstreamTTFB: 0,
		GoroutinesURL: srv.URL + "/metrics", UpstreamStatsURL: srv.URL + "/stats",
	}
	res, err := RunOpen(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := res.Open
	if res.Errors != 0 || o.Streams < 1 || o.Streams != res.Requests || o.Chunks != int64(events*o.Streams) || o.ChunksPerStream != events {
		t.Fatalf("errors %d (%v), streams %d, chunks %d (%v a stream)", res.Errors, res.ErrorSample, o.Streams, o.Chunks, o.ChunksPerStream)
	}
	if o.Workers != 8 || o.NoFile == 0 || o.OpenMax > 8 || o.OpenMin > o.OpenMax || res.Meta["target"] != "t" || !res.Stream {
		t.Fatalf("open stats %+v", o)
	}
	if res.TTFB == nil || o.TTFBAdded.P50 != res.TTFB.P50 { // the upstream's own TTFB was given as 0
		t.Fatalf("ttfb %+v, added %+v", res.TTFB, o.TTFBAdded)
	}
	if len(o.Watched) != 1 || o.Watched[0].IdleRSSKB <= 0 || o.Watched[0].PeakRSSKB <= 0 || o.Watched[0].ThreadsIdle <= 0 {
		t.Fatalf("watch %+v", o.Watched)
	}
	g := o.Watched[0].Goroutines
	if g == nil || g.Idle != 10 || g.Max < g.Idle || g.Max > 18 {
		t.Fatalf("goroutines %+v: want idle 10 (no stream open), max ≤ 10 + 8 workers", g)
	}
	if len(res.CoreBusyPct) == 0 {
		t.Fatal("no per-core busy share")
	}
}

// TestLongLineIsOneEvent: an event longer than the reader's buffer arrives
// in pieces, and a later piece that happens to start with "data:" is not an
// event of its own.
func TestLongLineIsOneEvent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// 16 bytes (the smallest buffer), then a piece starting "data:".
		_, _ = io.WriteString(w, "data: 0123456789data: {\"x\":1}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	cfg := Config{URL: srv.URL, Stream: true, Timeout: 5 * time.Second}
	s := one(context.Background(), srv.Client(), &cfg, requestBody(&cfg), 16)
	if s.err != "" || s.chunks != 1 {
		t.Fatalf("chunks %d, err %q: want 1 event and [DONE]", s.chunks, s.err)
	}
}

// TestOpenBacksOffAfterErrors: a target that refuses every stream gets at
// most one attempt per worker per errorBackoff (timers never fire early, so
// the bound holds however slow the machine), and every attempt is an error.
func TestOpenBacksOffAfterErrors(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		http.Error(w, `{"error":{"message":"no"}}`, http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	const workers, hold = 4, 3 * errorBackoff
	res, err := RunOpen(context.Background(), OpenConfig{Config: Config{URL: srv.URL, Timeout: 5 * time.Second}, Workers: workers, Hold: hold})
	if err != nil {
		t.Fatal(err)
	}
	limit := workers * (int(hold/errorBackoff) + 1)
	if res.Requests < 1 || res.Requests > limit || res.Errors != res.Requests || int(served.Load()) != res.Requests {
		t.Fatalf("%d streams, %d errors, %d served: want 1..%d, all errors", res.Requests, res.Errors, served.Load(), limit)
	}
	if len(res.ErrorSample) != 1 || !strings.Contains(res.ErrorSample[0], "status 503") {
		t.Fatalf("error sample %q: want the one distinct message", res.ErrorSample)
	}
}
