package simulator

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sluicegw/sluice/guardrails"
)

// The listing endpoints answer in the shapes the marketplaces document and
// were recorded sending (testdata/listings): OpenRouter's model list and
// per-model endpoints listings (prices as strings of USD per token, the
// provider's display name beside its routing tag, latency and throughput
// as percentile objects), and the Vercel AI Gateway's model list. The
// catalog import and the gateway's live refresh are tested against them
// over real HTTP.

// perToken renders a USD-per-Mtok price as the listings' per-token string.
func perToken(perM float64) string {
	s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.12f", perM/1e6), "0"), ".")
	if s == "" || s == "-" {
		return "0"
	}
	return s
}

// canonicalSlug is a model's permanent slug as OpenRouter lists it: the id
// it reports the model by when it serves (see orModelID).
func canonicalSlug(m *Model) string { return orModelID(m) }

// displayName is the name OpenRouter reports a provider by: its built-in
// display name, else the slug.
func displayName(provider string) string {
	if names := guardrails.BuiltinReportedNames(guardrails.ConnectorOpenRouter, provider); len(names) > 0 {
		return names[0]
	}
	return provider
}

// percentiles renders a measured median as OpenRouter's {p50, p75, p90,
// p99}, or null when nothing was measured.
func percentiles(p50 float64) any {
	if p50 <= 0 {
		return nil
	}
	return map[string]any{"p50": p50, "p75": p50 * 1.25, "p90": p50 * 1.6, "p99": p50 * 3}
}

// cheapest returns a model's cheapest endpoint's prices (the price a
// model list shows).
func cheapest(m *Model) (in, out float64) {
	if len(m.Endpoints) > 0 {
		in, out = m.Endpoints[0].PriceIn, m.Endpoints[0].PriceOut
		for _, e := range m.Endpoints[1:] {
			if e.PriceIn+e.PriceOut < in+out {
				in, out = e.PriceIn, e.PriceOut
			}
		}
	}
	return in, out
}

// handleORModels answers GET /api/v1/models: {data, total_count, links}.
func (s *Server) handleORModels(w http.ResponseWriter, r *http.Request) {
	data := make([]any, 0, len(s.cfg.Models))
	for i := range s.cfg.Models {
		m := &s.cfg.Models[i]
		in, out := cheapest(m)
		canonical := canonicalSlug(m)
		data = append(data, map[string]any{
			"id": m.Slug, "canonical_slug": canonical, "hugging_face_id": nil, "name": m.Slug, "created": 1735689600,
			"description": "A simulated model.", "context_length": m.ContextWindow,
			"architecture": map[string]any{"modality": "text->text", "input_modalities": []string{"text"},
				"output_modalities": []string{"text"}, "tokenizer": "Other", "instruct_type": nil},
			"pricing":              map[string]any{"prompt": perToken(in), "completion": perToken(out)},
			"top_provider":         map[string]any{"context_length": m.ContextWindow, "max_completion_tokens": nil, "is_moderated": false},
			"per_request_limits":   nil,
			"supported_parameters": []string{"max_tokens", "temperature", "top_p", "stop", "stream", "tools", "tool_choice"},
			"default_parameters":   map[string]any{},
			"supported_voices":     nil,
			"links":                map[string]any{"details": "/api/v1/models/" + canonical + "/endpoints"},
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "total_count": len(data), "links": map[string]any{"next": nil}})
}

// handleOREndpoints answers GET /api/v1/models/{author}/{slug}/endpoints,
// by the model's id or its canonical slug.
func (s *Server) handleOREndpoints(w http.ResponseWriter, r *http.Request) {
	slug := r.PathValue("author") + "/" + r.PathValue("slug")
	m, ok := s.cfg.model(slug)
	if !ok {
		for i := range s.cfg.Models {
			if strings.EqualFold(canonicalSlug(&s.cfg.Models[i]), slug) {
				m, ok = &s.cfg.Models[i], true
				break
			}
		}
	}
	if !ok {
		writeJSON(w, http.StatusNotFound, orShape(404, "Resource not found"))
		return
	}
	eps := make([]any, 0, len(m.Endpoints))
	for _, e := range m.Endpoints {
		eps = append(eps, publicEndpoint(m, e))
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{
		"id": m.Slug, "name": m.Slug, "created": 1735689600, "description": "A simulated model.",
		"architecture": map[string]any{"tokenizer": "Other", "instruct_type": nil, "modality": "text->text",
			"input_modalities": []string{"text"}, "output_modalities": []string{"text"}},
		"endpoints": eps,
	}})
}

// publicEndpoint is one endpoint as OpenRouter's listings give it (the
// OpenAPI document's PublicEndpoint), in the endpoints listing and the
// zero-data-retention list alike.
func publicEndpoint(m *Model, e Endpoint) map[string]any {
	name := displayName(e.Provider)
	return map[string]any{
		"name": name + " | " + canonicalSlug(m), "model_id": m.Slug, "model_name": m.Slug,
		"context_length": m.ContextWindow,
		"pricing":        map[string]any{"prompt": perToken(e.PriceIn), "completion": perToken(e.PriceOut), "discount": 0},
		"provider_name":  name, "tag": e.Slug(), "quantization": e.quantization(),
		"max_completion_tokens": nil, "max_prompt_tokens": nil,
		"supported_parameters": []string{"max_tokens", "temperature", "tools"},
		"status":               0,
		"uptime_last_30m":      100.0, "uptime_last_5m": 100.0, "uptime_last_1d": 100.0,
		"supports_implicit_caching": false,
		"latency_last_30m":          percentiles(e.LatencyMs),
		"throughput_last_30m":       percentiles(e.ThroughputTPS),
	}
}

// quantization is the precision the listing gives the endpoint and
// provider.quantizations filters on: Quantization, else the tag when it
// names a precision, else "unknown".
func (e Endpoint) quantization() string {
	if e.Quantization != "" {
		return strings.ToLower(e.Quantization)
	}
	switch e.Tag {
	case "fp4", "fp8", "bf16", "fp16", "int8", "int4":
		return e.Tag
	}
	return "unknown"
}

// handleORZDR answers GET /api/v1/endpoints/zdr: {data: [PublicEndpoint,
// …]}, every endpoint of every model that is ZeroRetention.
func (s *Server) handleORZDR(w http.ResponseWriter, r *http.Request) {
	data := []any{}
	for i := range s.cfg.Models {
		m := &s.cfg.Models[i]
		for _, e := range m.Endpoints {
			if e.ZeroRetention {
				data = append(data, publicEndpoint(m, e))
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data})
}

// handleVercelModels answers the Vercel AI Gateway's GET /v1/models:
// {object: "list", data}, each model priced at its cheapest endpoint.
func (s *Server) handleVercelModels(w http.ResponseWriter, r *http.Request) {
	data := make([]any, 0, len(s.cfg.Models))
	for i := range s.cfg.Models {
		m := &s.cfg.Models[i]
		in, out := cheapest(m)
		owner, _, _ := strings.Cut(m.Slug, "/")
		data = append(data, map[string]any{
			"id": m.Slug, "object": "model", "created": 1735689600, "released": 1735689600, "owned_by": owner,
			"name": m.Slug, "description": "A simulated model.", "context_window": m.ContextWindow, "max_tokens": 8192,
			"type": "language", "tags": []string{"tool-use"}, "supported_specifications": []string{"v2", "v3", "v4"},
			"modalities": map[string]any{"input": []string{"text"}, "output": []string{"text"}},
			"pricing":    map[string]any{"input": perToken(in), "output": perToken(out)},
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}
