package simulator

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenRouterKnobs(t *testing.T) {
	s := startSim(t, testConfig())
	url := s.URL(KindOpenRouter) + "/chat/completions"
	cases := []struct {
		name     string
		body     string // fields besides messages
		fault    string
		model    string
		provider string   // endpoint that served
		attempts []string // endpoint of each attempt, in order
		strategy string   // openrouter_metadata.strategy
	}{
		{"default is cheapest", `"model":"acme/alpha"`, "", "acme/alpha", "cheap", []string{"cheap"}, "direct"},
		{"sort price", `"model":"acme/alpha","provider":{"sort":"price"}`, "", "acme/alpha", "cheap", []string{"cheap"}, "direct"},
		{"sort throughput", `"model":"acme/alpha","provider":{"sort":"throughput"}`, "", "acme/alpha", "fast", []string{"fast"}, "direct"},
		{"sort latency", `"model":"acme/alpha","provider":{"sort":"latency"}`, "", "acme/alpha", "quick", []string{"quick"}, "direct"},
		{"sort object", `"model":"acme/alpha","provider":{"sort":{"by":"latency","partition":"none"}}`, "", "acme/alpha", "quick", []string{"quick"}, "direct"},
		{"nitro suffix", `"model":"acme/alpha:nitro"`, "", "acme/alpha", "fast", []string{"fast"}, "direct"},
		{"order", `"model":"acme/alpha","provider":{"order":["quick"]}`, "", "acme/alpha", "quick", []string{"quick"}, "direct"},
		{"order base slug takes its cheapest endpoint", `"model":"acme/alpha","provider":{"order":["multi"]}`, "", "acme/alpha", "multi/one", []string{"multi/one"}, "direct"},
		{"order exact tag, any case", `"model":"acme/alpha","provider":{"order":["MULTI/Two"]}`, "", "acme/alpha", "multi/two", []string{"multi/two"}, "direct"},
		{"only", `"model":"acme/alpha","provider":{"only":["fast","quick"]}`, "", "acme/alpha", "quick", []string{"quick"}, "direct"},
		{"ignore", `"model":"acme/alpha","provider":{"ignore":["cheap"]}`, "", "acme/alpha", "multi/one", []string{"multi/one"}, "direct"},
		{"ignore base slug", `"model":"acme/alpha","provider":{"ignore":["cheap","multi"]}`, "", "acme/alpha", "quick", []string{"quick"}, "direct"},
		{"order falls back to the rest", `"model":"acme/alpha","provider":{"order":["fast"]}`, "status=503;provider=fast",
			"acme/alpha", "cheap", []string{"fast", "cheap"}, "direct"},
		{"order walks its list in order", `"model":"acme/alpha","provider":{"order":["fast","quick"],"allow_fallbacks":false}`, "status=503;provider=fast",
			"acme/alpha", "quick", []string{"fast", "quick"}, "direct"},
		{"provider fault walks to next cheapest", `"model":"acme/alpha"`, "status=429;provider=cheap",
			"acme/alpha", "multi/one", []string{"cheap", "multi/one"}, "direct"},
		{"models chain walks on model fault", `"model":"acme/alpha","models":["acme/gamma"],"provider":{"only":["cheap","fast"]}`, "status=500;model=acme/alpha",
			"acme/gamma", "fast", []string{"cheap", "fast", "fast"}, "fallback"},
		{"models without model", `"models":["acme/beta","acme/gamma"]`, "status=502;model=beta",
			"acme/gamma", "fast", []string{"cheap", "quick", "fast"}, "fallback"},
		{"auto picks first catalog model", `"model":"openrouter/auto"`, "", "acme/alpha", "cheap", []string{"cheap"}, "auto"},
		{"auto honours allowed_models", `"model":"openrouter/auto","plugins":[{"id":"auto-router","allowed_models":["acme/gamma"]}]`, "",
			"acme/gamma", "fast", []string{"fast"}, "auto"},
		{"auto allowed_models glob", `"model":"openrouter/auto","plugins":[{"id":"auto-router","allowed_models":["acme/b*"]}]`, "",
			"acme/beta", "cheap", []string{"cheap"}, "auto"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.Reset()
			hdr := []string{"X-OpenRouter-Metadata", "enabled"}
			if c.fault != "" {
				hdr = append(hdr, FaultHeader, c.fault)
			}
			r := post(t, url, "{"+c.body+","+hello+"}", hdr...)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			m := r.json(t)
			assert.Equal(t, c.model, m["model"])
			// The answer names the provider, not which of its endpoints.
			base, _, _ := strings.Cut(c.provider, "/")
			assert.Equal(t, base, m["provider"])
			msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
			assert.Equal(t, fmt.Sprintf("served by %s via %s", c.model, c.provider), msg["content"])
			meta := m["openrouter_metadata"].(map[string]any)
			assert.EqualValues(t, len(c.attempts), meta["attempt"])
			assert.Equal(t, c.strategy, meta["strategy"])
			var got, reported []string
			for _, call := range s.Calls() {
				got = append(got, call.Provider)
			}
			for _, a := range meta["attempts"].([]any) {
				reported = append(reported, a.(map[string]any)["provider"].(string))
			}
			assert.Equal(t, c.attempts, got)
			var bases []string
			for _, a := range c.attempts {
				b, _, _ := strings.Cut(a, "/")
				bases = append(bases, b)
			}
			assert.Equal(t, bases, reported)
			u := m["usage"].(map[string]any)
			assert.EqualValues(t, 3, u["prompt_tokens"], "ceil(11/4)")
			assert.Greater(t, u["cost"].(float64), 0.0)
		})
	}
}

