package simulator

import (
	"fmt"
	"net/http"
	"strings"
)

// perToken renders a USD-per-Mtok price as OpenRouter's per-token string.
func perToken(perM float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.12f", perM/1e6), "0"), ".")
}

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
		data = append(data, map[string]any{
			"id": m.Slug, "name": m.Slug, "context_length": m.ContextWindow,
			"pricing":              map[string]any{"prompt": perToken(in), "completion": perToken(out), "request": "0", "image": "0"},
			"supported_parameters": []string{"max_tokens", "temperature", "top_p", "stop", "stream", "tools", "tool_choice"},
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data})
}

func (s *Server) handleOREndpoints(w http.ResponseWriter, r *http.Request) {
	slug := r.PathValue("author") + "/" + r.PathValue("slug")
	m, ok := s.cfg.model(slug)
	if !ok {
		writeJSON(w, http.StatusNotFound, orShape(404, "Model not found"))
		return
	}
	eps := make([]any, 0, len(m.Endpoints))
	for _, e := range m.Endpoints {
		quant := "unknown"
		if e.Tag == "fp8" {
			quant = "fp8"
		}
		eps = append(eps, map[string]any{
			"name": m.Slug + " | " + e.Slug(), "provider_name": e.Provider, "tag": e.Slug(),
			"quantization": quant, "context_length": m.ContextWindow,
			"pricing":             map[string]any{"prompt": perToken(e.PriceIn), "completion": perToken(e.PriceOut)},
			"latency_last_30m":    e.LatencyMs,
			"throughput_last_30m": e.ThroughputTPS,
			"uptime_last_30m":     100.0,
			"status":              0,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": m.Slug, "name": m.Slug, "endpoints": eps}})
}
