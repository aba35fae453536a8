package compiler

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// full is a marketplace that can express everything.
var full = Capabilities{Ranking: true, PreferredOrder: true, AllowList: true, DenyList: true, Chain: true, Auto: true}

func with(c Capabilities, f func(*Capabilities)) Capabilities { f(&c); return c }

func TestCheckExpressibilityTable(t *testing.T) {
	base := func() *Plan {
		return &Plan{DecidedModel: "openai/gpt-4o", Chain: []string{}, Providers: Providers{Denied: []string{}}}
	}
	tests := []struct {
		name     string
		plan     func(*Plan)
		caps     Capabilities
		filters  []string
		refused  string
		degraded []string
		chain    []string
	}{
		{name: "nothing to express", caps: Capabilities{}, degraded: []string{}},
		{name: "ranking expressed", plan: func(p *Plan) { p.Providers.RankBy = "cost" }, caps: full, degraded: []string{}},
		{name: "ranking degrades", plan: func(p *Plan) { p.Providers.RankBy = "cost" }, caps: with(full, func(c *Capabilities) { c.Ranking = false }), degraded: []string{"ranking"}},
		{name: "preferred degrades", plan: func(p *Plan) { p.Providers.Preferred = []string{"openai"} }, caps: with(full, func(c *Capabilities) { c.PreferredOrder = false }), degraded: []string{"preferred_order"}},
		{name: "chain degrades", plan: func(p *Plan) { p.Chain = []string{"a/b"} }, caps: with(full, func(c *Capabilities) { c.Chain = false }), degraded: []string{"chain"}},
		{name: "chain truncated", plan: func(p *Plan) { p.Chain = []string{"a/1", "a/2", "a/3", "a/4"} }, caps: with(full, func(c *Capabilities) { c.MaxChain = 3 }), degraded: []string{"chain_truncated"}, chain: []string{"a/1", "a/2", "a/3"}},
		{name: "chain within limit", plan: func(p *Plan) { p.Chain = []string{"a/1", "a/2"} }, caps: with(full, func(c *Capabilities) { c.MaxChain = 3 }), degraded: []string{}, chain: []string{"a/1", "a/2"}},
		{name: "several degrade, sorted", plan: func(p *Plan) {
			p.Providers.RankBy, p.Providers.Preferred, p.Chain = "latency", []string{"x"}, []string{"a/b"}
		}, caps: Capabilities{AllowList: true, DenyList: true}, degraded: []string{"chain", "preferred_order", "ranking"}},
		{name: "allow list refuses", plan: func(p *Plan) { p.Providers.Allowed = []string{"openai"} }, caps: with(full, func(c *Capabilities) { c.AllowList = false }), refused: CodeProviderRestrictionInexpressible},
		{name: "deny list refuses", plan: func(p *Plan) { p.Providers.Denied = []string{"together"} }, caps: with(full, func(c *Capabilities) { c.DenyList = false }), refused: CodeProviderRestrictionInexpressible},
		{name: "empty intersection refuses everywhere", plan: func(p *Plan) { p.Providers.Allowed = []string{} }, caps: full, refused: CodeProviderNotPermitted},
		{name: "content filter not run", plan: func(p *Plan) { p.ContentFilter = "pii-redact" }, caps: full, filters: []string{"other"}, refused: CodeContentGuardrailInexpressible},
		{name: "content filter run", plan: func(p *Plan) { p.ContentFilter = "pii-redact" }, caps: full, filters: []string{"PII-Redact"}, degraded: []string{}},
		{name: "auto refused", plan: func(p *Plan) { p.Auto, p.DecidedModel = true, "auto" }, caps: with(full, func(c *Capabilities) { c.Auto = false }), refused: CodeAutoModeInexpressible},
		{name: "auto expressed", plan: func(p *Plan) { p.Auto, p.DecidedModel = true, "auto" }, caps: full, degraded: []string{}},
		{name: "guardrail refusal wins", plan: func(p *Plan) {
			p.Refused = &Refusal{Code: CodeModelForbidden, Message: "no"}
			p.Providers.RankBy = "cost"
		}, caps: Capabilities{}, refused: CodeModelForbidden},
		// Direct providers: ranking and order are inert, lists decided locally.
		{name: "direct ranking inert", plan: func(p *Plan) { p.Providers.RankBy, p.Providers.Preferred = "cost", []string{"azure"} }, caps: Capabilities{DirectProvider: "openai"}, degraded: []string{}},
		{name: "direct chain degrades", plan: func(p *Plan) { p.Chain = []string{"openai/gpt-4o-mini"} }, caps: Capabilities{DirectProvider: "openai"}, degraded: []string{"chain"}},
		{name: "direct allowed permits", plan: func(p *Plan) { p.Providers.Allowed = []string{"azure", "openai"} }, caps: Capabilities{DirectProvider: "openai"}, degraded: []string{}},
		{name: "direct allowed excludes", plan: func(p *Plan) { p.Providers.Allowed = []string{"azure"} }, caps: Capabilities{DirectProvider: "openai"}, refused: CodeProviderNotPermitted},
		{name: "direct denied excludes", plan: func(p *Plan) { p.Providers.Denied = []string{"openai"} }, caps: Capabilities{DirectProvider: "openai"}, refused: CodeProviderNotPermitted},
		{name: "direct denied tag only permits", plan: func(p *Plan) { p.Providers.Denied = []string{"openai/flex"} }, caps: Capabilities{DirectProvider: "openai"}, degraded: []string{}},
		{name: "direct unknown model", plan: func(p *Plan) { p.DecidedModel = "anthropic/claude-sonnet-4.5" }, caps: Capabilities{DirectProvider: "openai"}, refused: CodeUnknownModel},
		{name: "direct auto refused", plan: func(p *Plan) { p.Auto, p.DecidedModel = true, "auto" }, caps: Capabilities{DirectProvider: "openai"}, refused: CodeAutoModeInexpressible},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			if tc.plan != nil {
				tc.plan(p)
			}
			out := Check(p, Upstream{Name: "u", Capabilities: tc.caps, ContentFilters: tc.filters}, nil)
			if tc.refused != "" {
				require.NotNil(t, out.Refused)
				require.Equal(t, tc.refused, out.Refused.Code, out.Refused.Message)
				require.Empty(t, out.Degraded)
				return
			}
			require.Nil(t, out.Refused, "%+v", out.Refused)
			require.Equal(t, tc.degraded, out.Degraded)
			require.NotNil(t, out.Degraded, "degraded must be a positive empty set, never null")
			if tc.chain != nil {
				require.Equal(t, tc.chain, out.Chain)
			}
		})
	}
}

func TestContentFilterRefusalExplainsTheMissingTrace(t *testing.T) {
	p := &Plan{DecidedModel: "a/b", ContentFilter: "pii-redact"}
	out := Check(p, Upstream{Name: "edge", Capabilities: full}, nil)
	require.Contains(t, out.Refused.Message, "leaves no trace")
}
