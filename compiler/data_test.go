package compiler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
)

// dataCatalog: one model with a zero-retention fp8 endpoint in Europe
// (bedrock), one that retains in the US (together) and one whose facts are
// unknown (groq); Amazon Bedrock ids that name a cross-region inference
// profile (eu., global.) and one that does not.
const dataCatalog = `{"models": [{"slug": "m/x", "context_window": 8000, "endpoints": [
  {"provider": "bedrock", "price_in": 1, "price_out": 2, "zero_retention": true, "no_training": true, "quantization": "fp8", "regions": ["eu"]},
  {"provider": "together", "price_in": 0.5, "price_out": 1, "zero_retention": false, "quantization": "fp16", "regions": ["us"]},
  {"provider": "groq", "price_in": 0.2, "price_out": 0.4}]},
  {"slug": "anthropic/claude-sonnet-4.5", "context_window": 200000, "native": {"amazon-bedrock": "eu.anthropic.claude-sonnet-4-5-20250929-v1:0"}, "endpoints": [
  {"provider": "amazon-bedrock", "price_in": 3, "price_out": 15}]},
  {"slug": "anthropic/claude-opus-4.1", "context_window": 200000, "native": {"amazon-bedrock": "global.anthropic.claude-opus-4-1-20250805-v1:0"}, "endpoints": [
  {"provider": "amazon-bedrock", "price_in": 15, "price_out": 75}]},
  {"slug": "anthropic/claude-3-haiku", "context_window": 200000, "native": {"amazon-bedrock": "anthropic.claude-3-haiku-20240307-v1:0"}, "endpoints": [
  {"provider": "amazon-bedrock", "price_in": 0.25, "price_out": 1.25}]},
  {"slug": "openai/gpt-4o", "context_window": 8000, "endpoints": [
  {"provider": "openai", "price_in": 2.5, "price_out": 10, "zero_retention": false, "no_training": true}]}]}`

