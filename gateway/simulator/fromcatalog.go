package simulator

import "github.com/sluicegw/sluice/guardrails"

// FromCatalog returns a simulator configuration that serves exactly the
// models and endpoints of a sluice catalog, so the demo and the integration
// tests route against the same prices and providers the compiler sees.
func FromCatalog(cat *guardrails.Catalog) Config {
	cfg := Config{}
	for _, m := range cat.Models() {
		sm := Model{Slug: m.Slug, ContextWindow: m.ContextWindow}
		for _, e := range m.Endpoints {
			sm.Endpoints = append(sm.Endpoints, Endpoint{Provider: e.Provider, Tag: e.Tag, PriceIn: e.PriceIn, PriceOut: e.PriceOut,
				LatencyMs: float64(e.LatencyMS), ThroughputTPS: e.ThroughputTPS})
		}
		sm.Embedding = m.Embedding()
		cfg.Models = append(cfg.Models, sm)
	}
	return cfg
}
