package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Behaviour of the Messages and Responses endpoints and of the tool-call
// directive, on every endpoint that speaks them.

// endpoint is one simulated endpoint as these tests drive it, with a
// testConfig model it serves.
type endpoint struct {
	name   string
	kind   string
	path   string
	format string
	model  string
	header []string
}

var allEndpoints = []endpoint{
	{"openrouter chat", KindOpenRouter, "/chat/completions", formatChat, "acme/alpha", nil},
	{"vercel chat", KindVercel, "/chat/completions", formatChat, "acme/alpha", nil},
	{"openai chat", KindOpenAI, "/chat/completions", formatChat, "gpt-x", nil},
	{"anthropic messages", KindAnthropic, "/messages", formatMessages, "claude-x-1-5", anthropicHeaders},
	{"openrouter messages", KindOpenRouter, "/messages", formatMessages, "acme/alpha", nil},
	{"vercel messages", KindVercel, "/messages", formatMessages, "acme/alpha", nil},
	{"openai responses", KindOpenAI, "/responses", formatResponses, "gpt-x", nil},
	{"openrouter responses", KindOpenRouter, "/responses", formatResponses, "acme/alpha", nil},
	{"vercel responses", KindVercel, "/responses", formatResponses, "acme/alpha", nil},
}

// request is a body for e offering the weather tool: a user turn saying
// text, then, for each result, the weather call and its result.
func (e endpoint) request(stream bool, text string, results ...string) string {
	body := map[string]any{"model": e.model, "stream": stream}
	switch e.format {
	case formatChat:
		msgs := []any{map[string]any{"role": "user", "content": text}}
		for i, r := range results {
			id := fmt.Sprint("call_", i)
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
					"id": id, "type": "function", "function": map[string]any{"name": "weather", "arguments": "{}"}}}},
				map[string]any{"role": "tool", "tool_call_id": id, "content": r})
		}
		body["messages"] = msgs
		body["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{"name": "weather", "parameters": map[string]any{"type": "object"}}}}
	case formatMessages:
		msgs := []any{map[string]any{"role": "user", "content": text}}
		for i, r := range results {
			id := fmt.Sprint("toolu_", i)
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "weather", "input": map[string]any{}}}},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": r}}})
		}
		body["messages"] = msgs
		body["max_tokens"] = 200
		body["tools"] = []any{map[string]any{"name": "weather", "input_schema": map[string]any{"type": "object"}}}
	case formatResponses:
		input := []any{map[string]any{"role": "user", "content": text}}
		for i, r := range results {
			id := fmt.Sprint("call_", i)
			input = append(input,
				map[string]any{"type": "function_call", "call_id": id, "name": "weather", "arguments": "{}"},
				map[string]any{"type": "function_call_output", "call_id": id, "output": r})
		}
		body["input"] = input
		body["tools"] = []any{map[string]any{"type": "function", "name": "weather", "parameters": map[string]any{"type": "object"}}}
	}
	return string(mustJSON(body))
}

// outcome is what an answer says: its text, the tool it calls (with the
// arguments), and how it finished.
type outcome struct {
	text, call, args, finish string
}

// read reads an answer of e's format, streamed or not.
func (e endpoint) read(t *testing.T, stream bool, body []byte) outcome {
	t.Helper()
	var o outcome
	if !stream {
		var m map[string]any
		require.NoError(t, json.Unmarshal(body, &m), "%s", body)
		switch e.format {
		case formatChat:
			c := m["choices"].([]any)[0].(map[string]any)
			o.finish, _ = c["finish_reason"].(string)
			msg := c["message"].(map[string]any)
			o.text, _ = msg["content"].(string)
			if calls, ok := msg["tool_calls"].([]any); ok {
				f := calls[0].(map[string]any)["function"].(map[string]any)
				o.call, o.args = f["name"].(string), f["arguments"].(string)
			}
		case formatMessages:
			o.finish, _ = m["stop_reason"].(string)
			o.readBlocks(m["content"].([]any))
		case formatResponses:
			o.readOutput(m)
		}
		return o
	}
	for _, ev := range parseSSE(body) {
		if ev.data == "[DONE]" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(ev.data), &m), ev.data)
		switch e.format {
		case formatChat:
			cs, _ := m["choices"].([]any)
			if len(cs) == 0 {
				continue
			}
			c := cs[0].(map[string]any)
			if f, ok := c["finish_reason"].(string); ok {
				o.finish = f
			}
			d := c["delta"].(map[string]any)
			if s, ok := d["content"].(string); ok {
				o.text += s
			}
			if calls, ok := d["tool_calls"].([]any); ok {
				f := calls[0].(map[string]any)["function"].(map[string]any)
				if n, ok := f["name"].(string); ok {
					o.call = n
				}
				o.args += f["arguments"].(string)
			}
		case formatMessages:
			switch m["type"] {
			case "content_block_start":
				if b := m["content_block"].(map[string]any); b["type"] == "tool_use" {
					o.call = b["name"].(string)
				}
			case "content_block_delta":
				d := m["delta"].(map[string]any)
				if s, ok := d["text"].(string); ok {
					o.text += s
				}
				if s, ok := d["partial_json"].(string); ok {
					o.args += s
				}
			case "message_delta":
				o.finish = m["delta"].(map[string]any)["stop_reason"].(string)
			}
		case formatResponses:
			if m["type"] == "response.completed" {
				o.readOutput(m["response"].(map[string]any))
			}
		}
	}
	return o
}

