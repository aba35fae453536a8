package simulator

import (
	"strings"
	"time"
)

// Model is one model the simulated marketplaces serve.
type Model struct {
	// Slug is the marketplace id, "author/name", e.g. "openai/gpt-4o".
	Slug string
	// ContextWindow is the model's context length in tokens; 0 means unlimited.
	ContextWindow int
	// Aliases are other ids of the model. The OpenRouter-like marketplace
	// takes them in requests and reports the first as the model that served,
	// as the live API reports its canonical slug
	// ("anthropic/claude-4.5-haiku-20251001" for anthropic/claude-haiku-4.5).
	// Default none: the slug is reported.
	Aliases []string
	// UpstreamIDs maps an upstream kind (KindVercel, …) to the model's id
	// there when it differs from the slug ({"vercel": "meta/llama-3.1-70b"}):
	// that upstream is sent the id and reports it. Default none.
	UpstreamIDs map[string]string
	// Native maps a provider slug to that provider's own id for the model
	// ({"anthropic": "claude-sonnet-4-5"}); the direct upstreams serve the
	// model by it. Default: the slug's name part.
	Native map[string]string
	// Endpoints are the providers serving the model, in catalog order.
	Endpoints []Endpoint
	// Embedding marks an embedding model: only the embeddings endpoints
	// serve it.
	Embedding bool
}

// Endpoint is one provider serving a model.
type Endpoint struct {
	// Provider is the provider's base slug, e.g. "deepinfra".
	Provider string
	// Tag optionally names the endpoint variant, e.g. "fp8"; the endpoint slug
	// is then "deepinfra/fp8".
	Tag string
	// PriceIn and PriceOut are USD per million prompt and completion tokens.
	PriceIn, PriceOut float64
	// LatencyMs is the time to first token; it is slept before the headers
	// only when Config.ApplyLatency is set. Used by latency/ttft sorting.
	LatencyMs float64
	// ThroughputTPS is tokens per second; used by throughput/tps sorting.
	ThroughputTPS float64
	// ZeroRetention marks an endpoint that keeps no prompt or completion:
	// OpenRouter's /endpoints/zdr lists it, and only such endpoints serve
	// a request with provider.zdr or Vercel's zeroDataRetention. Default
	// false (an unknown policy counts as retaining, as both marketplaces
	// treat it).
	ZeroRetention bool
	// NoTraining marks an endpoint that neither trains on nor collects
	// prompts: it serves OpenRouter's data_collection "deny" and Vercel's
	// disallowPromptTraining (as does a ZeroRetention one). Default false.
	NoTraining bool
	// Quantization is the precision OpenRouter's listing gives the
	// endpoint and provider.quantizations filters on ("fp8"). Default "":
	// the tag when it names a precision, else "unknown".
	Quantization string
}

// Slug returns the endpoint slug: "provider" or "provider/tag".
func (e Endpoint) Slug() string {
	if e.Tag == "" {
		return e.Provider
	}
	return e.Provider + "/" + e.Tag
}

// Config configures a [Server].
type Config struct {
	// Models is the catalog every simulated upstream serves from.
	Models []Model
	// ApplyLatency sleeps each endpoint's LatencyMs before answering.
	// Default false: tests stay fast.
	ApplyLatency bool
	// ChunkDelay is slept between streamed chunks. Default 0 (no delay).
	ChunkDelay time.Duration
	// SlowStreamInterval is the pause between chunks of the slow_stream fault.
	// Default 50ms.
	SlowStreamInterval time.Duration
	// ProviderNames spells providers the way each marketplace reports who
	// served: upstream kind (KindOpenRouter, KindVercel) → base provider slug
	// → name, such as OpenRouter's display name "Amazon Bedrock" or the
	// Vercel AI Gateway's "bedrock". The Vercel-like gateway also takes its
	// names in providerOptions.gateway. Default none: a provider is reported
	// by its slug.
	ProviderNames map[string]map[string]string
	// StreamEndDelay is slept after an OpenAI-shaped stream's final
	// "[DONE]" event, before its body ends: the end of the chunked body then
	// travels apart from the last event, as it does from upstreams that
	// finish their streams lazily. Default 0.
	StreamEndDelay time.Duration
	// AzureAPIKey is the api-key the Azure endpoints accept. Default "":
	// none (only the Entra endpoint's tokens are accepted).
	AzureAPIKey string
	// Entra is the Microsoft Entra ID tenant whose tokens the Azure
	// endpoints accept. Default nil: none.
	Entra *Entra
	// AWSCredentials are the AWS access keys the Bedrock endpoints know,
	// access key id → secret access key: a request signed with one of
	// them is checked against the signature the AWS SDK's signer computes
	// with its secret. Default none: every signed request is refused.
	AWSCredentials map[string]string
	// BedrockAPIKeys are the Bedrock API keys the Bedrock endpoints take as
	// bearer tokens. Default none.
	BedrockAPIKeys []string
}

