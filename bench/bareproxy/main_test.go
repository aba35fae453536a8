package main

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDebugMetricsCountsGoroutines: /metrics carries a go_goroutines line in
// the Prometheus text format, with a count that is at least this test's own
// goroutine.
func TestDebugMetricsCountsGoroutines(t *testing.T) {
	rec := httptest.NewRecorder()
	debugHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	m := regexp.MustCompile(`(?m)^go_goroutines (\d+)$`).FindStringSubmatch(rec.Body.String())
	if rec.Code != http.StatusOK || m == nil {
		t.Fatalf("status %d, body %q: want a go_goroutines line", rec.Code, rec.Body)
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 {
		t.Fatalf("go_goroutines %d, want ≥ 1", n)
	}
}

func TestDebugListenerLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "10.0.0.1:0", "nohost"} {
		if err := serveDebug(addr, ""); err == nil || !strings.Contains(err.Error(), "loopback only") {
			t.Errorf("serveDebug(%q) = %v, want a loopback refusal", addr, err)
		}
	}
	if err := run("127.0.0.1:0", "http://example.com", "", "", 0); err == nil {
		t.Error("run accepted a non-loopback target")
	}
}
