package simulator

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/guardrails/listing"
)

// dataPolicyCase is one case of testdata/datapolicy/cases.json: a request
// on a marketplace with a data policy (OpenRouter's provider object or
// Vercel's providerOptions.gateway) and the endpoint that serves it, or
// the status (and error code) it fails with.
type dataPolicyCase struct {
	Name       string          `json:"name"`
	Market     string          `json:"market"`
	Model      string          `json:"model"`
	Models     []string        `json:"models"`
	Policy     json.RawMessage `json:"policy"`
	Served     string          `json:"served"`
	Status     int             `json:"status"`
	Code       string          `json:"code"`
	ExcludedBy string          `json:"excluded_by"`
}

// dataPolicySim serves testdata/datapolicy/catalog.json: the endpoints'
// data facts come from a sluice catalog, as the demo's do.
func dataPolicySim(t *testing.T) *Server {
	t.Helper()
	raw, err := os.ReadFile("testdata/datapolicy/catalog.json")
	require.NoError(t, err)
	cat, diags := guardrails.ParseCatalog(guardrails.CatalogFile, raw)
	require.Empty(t, diags)
	return startSim(t, FromCatalog(cat))
}

// TestDataPolicyEnforced: every case of testdata/datapolicy/cases.json, on
// each of the marketplace's chat, Messages and Responses endpoints: each
// knob keeps only the endpoints whose facts meet it, and a policy that
// leaves none fails with the marketplace's error before any attempt.
func TestDataPolicyEnforced(t *testing.T) {
	raw, err := os.ReadFile("testdata/datapolicy/cases.json")
	require.NoError(t, err)
	var file struct {
		Cases []dataPolicyCase `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &file))
	require.NotEmpty(t, file.Cases)
	s := dataPolicySim(t)
	for _, c := range file.Cases {
		for _, api := range []string{"/chat/completions", "/messages", "/responses"} {
			t.Run(c.Name+" "+c.Market+api, func(t *testing.T) {
				s.Reset()
				body := map[string]any{"model": c.Model}
				switch api {
				case "/chat/completions":
					body["messages"] = []any{map[string]any{"role": "user", "content": "hello"}}
				case "/messages":
					body["max_tokens"] = 64
					body["messages"] = []any{map[string]any{"role": "user", "content": "hello"}}
				case "/responses":
					body["input"] = "hello"
				}
				kind := KindOpenRouter
				if c.Market == "vercel" {
					kind = KindVercel
					gw := map[string]any{}
					if len(c.Policy) > 0 {
						require.NoError(t, json.Unmarshal(c.Policy, &gw))
					}
					if len(c.Models) > 0 {
						gw["models"] = c.Models
					}
					body["providerOptions"] = map[string]any{"gateway": gw}
				} else {
					if len(c.Policy) > 0 {
						body["provider"] = c.Policy
					}
					if len(c.Models) > 0 {
						body["models"] = c.Models
					}
				}
				b, err := json.Marshal(body)
				require.NoError(t, err)
				r := post(t, s.URL(kind)+api, string(b))
				if c.Served != "" {
					require.Equal(t, http.StatusOK, r.status, string(r.body))
					calls := s.Calls()
					require.NotEmpty(t, calls)
					assert.Equal(t, c.Served, calls[len(calls)-1].Provider)
					return
				}
				require.Equal(t, c.Status, r.status, string(r.body))
				assert.Empty(t, s.Calls(), "refused before any attempt")
				if c.Code == "" {
					return
				}
				e, _ := r.json(t)["error"].(map[string]any)
				require.NotNil(t, e, string(r.body))
				switch {
				case kind == KindOpenRouter:
					avail, _ := e["availability"].(map[string]any)
					require.NotNil(t, avail, string(r.body))
					assert.Equal(t, c.Code, avail["code"])
					assert.Equal(t, []any{c.ExcludedBy}, avail["excluded_by"])
					assert.Equal(t, false, avail["retryable"])
					assert.Equal(t, "not_found", e["error_type"])
					if api == "/messages" {
						assert.Equal(t, "not_found_error", e["type"])
					} else {
						assert.EqualValues(t, 404, e["code"])
					}
				case api == "/messages":
					assert.Equal(t, "not_found_error", e["type"]) // Anthropic's envelope
				default:
					assert.Equal(t, c.Code, e["type"])
				}
			})
		}
	}
}

// TestDataFactsListed: the simulator's listings carry the endpoints' data
// facts in OpenRouter's documented shape — quantization in each endpoints
// listing, the zero-retention endpoints in /endpoints/zdr — so the catalog
// import reads back the facts the simulator enforces.
func TestDataFactsListed(t *testing.T) {
	s := dataPolicySim(t)
	imp, err := (&listing.OpenRouter{BaseURL: s.URL(KindOpenRouter), Client: &listing.Client{}}).Import(context.Background())
	require.NoError(t, err)
	require.Empty(t, imp.Notes)
	a, diags := listing.Apply(guardrails.CatalogFile, nil, imp, listing.MergeOptions{})
	require.Empty(t, diags)
	type facts struct {
		zero, training *bool
		quant          string
	}
	got := map[string]facts{}
	for _, m := range a.Document.Models {
		for _, e := range m.Endpoints {
			got[m.Slug+" "+e.Slug()] = facts{e.ZeroRetention, e.NoTraining, e.Quantization}
		}
	}
	yes, no := true, false
	assert.Equal(t, map[string]facts{
		"acme/private open":  {&no, nil, ""},
		"acme/private quiet": {&no, nil, "fp8"}, // no training without zero retention: not in the ZDR list
		"acme/private vault": {&yes, &yes, "bf16"},
		"acme/public open":   {&no, nil, "fp8"},
	}, got)
}

// TestDemoCatalogDataFacts: the demo catalog's hand-written facts reach the
// simulator, so a zero-retention request on a marketplace is served by the
// model's one zero-retention endpoint (Bedrock for Claude Sonnet 4.5,
// Azure for GPT-4o) and never by the first-party endpoint that retains.
func TestDemoCatalogDataFacts(t *testing.T) {
	cat, diags := guardrails.LoadCatalog("../testdata/demo")
	require.Empty(t, diags)
	s := startSim(t, FromCatalog(cat))
	for model, want := range map[string]string{"anthropic/claude-sonnet-4.5": "amazon-bedrock", "openai/gpt-4o": "azure"} {
		for _, c := range []struct{ kind, body string }{
			{KindOpenRouter, `{"model":"` + model + `","provider":{"zdr":true},` + hello + `}`},
			{KindVercel, `{"model":"` + model + `","providerOptions":{"gateway":{"zeroDataRetention":true}},` + hello + `}`},
		} {
			s.Reset()
			r := post(t, s.URL(c.kind)+"/chat/completions", c.body)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			calls := s.Calls()
			require.Len(t, calls, 1, c.kind)
			assert.Equal(t, want, calls[0].Provider, c.kind+" "+model)
		}
	}
}
