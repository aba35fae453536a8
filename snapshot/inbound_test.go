package snapshot

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/guardrails"
)

// The API a request came in on decides what each upstream is asked: the
// embeddings capabilities of a marketplace, the model kind, an upstream
// without the API, and what a translation of the Messages API loses.
func TestCompileForAPI(t *testing.T) {
	snap, diags := Load(demoWith(t, "sluice.toml"))
	require.Empty(t, diags)
	key := snap.Config.KeyByID("k-chat") // team ml: a chain, preferred providers
	require.NotNil(t, key)
	d, err := snap.Decision(context.Background(), key.Principal())
	require.NoError(t, err)

	embBody := connectors.Body{"model": json.RawMessage(`"openai/text-embedding-3-small"`), "input": json.RawMessage(`"hello"`)}
	chatBody := ModelBody("anthropic/claude-sonnet-4.5")
	msgBody := connectors.Body{"model": json.RawMessage(`"claude-sonnet-4-5"`), "max_tokens": json.RawMessage(`100`),
		"thinking": json.RawMessage(`{"type":"enabled","budget_tokens":50}`),
		"messages": json.RawMessage(`[{"role":"user","content":"hi"}]`)}
	respBody := connectors.Body{"model": json.RawMessage(`"gpt-4o"`), "input": json.RawMessage(`"hi"`),
		"reasoning": json.RawMessage(`{"effort":"low"}`)}
	responses := &connectors.Inbound{API: connectors.APIResponses, Model: "gpt-4o", Request: respBody}
	embeddings := &connectors.Inbound{API: connectors.APIEmbeddings}
	messages := &connectors.Inbound{API: connectors.APIMessages, Model: "claude-sonnet-4-5"}

	tests := []struct {
		name, upstream, model string
		body                  connectors.Body
		in                    *connectors.Inbound
		refused               string
		degraded              []string
		path                  string
		dropped               []guardrails.Dropped
	}{
		{name: "embeddings on the marketplace: the chat models of the chain are dropped, nothing degraded",
			upstream: "market", model: "openai/text-embedding-3-small", body: embBody, in: embeddings, degraded: []string{"ranking"}, path: "/embeddings",
			dropped: []guardrails.Dropped{{Model: "anthropic/claude-sonnet-4.5", Reason: guardrails.DropKind}, {Model: "meta-llama/llama-3.1-70b-instruct", Reason: guardrails.DropKind}}},
		{name: "embeddings on the direct OpenAI upstream", upstream: "openai", model: "openai/text-embedding-3-small", body: embBody, in: embeddings,
			degraded: []string{}, path: "/embeddings"},
		{name: "embeddings on Anthropic: no such API", upstream: "anthropic", model: "openai/text-embedding-3-small", body: embBody, in: embeddings,
			refused: compiler.CodeAPIUnsupported},
		{name: "a chat model asked for embeddings", upstream: "market", model: "anthropic/claude-sonnet-4.5", body: embBody, in: embeddings,
			refused: compiler.CodeModelKindMismatch},
		{name: "an embedding model asked for a chat completion", upstream: "market", model: "openai/text-embedding-3-small", body: chatBody,
			refused: compiler.CodeModelKindMismatch},
		{name: "the Messages API natively on Anthropic", upstream: "anthropic", model: "anthropic/claude-sonnet-4.5", body: msgBody, in: messages,
			degraded: []string{"chain"}, path: "/messages"},
		{name: "the Messages API translated onto OpenAI loses thinking beside the chain", upstream: "openai", model: "openai/gpt-4o", body: msgBody, in: messages,
			degraded: []string{"chain", connectors.DegradedThinking}, path: "/chat/completions"},
		{name: "the Messages API natively on the marketplace keeps thinking", upstream: "market", model: "anthropic/claude-sonnet-4.5", body: msgBody, in: messages,
			degraded: []string{"ranking"}, path: "/messages"},
		{name: "the Responses API natively on the marketplace", upstream: "market", model: "openai/gpt-4o", body: respBody, in: responses,
			degraded: []string{"ranking"}, path: "/responses"},
		{name: "the Responses API natively on OpenAI", upstream: "openai", model: "openai/gpt-4o", body: respBody, in: responses,
			degraded: []string{"chain"}, path: "/responses"},
		{name: "the Responses API translated onto Anthropic loses reasoning beside the chain", upstream: "anthropic", model: "anthropic/claude-sonnet-4.5", body: respBody, in: responses,
			degraded: []string{"chain", connectors.DegradedReasoning}, path: "/messages"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			memo := snap.Memo(key, d, nil, Pin{}, tc.body)
			memo.SetInbound(tc.in)
			c, err := memo.Compile(tc.upstream, tc.model)
			require.NoError(t, err)
			if tc.refused != "" {
				require.NotNil(t, c.Refused())
				assert.Equal(t, tc.refused, c.Refused().Code, c.Refused().Message)
				return
			}
			require.Nil(t, c.Refused())
			assert.Equal(t, tc.degraded, c.Degraded())
			assert.Equal(t, tc.path, c.Native.Path)
			require.NotNil(t, c.Call)
			assert.Same(t, tc.in, c.Call.Inbound)
			if tc.dropped != nil {
				p := memo.Plan(tc.model)
				assert.Empty(t, p.Chain)
				assert.Equal(t, tc.dropped, p.Dropped)
			}
		})
	}
}

