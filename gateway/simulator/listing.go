package simulator

import (
	"fmt"
	"net/http"
	"strings"
)

// OpenRouter's model listings, in the shape of the 2026 listings recorded
// from the live API (the listing of every model, and one model's
// endpoints): prices as per-token decimal strings with zero prices left
// out, each model's canonical slug, and endpoints named by the provider's
// display name and routed to by their tag.

// perToken renders a USD-per-Mtok price as OpenRouter's per-token string.
func perToken(perM float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.12f", perM/1e6), "0"), ".")
}

// orPricing is a listing's prices; the live listing leaves zero prices out
// but for prompt and completion, which it always has.
func orPricing(in, out float64) map[string]string {
	return map[string]string{"prompt": perToken(in), "completion": perToken(out)}
}

var orSupportedParameters = []string{"max_tokens", "temperature", "top_p", "stop", "tools", "tool_choice"}

func (s *Server) handleORModels(w http.ResponseWriter, r *http.Request) {
	data := make([]any, 0, len(s.cfg.Models))
	for _, m := range s.cfg.Models {
		var in, out float64
		if len(m.Endpoints) > 0 {
			in, out = m.Endpoints[0].PriceIn, m.Endpoints[0].PriceOut
			for _, e := range m.Endpoints[1:] {
				if e.PriceIn+e.PriceOut < in+out {
					in, out = e.PriceIn, e.PriceOut
				}
			}
		}
		canonical := orModelID(&m)
		data = append(data, map[string]any{
			"id": m.Slug, "canonical_slug": canonical, "name": m.Slug, "context_length": m.ContextWindow,
			"pricing":              orPricing(in, out),
			"supported_parameters": orSupportedParameters,
			"links":                map[string]any{"details": "/api/v1/models/" + canonical + "/endpoints"},
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "total_count": len(data), "links": map[string]any{"next": nil}})
}

func (s *Server) handleOREndpoints(w http.ResponseWriter, r *http.Request) {
	slug := r.PathValue("author") + "/" + r.PathValue("slug")
	m, ok := s.cfg.marketModel(KindOpenRouter, slug)
	if !ok {
		writeJSON(w, http.StatusNotFound, orShape(404, "Model not found"))
		return
	}
	eps := make([]any, 0, len(m.Endpoints))
	for _, e := range m.Endpoints {
		quant := "unknown"
		if e.Tag == "fp8" || e.Tag == "fp4" {
			quant = e.Tag
		}
		name := s.cfg.providerName(KindOpenRouter, e)
		// The catalog knows one typical latency and throughput per
		// endpoint: every percentile reports it.
		flat := func(v float64) map[string]float64 { return map[string]float64{"p50": v, "p75": v, "p90": v, "p99": v} }
		eps = append(eps, map[string]any{
			"name": name + " | " + orModelID(m), "model_id": m.Slug, "model_name": m.Slug,
			"context_length": m.ContextWindow, "pricing": orPricing(e.PriceIn, e.PriceOut),
			"provider_name": name, "tag": e.Slug(), "quantization": quant,
			"max_completion_tokens": nil, "max_prompt_tokens": nil,
			"supported_parameters": orSupportedParameters, "status": 0,
			"uptime_last_30m": 100.0, "uptime_last_5m": 100.0, "uptime_last_1d": 100.0,
			"supports_implicit_caching": false,
			"latency_last_30m":          flat(e.LatencyMs),
			"throughput_last_30m":       flat(e.ThroughputTPS),
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": m.Slug, "name": m.Slug, "endpoints": eps}})
}