func (o *outcome) readBlocks(blocks []any) {
	for _, b := range blocks {
		b := b.(map[string]any)
		switch b["type"] {
		case "text":
			o.text += b["text"].(string)
		case "tool_use":
			o.call, o.args = b["name"].(string), string(mustJSON(b["input"]))
		}
	}
}

func (o *outcome) readOutput(resp map[string]any) {
	o.finish, _ = resp["status"].(string)
	for _, it := range resp["output"].([]any) {
		it := it.(map[string]any)
		switch it["type"] {
		case "message":
			o.text += it["content"].([]any)[0].(map[string]any)["text"].(string)
		case "function_call":
			o.call, o.args = it["name"].(string), it["arguments"].(string)
		}
	}
}

// callFinish is how each format finishes an answer that calls a tool.
var callFinish = map[string]string{formatChat: "tool_calls", formatMessages: "tool_use", formatResponses: "completed"}

func TestToolCallDirective(t *testing.T) {
	s := startSim(t, testConfig())
	const directive = `What is the weather? [[sim:call weather {"city": "Florence", "days": [1, 2]}]]`
	cases := []struct {
		name    string
		text    string
		results []string
		call    bool
		quote   string // text the answer must carry
	}{
		{"the directive calls the tool", directive, nil, true, ""},
		{"the result is quoted verbatim", directive, []string{"40 C and sunny"}, false, "tool weather returned: 40 C and sunny"},
		{"a tool not offered is not called", `[[sim:call forecast {"city": "Rome"}]]`, nil, false, "served by "},
		{"no directive, no call", "What is the weather?", nil, false, "served by "},
		{"a malformed directive is text", `[[sim:call weather {"city": ]]`, nil, false, "served by "},
	}
	for _, e := range allEndpoints {
		for _, stream := range []bool{false, true} {
			for _, c := range cases {
				t.Run(fmt.Sprintf("%s/stream=%v/%s", e.name, stream, c.name), func(t *testing.T) {
					r := post(t, s.URL(e.kind)+e.path, e.request(stream, c.text, c.results...), e.header...)
					require.Equal(t, http.StatusOK, r.status, "%s", r.body)
					o := e.read(t, stream, r.body)
					if c.call {
						assert.Equal(t, "weather", o.call)
						assert.JSONEq(t, `{"city":"Florence","days":[1,2]}`, o.args)
						assert.Equal(t, callFinish[e.format], o.finish)
						return
					}
					assert.Empty(t, o.call, "no tool call")
					assert.Contains(t, o.text, c.quote)
				})
			}
		}
	}
}

func TestToolCallDirectivesInTurn(t *testing.T) {
	s := startSim(t, testConfig())
	const text = `[[sim:call weather {"city":"Florence"}]] then [[sim:call weather {"city":"Rome"}]]`
	for _, e := range allEndpoints {
		t.Run(e.name, func(t *testing.T) {
			read := func(results ...string) outcome {
				r := post(t, s.URL(e.kind)+e.path, e.request(false, text, results...), e.header...)
				require.Equal(t, http.StatusOK, r.status, "%s", r.body)
				return e.read(t, false, r.body)
			}
			first := read()
			assert.Equal(t, "weather", first.call)
			assert.JSONEq(t, `{"city":"Florence"}`, first.args)
			second := read("sunny")
			assert.Equal(t, "weather", second.call)
			assert.JSONEq(t, `{"city":"Rome"}`, second.args, "the second directive once the first has its result")
			done := read("sunny", "rainy")
			assert.Empty(t, done.call)
			assert.Equal(t, "tool weather returned: sunny\ntool weather returned: rainy", done.text)
		})
	}
}

