package snapshot

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
)

// TestServed: what upstreams report (the ids and names below are the ones
// recorded from the live APIs) resolves to the catalog's model and provider
// and the endpoint that prices the answer; what matches nothing is kept as
// reported, flagged, and never priced.
func TestServed(t *testing.T) {
	cat, diags := guardrails.LoadCatalog("../testdata/names/marketplaces")
	require.Empty(t, diags)
	compiled := func(kind, decided, sent string, chain, chainSent []string) *Compiled {
		caps := compiler.Capabilities{}
		if kind == "openai" || kind == "anthropic" {
			caps.DirectProvider = kind
		}
		return &Compiled{
			Upstream: &Upstream{Config: &profiles.Upstream{Name: "u", Connector: kind}, Check: compiler.Upstream{Connector: kind, Capabilities: caps}},
			Outcome:  compiler.Outcome{NativeModel: sent, Chain: chainSent},
			Call:     &connectors.Call{Plan: &compiler.Plan{DecidedModel: decided, Chain: chain}},
		}
	}
	market := func(kind, decided string) *Compiled { return compiled(kind, decided, decided, nil, nil) }
	tests := []struct {
		name                string
		c                   *Compiled
		noCatalog           bool
		model, provider     string
		wantModel, wantProv string
		priceIn             float64 // of the endpoint priced; -1: none
		modelOff, provOff   bool
	}{
		{"openrouter dated id", market("openrouter", "openai/gpt-5.4-nano"), false, "openai/gpt-5.4-nano-20260317", "OpenAI",
			"openai/gpt-5.4-nano", "openai", 0.2, false, false},
		{"openrouter canonical slug", market("openrouter", "anthropic/claude-haiku-4.5"), false, "anthropic/claude-4.5-haiku-20251001", "Amazon Bedrock",
			"anthropic/claude-haiku-4.5", "amazon-bedrock", 1, false, false},
		{"openrouter Google is Vertex", market("openrouter", "anthropic/claude-haiku-4.5"), false, "anthropic/claude-haiku-4.5", "Google",
			"anthropic/claude-haiku-4.5", "google-vertex", 1, false, false},
		{"openrouter unknown provider", market("openrouter", "anthropic/claude-haiku-4.5"), false, "anthropic/claude-haiku-4.5", "Acme Inference",
			"anthropic/claude-haiku-4.5", "Acme Inference", -1, false, true},
		{"openrouter provider the model lacks", market("openrouter", "openai/gpt-5.4-nano"), false, "", "Amazon Bedrock",
			"openai/gpt-5.4-nano", "amazon-bedrock", -1, false, false},
		{"openrouter model outside the catalog", market("openrouter", "openai/gpt-4o"), false, "x-ai/grok-4", "xAI",
			"x-ai/grok-4", "xai", -1, true, false},
		{"openrouter chain entry", compiled("openrouter", "openai/gpt-4o", "openai/gpt-4o", []string{"moonshotai/kimi-k2.5"}, []string{"moonshotai/kimi-k2.5"}), false,
			"moonshotai/kimi-k2.5-0127", "Inceptron", "moonshotai/kimi-k2.5", "inceptron", 0.5, false, false},
		{"openrouter tagged endpoint", market("openrouter", "meta-llama/llama-3.1-70b-instruct"), false, "meta-llama/llama-3.1-70b-instruct", "deepinfra/fp8",
			"meta-llama/llama-3.1-70b-instruct", "deepinfra/fp8", 0.23, false, false},
		{"openrouter says nothing", market("openrouter", "openai/gpt-4o"), false, "", "",
			"openai/gpt-4o", "", -1, false, false},
		{"vercel ids and slugs", compiled("vercel", "meta-llama/llama-3.1-70b-instruct", "meta/llama-3.1-70b", nil, nil), false, "meta/llama-3.1-70b", "bedrock",
			"meta-llama/llama-3.1-70b-instruct", "amazon-bedrock", 0.72, false, false},
		{"vercel vertexAnthropic", market("vercel", "anthropic/claude-haiku-4.5"), false, "anthropic/claude-haiku-4.5", "vertexAnthropic",
			"anthropic/claude-haiku-4.5", "google-vertex", 1, false, false},
		{"vercel google is AI Studio", market("vercel", "google/gemini-2.5-flash"), false, "google/gemini-2.5-flash", "google",
			"google/gemini-2.5-flash", "google-ai-studio", 0.3, false, false},
		{"openai dated snapshot", compiled("openai", "openai/gpt-4o", "gpt-4o", nil, nil), false, "gpt-4o-2024-08-06", "openai",
			"openai/gpt-4o", "openai", 2.5, false, false},
		{"openai substitution outside the catalog", compiled("openai", "openai/gpt-4o", "gpt-4o", nil, nil), false, "gpt-4o-mini-2024-07-18", "openai",
			"openai/gpt-4o-mini-2024-07-18", "openai", -1, true, false},
		{"anthropic dated id", compiled("anthropic", "anthropic/claude-haiku-4.5", "claude-haiku-4-5", nil, nil), false, "claude-haiku-4-5-20251001", "anthropic",
			"anthropic/claude-haiku-4.5", "anthropic", 1, false, false},
		{"no catalog: the id sent, dated", compiled("openai", "openai/gpt-4o", "gpt-4o", nil, nil), true, "gpt-4o-2024-08-06", "openai",
			"openai/gpt-4o", "openai", -1, false, false},
		{"no catalog: a marketplace's name lower-cased", market("openrouter", "acme/model-1"), true, "acme/model-1-20260101", "Azure",
			"acme/model-1", "azure", -1, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cat
			if tc.noCatalog {
				c = nil
			}
			sv := tc.c.Served(c, connectors.Result{ServedModel: tc.model, ServedProvider: tc.provider})
			require.Equal(t, tc.wantModel, sv.Model)
			require.Equal(t, tc.wantProv, sv.Provider)
			require.Equal(t, tc.modelOff, sv.ModelUnmatched)
			require.Equal(t, tc.provOff, sv.ProviderUnmatched)
			if tc.priceIn < 0 {
				require.Nil(t, sv.Endpoint)
				return
			}
			require.NotNil(t, sv.Endpoint)
			require.Equal(t, tc.priceIn, sv.Endpoint.PriceIn)
		})
	}
}