// TestDataPolicyDecision: each restriction, per kind of upstream, is held
// natively, by allow-list, locally, or refused — the cases the compile
// corpus does not reach (a caller's own key, an endpoint with no knob at
// all, a guardrail and a profile whose lists share nothing).
func TestDataPolicyDecision(t *testing.T) {
	cat, diags := guardrails.ParseCatalog("catalog.json", []byte(dataCatalog))
	require.Empty(t, diags)
	zr := func(p *Plan) { p.Data.ZeroRetention = true }
	eu := func(p *Plan) { p.Data.Regions = []string{"eu"} }
	nativeAll := with(full, func(c *Capabilities) {
		c.ZeroRetention, c.NoTraining, c.Quantizations, c.MaxPrice, c.DataKnobsCallerKey = true, true, true, true, true
	})
	vercelLike := with(full, func(c *Capabilities) { c.DenyList, c.ZeroRetention, c.NoTraining = false, true, true })
	price := 0.6
	tests := []struct {
		name      string
		model     string
		plan      func(*Plan)
		caps      Capabilities
		callerKey bool
		agreement Agreement
		refused   string
		via       string
		allowed   []string
		knobs     DataPolicy
		noCatalog bool
		region    string // the upstream's declared region
		served    string // the outcome's Region
	}{
		{name: "native zero retention", plan: zr, caps: nativeAll, via: "zero_retention=native", knobs: DataPolicy{ZeroRetention: true}},
		{name: "native with a caller key where enforced", plan: zr, caps: nativeAll, callerKey: true, via: "zero_retention=native", knobs: DataPolicy{ZeroRetention: true}},
		{name: "caller key where not enforced refuses", plan: zr, caps: vercelLike, callerKey: true, refused: CodeDataPolicyUnsatisfiable},
		{name: "no knob: allow-list of satisfying providers", plan: zr, caps: with(full, func(c *Capabilities) {}), via: "zero_retention=allow_list", allowed: []string{"bedrock"}},
		{name: "allow-list excludes unknown facts", plan: func(p *Plan) { p.Data.NoTraining = true }, caps: full, via: "no_training=allow_list", allowed: []string{"bedrock"}},
		{name: "allow-list under the plan's own lists: nothing left", plan: func(p *Plan) { zr(p); p.Providers.Denied = []string{"bedrock"} }, caps: full, refused: CodeDataPolicyUnsatisfiable},
		{name: "price ceiling by allow-list", plan: func(p *Plan) { p.Data.MaxPriceIn = &price }, caps: full, via: "max_price=allow_list", allowed: []string{"together", "groq"}},
		{name: "mixed: native and allow-list", plan: func(p *Plan) { zr(p); p.Data.Quantizations = []string{"fp8"} }, caps: vercelLike, via: "zero_retention=native,quantizations=allow_list", allowed: []string{"bedrock"}, knobs: DataPolicy{ZeroRetention: true}},
		{name: "no knob and no allow-list refuses", plan: zr, caps: Capabilities{}, refused: CodeDataPolicyUnsatisfiable},
		{name: "precision lists share nothing", plan: func(p *Plan) { p.Data.Quantizations = []string{} }, caps: nativeAll, refused: CodeDataPolicyUnsatisfiable},
		{name: "direct: facts say it retains", model: "openai/gpt-4o", plan: zr, caps: Capabilities{DirectProvider: "openai"}, refused: CodeDataPolicyUnsatisfiable},
		{name: "direct: the agreement meets it", model: "openai/gpt-4o", plan: zr, caps: Capabilities{DirectProvider: "openai"}, agreement: Agreement{ZeroRetention: true}, via: "zero_retention=local"},
		{name: "direct: the agreement does not cover a caller key", model: "openai/gpt-4o", plan: zr, caps: Capabilities{DirectProvider: "openai"}, agreement: Agreement{ZeroRetention: true}, callerKey: true, refused: CodeDataPolicyUnsatisfiable},
		{name: "direct: facts meet no_training", model: "openai/gpt-4o", plan: func(p *Plan) { p.Data.NoTraining = true }, caps: Capabilities{DirectProvider: "openai"}, via: "no_training=local"},
		{name: "direct without a catalog: no known price", model: "anthropic/claude-x", plan: func(p *Plan) { p.Data.MaxPriceIn = &price }, caps: Capabilities{DirectProvider: "anthropic"}, noCatalog: true, refused: CodeDataPolicyUnsatisfiable},
		{name: "direct without a catalog: the agreement alone", model: "anthropic/claude-x", plan: zr, caps: Capabilities{DirectProvider: "anthropic"}, agreement: Agreement{ZeroRetention: true}, noCatalog: true, via: "zero_retention=local"},
		{name: "direct: unknown precision refuses", model: "openai/gpt-4o", plan: func(p *Plan) { p.Data.Quantizations = []string{"fp8"} }, caps: Capabilities{DirectProvider: "openai"}, refused: CodeDataPolicyUnsatisfiable},

		// regions
		{name: "regions: allow-list of providers known to process there", plan: eu, caps: full, via: "regions=allow_list", allowed: []string{"bedrock"}},
		{name: "regions: a marketplace's own knobs do not carry it", plan: eu, caps: nativeAll, via: "regions=allow_list", allowed: []string{"bedrock"}},
		{name: "regions: unknown facts admit nothing", plan: func(p *Plan) { p.Data.Regions = []string{"apac"} }, caps: full, refused: CodeDataPolicyUnsatisfiable},
		{name: "regions: intersected with the plan's allowed list", plan: func(p *Plan) { eu(p); p.Providers.Allowed = []string{"together"} }, caps: full, refused: CodeDataPolicyUnsatisfiable},
		{name: "regions: no allow-list refuses", plan: eu, caps: Capabilities{}, refused: CodeDataPolicyUnsatisfiable},
		{name: "regions: lists share nothing", plan: func(p *Plan) { p.Data.Regions = []string{} }, caps: full, refused: CodeDataPolicyUnsatisfiable},
		{name: "regions: direct in a region of the geography", model: "openai/gpt-4o", plan: eu, caps: Capabilities{DirectProvider: "openai"}, region: "swedencentral", via: "regions=local", served: "swedencentral"},
		{name: "regions: direct declaring the geography itself", model: "openai/gpt-4o", plan: eu, caps: Capabilities{DirectProvider: "openai"}, region: "eu", via: "regions=local", served: "eu"},
		{name: "regions: a caller's key processes where the upstream does", model: "openai/gpt-4o", plan: eu, caps: Capabilities{DirectProvider: "openai"}, region: "europe-west4", callerKey: true, via: "regions=local", served: "europe-west4"},
		{name: "regions: direct elsewhere refuses", model: "openai/gpt-4o", plan: eu, caps: Capabilities{DirectProvider: "openai"}, region: "eastus2", refused: CodeDataPolicyUnsatisfiable},
		{name: "regions: direct declaring none refuses", model: "openai/gpt-4o", plan: eu, caps: Capabilities{DirectProvider: "openai"}, refused: CodeDataPolicyUnsatisfiable},
		{name: "regions: a region the table does not know refuses", model: "openai/gpt-4o", plan: eu, caps: Capabilities{DirectProvider: "openai"}, region: "mars-north-1", refused: CodeDataPolicyUnsatisfiable},
		{name: "regions: a global location refuses", model: "openai/gpt-4o", plan: eu, caps: Capabilities{DirectProvider: "openai"}, region: "global", refused: CodeDataPolicyUnsatisfiable},
		{name: "regions: an inference profile's geography, not the region sent to", model: "anthropic/claude-sonnet-4.5", plan: eu, caps: Capabilities{DirectProvider: ProviderBedrock}, region: "us-east-1", via: "regions=local", served: "eu"},
		{name: "regions: an inference profile elsewhere refuses", model: "anthropic/claude-sonnet-4.5", plan: func(p *Plan) { p.Data.Regions = []string{"us"} }, caps: Capabilities{DirectProvider: ProviderBedrock}, region: "us-east-1", refused: CodeDataPolicyUnsatisfiable},
		{name: "regions: a global inference profile refuses", model: "anthropic/claude-opus-4.1", plan: eu, caps: Capabilities{DirectProvider: ProviderBedrock}, region: "eu-west-1", refused: CodeDataPolicyUnsatisfiable},
		{name: "regions: an in-region model id processes in the region", model: "anthropic/claude-3-haiku", plan: eu, caps: Capabilities{DirectProvider: ProviderBedrock}, region: "eu-central-1", via: "regions=local", served: "eu-central-1"},
		{name: "regions: other restrictions still decided on the endpoint", model: "openai/gpt-4o", plan: func(p *Plan) { eu(p); zr(p) }, caps: Capabilities{DirectProvider: "openai"}, region: "eu", refused: CodeDataPolicyUnsatisfiable},
		{name: "regions: with an agreement, both local", model: "openai/gpt-4o", plan: func(p *Plan) { eu(p); zr(p) }, caps: Capabilities{DirectProvider: "openai"}, agreement: Agreement{ZeroRetention: true}, region: "eu", via: "zero_retention=local,regions=local", served: "eu"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := tc.model
			if model == "" {
				model = "m/x"
			}
			p := &Plan{DecidedModel: model, Chain: []string{}, Providers: Providers{Denied: []string{}}, Merged: &profiles.Merged{}}
			tc.plan(p)
			c := cat
			if tc.noCatalog {
				c = nil
			}
			out := Check(p, Upstream{Name: "u", Capabilities: tc.caps, CallerKey: tc.callerKey, Agreement: tc.agreement, Region: tc.region}, c)
			if tc.refused != "" {
				require.NotNil(t, out.Refused)
				require.Equal(t, tc.refused, out.Refused.Code)
				return
			}
			require.Nil(t, out.Refused, "%+v", out.Refused)
			require.Equal(t, tc.via, out.DataVia)
			require.Equal(t, tc.allowed, out.Providers.Allowed)
			require.Equal(t, tc.knobs, out.Data)
			require.Equal(t, tc.served, out.Region)
		})
	}
}