// An upstream that serves the model but not the API refuses with
// api_unsupported.
func TestAPIUnsupported(t *testing.T) {
	snap, diags := Load(demoWith(t, "catalog.json", [2]string{`{"provider": "azure", "price_in": 0.02, "price_out": 0, "latency_ms": 180}`,
		`{"provider": "azure", "price_in": 0.02, "price_out": 0, "latency_ms": 180}, {"provider": "anthropic", "price_in": 0.02, "price_out": 0}`}))
	require.Empty(t, diags)
	key := snap.Config.KeyByID("k-batch")
	memo := snap.Memo(key, nil, nil, Pin{}, connectors.Body{"model": json.RawMessage(`"openai/text-embedding-3-small"`), "input": json.RawMessage(`"x"`)})
	memo.SetInbound(&connectors.Inbound{API: connectors.APIEmbeddings})
	c, err := memo.Compile("anthropic", "openai/text-embedding-3-small")
	require.NoError(t, err)
	require.NotNil(t, c.Refused())
	assert.Equal(t, compiler.CodeAPIUnsupported, c.Refused().Code)
	assert.Contains(t, c.Refused().Message, "embeddings")
}

// A route target whose upstream cannot serve the API is skipped, like any
// target the request may not be sent to.
func TestEmbeddingsSkipTargetsWithoutTheAPI(t *testing.T) {
	snap, diags := Load(demoWith(t, "sluice.toml", [2]string{"[[routes]]\nmodel = \"assistant\"", `[[routes]]
model = "embed"
[[routes.targets]]
upstream = "anthropic"
model = "openai/text-embedding-3-small"
[[routes.targets]]
upstream = "openai"
model = "openai/text-embedding-3-small"

[[routes]]
model = "assistant"`}))
	require.Empty(t, diags)
	key := snap.Config.KeyByID("k-batch")
	d, err := snap.Decision(context.Background(), key.Principal())
	require.NoError(t, err)
	memo := snap.Memo(key, d, nil, Pin{}, connectors.Body{"model": json.RawMessage(`"embed"`), "input": json.RawMessage(`"x"`)})
	memo.SetInbound(&connectors.Inbound{API: connectors.APIEmbeddings})
	usable, refused, err := memo.Usable(snap.Config.Route("embed"))
	require.NoError(t, err)
	require.Nil(t, refused)
	require.Len(t, usable.Targets, 1)
	assert.Equal(t, "openai", usable.Targets[0].Upstream)
}
