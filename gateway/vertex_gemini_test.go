package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
)

// Gemini on Vertex AI end to end on loopback: a chat completion, a Messages
// request and a Responses request for a Gemini model, streaming and not,
// each translated into generateContent (streamGenerateContent?alt=sse),
// answered by the simulator from the recorded answers behind the bearer
// token, and told back in the caller's API; each row served by
// google-vertex, the model resolved to the catalog's slug, the usage read
// from usageMetadata (thinking counted in the completion) and priced at
// the catalog's Vertex AI prices. A model Vertex AI does not serve is its
// 404, retold in each caller's API's error shape.
func TestVertexGeminiEndToEnd(t *testing.T) {
	g := newVertexGateway(t, time.Hour)
	const (
		chatPlain = `{"model":"google/gemini-2.5-flash","messages":[{"role":"system","content":"You are a helpful assistant"},{"role":"user","content":"Say hi in Portuguese"}],"max_tokens":4000`
		msgPlain  = `{"model":"google/gemini-2.5-flash","max_tokens":4000,"system":"You are a helpful assistant","messages":[{"role":"user","content":"Say hi in Portuguese"}]`
		respPlain = `{"model":"google/gemini-2.5-flash","instructions":"You are a helpful assistant","input":"Say hi in Portuguese","max_output_tokens":4000,"store":false`
		tools     = `"tools":[{"type":"function","function":{"name":"weather","description":"Get weather information for a location","parameters":{"type":"object","properties":{"location":{"type":"string","description":"the city"}},"required":["location"]}}}]`
	)
	cases := []struct {
		name, path, body string
		status           int
		// contains are pieces of the answer the caller gets.
		contains []string
		// prompt and completion are the row's usage (the recording's
		// promptTokenCount; candidatesTokenCount + thoughtsTokenCount),
		// reasoning its thoughtsTokenCount.
		prompt, completion, reasoning int64
	}{
		{name: "chat", path: "/v1/chat/completions", body: chatPlain + `}`, status: 200,
			contains: []string{`"object":"chat.completion"`, `"content":"Olá!"`, `"model":"google/gemini-2.5-flash"`, `"reasoning_tokens":24`}, prompt: 9, completion: 26, reasoning: 24},
		{name: "chat stream", path: "/v1/chat/completions", body: chatPlain + `,"stream":true,"stream_options":{"include_usage":true}}`, status: 200,
			contains: []string{`"delta":{"content":"Olá!"}`, `"finish_reason":"stop"`, `"prompt_tokens":9,"completion_tokens":45`, "data: [DONE]"}, prompt: 9, completion: 45, reasoning: 36},
		{name: "chat tool call", path: "/v1/chat/completions", body: `{"model":"google/gemini-2.5-flash","messages":[{"role":"user","content":"What's the weather in Florence,Italy?"}],` + tools + `}`, status: 200,
			contains: []string{`"finish_reason":"tool_calls"`, `"name":"weather"`, `"arguments":"{\"location\":\"Florence,Italy\"}"`}, prompt: 28, completion: 57, reasoning: 52},
		{name: "chat tool result", path: "/v1/chat/completions", body: `{"model":"google/gemini-2.5-flash","messages":[{"role":"user","content":"What's the weather in Florence,Italy?"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"location\":\"Florence,Italy\"}"}}]},` +
			`{"role":"tool","tool_call_id":"call_1","content":"40 C"}],` + tools + `}`, status: 200,
			contains: []string{`"finish_reason":"stop"`, `"content":"The weather in Florence,Italy is 40 C."`}},
		{name: "messages", path: "/v1/messages", body: msgPlain + `}`, status: 200,
			contains: []string{`"type":"message"`, `"text":"Olá!"`, `"stop_reason":"end_turn"`}, prompt: 9, completion: 26, reasoning: 24},
		{name: "messages stream", path: "/v1/messages", body: msgPlain + `,"stream":true}`, status: 200,
			contains: []string{"event: message_start", `"text":"Olá!"`, "event: message_stop"}, prompt: 9, completion: 45, reasoning: 36},
		{name: "responses", path: "/v1/responses", body: respPlain + `}`, status: 200,
			contains: []string{`"object":"response"`, `"text":"Olá!"`, `"status":"completed"`}, prompt: 9, completion: 26, reasoning: 24},
		{name: "responses stream", path: "/v1/responses", body: respPlain + `,"stream":true}`, status: 200,
			contains: []string{"event: response.created", `"delta":"Olá!"`, "event: response.completed"}, prompt: 9, completion: 45, reasoning: 36},
		{name: "chat not found", path: "/v1/chat/completions", body: `{"model":"google/gemini-2.0-flash-lite","messages":[{"role":"user","content":"hi"}]}`, status: 404,
			contains: []string{`"code":"NOT_FOUND"`, `"type":"not_found_error"`, "was not found or your project does not have access to it"}},
		{name: "messages not found", path: "/v1/messages", body: `{"model":"google/gemini-2.0-flash-lite","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, status: 404,
			contains: []string{`"type":"error"`, `"type":"not_found_error"`, "was not found or your project does not have access to it"}},
		{name: "responses not found", path: "/v1/responses", body: `{"model":"google/gemini-2.0-flash-lite","input":"hi","store":false}`, status: 404,
			contains: []string{`"type":"not_found_error"`, "was not found or your project does not have access to it"}},
		{name: "chat refused", path: "/v1/chat/completions", body: `{"model":"google/gemini-2.5-flash","messages":[{"role":"user","content":"hi"}],"n":2}`, status: 400,
			contains: []string{"unsupported_parameter", "/n"}},
	}
	hits := g.sim.ModelHits()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := g.send(t, tc.path, tc.body)
			require.Equal(t, tc.status, resp.StatusCode, string(body))
			for _, want := range tc.contains {
				require.Contains(t, string(body), want)
			}
			if tc.status != 200 {
				require.True(t, json.Valid(body), "an error is JSON: %s", body)
				require.NotContains(t, string(body), `"status":"NOT_FOUND"`, "retold, not relayed in Google's shape")
				return
			}
			row := waitRow(t, g.srv, resp.Header.Get(gateway.HeaderRequestID))
			require.Equal(t, "google-vertex", row.ServedProvider)
			require.Equal(t, "google/gemini-2.5-flash", row.ServedModel)
			require.Equal(t, "gcp", row.Upstream)
			require.Equal(t, strings.TrimPrefix(tc.path, "/v1/"), map[string]string{"chat": "chat/completions", "messages": "messages", "responses": "responses"}[row.API])
			if tc.prompt > 0 {
				require.EqualValues(t, tc.prompt, row.PromptTokens)
				require.EqualValues(t, tc.completion, row.CompletionTokens)
				require.EqualValues(t, tc.reasoning, row.ReasoningTokens)
				require.Equal(t, "catalog", row.CostSource)
				require.InDelta(t, (float64(tc.prompt)*0.3+float64(tc.completion)*2.5)/1e6, row.CostUSD, 1e-12)
			}
		})
	}
	require.Equal(t, hits+len(cases)-1, g.sim.ModelHits(), "every request but the refused one reached Vertex AI")

	// A token count for a Gemini model is sluice's estimate: nothing is
	// sent to Vertex AI.
	resp, body := g.send(t, "/v1/messages/count_tokens", `{"model":"google/gemini-2.5-flash","messages":[{"role":"user","content":"Say hi in Portuguese"}]}`)
	require.Equal(t, 200, resp.StatusCode, string(body))
	require.Equal(t, "true", resp.Header.Get(gateway.HeaderCountEstimated))
	require.Contains(t, string(body), `"input_tokens":`)
	require.Equal(t, hits+len(cases)-1, g.sim.ModelHits(), "the count reached no model endpoint")
	require.Equal(t, 1, g.sim.TokenHits(), "one token served every request")
}