func TestOpenRouterMetadataOnlyWhenAsked(t *testing.T) {
	s := startSim(t, testConfig())
	r := post(t, s.URL(KindOpenRouter)+"/chat/completions", `{"model":"acme/alpha",`+hello+`}`)
	require.Equal(t, 200, r.status)
	_, ok := r.json(t)["openrouter_metadata"]
	assert.False(t, ok)
}

func TestOpenRouterRefusals(t *testing.T) {
	s := startSim(t, testConfig())
	url := s.URL(KindOpenRouter) + "/chat/completions"
	cases := []struct {
		name, body, fault string
		status            int
		message           string
	}{
		{"more than 3 models", `"model":"acme/alpha","models":["acme/beta","acme/gamma","openai/gpt-x","anthropic/claude-x-1.5"]`, "", 400, "'models' array must have 3 items or fewer"},
		{"unknown model", `"model":"acme/nope"`, "", 400, "acme/nope is not a valid model ID"},
		{"no eligible provider", `"model":"acme/alpha","provider":{"only":["nobody"]}`, "", 404, "No allowed providers are available for the selected model."},
		{"order without fallbacks", `"model":"acme/alpha","provider":{"order":["fast"],"allow_fallbacks":false}`, "status=503;provider=fast", 503, "simulated fault"},
		{"no fallbacks keeps only the best", `"model":"acme/alpha","provider":{"allow_fallbacks":false}`, "status=503;provider=cheap", 503, "simulated fault"},
		{"bad sort", `"model":"acme/alpha","provider":{"sort":"vibes"}`, "", 400, "provider.sort"},
		{"every attempt fails: last error", `"model":"acme/gamma"`, "status=429", 429, "simulated fault"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var hdr []string
			if c.fault != "" {
				hdr = []string{FaultHeader, c.fault}
			}
			r := post(t, url, "{"+c.body+","+hello+"}", hdr...)
			require.Equal(t, c.status, r.status, string(r.body))
			e := r.json(t)["error"].(map[string]any)
			assert.EqualValues(t, c.status, e["code"])
			msg := e["message"]
			if msg == "Provider returned error" {
				// A provider's own answer is relayed in metadata.raw.
				msg = e["metadata"].(map[string]any)["raw"]
			}
			assert.Contains(t, msg, c.message)
		})
	}
}