func TestParseDirectives(t *testing.T) {
	cases := []struct {
		text string
		want []directive
	}{
		{`[[sim:call get_time]]`, []directive{{"get_time", "{}"}}},
		{`say [[sim:call  lookup {"q": "a b", "n": 2} ]] please`, []directive{{"lookup", `{"q":"a b","n":2}`}}},
		{`[[sim:call nest {"grid": [[1, 2], [3]]}]]`, []directive{{"nest", `{"grid":[[1,2],[3]]}`}}},
		{`[[sim:call a {"x":1}]][[sim:call b]]`, []directive{{"a", `{"x":1}`}, {"b", "{}"}}},
		{`[[sim:call bad {"x":]] [[sim:call good]]`, []directive{{"good", "{}"}}},
		{`[[sim:call unterminated {"x":1}`, nil},
		{`[[sim:call list [1,2]]]`, nil},
		{`[[sim:call]]`, nil},
		{`no directive at all`, nil},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			assert.Equal(t, c.want, parseDirectives(c.text))
		})
	}
}

// orRoutingCases are OpenRouter's routing knobs, as its Messages and
// Responses endpoints take them at the top of the body, beside chat's.
var orRoutingCases = []struct {
	name     string
	body     string
	fault    string
	model    string
	provider string   // endpoint that served
	attempts []string // endpoint of each attempt
}{
	{"default is cheapest", ``, "", "acme/alpha", "cheap", []string{"cheap"}},
	{"order", `"provider":{"order":["quick"]}`, "", "acme/alpha", "quick", []string{"quick"}},
	{"only", `"provider":{"only":["fast","quick"]}`, "", "acme/alpha", "quick", []string{"quick"}},
	{"ignore", `"provider":{"ignore":["cheap"]}`, "", "acme/alpha", "multi/one", []string{"multi/one"}},
	{"sort throughput", `"provider":{"sort":"throughput"}`, "", "acme/alpha", "fast", []string{"fast"}},
	{"sort object", `"provider":{"sort":{"by":"latency"}}`, "", "acme/alpha", "quick", []string{"quick"}},
	{"provider fault walks on", ``, "status=429;provider=cheap", "acme/alpha", "multi/one", []string{"cheap", "multi/one"}},
	{"no fallbacks", `"provider":{"order":["fast","quick"],"allow_fallbacks":false}`, "status=503;provider=fast",
		"acme/alpha", "quick", []string{"fast", "quick"}},
	{"models chain", `"models":["acme/gamma"],"provider":{"only":["cheap","fast"]}`, "status=500;model=acme/alpha",
		"acme/gamma", "fast", []string{"cheap", "fast", "fast"}},
}

func TestOpenRouterMessagesAndResponsesRouting(t *testing.T) {
	s := startSim(t, testConfig())
	type surface struct {
		path, api, extra string
		body             func(knobs string) string
		served           func(t *testing.T, m map[string]any) (model, provider string)
	}
	knobs := func(k string) string {
		if k == "" {
			return ""
		}
		return k + ","
	}
	surfaces := []surface{
		{path: "/messages", api: APIMessages,
			body: func(k string) string {
				return `{"model":"acme/alpha",` + knobs(k) + `"max_tokens":10,` + hello + `}`
			},
			served: func(t *testing.T, m map[string]any) (string, string) {
				return m["model"].(string), m["provider"].(string)
			}},
		{path: "/messages", api: APIMessages, extra: " (fallbacks)",
			body: func(k string) string {
				// The Messages endpoint's own spelling of the models chain.
				k = strings.Replace(k, `"models":["acme/gamma"]`, `"fallbacks":[{"model":"acme/gamma"}]`, 1)
				return `{"model":"acme/alpha",` + knobs(k) + `"max_tokens":10,` + hello + `}`
			},
			served: func(t *testing.T, m map[string]any) (string, string) {
				return m["model"].(string), m["provider"].(string)
			}},
		{path: "/responses", api: APIResponses,
			body: func(k string) string { return `{"model":"acme/alpha",` + knobs(k) + `"input":"hello there"}` },
			served: func(t *testing.T, m map[string]any) (string, string) {
				// No provider member: the router report names it.
				for _, e := range m["openrouter_metadata"].(map[string]any)["endpoints"].(map[string]any)["available"].([]any) {
					if e := e.(map[string]any); e["selected"] == true {
						return m["model"].(string), e["provider"].(string)
					}
				}
				t.Fatal("no selected endpoint in openrouter_metadata")
				return "", ""
			}},
	}
	for _, sf := range surfaces {
		for _, c := range orRoutingCases {
			t.Run(sf.path+sf.extra+"/"+c.name, func(t *testing.T) {
				s.Reset()
				hdr := []string{"X-OpenRouter-Metadata", "enabled"}
				if c.fault != "" {
					hdr = append(hdr, FaultHeader, c.fault)
				}
				r := post(t, s.URL(KindOpenRouter)+sf.path, sf.body(c.body), hdr...)
				require.Equal(t, http.StatusOK, r.status, "%s", r.body)
				m := r.json(t)
				model, provider := sf.served(t, m)
				assert.Equal(t, c.model, model)
				base, _, _ := strings.Cut(c.provider, "/")
				assert.Equal(t, base, provider)
				assert.Contains(t, string(r.body), fmt.Sprintf("served by %s via %s", c.model, c.provider))
				var got []string
				for _, call := range s.Calls() {
					got = append(got, call.Provider)
					assert.Equal(t, sf.api, call.API)
					assert.Equal(t, "/openrouter/api/v1"+sf.path, call.Path)
					assert.Equal(t, KindOpenRouter, call.Kind)
				}
				assert.Equal(t, c.attempts, got)
			})
		}
	}
}

