package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
