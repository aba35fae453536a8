package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
)

func (h *harness) sdk(secret string) openai.Client {
	return openai.NewClient(option.WithBaseURL(h.ts.URL+"/v1"), option.WithAPIKey(secret), option.WithMaxRetries(0),
		option.WithHTTPClient(h.ts.Client()))
}

func params(model, prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}
}

// TestOpenAISDK calls the gateway the way services do: through the official
// OpenAI SDK, streaming and not.
func TestOpenAISDK(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := h.sdk(secretChat)

	t.Run("non-streaming", func(t *testing.T) {
		resp, err := client.Chat.Completions.New(ctx, params("openai/gpt-4o", "sdk plain"))
		require.NoError(t, err)
		require.Equal(t, "openai/gpt-4o", resp.Model)
		require.NotEmpty(t, resp.Choices)
		require.Contains(t, resp.Choices[0].Message.Content, "openai/gpt-4o")
		require.Greater(t, resp.Usage.PromptTokens, int64(0))
	})

	for _, tc := range []struct {
		name, secret, model string
	}{
		{"streaming through the marketplace", secretChat, "openai/gpt-4o"},
		{"streaming through the direct OpenAI upstream", secretBatch, "openai/gpt-4o-mini"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := h.sdk(tc.secret)
			stream := c.Chat.Completions.NewStreaming(ctx, params(tc.model, "sdk stream"))
			acc := openai.ChatCompletionAccumulator{}
			chunks := 0
			for stream.Next() {
				acc.AddChunk(stream.Current())
				chunks++
			}
			require.NoError(t, stream.Err())
			require.Greater(t, chunks, 2)
			require.NotEmpty(t, acc.Choices)
			require.NotEmpty(t, acc.Choices[0].Message.Content)
			require.Equal(t, "stop", acc.Choices[0].FinishReason)
		})
	}

	t.Run("refusal arrives as an OpenAI error", func(t *testing.T) {
		_, err := client.Chat.Completions.New(ctx, params("x-ai/grok-4", "forbidden"))
		var apiErr *openai.Error
		require.True(t, errors.As(err, &apiErr), "%v", err)
		require.Equal(t, 403, apiErr.StatusCode)
		require.Equal(t, "model_forbidden", apiErr.Code)
		require.Contains(t, apiErr.Message, "x-ai/grok-4")
	})

	t.Run("a cut stream ends in an error, never a clean end", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, params("openai/gpt-4o", "cut me"),
			option.WithHeader("X-Sim-Fault", "cut_after=2"))
		for stream.Next() {
		}
		require.Error(t, stream.Err(), "the SDK must see the stream fail")
	})
}

