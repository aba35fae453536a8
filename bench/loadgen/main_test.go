package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

func TestCheckLoopback(t *testing.T) {
	ok := []string{
		"http://127.0.0.1:8080/v1/chat/completions",
		"http://127.3.4.5/x",
		"http://[::1]:9/x",
		"http://localhost:1/x",
		"https://LOCALHOST/x",
	}
	for _, u := range ok {
		if err := CheckLoopback(u); err != nil {
			t.Errorf("CheckLoopback(%q) = %v, want nil", u, err)
		}
	}
	refused := []string{
		"http://10.0.0.1/x",
		"http://192.168.1.1/x",
		"http://172.16.0.1/x",
		"http://8.8.8.8/x",
		"http://example.com/x",
		"http://localhost.example.com/x",
		"http://0.0.0.0:8080/x",
		"http://[::]:8080/x",
		"http://128.0.0.1/x",
		"ftp://127.0.0.1/x",
		"127.0.0.1:8080",
		"",
	}
	for _, u := range refused {
		if err := CheckLoopback(u); err == nil {
			t.Errorf("CheckLoopback(%q) = nil, want a refusal", u)
		}
	}
}

func TestRunRefusesNonLoopbackAndUnbounded(t *testing.T) {
	base := Config{URL: "http://127.0.0.1:1/v1/chat/completions", C: 1, N: 1, D: time.Second, Timeout: time.Second}
	cases := map[string]func(*Config){
		"non-loopback": func(c *Config) { c.URL = "http://203.0.113.7/v1/chat/completions" },
		"no count":     func(c *Config) { c.N = 0 },
		"no duration":  func(c *Config) { c.D = 0 },
		"no workers":   func(c *Config) { c.C = 0 },
	}
	for name, mutate := range cases {
		cfg := base
		mutate(&cfg)
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("%s: Run succeeded, want an error", name)
		}
	}
	// The dialer refuses a non-loopback address even if a name led there.
	if err := loopbackDialer().Control("tcp4", "192.0.2.1:80", nil); err == nil {
		t.Error("dialer accepted a non-loopback address")
	}
	if err := loopbackDialer().Control("tcp4", "127.0.0.1:80", nil); err != nil {
		t.Errorf("dialer refused loopback: %v", err)
	}
}

func TestPercentileNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for p, want := range map[float64]time.Duration{50: 50, 90: 90, 99: 99, 100: 100, 1: 1, 0.5: 1} {
		if got := Percentile(ds, p); got != want*time.Millisecond {
			t.Errorf("p%v of 1..100 ms = %v, want %v ms", p, got, want)
		}
	}
	ten := ds[:10] // 1..10 ms
	for p, want := range map[float64]time.Duration{50: 5, 90: 9, 99: 10, 91: 10} {
		if got := Percentile(ten, p); got != want*time.Millisecond {
			t.Errorf("p%v of 1..10 ms = %v, want %v ms", p, got, want)
		}
	}
	if got := Percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("single value: %v", got)
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("empty: %v", got)
	}
	p := percentiles([]time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond})
	if p.P50 != 2 || p.P99 != 3 || p.Max != 3 || p.Mean != 2 {
		t.Errorf("percentiles of {3,1,2} ms = %+v", p)
	}
}

func TestProcParsing(t *testing.T) {
	stat := "4242 (my (odd) proc) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 8 0 12345 0 0"
	cpu, err := parseStatCPU(stat)
	if err != nil || cpu != 325 {
		t.Fatalf("parseStatCPU = %d, %v; want 325", cpu, err)
	}
	st := parseStatus("Name:\tx\nVmHWM:\t   51200 kB\nVmRSS:\t   40960 kB\n")
	if st.hwm != 51200 || st.rss != 40960 {
		t.Fatalf("parseStatus = %+v", st)
	}
	if _, err := cpuTicks(os.Getpid()); err != nil {
		t.Fatalf("own /proc stat: %v", err)
	}
}

// TestRunAgainstStream runs a tiny bounded load against a loopback server,
// watching this process.
func TestRunAgainstStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Authorization") != "Bearer k" || r.Header.Get("X-Extra") != "v" {
			http.Error(w, "no auth", http.StatusUnauthorized)
			return
		}
		if !strings.Contains(string(b), `"stream":true`) {
			_, _ = io.WriteString(w, `{"ok":true}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, ": comment\n\ndata: {\"a\":1}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	for _, stream := range []bool{false, true} {
		cfg := Config{URL: srv.URL + "/v1/chat/completions", Key: "k", Model: "m", Stream: stream, C: 4, N: 40, D: 10 * time.Second,
			Warmup: 4, Timeout: 5 * time.Second, Headers: http.Header{"X-Extra": {"v"}}, Watch: []int{os.Getpid()}}
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 40 || res.OK != 40 || res.Errors != 0 || res.StoppedBy != "n" {
			t.Fatalf("stream=%v: %+v", stream, res)
		}
		if (res.TTFB != nil) != stream || res.Latency.P50 <= 0 || res.RPS <= 0 {
			t.Fatalf("stream=%v: %+v", stream, res)
		}
		if len(res.Watched) != 1 || res.Watched[0].PeakRSSKB <= 0 || res.Watched[0].VmHWMKB <= 0 {
			t.Fatalf("watch: %+v", res.Watched)
		}
	}
	// A stream without [DONE] is an error.
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "data: {\"a\":1}\n\n")
	}))
	defer cut.Close()
	res, err := Run(context.Background(), Config{URL: cut.URL, Stream: true, C: 1, N: 3, D: 5 * time.Second, Timeout: time.Second})
	if err != nil || res.Errors != 3 || res.OK != 0 {
		t.Fatalf("cut stream: %+v, %v", res, err)
	}
}
