package listing_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/guardrails/listing"
)

// TestPricesConvertExactly: USD-per-token strings become USD per million
// tokens without binary rounding noise, scientific notation included.
func TestPricesConvertExactly(t *testing.T) {
	for in, want := range map[string]float64{
		"0.0000025": 2.5, "0.00000015": 0.15, "0": 0, "0.000000075": 0.075, "1e-6": 1, "0.0000000208333333333333": 0.0208333333333333,
	} {
		raw := []byte(`{"data":{"endpoints":[{"provider_name":"X","tag":"x","pricing":{"prompt":"` + in + `","completion":"0"}}]}}`)
		_, eps, err := listing.ParseOpenRouterEndpoints("t", raw)
		require.NoError(t, err, in)
		require.Equal(t, want, eps[0].PriceIn, in)
	}
	for _, bad := range []string{"", "abc", "1/3", "NaN", "Inf", "0x10", "1e999999999", "-0.5", "1_0"} {
		raw := []byte(`{"data":{"endpoints":[{"provider_name":"X","tag":"x","pricing":{"prompt":"` + bad + `","completion":"0"}}]}}`)
		_, _, err := listing.ParseOpenRouterEndpoints("t", raw)
		require.Error(t, err, bad)
	}
}

// TestRecordedModelListsParse: every recorded model list in
// testdata/listings parses, and the recorded endpoints listings give
// endpoints with a provider.
func TestRecordedModelListsParse(t *testing.T) {
	for _, f := range []string{"openrouter/models-cline-2025-05-23.json", "openrouter/models-genai-prices-trimmed.json", "documented/models.json"} {
		raw, err := os.ReadFile(filepath.Join("../../testdata/listings", f))
		require.NoError(t, err)
		ms, err := listing.ParseOpenRouterModels(f, raw)
		require.NoError(t, err, f)
		require.NotEmpty(t, ms)
	}
	raw, err := os.ReadFile("../../testdata/listings/openrouter/endpoints/openai/gpt-4o.json")
	require.NoError(t, err)
	id, eps, err := listing.ParseOpenRouterEndpoints("gpt-4o.json", raw)
	require.NoError(t, err)
	require.Equal(t, "openai/gpt-4o", id)
	require.Equal(t, []string{"openai", "azure"}, []string{eps[0].Tag, eps[1].Tag})
	require.Equal(t, -2, eps[1].Status)
	require.Nil(t, eps[0].LatencyP50, "unauthenticated: null")
}

// TestReimportIsStable: importing the same listing twice changes nothing
// the second time.
func TestReimportIsStable(t *testing.T) {
	dir := "../../testdata/listings/documented"
	imp, err := (&listing.OpenRouter{ModelsFile: filepath.Join(dir, "models.json"), EndpointsDir: filepath.Join(dir, "endpoints")}).Import(context.Background())
	require.NoError(t, err)
	first, diags := listing.Apply("catalog.json", nil, imp, listing.MergeOptions{})
	require.Empty(t, diags)
	second, diags := listing.Apply("catalog.json", first.Document, imp, listing.MergeOptions{})
	require.Empty(t, diags)
	require.False(t, second.Summary.Changed(), "%+v", second.Summary)
	require.Equal(t, string(first.Raw), string(second.Raw))
	require.Equal(t, first.Catalog.Revision(), second.Catalog.Revision())
}