// TestStreamWire checks the SSE bytes: chunks relayed in order ending with
// [DONE]; a stream cut after it started ends with an in-band error event and
// no [DONE]; a failure before the first chunk is a plain HTTP error.
func TestStreamWire(t *testing.T) {
	h := newHarness(t, [2]string{"upstream = \"openai\"\n\n[[keys]]\nid = \"k-analyst\"", "upstream = \"anthropic\"\n\n[[keys]]\nid = \"k-analyst\""})
	body := func(model string) string {
		return `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"stream please"}]}`
	}
	tests := []struct {
		name, secret, model, fault string
		status, rowStatus          int
		done                       bool
		contains                   string
	}{
		{name: "marketplace stream", secret: secretChat, model: "openai/gpt-4o", status: 200, rowStatus: 200, done: true, contains: `"chat.completion.chunk"`},
		{name: "anthropic stream translated", secret: secretBatch, model: "anthropic/claude-haiku-4.5", status: 200, rowStatus: 200, done: true, contains: `"delta":{"content":`},
		{name: "cut after two chunks", secret: secretChat, model: "openai/gpt-4o", fault: "cut_after=2", status: 200, rowStatus: 502, contains: `"code":"upstream_stream_cut"`},
		{name: "upstream in-band error is relayed once", secret: secretChat, model: "openai/gpt-4o", fault: "stream_error_after=2", status: 200, rowStatus: 502, contains: `"finish_reason":"error"`},
		{name: "failure before the first chunk", secret: secretChat, model: "openai/gpt-4o", fault: "status=500", status: 500, rowStatus: 500},
		{name: "headers then nothing", secret: secretBatch, model: "anthropic/claude-haiku-4.5", fault: "headers_then_nothing", status: 504, rowStatus: 504},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.fault != "" {
				hdr = []string{"X-Sim-Fault", tc.fault}
			}
			resp, raw := h.post(tc.secret, body(tc.model), hdr...)
			require.Equal(t, tc.status, resp.StatusCode, string(raw))
			text := string(raw)
			require.Equal(t, tc.done, strings.HasSuffix(text, "data: [DONE]\n\n"), text)
			if tc.contains != "" {
				require.Contains(t, text, tc.contains)
			}
			require.LessOrEqual(t, strings.Count(text, `"error":{`), 1, "one error event at most")
			// No chunk keeps an upstream's routing report (the marketplace
			// names its provider on every chunk).
			for _, line := range strings.Split(text, "\n") {
				data, ok := strings.CutPrefix(line, "data: ")
				if !ok || data == "[DONE]" {
					continue
				}
				var top map[string]json.RawMessage
				require.NoError(t, json.Unmarshal([]byte(data), &top), data)
				for _, member := range []string{"provider", "openrouter_metadata", "providerMetadata"} {
					require.NotContains(t, top, member, data)
				}
			}
			row := h.row(resp.Header.Get("X-Request-Id"))
			require.Equal(t, tc.rowStatus, row.Status)
			require.True(t, row.Stream)
			if tc.rowStatus == 200 {
				require.Greater(t, row.TTFTMS, 0.0)
				require.NotEmpty(t, row.ServedModel)
				require.Greater(t, row.CompletionTokens, int64(0))
			}
		})
	}
}

// TestTranslationRefusalsKeepTheirCode: what the Anthropic translation
// refuses reaches the caller as a 400 with the connector's own code and a
// JSON pointer to the parameter, is recorded as refused, and is never sent.
func TestTranslationRefusalsKeepTheirCode(t *testing.T) {
	// k-batch (the key before k-analyst) moves to the Anthropic upstream.
	h := newHarness(t, [2]string{"upstream = \"openai\"\n\n[[keys]]\nid = \"k-analyst\"", "upstream = \"anthropic\"\n\n[[keys]]\nid = \"k-analyst\""})
	tests := []struct{ name, extra, code, param string }{
		{name: "n above one", extra: `,"n":2`, code: "unsupported_parameter", param: "/n"},
		{name: "logprobs", extra: `,"logprobs":true`, code: "unsupported_parameter", param: "/logprobs"},
		{name: "malformed role", extra: `,"messages":[{"role":"narrator","content":"hi"}]`, code: "invalid_request", param: "/messages/0/role"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.sim.Reset()
			body := `{"model":"anthropic/claude-haiku-4.5"` + tc.extra
			if !strings.Contains(tc.extra, `"messages"`) {
				body += `,"messages":[{"role":"user","content":"hi"}]`
			}
			resp, raw := h.post(secretBatch, body+"}")
			require.Equal(t, 400, resp.StatusCode, string(raw))
			var e errBody
			require.NoError(t, json.Unmarshal(raw, &e), string(raw))
			require.Equal(t, tc.code, e.Error.Code, string(raw))
			require.NotNil(t, e.Error.Param, string(raw))
			require.Equal(t, tc.param, *e.Error.Param, string(raw))
			require.NotEmpty(t, e.Error.Message)
			row := h.row(resp.Header.Get("X-Request-Id"))
			require.Equal(t, 400, row.Status)
			require.Equal(t, tc.code, row.RefusedCode)
			require.Empty(t, h.sim.Calls(), "a refused translation sends nothing")
		})
	}
}
