package simulator

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/guardrails"
)

// TestFromCatalogKeepsTheNames: the simulator speaks the catalog's names —
// each marketplace's spelling of every provider, and each model's aliases,
// upstream ids and native ids.
func TestFromCatalogKeepsTheNames(t *testing.T) {
	cat, diags := guardrails.LoadCatalog("../testdata/names/marketplaces")
	require.Empty(t, diags)
	cfg := FromCatalog(cat)
	assert.Equal(t, "Amazon Bedrock", cfg.ProviderNames[KindOpenRouter]["amazon-bedrock"])
	assert.Equal(t, "Google", cfg.ProviderNames[KindOpenRouter]["google-vertex"])
	assert.Equal(t, "bedrock", cfg.ProviderNames[KindVercel]["amazon-bedrock"])
	assert.Equal(t, "deepinfra", cfg.ProviderNames[KindVercel]["deepinfra"])
	assert.Equal(t, "Amazon Bedrock", cfg.providerName(KindOpenRouter, Endpoint{Provider: "amazon-bedrock"}))
	assert.Equal(t, "DeepInfra", cfg.providerName(KindOpenRouter, Endpoint{Provider: "deepinfra", Tag: "fp8"}), "tags are not reported")
	assert.Equal(t, "somewhere", cfg.providerName(KindOpenRouter, Endpoint{Provider: "somewhere"}))

	haiku, ok := cfg.marketModel(KindOpenRouter, "anthropic/claude-4.5-haiku")
	require.True(t, ok, "OpenRouter takes an alias")
	assert.Equal(t, "anthropic/claude-haiku-4.5", haiku.Slug)
	assert.Equal(t, "claude-haiku-4-5", haiku.nativeID("anthropic"))
	llama, ok := cfg.marketModel(KindVercel, "META/llama-3.1-70b")
	require.True(t, ok, "the Vercel AI Gateway takes its own id")
	assert.Equal(t, "meta/llama-3.1-70b", llama.upstreamID(KindVercel))
	assert.Equal(t, llama.Slug, llama.upstreamID(KindOpenRouter))
	_, ok = cfg.marketModel(KindOpenRouter, "meta/llama-3.1-70b")
	assert.False(t, ok, "another upstream's id is not OpenRouter's")
}
