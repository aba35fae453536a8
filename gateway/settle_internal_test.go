package gateway

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/snapshot"
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
			got, _ := cost(c.ep, c.u, c.discount)
			require.InDelta(t, c.want, got, 1e-12)
		})
	}
}

// TestPricingMatrix: the cost is what the upstream bills, whatever the
// session says. Each recorded usage shape — OpenAI's and OpenRouter's
// prompt_tokens_details.cached_tokens, Anthropic's cache_read_input_tokens
// and cache_creation_input_tokens, OpenRouter's usage.cost — is read by its
// connector and priced on every kind of turn: without a session, on a
// session's first turn, with the pin equal to what served, with the pin on
// another provider, and on a representation break (another model served),
// which alone is denied the cache-read price when the catalog prices it.
func TestPricingMatrix(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	shapes := []struct {
		name, kind, file string
		ep               *guardrails.Endpoint
		// full is the cost with the cached tokens at the cache-read price,
		// plain with them at price_in (cache writes always at the write price).
		full, plain float64
		upstream    bool // usage.cost: the upstream's bill, every turn alike
	}{
		{"openai cached_tokens", "openai", "openai/nonstream-prompt-cache-cached-tokens.json",
			&guardrails.Endpoint{PriceIn: 2.5, PriceOut: 10, PriceCacheRead: f(1.25)},
			(8*2.5 + 4012*1.25 + 4*10) / 1e6, (4020*2.5 + 4*10) / 1e6, false},
		{"anthropic cache_read and cache_creation", "anthropic", "anthropic/nonstream-cache-read-and-creation-claude-sonnet-4-5.json",
			&guardrails.Endpoint{PriceIn: 3, PriceOut: 15, PriceCacheRead: f(0.3), PriceCacheWrite: f(3.75)},
			(3*3 + 1111*0.3 + 418*3.75 + 33*15) / 1e6, ((3+1111)*3 + 418*3.75 + 33*15) / 1e6, false},
		{"openrouter cached_tokens", "openrouter", "openrouter/nonstream-models-fallback-served-grok-4-xai-cached-tokens.json",
			&guardrails.Endpoint{PriceIn: 3, PriceOut: 15, PriceCacheRead: f(0.75)},
			(5*3 + 682*0.75 + 240*15) / 1e6, (687*3 + 240*15) / 1e6, false},
		{"openrouter usage.cost", "openrouter", "openrouter/nonstream-plain-grok-4.1-fast-xai.json",
			&guardrails.Endpoint{PriceIn: 0.2, PriceOut: 0.5, PriceCacheRead: f(0.05)},
			0.0000816, 0.0000816, true},
	}
	served := snapshot.Pin{Model: "m/served", Provider: "p1"}
	turns := []struct {
		name    string
		session string
		pin     *snapshot.Pin
		decided string
		repr    bool
	}{
		{"no session", "", nil, "m/served", false},
		{"session first turn", "s-1", nil, "m/served", false},
		{"pin equal", "s-1", &served, "m/served", false},
		{"pin differs", "s-1", &snapshot.Pin{Model: "m/served", Provider: "p2"}, "m/served", false},
		{"representation break", "s-1", &snapshot.Pin{Model: "m/decided", Provider: "p1"}, "m/decided", true},
	}
	for _, sh := range shapes {
		body, err := os.ReadFile(filepath.Join("../testdata/recorded", sh.file))
		require.NoError(t, err)
		c, err := connectors.New(sh.kind)
		require.NoError(t, err)
		_, res, err := c.Response(&connectors.Call{}, body)
		require.NoError(t, err)
		require.Positive(t, res.Usage.CachedTokens, "the recording reports cached tokens")
		require.Equal(t, sh.upstream, res.CostReported)
		for _, tc := range turns {
			t.Run(sh.name+"/"+tc.name, func(t *testing.T) {
				tr := &turn{session: tc.session, decided: tc.decided}
				if tc.pin != nil {
					tr.pin, tr.hasPin = *tc.pin, true
				}
				sv := settled{model: served.Model, provider: served.Provider}
				sv.price(tr, sh.ep, res)
				require.Equal(t, tc.repr, sv.representationBreak)
				want, discounted, source := sh.full, true, "catalog"
				switch {
				case sh.upstream:
					source = "upstream"
				case tc.repr:
					want, discounted = sh.plain, false
				}
				require.InDelta(t, want, sv.cost, 1e-12)
				require.Equal(t, source, sv.costSource)
				require.Equal(t, discounted, sv.cacheDiscount, "cache_discount_applied")
			})
		}
	}
}

// TestCostDiscountedMeansCachePrice: cost reports a discount exactly when
// some cached token was priced at a catalog price_cache_read — not when the
// catalog has no cache price, the upstream reported none cached, or the
// counts were inconsistent — and the measured case (1,200 prompt
// tokens, 1,000 cached) costs what the upstream billed.
func TestCostDiscountedMeansCachePrice(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	priced := &guardrails.Endpoint{PriceIn: 0.15, PriceOut: 0.6, PriceCacheRead: f(0.0375)}
	for _, c := range []struct {
		name       string
		ep         *guardrails.Endpoint
		u          connectors.Usage
		readPrice  bool
		want       float64
		discounted bool
	}{
		{"1,200 prompt, 1,000 cached", priced, connectors.Usage{PromptTokens: 1200, CachedTokens: 1000, CompletionTokens: 20},
			true, (200*0.15 + 1000*0.0375 + 20*0.6) / 1e6, true},
		{"denied on a break", priced, connectors.Usage{PromptTokens: 1200, CachedTokens: 1000, CompletionTokens: 20},
			false, (1200*0.15 + 20*0.6) / 1e6, false},
		{"nothing cached", priced, connectors.Usage{PromptTokens: 1200}, true, 1200 * 0.15 / 1e6, false},
		{"no catalog cache price", &guardrails.Endpoint{PriceIn: 0.15}, connectors.Usage{PromptTokens: 1200, CachedTokens: 1000},
			true, 1200 * 0.15 / 1e6, false},
		{"inconsistent counts", priced, connectors.Usage{PromptTokens: 10, CachedTokens: 20}, true, 10 * 0.15 / 1e6, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, discounted := cost(c.ep, c.u, c.readPrice)
			require.InDelta(t, c.want, got, 1e-15)
			require.Equal(t, c.discounted, discounted)
		})
	}
}
