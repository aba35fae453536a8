package simulator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func orURL(s *Server) string { return s.URL(KindOpenRouter) + "/chat/completions" }

func orBody(stream bool) string {
	return fmt.Sprintf(`{"model":"acme/gamma","stream":%t,%s}`, stream, hello)
}

func TestRecordedErrorsReplayedByteForByte(t *testing.T) {
	s := startSim(t, testConfig())
	recs := s.ErrorBodies()
	require.NotEmpty(t, recs)
	for name, rec := range recs {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", name, stream), func(t *testing.T) {
				r := post(t, s.URL(KindOpenAI)+"/chat/completions",
					fmt.Sprintf(`{"model":"gpt-x","stream":%t,%s}`, stream, hello), FaultHeader, "error="+name)
				require.NoError(t, r.err)
				assert.Equal(t, rec.Status, r.status)
				assert.Equal(t, string(rec.Body), string(r.body))
				for k, v := range rec.Headers {
					assert.Equal(t, v, r.header.Get(k))
				}
			})
		}
	}
}

func TestStatusFaultShapes(t *testing.T) {
	s := startSim(t, testConfig())
	ah := []string{"x-api-key", "k", "anthropic-version", "2023-06-01", FaultHeader, "status=529"}
	r := post(t, s.URL(KindAnthropic)+"/messages", `{"model":"claude-x-1.5","max_tokens":5,`+hello+`}`, ah...)
	require.Equal(t, 529, r.status)
	m := r.json(t)
	assert.Equal(t, "error", m["type"])
	assert.Equal(t, "overloaded_error", m["error"].(map[string]any)["type"])

	r = post(t, s.URL(KindOpenAI)+"/chat/completions", `{"model":"gpt-x",`+hello+`}`, FaultHeader, "status=429")
	require.Equal(t, 429, r.status)
	assert.Equal(t, "rate_limit_exceeded", r.json(t)["error"].(map[string]any)["code"])

	r = post(t, orURL(s), orBody(true), FaultHeader, "status=503")
	require.Equal(t, 503, r.status, "an error before the first chunk is a plain error answer")
	assert.EqualValues(t, 503, r.json(t)["error"].(map[string]any)["code"])
	assert.Equal(t, 1, s.CallCount(CallFilter{Kind: KindOpenRouter, Status: 503}))
}

func TestDelayFault(t *testing.T) {
	s := startSim(t, testConfig())
	start := time.Now()
	r := post(t, orURL(s), orBody(false), FaultHeader, "delay=150ms")
	require.Equal(t, 200, r.status)
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
}

func TestHangAndHeadersThenNothing(t *testing.T) {
	s := startSim(t, testConfig())
	for _, fault := range []string{"hang", "headers_then_nothing"} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", fault, stream), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, "POST", orURL(s), strings.NewReader(orBody(stream)))
				req.Header.Set(FaultHeader, fault)
				start := time.Now()
				resp, err := http.DefaultClient.Do(req)
				if fault == "hang" {
					require.Error(t, err, "no headers ever arrive")
					assert.ErrorIs(t, err, context.DeadlineExceeded)
				} else {
					require.NoError(t, err, "headers arrive")
					assert.Equal(t, 200, resp.StatusCode)
					_, err = readAllErr(resp)
					assert.Error(t, err, "the body never arrives")
					resp.Body.Close()
				}
				assert.Less(t, time.Since(start), 2*time.Second)
			})
		}
	}
}

func readAllErr(resp *http.Response) ([]byte, error) {
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			if err.Error() == "EOF" {
				return []byte(sb.String()), nil
			}
			return []byte(sb.String()), err
		}
	}
}