// DefaultConfig returns a small realistic catalog with a 2ms chunk delay.
func DefaultConfig() Config {
	return Config{
		ChunkDelay: 2 * time.Millisecond,
		Models: []Model{
			{Slug: "openai/gpt-4o", ContextWindow: 128000, Endpoints: []Endpoint{
				{Provider: "openai", PriceIn: 2.5, PriceOut: 10, LatencyMs: 450, ThroughputTPS: 90},
				{Provider: "azure", PriceIn: 2.5, PriceOut: 10, LatencyMs: 600, ThroughputTPS: 140},
			}},
			{Slug: "openai/gpt-4o-mini", ContextWindow: 128000, Endpoints: []Endpoint{
				{Provider: "openai", PriceIn: 0.15, PriceOut: 0.6, LatencyMs: 350, ThroughputTPS: 85},
				{Provider: "azure", PriceIn: 0.15, PriceOut: 0.6, LatencyMs: 500, ThroughputTPS: 160},
			}},
			{Slug: "anthropic/claude-sonnet-4.5", ContextWindow: 200000, Endpoints: []Endpoint{
				{Provider: "anthropic", PriceIn: 3, PriceOut: 15, LatencyMs: 1200, ThroughputTPS: 60},
				{Provider: "amazon-bedrock", PriceIn: 3, PriceOut: 15, LatencyMs: 1500, ThroughputTPS: 55},
				{Provider: "google-vertex", PriceIn: 3, PriceOut: 15, LatencyMs: 1400, ThroughputTPS: 70},
			}},
			{Slug: "anthropic/claude-haiku-4.5", ContextWindow: 200000, Endpoints: []Endpoint{
				{Provider: "anthropic", PriceIn: 1, PriceOut: 5, LatencyMs: 600, ThroughputTPS: 110},
				{Provider: "amazon-bedrock", PriceIn: 1, PriceOut: 5, LatencyMs: 700, ThroughputTPS: 100},
			}},
			{Slug: "meta-llama/llama-3.1-70b-instruct", ContextWindow: 131072, Endpoints: []Endpoint{
				{Provider: "deepinfra", Tag: "fp8", PriceIn: 0.23, PriceOut: 0.4, LatencyMs: 500, ThroughputTPS: 40},
				{Provider: "deepinfra", Tag: "turbo", PriceIn: 0.12, PriceOut: 0.3, LatencyMs: 450, ThroughputTPS: 70},
				{Provider: "together", PriceIn: 0.88, PriceOut: 0.88, LatencyMs: 400, ThroughputTPS: 110},
				{Provider: "fireworks", PriceIn: 0.9, PriceOut: 0.9, LatencyMs: 350, ThroughputTPS: 120},
				{Provider: "groq", PriceIn: 0.59, PriceOut: 0.79, LatencyMs: 200, ThroughputTPS: 300},
			}},
			{Slug: "meta-llama/llama-3.1-8b-instruct", ContextWindow: 131072, Endpoints: []Endpoint{
				{Provider: "deepinfra", Tag: "turbo", PriceIn: 0.02, PriceOut: 0.03, LatencyMs: 300, ThroughputTPS: 150},
				{Provider: "together", PriceIn: 0.18, PriceOut: 0.18, LatencyMs: 280, ThroughputTPS: 200},
				{Provider: "groq", PriceIn: 0.05, PriceOut: 0.08, LatencyMs: 120, ThroughputTPS: 750},
			}},
			{Slug: "mistralai/mistral-large", ContextWindow: 128000, Endpoints: []Endpoint{
				{Provider: "mistral", PriceIn: 2, PriceOut: 6, LatencyMs: 500, ThroughputTPS: 45},
				{Provider: "azure", PriceIn: 2, PriceOut: 6, LatencyMs: 650, ThroughputTPS: 40},
			}},
			{Slug: "google/gemini-2.5-flash", ContextWindow: 1048576, Endpoints: []Endpoint{
				{Provider: "google-vertex", PriceIn: 0.3, PriceOut: 2.5, LatencyMs: 500, ThroughputTPS: 180},
			}},
			{Slug: "deepseek/deepseek-chat", ContextWindow: 163840, Endpoints: []Endpoint{
				{Provider: "deepseek", PriceIn: 0.27, PriceOut: 1.1, LatencyMs: 1500, ThroughputTPS: 25},
				{Provider: "deepinfra", Tag: "fp8", PriceIn: 0.3, PriceOut: 1, LatencyMs: 700, ThroughputTPS: 35},
				{Provider: "together", PriceIn: 1.25, PriceOut: 1.25, LatencyMs: 600, ThroughputTPS: 60},
				{Provider: "fireworks", PriceIn: 0.9, PriceOut: 0.9, LatencyMs: 550, ThroughputTPS: 70},
			}},
		},
	}
}