func fuzzSeeds(f *testing.F, files ...string) {
	for _, p := range files {
		raw, err := os.ReadFile(filepath.Join("../../testdata/listings", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte(`{"data":[{"id":"a/b","pricing":{"prompt":"-1","completion":"0.1e-3"}}]}`))
	f.Add([]byte(`{"data":null}`))
}

// FuzzParseOpenRouterModels: no listing panics the parser; one it accepts
// builds an import whose merge encodes.
func FuzzParseOpenRouterModels(f *testing.F) {
	fuzzSeeds(f, "openrouter/models-genai-prices-trimmed.json", "documented/models.json", "cases/bad-price/models.json")
	f.Fuzz(func(t *testing.T, raw []byte) {
		ms, err := listing.ParseOpenRouterModels("f", raw)
		if err != nil {
			require.Nil(t, ms)
			return
		}
		eps := map[string][]listing.OREndpoint{}
		for _, m := range ms {
			require.NotEmpty(t, m.ID)
			eps[m.ID] = []listing.OREndpoint{{ProviderName: "X", Tag: "x", PriceIn: 1, PriceOut: 1, ContextLength: 1}}
		}
		doc, _ := listing.Merge(nil, listing.BuildOpenRouter(ms, eps, nil), listing.MergeOptions{})
		_, err = listing.EncodeDocument(doc)
		require.NoError(t, err)
	})
}

// FuzzParseOpenRouterEndpoints: no endpoints listing panics the parser;
// every price it accepts is finite and non-negative.
func FuzzParseOpenRouterEndpoints(f *testing.F) {
	fuzzSeeds(f, "openrouter/endpoints/openai/gpt-4o.json", "openrouter/endpoints/google/gemini-2.5-pro-preview.json",
		"documented/endpoints/meta-llama/llama-3.1-70b-instruct.json", "cases/endpoints-bad-shape/endpoints/meta-llama/llama-3.1-70b-instruct.json")
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, eps, err := listing.ParseOpenRouterEndpoints("f", raw)
		if err != nil {
			return
		}
		for _, e := range eps {
			for _, p := range []float64{e.PriceIn, e.PriceOut} {
				require.False(t, math.IsNaN(p) || math.IsInf(p, 0) || p < 0, "%v", p)
			}
			if e.LatencyP50 != nil {
				require.GreaterOrEqual(t, *e.LatencyP50, 0.0)
			}
		}
	})
}

// FuzzParseVercelModels: no Vercel listing panics the parser or the merge.
func FuzzParseVercelModels(f *testing.F) {
	fuzzSeeds(f, "vercel/models.json")
	base, err := listing.ReadDocument("../../testdata/listings/cases/vercel/base.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ms, err := listing.ParseVercelModels("f", raw)
		if err != nil {
			return
		}
		doc, _ := listing.Merge(base, listing.BuildVercel(ms, nil), listing.MergeOptions{})
		require.NotNil(t, doc)
	})
}

// TestQuantizationRead: an endpoint's quantization is read lower-cased;
// "unknown", null and absence are unknown; anything else that is no
// quantization level fails the listing.
func TestQuantizationRead(t *testing.T) {
	for in, want := range map[string]string{`"fp8"`: "fp8", `"BF16"`: "bf16", `"unknown"`: "", `null`: "", ``: ""} {
		member := ""
		if in != "" {
			member = `,"quantization":` + in
		}
		raw := []byte(`{"data":{"endpoints":[{"provider_name":"X","tag":"x","pricing":{"prompt":"0","completion":"0"}` + member + `}]}}`)
		_, eps, err := listing.ParseOpenRouterEndpoints("t", raw)
		require.NoError(t, err, in)
		require.Equal(t, want, eps[0].Quantization, in)
	}
	for _, bad := range []string{`8`, `"fp 8"`, `["fp8"]`} {
		raw := []byte(`{"data":{"endpoints":[{"provider_name":"X","tag":"x","pricing":{"prompt":"0","completion":"0"},"quantization":` + bad + `}]}}`)
		_, _, err := listing.ParseOpenRouterEndpoints("t", raw)
		require.Error(t, err, bad)
	}
}

// TestZDRListRead: the zero-data-retention list's entries are read by
// model_id and tag (or provider name); an entry naming no endpoint, or a
// body that is no list, fails with a located shape error.
func TestZDRListRead(t *testing.T) {
	zdr, err := listing.ParseOpenRouterZDR("zdr.json", []byte(`{"data":[{"model_id":"OpenAI/GPT-4o","tag":"Azure"},{"model_id":"a/b","provider_name":"OpenAI"}]}`))
	require.NoError(t, err)
	require.Equal(t, "openai/gpt-4o", zdr[0].ModelID)
	require.Equal(t, "azure", zdr[0].Tag)
	require.Equal(t, "OpenAI", zdr[1].ProviderName)
	empty, err := listing.ParseOpenRouterZDR("zdr.json", []byte(`{"data":[]}`))
	require.NoError(t, err)
	require.Empty(t, empty)
	for bad, where := range map[string]string{
		`{"data":{}}`:                         "zdr.json#/data",
		`{"data":[{"tag":"azure"}]}`:          "zdr.json#/data/0/model_id",
		`{"data":[{"model_id":"a/b"}]}`:       "zdr.json#/data/0",
		`{"data":[{"model_id":5,"tag":"x"}]}`: "zdr.json#/data/0/model_id",
	} {
		_, err := listing.ParseOpenRouterZDR("zdr.json", []byte(bad))
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), where, bad)
	}
}