func TestCutAfter(t *testing.T) {
	s := startSim(t, testConfig())
	r := post(t, orURL(s), orBody(true), FaultHeader, "cut_after=3")
	require.Equal(t, 200, r.status)
	require.Error(t, r.err, "the connection is cut mid-stream")
	evs := parseSSE(r.body)
	assert.Len(t, evs, 3)
	for _, e := range evs {
		assert.NotEqual(t, "[DONE]", e.data)
	}

	r = post(t, orURL(s), orBody(false), FaultHeader, "cut_after=3")
	require.Equal(t, 200, r.status)
	require.Error(t, r.err, "non-stream: the body is cut short")
	assert.False(t, json.Valid(r.body))

	ah := []string{"x-api-key", "k", "anthropic-version", "2023-06-01", FaultHeader, "cut_after=2"}
	r = post(t, s.URL(KindAnthropic)+"/messages", `{"model":"claude-x-1.5","max_tokens":5,"stream":true,`+hello+`}`, ah...)
	require.Error(t, r.err)
	evs = parseSSE(r.body)
	require.Len(t, evs, 2)
	assert.Equal(t, "content_block_start", evs[1].name)
}

func TestStreamErrorAfter(t *testing.T) {
	s := startSim(t, testConfig())
	r := post(t, orURL(s), orBody(true), FaultHeader, "stream_error_after=2")
	require.NoError(t, r.err)
	require.Equal(t, 200, r.status, "the status stays 200 after the first chunk")
	evs := parseSSE(r.body)
	require.Len(t, evs, 4, "two chunks, the error chunk, then [DONE] as OpenRouter sends it")
	var last map[string]any
	require.NoError(t, json.Unmarshal([]byte(evs[2].data), &last))
	assert.NotNil(t, last["error"])
	assert.Equal(t, "error", last["choices"].([]any)[0].(map[string]any)["finish_reason"])
	assert.Equal(t, "[DONE]", evs[3].data)

	// Non-stream: the status stays 200 and the error is inside the choice.
	r = post(t, orURL(s), orBody(false), FaultHeader, "stream_error_after=2")
	require.Equal(t, 200, r.status)
	choice := r.json(t)["choices"].([]any)[0].(map[string]any)
	assert.NotNil(t, choice["error"])
	assert.Equal(t, "error", choice["finish_reason"])

	r = post(t, s.URL(KindOpenAI)+"/chat/completions", `{"model":"gpt-x","stream":true,`+hello+`}`, FaultHeader, "stream_error_after=1")
	evs = parseSSE(r.body)
	require.Len(t, evs, 2)
	assert.Contains(t, evs[1].data, `"error"`)

	ah := []string{"x-api-key", "k", "anthropic-version", "2023-06-01", FaultHeader, "stream_error_after=3"}
	r = post(t, s.URL(KindAnthropic)+"/messages", `{"model":"claude-x-1.5","max_tokens":5,"stream":true,`+hello+`}`, ah...)
	evs = parseSSE(r.body)
	require.Len(t, evs, 4)
	assert.Equal(t, "error", evs[3].name)
	assert.Contains(t, evs[3].data, "overloaded_error")
}

func TestGarbageAndHugeError(t *testing.T) {
	s := startSim(t, testConfig())
	r := post(t, orURL(s), orBody(false), FaultHeader, "garbage")
	require.Equal(t, 200, r.status)
	assert.False(t, json.Valid(r.body))

	r = post(t, orURL(s), orBody(true), FaultHeader, "garbage")
	require.Equal(t, 200, r.status)
	evs := parseSSE(r.body)
	require.NotEmpty(t, evs)
	for _, e := range evs {
		assert.False(t, json.Valid([]byte(e.data)), e.data)
	}

	for _, stream := range []bool{false, true} {
		r = post(t, orURL(s), orBody(stream), FaultHeader, "huge_error;status=502")
		require.NoError(t, r.err)
		assert.Equal(t, 502, r.status)
		assert.Greater(t, len(r.body), 10<<20)
		assert.True(t, json.Valid(r.body))
	}
}

