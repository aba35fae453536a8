package gateway

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/guardrails"
)

// TestCostPricesCacheFromTheCatalog: cached prompt tokens are priced at the
// endpoint's price_cache_read when the turn keeps its discount, tokens
// written to the cache at price_cache_write, and at price_in when the
// catalog gives no cache price.
func TestCostPricesCacheFromTheCatalog(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	priced := &guardrails.Endpoint{PriceIn: 3, PriceOut: 15, PriceCacheRead: f(0.3), PriceCacheWrite: f(3.75)}
	plain := &guardrails.Endpoint{PriceIn: 3, PriceOut: 15}
	free := &guardrails.Endpoint{PriceIn: 3, PriceOut: 15, PriceCacheRead: f(0)}
	u := connectors.Usage{PromptTokens: 1_000_000, CompletionTokens: 100_000, CachedTokens: 600_000, CacheWriteTokens: 200_000}
	for _, c := range []struct {
		name     string
		ep       *guardrails.Endpoint
		u        connectors.Usage
		discount bool
		want     float64
	}{
		{"no endpoint", nil, u, true, 0},
		{"read and write priced", priced, u, true, 0.2*3 + 0.6*0.3 + 0.2*3.75 + 0.1*15},
		{"no discount: reads at price_in, writes still at the write price", priced, u, false, 0.8*3 + 0.2*3.75 + 0.1*15},
		{"no cache prices: everything at price_in", plain, u, true, 1.0*3 + 0.1*15},
		{"free cache reads", free, connectors.Usage{PromptTokens: 1_000_000, CachedTokens: 1_000_000}, true, 0},
		{"more cached than the prompt: plain prompt", priced, connectors.Usage{PromptTokens: 10, CachedTokens: 20}, true, 10 * 3 / 1e6},
		{"cached and written exceed the prompt: writes kept, reads plain", priced,
			connectors.Usage{PromptTokens: 100, CachedTokens: 80, CacheWriteTokens: 50}, true, (50*3 + 50*3.75) / 1e6},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.InDelta(t, c.want, cost(c.ep, c.u, c.discount), 1e-12)
		})
	}
}