func TestOpenRouterMessagesFallbackRules(t *testing.T) {
	s := startSim(t, testConfig())
	cases := []struct{ name, body, msg string }{
		{"more than 3", `"fallbacks":[{"model":"acme/beta"},{"model":"acme/gamma"},{"model":"acme/beta"},{"model":"acme/gamma"}]`, "3 entries or fewer"},
		{"with models", `"models":["acme/beta"],"fallbacks":[{"model":"acme/gamma"}]`, "cannot be combined with models"},
		{"a member beside model", `"fallbacks":[{"model":"acme/gamma","max_tokens":5}]`, "takes only model"},
		{"no model", `"fallbacks":[{}]`, "model is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.Reset()
			r := post(t, s.URL(KindOpenRouter)+"/messages", `{"model":"acme/alpha","max_tokens":10,`+c.body+`,`+hello+`}`)
			require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
			m := r.json(t)
			assert.Equal(t, "error", m["type"])
			assert.Nil(t, m["request_id"], "refused before routing")
			e := m["error"].(map[string]any)
			assert.Equal(t, "invalid_request_error", e["type"])
			assert.Equal(t, "invalid_request", e["error_type"])
			assert.Contains(t, e["message"], c.msg)
			assert.Zero(t, s.CallCount(CallFilter{}), "no attempt")
		})
	}
}

func TestVercelMessagesAndResponsesRouting(t *testing.T) {
	s := startSim(t, testConfig())
	cases := []struct {
		name     string
		gateway  string
		fault    string
		model    string
		provider string
		attempts []string
	}{
		{"catalog order", ``, "", "acme/alpha", "cheap", []string{"cheap"}},
		{"order", `"order":["quick"]`, "", "acme/alpha", "quick", []string{"quick"}},
		{"only", `"only":["fast"]`, "", "acme/alpha", "fast", []string{"fast"}},
		{"sort tps", `"sort":"tps"`, "", "acme/alpha", "fast", []string{"fast"}},
		{"order falls back", `"order":["fast"]`, "status=503;provider=fast", "acme/alpha", "cheap", []string{"fast", "cheap"}},
		{"models", `"models":["acme/gamma"],"only":["quick","fast"]`, "status=500;model=acme/alpha", "acme/gamma", "fast",
			[]string{"fast", "quick", "fast"}},
	}
	for _, path := range []string{"/messages", "/responses"} {
		for _, c := range cases {
			t.Run(path+"/"+c.name, func(t *testing.T) {
				s.Reset()
				var hdr []string
				if c.fault != "" {
					hdr = []string{FaultHeader, c.fault}
				}
				opts := ""
				if c.gateway != "" {
					opts = `"providerOptions":{"gateway":{` + c.gateway + `}},`
				}
				// The model is echoed as asked, case and all.
				body := `{"model":"ACME/Alpha",` + opts + `"max_tokens":10,` + hello + `}`
				if path == "/responses" {
					body = `{"model":"ACME/Alpha",` + opts + `"input":"hello there"}`
				}
				r := post(t, s.URL(KindVercel)+path, body, hdr...)
				require.Equal(t, http.StatusOK, r.status, "%s", r.body)
				m := r.json(t)
				assert.Equal(t, "ACME/Alpha", m["model"])
				assert.Contains(t, string(r.body), fmt.Sprintf("served by %s via %s", c.model, c.provider))
				var got []string
				for _, call := range s.Calls() {
					got = append(got, call.Provider)
					assert.Equal(t, "/vercel/v1"+path, call.Path)
				}
				assert.Equal(t, c.attempts, got)
			})
		}
	}
	t.Run("bad sort", func(t *testing.T) {
		r := post(t, s.URL(KindVercel)+"/responses", `{"model":"acme/alpha","providerOptions":{"gateway":{"sort":"fastest"}},"input":"x"}`)
		assert.Equal(t, http.StatusBadRequest, r.status)
	})
}