func TestSlowStream(t *testing.T) {
	cfg := testConfig()
	cfg.SlowStreamInterval = 20 * time.Millisecond
	s := startSim(t, cfg)
	for _, stream := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		r := postCtx(t, ctx, orURL(s), orBody(stream), FaultHeader, "slow_stream")
		cancel()
		require.Equal(t, 200, r.status)
		require.Error(t, r.err, "the answer never ends")
		if stream {
			assert.GreaterOrEqual(t, len(parseSSE(r.body)), 3)
		} else {
			assert.NotEmpty(t, r.body)
			assert.Empty(t, strings.TrimSpace(string(r.body)))
		}
	}
}

func TestTimesAndMultipleFaults(t *testing.T) {
	s := startSim(t, testConfig())
	r := post(t, orURL(s), orBody(false), FaultHeader, "status=429;times=1")
	assert.Equal(t, 429, r.status)
	r = post(t, orURL(s), orBody(false), FaultHeader, "status=429;times=1")
	assert.Equal(t, 200, r.status, "times=1 is used up")

	s.Reset()
	r = post(t, orURL(s), orBody(false), FaultHeader, "status=429;times=1")
	assert.Equal(t, 429, r.status, "Reset restores the budget")

	body := `{"model":"acme/alpha",` + hello + `}`
	r = post(t, orURL(s), body, "X-OpenRouter-Metadata", "enabled", FaultHeader, "status=503;provider=cheap, status=500;provider=multi")
	require.Equal(t, 200, r.status)
	assert.Equal(t, "quick", r.json(t)["provider"])
	assert.Equal(t, 1, s.CallCount(CallFilter{Provider: "multi/one", Status: 500}))
	assert.Equal(t, 1, s.CallCount(CallFilter{Provider: "multi/two", Status: 500}))
	assert.Equal(t, 1, s.CallCount(CallFilter{Provider: "multi", Status: 200})+s.CallCount(CallFilter{Provider: "quick", Status: 200}))
}

func TestProgrammaticFaults(t *testing.T) {
	s := startSim(t, testConfig())
	require.NoError(t, s.SetFaults(Fault{Action: FaultStatus, Status: 500, Provider: "cheap"}))
	r := post(t, orURL(s), `{"model":"acme/alpha",`+hello+`}`)
	require.Equal(t, 200, r.status)
	assert.Equal(t, "multi", r.json(t)["provider"])
	assert.Equal(t, 1, s.CallCount(CallFilter{Provider: "multi/one", Status: 200}))

	require.NoError(t, s.SetFaults(Fault{Action: FaultError, ErrorName: "anthropic/overloaded_error"}))
	r = post(t, s.URL(KindAnthropic)+"/messages", `{"model":"claude-x-1.5","max_tokens":5,`+hello+`}`, "x-api-key", "k", "anthropic-version", "2023-06-01")
	assert.Equal(t, 529, r.status)
	assert.Equal(t, string(s.ErrorBodies()["anthropic/overloaded_error"].Body), string(r.body))

	s.ClearFaults()
	r = post(t, orURL(s), `{"model":"acme/alpha",`+hello+`}`)
	assert.Equal(t, "cheap", r.json(t)["provider"])

	assert.Error(t, s.SetFaults(Fault{Action: FaultError, ErrorName: "openai/nope"}))
	assert.Error(t, s.SetFaults(Fault{Action: FaultStatus}))
}

func TestBadFaultHeader(t *testing.T) {
	s := startSim(t, testConfig())
	for _, bad := range []string{"status=abc", "explode", "error=openai/nope"} {
		for _, url := range []string{orURL(s), s.URL(KindVercel) + "/chat/completions", s.URL(KindOpenAI) + "/chat/completions", s.URL(KindAnthropic) + "/messages"} {
			r := post(t, url, `{"model":"acme/alpha",`+hello+`}`, FaultHeader, bad)
			require.Equal(t, 400, r.status, url)
			e := r.json(t)["error"].(map[string]any)
			assert.Equal(t, "simulator_error", e["type"])
			assert.Contains(t, e["message"], FaultHeader)
		}
	}
	assert.Empty(t, s.Calls(), "a refused fault header reaches no upstream")
}

