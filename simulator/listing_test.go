package simulator

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/guardrails/listing"
)

// TestListingsInTheDocumentedShape: the simulator's OpenRouter and Vercel
// listings are read by the catalog import as the real ones are, over HTTP,
// and give back the simulator's own models, endpoints, prices, display
// names and measurements.
func TestListingsInTheDocumentedShape(t *testing.T) {
	cfg := DefaultConfig()
	for i := range cfg.Models {
		if cfg.Models[i].Slug == "meta-llama/llama-3.1-70b-instruct" {
			// The canonical slug OpenRouter lists a model by is the id it
			// reports it by, the catalog's first alias (see orModelID).
			cfg.Models[i].Aliases = []string{"meta-llama/llama-3.1-70b-instruct-20250101"}
		}
	}
	s := startSim(t, cfg)
	ctx := context.Background()
	client := &listing.Client{Concurrency: 2}
	imp, err := (&listing.OpenRouter{BaseURL: s.URL(KindOpenRouter), Client: client}).Import(ctx)
	require.NoError(t, err)
	require.Len(t, imp.Models, len(DefaultConfig().Models))
	require.Empty(t, imp.Notes)
	a, diags := listing.Apply("catalog.json", nil, imp, listing.MergeOptions{})
	require.Empty(t, diags)
	require.Len(t, a.Summary.ModelsAdded, 9)
	doc := a.Document
	var llama *guardrails.Model
	for _, m := range doc.Models {
		if m.Slug == "meta-llama/llama-3.1-70b-instruct" {
			llama = m
		}
	}
	require.NotNil(t, llama)
	require.Equal(t, []string{"meta-llama/llama-3.1-70b-instruct-20250101"}, llama.Aliases)
	require.Equal(t, 131072, llama.ContextWindow)
	fp8 := llama.Endpoints[0]
	require.Equal(t, "deepinfra", fp8.Provider)
	require.Equal(t, "fp8", fp8.Tag)
	require.Equal(t, 0.23, fp8.PriceIn)
	require.Equal(t, 500, fp8.LatencyMS)
	require.Equal(t, 40.0, fp8.ThroughputTPS)
	// Display names are the built-in ones, so the import writes no
	// providers section.
	require.Empty(t, doc.Providers)

	vimp, err := (&listing.Vercel{BaseURL: s.URL(KindVercel), Client: client}).Import(ctx)
	require.NoError(t, err)
	require.Len(t, vimp.Vercel, 9)
	require.Equal(t, "openai", vimp.Vercel[0].OwnedBy)
	require.Equal(t, 2.5, vimp.Vercel[0].PriceIn)
}