func TestOpenRouterMessagesReadBack(t *testing.T) {
	cfg := testConfig()
	cfg.ProviderNames = map[string]map[string]string{KindOpenRouter: {"cheap": "Cheap Inc"}}
	s := startSim(t, cfg)
	url := s.URL(KindOpenRouter) + "/messages"
	body := func(stream bool) string {
		return fmt.Sprintf(`{"model":"acme/alpha","max_tokens":10,"stream":%v,%s}`, stream, hello)
	}

	r := post(t, url, body(false))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	m := r.json(t)
	assert.Equal(t, "Cheap Inc", m["provider"], "the provider's display name")
	assert.Equal(t, "acme/alpha", m["model"])
	u := m["usage"].(map[string]any)
	in, out := u["input_tokens"].(float64), u["output_tokens"].(float64)
	assert.InDelta(t, (in*0.1+out*0.1)/1e6, u["cost"], 1e-12, "billed at cheap's prices")
	d := u["cost_details"].(map[string]any)
	assert.InDelta(t, in*0.1/1e6, d["upstream_inference_prompt_cost"], 1e-12)
	assert.InDelta(t, out*0.1/1e6, d["upstream_inference_completions_cost"], 1e-12)
	assert.Equal(t, false, u["is_byok"])
	assert.NotContains(t, m, "openrouter_metadata", "only when asked for")

	r = post(t, url, body(true), "X-OpenRouter-Metadata", "enabled")
	require.Equal(t, http.StatusOK, r.status)
	evs := parseSSE(r.body)
	require.NotEmpty(t, evs)
	var start, stop map[string]any
	require.NoError(t, json.Unmarshal([]byte(evs[0].data), &start))
	assert.Equal(t, "message_start", evs[0].name)
	assert.Equal(t, "Cheap Inc", start["message"].(map[string]any)["provider"])
	last := evs[len(evs)-1]
	assert.Equal(t, "[DONE]", last.data, "the stream ends with the declared sentinel")
	require.Equal(t, "message_stop", evs[len(evs)-2].name)
	require.NoError(t, json.Unmarshal([]byte(evs[len(evs)-2].data), &stop))
	assert.Equal(t, "direct", stop["openrouter_metadata"].(map[string]any)["strategy"])
	assert.NotContains(t, string(r.body), "  }", "no Anthropic padding")
}