func TestAnthropicShapes(t *testing.T) {
	s := startSim(t, testConfig())
	url := s.URL(KindAnthropic) + "/messages"
	ah := []string{"x-api-key", "k", "anthropic-version", "2023-06-01"}
	body := `{"model":"claude-x-1-5","max_tokens":5,"system":"be brief","messages":[{"role":"user","content":[{"type":"text","text":"hello"}]}]}`
	r := post(t, url, body, ah...)
	require.Equal(t, 200, r.status, string(r.body))
	m := r.json(t)
	assert.Equal(t, "message", m["type"])
	assert.Equal(t, "assistant", m["role"])
	assert.Equal(t, "claude-x-1-5-20250514", m["model"], "a dated id")
	assert.Equal(t, "end_turn", m["stop_reason"])
	content := m["content"].([]any)[0].(map[string]any)
	assert.Equal(t, "text", content["type"])
	assert.Equal(t, "served by anthropic/claude-x-1.5 via anthropic", content["text"])
	assert.EqualValues(t, 4, m["usage"].(map[string]any)["input_tokens"], "ceil((8+5)/4)")

	r = post(t, url, strings.Replace(body, `"max_tokens":5,`, `"stream":true,"max_tokens":5,`, 1), ah...)
	require.Equal(t, 200, r.status)
	assert.Equal(t, "text/event-stream; charset=utf-8", r.header.Get("Content-Type"))
	var names []string
	var text strings.Builder
	for _, e := range parseSSE(r.body) {
		names = append(names, e.name)
		var d map[string]any
		require.NoError(t, json.Unmarshal([]byte(e.data), &d), "padded data is still JSON: %s", e.data)
		assert.Equal(t, e.name, d["type"], "event name matches data.type")
		if e.name == "content_block_delta" {
			text.WriteString(d["delta"].(map[string]any)["text"].(string))
		}
	}
	assert.Equal(t, []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta",
		"content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}, names)
	assert.Equal(t, "served by anthropic/claude-x-1.5 via anthropic", text.String())

	cases := []struct {
		name, body string
		hdr        []string
		status     int
		typ, msg   string
	}{
		{"missing max_tokens", `{"model":"claude-x-1.5",` + hello + `}`, ah, 400, "invalid_request_error", "max_tokens: Field required"},
		{"missing key", `{"model":"claude-x-1.5","max_tokens":5,` + hello + `}`, []string{"anthropic-version", "2023-06-01"}, 401, "authentication_error", "x-api-key"},
		{"missing version", `{"model":"claude-x-1.5","max_tokens":5,` + hello + `}`, []string{"x-api-key", "k"}, 400, "invalid_request_error", "anthropic-version"},
		{"unknown model", `{"model":"claude-nope","max_tokens":5,` + hello + `}`, ah, 404, "not_found_error", "claude-nope"},
		{"not an anthropic model", `{"model":"gpt-x","max_tokens":5,` + hello + `}`, ah, 404, "not_found_error", "gpt-x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := post(t, url, c.body, c.hdr...)
			require.Equal(t, c.status, r.status)
			m := r.json(t)
			assert.Equal(t, "error", m["type"])
			e := m["error"].(map[string]any)
			assert.Equal(t, c.typ, e["type"])
			assert.Contains(t, e["message"], c.msg)
		})
	}
}

