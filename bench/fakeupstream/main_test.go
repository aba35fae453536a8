package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// flushCounter records the body and counts flushes.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushCounter) Flush() { f.flushes++; f.ResponseRecorder.Flush() }

func post(t *testing.T, u *Upstream, body string) *flushCounter {
	t.Helper()
	rec := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
	u.Handler().ServeHTTP(rec, req)
	return rec
}

func TestCompletionEchoesModelWithUsage(t *testing.T) {
	rec := post(t, &Upstream{Chunks: 3}, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var got struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Usage struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, rec.Body)
	}
	if got.Model != "gpt-4o-mini" || len(got.Choices) != 1 || got.Choices[0].Message.Content == "" || got.Usage.TotalTokens == 0 {
		t.Fatalf("unexpected completion: %+v", got)
	}
}

func TestStreamShape(t *testing.T) {
	const n = 5
	rec := post(t, &Upstream{Chunks: n}, `{"model":"m\"odel","stream":true}`)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	var events []string
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line is not an SSE data line: %q", line)
		}
		events = append(events, data)
	}
	// role chunk + n content chunks + finish/usage chunk + [DONE]
	if len(events) != n+3 {
		t.Fatalf("got %d events, want %d: %q", len(events), n+3, events)
	}
	if events[len(events)-1] != "[DONE]" {
		t.Fatalf("last event %q, want [DONE]", events[len(events)-1])
	}
	if rec.flushes != len(events) {
		t.Fatalf("flushed %d times for %d events: every event must be flushed", rec.flushes, len(events))
	}
	content := 0
	for i, ev := range events[:len(events)-1] {
		var c struct {
			Object  string `json:"object"`
			Model   string `json:"model"`
			Choices []struct {
				Delta        struct{ Content string } `json:"delta"`
				FinishReason *string                  `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("event %d is not JSON: %v: %s", i, err, ev)
		}
		if c.Object != "chat.completion.chunk" || c.Model != `m"odel` || len(c.Choices) != 1 {
			t.Fatalf("event %d: %s", i, ev)
		}
		if c.Choices[0].Delta.Content != "" {
			content++
		}
		last := i == len(events)-2
		if last != (c.Choices[0].FinishReason != nil) || last != (c.Usage != nil) {
			t.Fatalf("event %d: finish_reason and usage belong to the last chunk only: %s", i, ev)
		}
		if last && c.Usage.CompletionTokens != n {
			t.Fatalf("usage completion_tokens %d, want %d", c.Usage.CompletionTokens, n)
		}
	}
	if content != n {
		t.Fatalf("%d content chunks, want %d", content, n)
	}
}

func TestRejectsBadRequests(t *testing.T) {
	for _, body := range []string{`{`, `{"messages":[]}`} {
		if rec := post(t, &Upstream{Chunks: 1}, body); rec.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", body, rec.Code)
		}
	}
}

func TestLoopbackOnly(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "127.1.2.3": true, "::1": true, "localhost": true,
		"0.0.0.0": false, "": false, "10.0.0.1": false, "example.com": false} {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
	if err := run("0.0.0.0:0", "", &Upstream{}); err == nil || !strings.Contains(err.Error(), "loopback only") {
		t.Fatalf("run on 0.0.0.0: %v, want a loopback refusal", err)
	}
}

// sseEvents returns the data payloads of an SSE body, in order.
func sseEvents(t *testing.T, body string) []string {
	t.Helper()
	var events []string
	for line := range strings.SplitSeq(body, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			events = append(events, data)
		}
	}
	return events
}

// TestOpenStreamShape: with a first-token delay and an interval the stream
// has the same events as without, the headers are flushed before the first
// event (one flush more), and /stats counts it served and no longer open.
// The delays are a few milliseconds: the test asserts shape, never timing.
func TestOpenStreamShape(t *testing.T) {
	cases := []struct {
		name           string
		up             *Upstream
		extraFlushes   int
		contentChunks  int
		completionToks string
	}{
		{"no delays", &Upstream{Chunks: 3}, 0, 3, `"completion_tokens":3`},
		{"first token and interval", &Upstream{Chunks: 3, FirstToken: time.Millisecond, Interval: time.Millisecond}, 1, 3, `"completion_tokens":3`},
		{"interval only", &Upstream{Chunks: 4, Interval: time.Millisecond}, 0, 4, `"completion_tokens":4`},
		{"token-rate shape", &Upstream{Chunks: 100, FirstToken: time.Millisecond, Interval: 10 * time.Microsecond}, 1, 100, `"completion_tokens":100`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := post(t, tc.up, `{"model":"m","stream":true}`)
			events := sseEvents(t, rec.Body.String())
			if len(events) != tc.contentChunks+3 || events[len(events)-1] != "[DONE]" {
				t.Fatalf("%d events, want %d ending in [DONE]: %q", len(events), tc.contentChunks+3, events)
			}
			if !strings.Contains(events[0], `"role":"assistant"`) || !strings.Contains(events[len(events)-2], tc.completionToks) {
				t.Fatalf("first or last event out of shape: %q / %q", events[0], events[len(events)-2])
			}
			if rec.flushes != len(events)+tc.extraFlushes {
				t.Fatalf("%d flushes for %d events, want %d", rec.flushes, len(events), len(events)+tc.extraFlushes)
			}
			if tc.up.Served.Load() != 1 || tc.up.Open.Load() != 0 {
				t.Fatalf("served %d, open %d after one stream; want 1, 0", tc.up.Served.Load(), tc.up.Open.Load())
			}
		})
	}
}

// TestStreamEndsWhenTheClientGoes: a client that is gone before the first
// token gets the headers and nothing else, and the stream is no longer open.
func TestStreamEndsWhenTheClientGoes(t *testing.T) {
	up := &Upstream{Chunks: 20, FirstToken: time.Hour, Interval: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true}`))
	up.Handler().ServeHTTP(rec, req) // returns at once: the wait sees the cancelled context
	if rec.Code != http.StatusOK || rec.flushes != 1 || len(sseEvents(t, rec.Body.String())) != 0 {
		t.Fatalf("status %d, %d flushes, body %q: want 200, the headers flushed once, no event", rec.Code, rec.flushes, rec.Body)
	}
	if up.Open.Load() != 0 {
		t.Fatalf("open = %d after the client went, want 0", up.Open.Load())
	}
}

func TestStatsEndpoint(t *testing.T) {
	up := &Upstream{Chunks: 1}
	post(t, up, `{"model":"m"}`)
	post(t, up, `{"model":"m","stream":true}`)
	rec := httptest.NewRecorder()
	up.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/stats", nil))
	var st Stats
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatalf("/stats: %v: %s", err, rec.Body)
	}
	if st != (Stats{Served: 2, Open: 0}) {
		t.Fatalf("/stats = %+v, want served 2, open 0", st)
	}
}