// normSlug lower-cases a provider or model reference and turns spaces into
// dashes, so "Amazon Bedrock" matches "amazon-bedrock".
func normSlug(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), " ", "-")
}

// providerMatches reports whether a provider reference (a base slug such as
// "deepinfra", which matches all its endpoints, or an exact "deepinfra/fp8")
// names the endpoint slug, case-insensitively.
func providerMatches(ref, endpointSlug string) bool {
	ref, endpointSlug = normSlug(ref), normSlug(endpointSlug)
	if ref == endpointSlug {
		return true
	}
	base, _, _ := strings.Cut(endpointSlug, "/")
	return ref == base
}

// model returns the catalog model with that slug (case-insensitive).
func (c *Config) model(slug string) (*Model, bool) {
	slug = strings.ToLower(slug)
	for i := range c.Models {
		if strings.ToLower(c.Models[i].Slug) == slug {
			return &c.Models[i], true
		}
	}
	return nil, false
}

// marketModel returns the model a marketplace of kind knows by ref: its
// slug, its id for that upstream, or (OpenRouter) one of its aliases; case
// is ignored.
func (c *Config) marketModel(kind, ref string) (*Model, bool) {
	if m, ok := c.model(ref); ok {
		return m, true
	}
	for i := range c.Models {
		m := &c.Models[i]
		if id, ok := m.UpstreamIDs[kind]; ok && strings.EqualFold(id, ref) {
			return m, true
		}
		if kind == KindOpenRouter {
			for _, a := range m.Aliases {
				if strings.EqualFold(a, ref) {
					return m, true
				}
			}
		}
	}
	return nil, false
}

// upstreamID returns the id an upstream of kind knows the model by.
func (m *Model) upstreamID(kind string) string {
	if id, ok := m.UpstreamIDs[kind]; ok {
		return id
	}
	return m.Slug
}

// nativeID returns the provider's own id for the model: its Native id, else
// the slug's name part.
func (m *Model) nativeID(provider string) string {
	if id, ok := m.Native[provider]; ok {
		return id
	}
	_, name, _ := strings.Cut(m.Slug, "/")
	return name
}

// providerName returns how a marketplace of kind names the provider of an
// endpoint when it reports who served: its ProviderNames entry, else the
// base slug. Tags are not reported: the marketplaces name the provider.
func (c *Config) providerName(kind string, e Endpoint) string {
	if n, ok := c.ProviderNames[kind][e.Provider]; ok {
		return n
	}
	return e.Provider
}