// TestAnthropicThinking: a request that enables thinking gets a thinking
// block with its signature before the text — whole in an answer, in a
// stream as thinking deltas then one signature delta — and the stream is
// framed as recorded: an event line per event, one ping after the first
// block's start, data padded before its closing brace (ping's never).
func TestAnthropicThinking(t *testing.T) {
	s := startSim(t, testConfig())
	url := s.URL(KindAnthropic) + "/messages"
	ah := []string{"x-api-key", "k", "anthropic-version", "2023-06-01"}
	body := `{"model":"claude-x-1-5","max_tokens":2048,"thinking":{"type":"enabled","budget_tokens":1024},` + hello + `}`
	r := post(t, url, body, ah...)
	require.Equal(t, 200, r.status, string(r.body))
	content := r.json(t)["content"].([]any)
	require.Len(t, content, 2)
	thinking := content[0].(map[string]any)
	assert.Equal(t, "thinking", thinking["type"])
	assert.NotEmpty(t, thinking["thinking"])
	assert.Regexp(t, `^E[A-Za-z0-9+/]{100,}=*$`, thinking["signature"])
	assert.Equal(t, "text", content[1].(map[string]any)["type"])

	r = post(t, url, strings.Replace(body, `"max_tokens"`, `"stream":true,"max_tokens"`, 1), ah...)
	require.Equal(t, 200, r.status)
	var kinds []string
	var signature, thought strings.Builder
	for _, e := range parseSSE(r.body) {
		var d struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
			Block struct {
				Type string `json:"type"`
			} `json:"content_block"`
			Delta struct {
				Type      string `json:"type"`
				Thinking  string `json:"thinking"`
				Signature string `json:"signature"`
			} `json:"delta"`
		}
		require.NoError(t, json.Unmarshal([]byte(e.data), &d), e.data)
		k := e.name
		switch e.name {
		case "content_block_start":
			k += "/" + d.Block.Type
		case "content_block_delta":
			k += "/" + d.Delta.Type
			thought.WriteString(d.Delta.Thinking)
			signature.WriteString(d.Delta.Signature)
		case "ping":
			assert.Equal(t, `{"type": "ping"}`, e.data)
		}
		if len(kinds) == 0 || kinds[len(kinds)-1] != k {
			kinds = append(kinds, k)
		}
	}
	assert.Equal(t, []string{"message_start", "content_block_start/thinking", "ping", "content_block_delta/thinking_delta",
		"content_block_delta/signature_delta", "content_block_stop", "content_block_start/text", "content_block_delta/text_delta",
		"content_block_stop", "message_delta", "message_stop"}, kinds)
	assert.Equal(t, thinking["thinking"], thought.String())
	assert.NotEmpty(t, signature.String())
	assert.Contains(t, string(r.body), "event: message_start\ndata: {")
	assert.Regexp(t, `data: \{"type":"content_block_stop","index":\d+ +\}`, string(r.body), "padding before the closing brace")
}

