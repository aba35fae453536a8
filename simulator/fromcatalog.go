package simulator

import (
	"maps"
	"slices"

	"github.com/sluicegw/sluice/guardrails"
)

// FromCatalog returns a simulator configuration that serves exactly the
// models and endpoints of a sluice catalog, so the demo and the integration
// tests route against the same prices and providers the compiler sees. The
// catalog's names come along: each model's aliases, upstream ids and native
// ids, and how each marketplace reports each provider
// ([guardrails.Catalog.ReportedName]); and each endpoint's data facts
// (zero_retention, no_training, quantization), which the marketplaces
// enforce and list — an unknown fact is not compliant.
func FromCatalog(cat *guardrails.Catalog) Config {
	cfg := Config{ProviderNames: map[string]map[string]string{}}
	for _, kind := range []string{KindOpenRouter, KindVercel} {
		names := map[string]string{}
		for _, p := range cat.Providers() {
			names[p] = cat.ReportedName(kind, p)
		}
		cfg.ProviderNames[kind] = names
	}
	for _, m := range cat.Models() {
		sm := Model{Slug: m.Slug, ContextWindow: m.ContextWindow,
			Aliases: slices.Clone(m.Aliases), UpstreamIDs: maps.Clone(m.UpstreamIDs), Native: maps.Clone(m.Native)}
		for _, e := range m.Endpoints {
			sm.Endpoints = append(sm.Endpoints, Endpoint{Provider: e.Provider, Tag: e.Tag, PriceIn: e.PriceIn, PriceOut: e.PriceOut,
				LatencyMs: float64(e.LatencyMS), ThroughputTPS: e.ThroughputTPS,
				ZeroRetention: e.ZeroRetention != nil && *e.ZeroRetention, NoTraining: e.NoTraining != nil && *e.NoTraining,
				Quantization: e.Quantization})
		}
		sm.Embedding = m.Embedding()
		cfg.Models = append(cfg.Models, sm)
	}
	return cfg
}