// TestDecideDataCombinesProfileAndGuardrail: the plan holds the tighter of
// the merged profile's and the guardrail's restrictions, and names who set
// each.
func TestDecideDataCombinesProfileAndGuardrail(t *testing.T) {
	in, out := 3.0, 20.0
	m := &profiles.Merged{
		Quantizations: profiles.Field[[]string]{Value: []string{"fp8", "bf16"}, Set: true, Rung: "team:ml", File: "profiles/teams/ml.toml"},
		MaxPriceIn:    profiles.Field[float64]{Value: in, Set: true, Rung: "org", File: "profiles/org.toml"},
		MaxPriceOut:   profiles.Field[float64]{Value: out, Set: true, Rung: "org", File: "profiles/org.toml"},
		Regions:       profiles.Field[[]string]{Value: []string{"eu", "us"}, Set: true, Rung: "org", File: "profiles/org.toml"},
	}
	gin := 2.0
	p := &Plan{Merged: m}
	decideData(p, m, nil)
	decideDataPatterns(p, &guardrails.DataRules{ZeroRetention: true, Quantizations: []string{"bf16", "fp16"}, MaxPrice: &profiles.MaxPrice{Input: &gin}, Regions: []string{"eu", "apac"}})
	require.True(t, p.Data.ZeroRetention)
	require.Equal(t, []string{"bf16"}, p.Data.Quantizations)
	require.Equal(t, 2.0, *p.Data.MaxPriceIn, "the lower ceiling binds")
	require.Equal(t, 20.0, *p.Data.MaxPriceOut)
	require.Equal(t, []string{"eu"}, p.Data.Regions, "the intersection binds")
	require.Equal(t, "zero_retention,quantizations,max_price,regions", p.Data.Fields())
	require.Equal(t, "org (profiles/org.toml)+guardrail", p.DataRung(DataRegions))
	require.Equal(t, "guardrail", p.DataRung(DataZeroRetention))
	require.Equal(t, "team:ml (profiles/teams/ml.toml)+guardrail", p.DataRung(DataQuantizations))
	prov := p.Provenance()
	require.Equal(t, "guardrail", prov["data.zero_retention"])
	require.Equal(t, "org+guardrail", prov["providers.max_price.input"])
	require.Equal(t, "team:ml+guardrail", prov["providers.quantizations"])
	require.Equal(t, "org+guardrail", prov["data.regions"])
}