func TestStreamShapesAndUsage(t *testing.T) {
	s := startSim(t, testConfig())
	decode := func(e sseEvent) map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(e.data), &m), e.data)
		return m
	}
	// OpenAI: usage only with stream_options.include_usage.
	for _, include := range []bool{false, true} {
		r := post(t, s.URL(KindOpenAI)+"/chat/completions",
			fmt.Sprintf(`{"model":"gpt-x","stream":true,"stream_options":{"include_usage":%t},%s}`, include, hello))
		evs := parseSSE(r.body)
		require.Equal(t, "[DONE]", evs[len(evs)-1].data)
		var usage int
		var text strings.Builder
		for i, e := range evs[:len(evs)-1] {
			m := decode(e)
			assert.Equal(t, "chat.completion.chunk", m["object"])
			assert.Equal(t, "gpt-x-2024-08-06", m["model"])
			assert.IsType(t, "", m["obfuscation"], "every chunk is padded")
			_, hasUsage := m["usage"]
			assert.Equal(t, include, hasUsage, "usage (null until the last chunk) only when asked")
			if m["usage"] != nil {
				usage++
				assert.Equal(t, []any{}, m["choices"])
				continue
			}
			d := m["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
			if c, ok := d["content"].(string); ok {
				text.WriteString(c)
			}
			if m["choices"].([]any)[0].(map[string]any)["finish_reason"] != nil {
				assert.Empty(t, d, "the finish chunk's delta is empty")
				assert.Equal(t, len(evs)-2-map[bool]int{true: 1}[include], i, "the finish chunk comes last but for the usage chunk")
			}
		}
		assert.Equal(t, map[bool]int{false: 0, true: 1}[include], usage)
		assert.Equal(t, "served by openai/gpt-x via openai", text.String())
	}
	// OpenRouter: the final chunk carries usage and the metadata, and it
	// repeats the finish rather than being a choices:[] chunk; every chunk
	// names the provider and the model.
	r := post(t, orURL(s), orBody(true), "X-OpenRouter-Metadata", "enabled")
	evs := parseSSE(r.body)
	final := decode(evs[len(evs)-2])
	assert.Equal(t, "stop", final["choices"].([]any)[0].(map[string]any)["finish_reason"])
	assert.NotNil(t, final["usage"])
	assert.Greater(t, final["usage"].(map[string]any)["cost"], 0.0)
	assert.EqualValues(t, 1, final["openrouter_metadata"].(map[string]any)["attempt"])
	for _, e := range evs[:len(evs)-1] {
		m := decode(e)
		assert.Equal(t, "fast", m["provider"])
		assert.Equal(t, "acme/gamma", m["model"])
	}
	assert.True(t, strings.HasPrefix(string(r.body), ": OPENROUTER PROCESSING\n\n"), "a processing comment opens the stream")
	// Vercel: the routing report inside the last chunk's delta, with usage
	// when asked (no separate usage chunk), and only on the last chunk.
	for _, include := range []bool{false, true} {
		r = post(t, s.URL(KindVercel)+"/chat/completions",
			fmt.Sprintf(`{"model":"acme/gamma","stream":true,"stream_options":{"include_usage":%t},%s}`, include, hello))
		evs = parseSSE(r.body)
		require.Equal(t, "[DONE]", evs[len(evs)-1].data)
		for i, e := range evs[:len(evs)-1] {
			m := decode(e)
			delta := m["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
			last := i == len(evs)-2
			assert.Equal(t, last, delta["provider_metadata"] != nil, "routing report on the last chunk only")
			assert.Equal(t, last && include, m["usage"] != nil, "usage on the last chunk, when asked")
			assert.NotContains(t, m, "providerMetadata")
		}
	}
}

func TestConcurrentRequests(t *testing.T) {
	s := startSim(t, testConfig())
	const workers, each = 16, 6
	var wg sync.WaitGroup
	errs := make(chan string, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				fault := []string{"", "status=503;provider=cheap", "delay=5ms", "status=429;model=acme/alpha"}[(w+i)%4]
				var hdr []string
				if fault != "" {
					hdr = []string{FaultHeader, fault}
				}
				r := post(t, orURL(s), fmt.Sprintf(`{"model":"acme/alpha","models":["acme/beta"],"stream":%t,%s}`, i%2 == 0, hello), hdr...)
				if r.status != 200 || r.err != nil {
					errs <- fmt.Sprintf("worker %d req %d: %d %v", w, i, r.status, r.err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	assert.GreaterOrEqual(t, len(s.Calls()), workers*each)
	assert.Equal(t, workers*each, s.CallCount(CallFilter{Status: 200}))
}

func TestCloseEndsHangingHandlers(t *testing.T) {
	s := New(testConfig())
	_, err := s.Start()
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("POST", orURL(s), strings.NewReader(orBody(true)))
		req.Header.Set(FaultHeader, "hang")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return len(s.Calls()) == 1 }, 2*time.Second, 5*time.Millisecond)
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not end the hanging handler")
	}
	select {
	case err := <-done:
		assert.Error(t, err, "the client sees the connection go away")
	case <-time.After(2 * time.Second):
		t.Fatal("client still waiting")
	}
	s.Close() // idempotent
}

func TestNoGoroutineLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	s := New(testConfig())
	_, err := s.Start()
	require.NoError(t, err)
	for _, fault := range []string{"slow_stream", "headers_then_nothing", "hang"} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_ = postCtx(t, ctx, orURL(s), orBody(true), FaultHeader, fault)
		cancel()
	}
	_ = post(t, orURL(s), orBody(true))
	s.Close()
	http.DefaultClient.CloseIdleConnections()
	assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+1 }, 3*time.Second, 20*time.Millisecond,
		"goroutines: before %d, now %d", before, runtime.NumGoroutine())
}