func TestVercelKnobs(t *testing.T) {
	s := startSim(t, testConfig())
	url := s.URL(KindVercel) + "/chat/completions"
	type att struct {
		model     string
		providers []string
	}
	cases := []struct {
		name, gateway, fault string
		model, provider      string
		attempts             []att
	}{
		{"default is catalog order", `{}`, "", "acme/alpha", "cheap", []att{{"acme/alpha", []string{"cheap"}}}},
		{"sort cost", `{"sort":"cost"}`, "status=500;provider=cheap", "acme/alpha", "multi/one", []att{{"acme/alpha", []string{"cheap", "multi/one"}}}},
		{"sort tps", `{"sort":"tps"}`, "", "acme/alpha", "fast", []att{{"acme/alpha", []string{"fast"}}}},
		{"sort ttft", `{"sort":"ttft"}`, "", "acme/alpha", "quick", []att{{"acme/alpha", []string{"quick"}}}},
		{"order", `{"order":["multi/two","quick"]}`, "", "acme/alpha", "multi/two", []att{{"acme/alpha", []string{"multi/two"}}}},
		{"order then the rest", `{"order":["quick"]}`, "status=503;provider=quick", "acme/alpha", "cheap", []att{{"acme/alpha", []string{"quick", "cheap"}}}},
		{"only", `{"only":["fast"]}`, "", "acme/alpha", "fast", []att{{"acme/alpha", []string{"fast"}}}},
		{"no deny knob", `{"ignore":["cheap"]}`, "", "acme/alpha", "cheap", []att{{"acme/alpha", []string{"cheap"}}}},
		{"models chain", `{"only":["fast","quick"],"models":["acme/gamma"]}`, "status=500;model=acme/alpha", "acme/gamma", "fast",
			[]att{{"acme/alpha", []string{"fast", "quick"}}, {"acme/gamma", []string{"fast"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.Reset()
			var hdr []string
			if c.fault != "" {
				hdr = []string{FaultHeader, c.fault}
			}
			r := post(t, url, `{"model":"acme/alpha","providerOptions":{"gateway":`+c.gateway+`},`+hello+`}`, hdr...)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			m := r.json(t)
			assert.Equal(t, "acme/alpha", m["model"], "the model is echoed as asked")
			routing := vercelRoutingOf(t, m)
			// The report names providers, not which of their endpoints.
			assert.Equal(t, baseSlug(c.provider), routing["finalProvider"])
			var got, want []att
			for _, ma := range routing["modelAttempts"].([]any) {
				ma := ma.(map[string]any)
				a := att{model: ma["canonicalSlug"].(string)}
				for _, pa := range ma["providerAttempts"].([]any) {
					a.providers = append(a.providers, pa.(map[string]any)["provider"].(string))
				}
				got = append(got, a)
			}
			var endpoints, called []string
			for _, a := range c.attempts {
				w := att{model: a.model}
				for _, p := range a.providers {
					w.providers = append(w.providers, baseSlug(p))
					endpoints = append(endpoints, p)
				}
				want = append(want, w)
			}
			assert.Equal(t, want, got)
			for _, call := range s.Calls() {
				called = append(called, call.Provider)
			}
			assert.Equal(t, endpoints, called)
			last := s.Calls()[len(s.Calls())-1]
			assert.Equal(t, c.provider, last.Provider)
			assert.Equal(t, c.model, last.Model)
		})
	}
	r := post(t, url, `{"model":"acme/alpha","providerOptions":{"gateway":{"sort":"price"}},`+hello+`}`)
	assert.Equal(t, 400, r.status, "sort values are cost, ttft, tps")
}

// vercelRoutingOf returns the routing report of a Vercel-like answer,
// which lives inside the choice.
func vercelRoutingOf(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	return msg["provider_metadata"].(map[string]any)["gateway"].(map[string]any)["routing"].(map[string]any)
}

func baseSlug(endpoint string) string {
	base, _, _ := strings.Cut(endpoint, "/")
	return base
}

func TestOpenAIDirect(t *testing.T) {
	s := startSim(t, testConfig())
	url := s.URL(KindOpenAI) + "/chat/completions"
	for model, want := range map[string]string{
		"gpt-x": "gpt-x-2024-08-06", "openai/gpt-x": "gpt-x-2024-08-06", "gpt-x-2025-01-31": "gpt-x-2025-01-31",
	} {
		r := post(t, url, `{"model":"`+model+`",`+hello+`}`)
		require.Equal(t, 200, r.status, string(r.body))
		m := r.json(t)
		assert.Equal(t, want, m["model"], "the dated snapshot id, as asked when asked dated")
		assert.Equal(t, "chat.completion", m["object"])
		_, hasProvider := m["provider"]
		assert.False(t, hasProvider)
		msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
		assert.Equal(t, "served by openai/gpt-x via openai", msg["content"])
		assert.Equal(t, []any{}, msg["annotations"])
		assert.Equal(t, "default", m["service_tier"])
		assert.Regexp(t, `^fp_[0-9a-f]{10}$`, m["system_fingerprint"])
		u := m["usage"].(map[string]any)
		assert.Contains(t, u["prompt_tokens_details"], "cached_tokens")
		assert.Contains(t, u["completion_tokens_details"], "reasoning_tokens")
		assert.True(t, strings.HasPrefix(string(r.body), "{\n  \"id\": \"chatcmpl-"), "pretty-printed as recorded: %s", r.body)
		assert.True(t, strings.HasSuffix(string(r.body), "\n}\n"))
	}
	// acme/alpha is not served by openai.
	r := post(t, url, `{"model":"acme/alpha",`+hello+`}`)
	require.Equal(t, 404, r.status)
	e := r.json(t)["error"].(map[string]any)
	assert.Equal(t, "model_not_found", e["code"])
	assert.Equal(t, "invalid_request_error", e["type"])
	assert.Equal(t, "The model `acme/alpha` does not exist or you do not have access to it.", e["message"])
	assert.Equal(t, 3, s.CallCount(CallFilter{Kind: KindOpenAI, Provider: "openai", Status: 200}))
}

func TestContextOverflowShapes(t *testing.T) {
	s := startSim(t, testConfig())
	long := `"messages":[{"role":"user","content":"` + repeat("abcd", 1001) + `"}]`
	r := post(t, s.URL(KindOpenAI)+"/chat/completions", `{"model":"gpt-x",`+long+`}`)
	require.Equal(t, 400, r.status)
	assert.Equal(t, "context_length_exceeded", r.json(t)["error"].(map[string]any)["code"])

	r = post(t, s.URL(KindAnthropic)+"/messages", `{"model":"claude-x-1-5","max_tokens":5,`+long+`}`, "x-api-key", "k", "anthropic-version", "2023-06-01")
	require.Equal(t, 400, r.status)
	assert.Contains(t, r.json(t)["error"].(map[string]any)["message"], "prompt is too long: 1001 tokens > 1000 maximum")

	r = post(t, s.URL(KindOpenRouter)+"/chat/completions", `{"model":"acme/alpha",`+long+`}`)
	require.Equal(t, 400, r.status)
	assert.Contains(t, r.json(t)["error"].(map[string]any)["message"], "This endpoint's maximum context length is 1000 tokens")
}

func repeat(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}

func TestListings(t *testing.T) {
	s := startSim(t, DefaultConfig())
	resp, err := http.Get(s.URL(KindOpenRouter) + "/models")
	require.NoError(t, err)
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode}
	r.body = readAll(t, resp)
	m := r.json(t)
	data := m["data"].([]any)
	require.Len(t, data, 9)
	first := data[0].(map[string]any)
	assert.Equal(t, "openai/gpt-4o", first["id"])
	assert.EqualValues(t, 128000, first["context_length"])
	assert.Equal(t, "0.0000025", first["pricing"].(map[string]any)["prompt"])

	resp2, err := http.Get(s.URL(KindOpenRouter) + "/models/meta-llama/llama-3.1-70b-instruct/endpoints")
	require.NoError(t, err)
	defer resp2.Body.Close()
	r2 := reply{status: resp2.StatusCode, body: readAll(t, resp2)}
	require.Equal(t, 200, r2.status)
	eps := r2.json(t)["data"].(map[string]any)["endpoints"].([]any)
	require.Len(t, eps, 5)
	assert.Equal(t, "deepinfra/fp8", eps[0].(map[string]any)["tag"])
	assert.Equal(t, "fp8", eps[0].(map[string]any)["quantization"])

	// In the catalog's names: the canonical slug, the providers' display
	// names.
	s = startSim(t, namedConfig())
	resp3, err := http.Get(s.URL(KindOpenRouter) + "/models")
	require.NoError(t, err)
	defer resp3.Body.Close()
	listed := (reply{body: readAll(t, resp3)}).json(t)["data"].([]any)[0].(map[string]any)
	assert.Equal(t, "anthropic/claude-1.5-x-20250101", listed["canonical_slug"])
	details := listed["links"].(map[string]any)["details"].(string)
	resp4, err := http.Get(s.URL(KindOpenRouter) + strings.TrimPrefix(details, "/api/v1"))
	require.NoError(t, err)
	defer resp4.Body.Close()
	r4 := reply{status: resp4.StatusCode, body: readAll(t, resp4)}
	require.Equal(t, 200, r4.status, "the details link resolves")
	ep := r4.json(t)["data"].(map[string]any)["endpoints"].([]any)[1].(map[string]any)
	assert.Equal(t, "Amazon Bedrock", ep["provider_name"])
	assert.Equal(t, "amazon-bedrock", ep["tag"])
	assert.Equal(t, "Amazon Bedrock | anthropic/claude-1.5-x-20250101", ep["name"])
}

// namedConfig is a catalog whose names differ per upstream, as the live
// marketplaces' do.
func namedConfig() Config {
	return Config{
		Models: []Model{{Slug: "anthropic/claude-x-1.5", ContextWindow: 1000,
			Aliases:     []string{"anthropic/claude-1.5-x-20250101"},
			UpstreamIDs: map[string]string{KindVercel: "anthropic/claude-x"},
			Native:      map[string]string{"anthropic": "claude-x-1-5"},
			Endpoints: []Endpoint{
				{Provider: "anthropic", PriceIn: 1, PriceOut: 2},
				{Provider: "amazon-bedrock", PriceIn: 1, PriceOut: 2},
				{Provider: "google-vertex", PriceIn: 1, PriceOut: 2},
			}}},
		ProviderNames: map[string]map[string]string{
			KindOpenRouter: {"anthropic": "Anthropic", "amazon-bedrock": "Amazon Bedrock", "google-vertex": "Google"},
			KindVercel:     {"anthropic": "anthropic", "amazon-bedrock": "bedrock", "google-vertex": "vertex"},
		},
	}
}

// TestMarketplaceNames: each marketplace is asked and answers in its own
// names — OpenRouter reports the canonical id and the provider's display
// name; the Vercel AI Gateway takes its model id and provider slugs, echoes
// the id and reports its slugs.
func TestMarketplaceNames(t *testing.T) {
	s := startSim(t, namedConfig())
	for _, asked := range []string{"anthropic/claude-x-1.5", "anthropic/claude-1.5-x-20250101"} {
		r := post(t, orURL(s), `{"model":"`+asked+`","provider":{"order":["amazon-bedrock"]},`+hello+`}`)
		require.Equal(t, 200, r.status, string(r.body))
		m := r.json(t)
		assert.Equal(t, "anthropic/claude-1.5-x-20250101", m["model"])
		assert.Equal(t, "Amazon Bedrock", m["provider"])
	}
	r := post(t, orURL(s), `{"model":"anthropic/claude-x","provider":{"order":["amazon-bedrock"]},`+hello+`}`)
	assert.Equal(t, 400, r.status, "another upstream's id is not OpenRouter's")

	r = post(t, s.URL(KindVercel)+"/chat/completions",
		`{"model":"anthropic/claude-x","providerOptions":{"gateway":{"order":["vertex"],"only":["vertex","bedrock"]}},`+hello+`}`,
		FaultHeader, "status=503;provider=google-vertex")
	require.Equal(t, 200, r.status, string(r.body))
	m := r.json(t)
	assert.Equal(t, "anthropic/claude-x", m["model"], "echoed as asked")
	routing := vercelRoutingOf(t, m)
	assert.Equal(t, "vertex", routing["resolvedProvider"])
	assert.Equal(t, "bedrock", routing["finalProvider"])
	assert.Equal(t, "anthropic/claude-x", routing["canonicalSlug"])
	assert.Equal(t, []any{"bedrock"}, routing["fallbacksAvailable"])
	attempts := routing["attempts"].([]any)
	require.Len(t, attempts, 2)
	failed := attempts[0].(map[string]any)
	assert.Equal(t, false, failed["success"])
	assert.EqualValues(t, 503, failed["statusCode"])
	assert.Contains(t, failed["error"], "simulated fault")
	ma := routing["modelAttempts"].([]any)[0].(map[string]any)
	assert.Equal(t, "anthropic/claude-x", ma["canonicalSlug"])
	assert.Equal(t, "vertex:claude-x-1.5", ma["modelId"])
	gateway := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["provider_metadata"].(map[string]any)["gateway"].(map[string]any)
	assert.IsType(t, "", gateway["cost"], "the report's cost is a string")
	u := m["usage"].(map[string]any)
	assert.Equal(t, u["cost"], u["market_cost"])
	assert.Equal(t, false, u["is_byok"])

	r = post(t, s.URL(KindVercel)+"/chat/completions", `{"model":"anthropic/claude-x","providerOptions":{"gateway":{"only":["anthropic"]}},`+hello+`}`)
	require.Equal(t, 200, r.status, string(r.body))
	msg := r.json(t)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	anth := msg["provider_metadata"].(map[string]any)["anthropic"].(map[string]any)
	assert.Contains(t, anth["usage"], "cache_read_input_tokens", "Anthropic's own report beside the gateway's")
	ma = vercelRoutingOf(t, r.json(t))["modelAttempts"].([]any)[0].(map[string]any)
	assert.Equal(t, "anthropic:claude-x-1-5-20250514", ma["modelId"], "the provider's dated id")
}
