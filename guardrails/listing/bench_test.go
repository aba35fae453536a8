package listing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/guardrails/listing"
	"github.com/sluicegw/sluice/profiles"
)

// Size of the generated listing: a marketplace's order of magnitude.
const (
	benchModels    = 400
	benchEndpoints = 5 // per model: 2,000 in all
)

// writeListing generates, deterministically, an OpenRouter listing in the
// documented shape — a model list and one endpoints listing a model, with
// variant tags, cache prices and latency percentiles — under dir.
func writeListing(tb testing.TB, dir string) (models, endpoints string) {
	tb.Helper()
	authors := []string{"openai", "anthropic", "google", "meta-llama", "mistralai", "qwen", "deepseek", "cohere"}
	type pct struct {
		P50 float64 `json:"p50"`
		P75 float64 `json:"p75"`
		P90 float64 `json:"p90"`
		P99 float64 `json:"p99"`
	}
	var data []map[string]any
	endpoints = filepath.Join(dir, "endpoints")
	for i := range benchModels {
		id := fmt.Sprintf("%s/model-%03d", authors[i%len(authors)], i)
		canonical := id + "-20260101"
		data = append(data, map[string]any{
			"id": id, "canonical_slug": canonical, "name": id, "created": 1767225600, "context_length": 32768 << (i % 5),
			"pricing":              map[string]any{"prompt": "0.000001", "completion": "0.000003"},
			"architecture":         map[string]any{"modality": "text->text", "input_modalities": []string{"text"}, "output_modalities": []string{"text"}, "tokenizer": "Other"},
			"top_provider":         map[string]any{"context_length": 32768, "max_completion_tokens": nil, "is_moderated": false},
			"supported_parameters": []string{"max_tokens", "temperature", "tools"},
			"links":                map[string]any{"details": "/api/v1/models/" + canonical + "/endpoints"},
		})
		var eps []map[string]any
		for j := range benchEndpoints {
			p := (i*7 + j*13) % 60
			tag := fmt.Sprintf("provider-%02d", p)
			if j%2 == 1 {
				tag += "/fp8"
			}
			pricing := map[string]any{"prompt": fmt.Sprintf("0.000000%d", 1+(i+j)%9), "completion": fmt.Sprintf("0.00000%d", 1+(i*j)%9), "discount": 0}
			if j == 0 {
				pricing["input_cache_read"] = "0.0000001"
				pricing["input_cache_write"] = "0.00000125"
			}
			eps = append(eps, map[string]any{
				"name": fmt.Sprintf("Provider %02d | %s", p, canonical), "model_id": id, "model_name": id, "context_length": 32768,
				"pricing": pricing, "provider_name": fmt.Sprintf("Provider %02d", p), "tag": tag, "quantization": "fp8",
				"max_completion_tokens": nil, "max_prompt_tokens": nil, "supported_parameters": []string{"max_tokens"},
				"status": 0, "uptime_last_30m": 99.9, "uptime_last_5m": 100.0, "uptime_last_1d": 99.8, "supports_implicit_caching": false,
				"latency_last_30m":    pct{float64(200 + 10*j), 300, 500, 900},
				"throughput_last_30m": pct{float64(40 + 5*j), 50, 60, 70},
			})
		}
		writeJSONFile(tb, filepath.Join(endpoints, filepath.FromSlash(canonical)+".json"),
			map[string]any{"data": map[string]any{"id": id, "name": id, "created": 1767225600, "description": "",
				"architecture": map[string]any{"tokenizer": "Other", "instruct_type": nil, "modality": "text->text",
					"input_modalities": []string{"text"}, "output_modalities": []string{"text"}}, "endpoints": eps}})
	}
	models = filepath.Join(dir, "models.json")
	writeJSONFile(tb, models, map[string]any{"data": data, "total_count": len(data), "links": map[string]any{"next": nil}})
	return models, endpoints
}

func writeJSONFile(tb testing.TB, path string, v any) {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// importFiles runs `sluice catalog import` from files: read and validate
// the listing, merge it into base, load the result as the gateway would.
func importFiles(tb testing.TB, models, endpoints string, base *guardrails.Document) *listing.Applied {
	imp, err := (&listing.OpenRouter{ModelsFile: models, EndpointsDir: endpoints}).Import(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	a, diags := listing.Apply("catalog.json", base, imp, listing.MergeOptions{})
	if len(diags) > 0 {
		tb.Fatal(diags)
	}
	return a
}

// BenchmarkImportFiles imports a generated 400-model / 2,000-endpoint
// listing from files into an empty catalog (first import) and into the
// catalog the first import made (a re-import). Budget: 2 s.
func BenchmarkImportFiles(b *testing.B) {
	models, endpoints := writeListing(b, b.TempDir())
	first := importFiles(b, models, endpoints, nil)
	if n := first.Summary.Endpoints; n != benchModels*benchEndpoints {
		b.Fatalf("%d endpoints imported, want %d", n, benchModels*benchEndpoints)
	}
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			importFiles(b, models, endpoints, nil)
		}
	})
	b.Run("reimport", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			importFiles(b, models, endpoints, first.Document)
		}
	})
}

// BenchmarkDecisionOnImportedCatalog issues uncached guardrail decisions
// (the demo's policy: the ml team's model and provider patterns) against
// the imported 400-model catalog: a new principal each time, so nothing
// comes from the cache. Budget: 1 ms.
func BenchmarkDecisionOnImportedCatalog(b *testing.B) {
	models, endpoints := writeListing(b, b.TempDir())
	cat := importFiles(b, models, endpoints, nil).Catalog
	policy, diags := guardrails.LoadPolicy("../../testdata/demo")
	if len(diags) > 0 {
		b.Fatal(diags)
	}
	is := guardrails.NewIssuer(policy, cat)
	ctx := context.Background()
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		n++
		d, err := is.Decide(ctx, profiles.Principal{Org: "acme", Team: "ml", Project: "p", Key: fmt.Sprint("k", n)})
		if err != nil {
			b.Fatal(err)
		}
		if !d.ModelAllowed("openai/model-000") {
			b.Fatal("openai/* is allowed for ml")
		}
	}
}

// TestGeneratedListingImports: the benchmark's generated listing is one
// the import reads whole (so the benchmark measures what it claims).
func TestGeneratedListingImports(t *testing.T) {
	models, endpoints := writeListing(t, t.TempDir())
	a := importFiles(t, models, endpoints, nil)
	if a.Summary.Models != benchModels || a.Summary.Endpoints != benchModels*benchEndpoints || len(a.Summary.Notes) != 0 {
		t.Fatalf("imported %d models, %d endpoints, notes %v", a.Summary.Models, a.Summary.Endpoints, a.Summary.Notes)
	}
}