func TestResponsesReadBack(t *testing.T) {
	s := startSim(t, testConfig())
	t.Run("openrouter bills in its Responses names", func(t *testing.T) {
		r := post(t, s.URL(KindOpenRouter)+"/responses", `{"model":"acme/alpha","input":"hello there"}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		m := r.json(t)
		assert.Equal(t, "acme/alpha", m["model"])
		assert.NotContains(t, m, "provider", "no provider member without the router report")
		assert.NotContains(t, m, "billing")
		u := m["usage"].(map[string]any)
		in, out := u["input_tokens"].(float64), u["output_tokens"].(float64)
		assert.Equal(t, in+out, u["total_tokens"])
		assert.InDelta(t, (in+out)*0.1/1e6, u["cost"], 1e-12)
		d := u["cost_details"].(map[string]any)
		assert.InDelta(t, in*0.1/1e6, d["upstream_inference_input_cost"], 1e-12)
		assert.InDelta(t, out*0.1/1e6, d["upstream_inference_output_cost"], 1e-12)
	})
	t.Run("openai reports the dated model and no cost", func(t *testing.T) {
		r := post(t, s.URL(KindOpenAI)+"/responses", `{"model":"gpt-x","input":"hello there"}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		m := r.json(t)
		assert.Equal(t, "gpt-x"+openAISuffix, m["model"])
		assert.NotContains(t, m["usage"], "cost")
		assert.Equal(t, true, m["store"], "store defaults to true")
	})
	t.Run("reasoning is counted", func(t *testing.T) {
		r := post(t, s.URL(KindOpenAI)+"/responses", `{"model":"gpt-x","input":"hi","reasoning":{"effort":"low","summary":"auto"},"include":["reasoning.encrypted_content"]}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		m := r.json(t)
		u := m["usage"].(map[string]any)
		reasoning := u["output_tokens_details"].(map[string]any)["reasoning_tokens"].(float64)
		assert.Positive(t, reasoning)
		assert.Greater(t, u["output_tokens"].(float64), reasoning, "output counts the text too")
		item := m["output"].([]any)[0].(map[string]any)
		assert.Equal(t, "reasoning", item["type"])
		assert.NotEmpty(t, item["encrypted_content"])
		assert.Equal(t, "summary_text", item["summary"].([]any)[0].(map[string]any)["type"])
		assert.Equal(t, "detailed", m["reasoning"].(map[string]any)["summary"], `"auto" is answered "detailed", as recorded`)
	})
}

func TestResponsesStreamEvents(t *testing.T) {
	s := startSim(t, testConfig())
	requests := []struct{ name, body string }{
		{"text", `"input":"hello there"`},
		{"tool call", `"tools":[{"type":"function","name":"weather"}],"input":"[[sim:call weather {\"city\":\"Oslo\"}]]"`},
		{"reasoning summary", `"reasoning":{"effort":"medium","summary":"auto"},"input":"hello there"`},
	}
	for _, e := range allEndpoints {
		if e.format != formatResponses {
			continue
		}
		for _, q := range requests {
			t.Run(e.name+"/"+q.name, func(t *testing.T) {
				r := post(t, s.URL(e.kind)+e.path, `{"model":"`+e.model+`","stream":true,`+q.body+`}`)
				require.Equal(t, http.StatusOK, r.status, "%s", r.body)
				evs := parseSSE(r.body)
				if e.kind == KindOpenRouter {
					require.Equal(t, "[DONE]", evs[len(evs)-1].data, "OpenRouter ends with [DONE]")
					evs = evs[:len(evs)-1]
				} else {
					assert.NotContains(t, string(r.body), "[DONE]", "OpenAI's stream has no [DONE]")
				}
				var types []string
				deltas, dones := map[string]string{}, map[string]string{}
				for i, ev := range evs {
					var m map[string]any
					require.NoError(t, json.Unmarshal([]byte(ev.data), &m))
					assert.Equal(t, ev.name, m["type"], "the event line names the data's type")
					assert.EqualValues(t, i, m["sequence_number"], "sequence numbers count from 0 by 1")
					typ := m["type"].(string)
					types = append(types, typ)
					key := fmt.Sprint(m["item_id"], "/", m["summary_index"])
					switch typ {
					case "response.output_text.delta", "response.function_call_arguments.delta", "response.reasoning_summary_text.delta":
						deltas[key] += m["delta"].(string)
					case "response.output_text.done", "response.reasoning_summary_text.done":
						dones[key] = m["text"].(string)
					case "response.function_call_arguments.done":
						dones[key] = m["arguments"].(string)
					}
				}
				require.GreaterOrEqual(t, len(types), 5)
				assert.Equal(t, []string{"response.created", "response.in_progress"}, types[:2])
				assert.Equal(t, "response.completed", types[len(types)-1])
				assert.NotEmpty(t, dones)
				assert.Equal(t, dones, deltas, "the deltas add up to each done")
				var final map[string]any
				require.NoError(t, json.Unmarshal([]byte(evs[len(evs)-1].data), &final))
				resp := final["response"].(map[string]any)
				assert.Equal(t, "completed", resp["status"])
				assert.NotNil(t, resp["usage"], "usage rides on response.completed")
				var first map[string]any
				require.NoError(t, json.Unmarshal([]byte(evs[0].data), &first))
				assert.Nil(t, first["response"].(map[string]any)["usage"])
			})
		}
	}
}

func TestOpenAIResponsesState(t *testing.T) {
	s := startSim(t, testConfig())
	url := s.URL(KindOpenAI) + "/responses"
	create := func(t *testing.T, body string) map[string]any {
		t.Helper()
		r := post(t, url, body)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		return r.json(t)
	}
	do := func(t *testing.T, method, id string) reply {
		t.Helper()
		req, err := http.NewRequest(method, url+"/"+id, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		return reply{status: resp.StatusCode, body: readAll(t, resp)}
	}

	t.Run("stored by default, read back, deleted", func(t *testing.T) {
		first := create(t, `{"model":"gpt-x","input":"hello there"}`)
		id := first["id"].(string)
		require.True(t, strings.HasPrefix(id, "resp_"), id)
		got := do(t, http.MethodGet, id)
		require.Equal(t, http.StatusOK, got.status)
		assert.Equal(t, id, got.json(t)["id"])
		assert.Equal(t, first["output"], got.json(t)["output"])
		del := do(t, http.MethodDelete, id)
		require.Equal(t, http.StatusOK, del.status)
		assert.Equal(t, map[string]any{"id": id, "object": "response", "deleted": true}, del.json(t))
		assert.Equal(t, http.StatusNotFound, do(t, http.MethodGet, id).status)
		gone := do(t, http.MethodDelete, id)
		require.Equal(t, http.StatusNotFound, gone.status)
		assert.Equal(t, "invalid_request_error", gone.json(t)["error"].(map[string]any)["type"])
	})
	t.Run("store false keeps nothing", func(t *testing.T) {
		first := create(t, `{"model":"gpt-x","input":"hello there","store":false}`)
		assert.Equal(t, false, first["store"])
		assert.Equal(t, http.StatusNotFound, do(t, http.MethodGet, first["id"].(string)).status)
		r := post(t, url, `{"model":"gpt-x","input":"more","previous_response_id":"`+first["id"].(string)+`"}`)
		assert.Equal(t, http.StatusBadRequest, r.status, "an unstored response cannot be continued")
	})
	t.Run("previous_response_id continues the conversation", func(t *testing.T) {
		first := create(t, `{"model":"gpt-x","tools":[{"type":"function","name":"weather"}],"input":"[[sim:call weather {\"city\":\"Oslo\"}]]"}`)
		var callID string
		for _, it := range first["output"].([]any) {
			if it := it.(map[string]any); it["type"] == "function_call" {
				callID = it["call_id"].(string)
			}
		}
		require.NotEmpty(t, callID, "the first turn calls the tool: %v", first["output"])
		// The second turn sends only the tool's output: the directive is in
		// the stored first turn.
		second := create(t, `{"model":"gpt-x","tools":[{"type":"function","name":"weather"}],"previous_response_id":"`+first["id"].(string)+
			`","input":[{"type":"function_call_output","call_id":"`+callID+`","output":"-3 C"}]}`)
		assert.Equal(t, first["id"], second["previous_response_id"])
		o := endpoint{format: formatResponses}.read(t, false, mustJSON(second))
		assert.Equal(t, "tool weather returned: -3 C", o.text)
		assert.Greater(t, second["usage"].(map[string]any)["input_tokens"], first["usage"].(map[string]any)["input_tokens"],
			"the stored conversation counts as input")
	})
	t.Run("unknown previous_response_id", func(t *testing.T) {
		r := post(t, url, `{"model":"gpt-x","input":"x","previous_response_id":"resp_nope"}`)
		require.Equal(t, http.StatusBadRequest, r.status)
		e := r.json(t)["error"].(map[string]any)
		assert.Equal(t, map[string]any{"type": "invalid_request_error", "code": "previous_response_not_found",
			"param": "previous_response_id", "message": "Previous response with id 'resp_nope' not found."}, e)
	})
	t.Run("a stream is stored too", func(t *testing.T) {
		r := post(t, url, `{"model":"gpt-x","input":"hello there","stream":true}`)
		require.Equal(t, http.StatusOK, r.status)
		evs := parseSSE(r.body)
		var final map[string]any
		require.NoError(t, json.Unmarshal([]byte(evs[len(evs)-1].data), &final))
		id := final["response"].(map[string]any)["id"].(string)
		assert.Equal(t, http.StatusOK, do(t, http.MethodGet, id).status)
	})
	t.Run("calls are recorded with method and path", func(t *testing.T) {
		s.Reset()
		first := create(t, `{"model":"gpt-x","input":"hello there"}`)
		do(t, http.MethodGet, first["id"].(string))
		calls := s.Calls()
		require.Len(t, calls, 2)
		assert.Equal(t, []string{http.MethodPost, http.MethodGet}, []string{calls[0].Method, calls[1].Method})
		assert.Equal(t, "/openai/v1/responses/"+first["id"].(string), calls[1].Path)
		assert.Equal(t, 2, s.CallCount(CallFilter{API: APIResponses}))
		assert.Equal(t, 0, s.CallCount(CallFilter{API: APIChat}))
		assert.Equal(t, http.StatusNotFound, do(t, http.MethodGet, first["id"].(string)+"x").status)
	})
}

func TestStatelessResponsesRefuseState(t *testing.T) {
	s := startSim(t, testConfig())
	cases := []struct {
		name, kind, body string
		code             any // error.code
	}{
		{"openrouter store true", KindOpenRouter, `"store":true`, float64(400)},
		{"openrouter previous_response_id", KindOpenRouter, `"previous_response_id":"resp_1"`, float64(400)},
		{"vercel previous_response_id", KindVercel, `"previous_response_id":"resp_1"`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.Reset()
			r := post(t, s.URL(c.kind)+"/responses", `{"model":"acme/alpha","input":"x",`+c.body+`}`)
			require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
			e := r.json(t)["error"].(map[string]any)
			assert.Equal(t, c.code, e["code"])
			assert.Contains(t, e["message"], "not supported")
			assert.Zero(t, s.CallCount(CallFilter{}), "refused before any attempt")
		})
	}
	t.Run("openrouter takes store false", func(t *testing.T) {
		r := post(t, s.URL(KindOpenRouter)+"/responses", `{"model":"acme/alpha","input":"x","store":false}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		assert.Equal(t, false, r.json(t)["store"])
	})
}

func TestNewEndpointsFailInTheirShape(t *testing.T) {
	s := startSim(t, testConfig())
	cases := []struct {
		name, kind, path, body string
		header                 []string
		check                  func(t *testing.T, m map[string]any)
	}{
		{"openrouter messages", KindOpenRouter, "/messages", `{"model":"acme/alpha","provider":{"only":["cheap"]},"max_tokens":5,` + hello + `}`, nil,
			func(t *testing.T, m map[string]any) {
				assert.Equal(t, "error", m["type"])
				assert.True(t, strings.HasPrefix(m["request_id"].(string), "gen-"), "after routing, the generation's id")
				e := m["error"].(map[string]any)
				assert.Equal(t, "overloaded_error", e["type"])
				assert.Equal(t, "provider_overloaded", e["error_type"])
			}},
		{"vercel messages", KindVercel, "/messages", `{"model":"acme/alpha","providerOptions":{"gateway":{"only":["cheap"]}},"max_tokens":5,` + hello + `}`, nil,
			func(t *testing.T, m map[string]any) {
				assert.Equal(t, "error", m["type"])
				assert.Equal(t, "api_error", m["error"].(map[string]any)["type"])
			}},
		{"openrouter responses", KindOpenRouter, "/responses", `{"model":"acme/alpha","provider":{"only":["cheap"]},"input":"x"}`, nil,
			func(t *testing.T, m map[string]any) {
				e := m["error"].(map[string]any)
				assert.Equal(t, float64(503), e["code"])
				assert.Equal(t, "Provider returned error", e["message"])
			}},
		{"openai responses", KindOpenAI, "/responses", `{"model":"gpt-x","input":"x"}`, nil,
			func(t *testing.T, m map[string]any) {
				assert.Equal(t, "server_error", m["error"].(map[string]any)["type"])
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := post(t, s.URL(c.kind)+c.path, c.body, append(c.header, FaultHeader, "status=503")...)
			require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
			c.check(t, r.json(t))
		})
	}
	t.Run("openrouter messages mid-stream", func(t *testing.T) {
		r := post(t, s.URL(KindOpenRouter)+"/messages", `{"model":"acme/alpha","stream":true,"max_tokens":5,`+hello+`}`,
			FaultHeader, "stream_error_after=2")
		require.Equal(t, http.StatusOK, r.status)
		evs := parseSSE(r.body)
		require.Len(t, evs, 4, "two events, the error, [DONE]: %s", r.body)
		assert.Equal(t, "error", evs[2].name)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(evs[2].data), &m))
		assert.Equal(t, "provider_unavailable", m["error"].(map[string]any)["error_type"])
		assert.Equal(t, "[DONE]", evs[3].data)
	})
	t.Run("openrouter messages unknown model", func(t *testing.T) {
		r := post(t, s.URL(KindOpenRouter)+"/messages", `{"model":"acme/nope","max_tokens":5,`+hello+`}`)
		require.Equal(t, http.StatusNotFound, r.status)
		e := r.json(t)["error"].(map[string]any)
		assert.Equal(t, "not_found_error", e["type"])
		assert.Equal(t, "not_found", e["error_type"])
		assert.Equal(t, "Model not found", e["message"])
	})
}
