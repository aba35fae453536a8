package compiler

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// full is a marketplace that can express everything.
var full = Capabilities{Ranking: true, PreferredOrder: true, AllowList: true, DenyList: true, Chain: true, Auto: true}

func with(c Capabilities, f func(*Capabilities)) Capabilities { f(&c); return c }

// cloudBetas is a cloud's declared set: two flags, each with its source.
var cloudBetas = Capabilities{DirectProvider: "openai", Betas: map[string]string{
	"interleaved-thinking-2025-05-14": "a cloud's documentation",
	"computer-use-2025-01-24":         "a cloud's documentation",
}}

func withBetas(flags ...string) func(*Plan) { return func(p *Plan) { p.Betas = flags } }

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
		betas    []string // the flags the outcome sends
		param    string   // the refusal's Param
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

		// anthropic-beta flags against an upstream's Betas.
		{name: "betas: nil takes every flag", plan: withBetas("context-1m-2025-08-07", "x-private-flag"), caps: full, degraded: []string{}, betas: []string{"context-1m-2025-08-07", "x-private-flag"}},
		{name: "betas: a flag in the set is sent", plan: withBetas("interleaved-thinking-2025-05-14"), caps: cloudBetas, degraded: []string{}, betas: []string{"interleaved-thinking-2025-05-14"}},
		{name: "betas: a refinement outside the set degrades", plan: withBetas("fine-grained-tool-streaming-2025-05-14", "interleaved-thinking-2025-05-14"), caps: cloudBetas, degraded: []string{"beta:fine-grained-tool-streaming-2025-05-14"}, betas: []string{"interleaved-thinking-2025-05-14"}},
		{name: "betas: an economy outside the set degrades", plan: withBetas("interleaved-thinking-2025-05-14", "extended-cache-ttl-2025-04-11", "prompt-caching-2024-07-31"), caps: cloudBetas, degraded: []string{"beta:extended-cache-ttl-2025-04-11", "beta:prompt-caching-2024-07-31"}, betas: []string{"interleaved-thinking-2025-05-14"}},
		{name: "betas: an unknown flag is a refinement", plan: withBetas("x-private-flag"), caps: cloudBetas, degraded: []string{"beta:x-private-flag"}, betas: []string{}},
		{name: "betas: 1M context outside the set refuses", plan: withBetas("interleaved-thinking-2025-05-14", "context-1m-2025-08-07"), caps: cloudBetas, refused: CodeBetaUnsupported, param: BetaParam},
		{name: "betas: the files API outside the set refuses", plan: withBetas("files-api-2025-04-14"), caps: cloudBetas, refused: CodeBetaUnsupported, param: BetaParam},
		{name: "betas: an answer-changing flag in the set is sent", plan: withBetas("computer-use-2025-01-24"), caps: cloudBetas, degraded: []string{}, betas: []string{"computer-use-2025-01-24"}},
		{name: "betas: an empty set takes none", plan: withBetas("token-efficient-tools-2025-02-19"), caps: Capabilities{Betas: map[string]string{}}, degraded: []string{"beta:token-efficient-tools-2025-02-19"}, betas: []string{}},
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
				require.Equal(t, tc.param, out.Refused.Param)
				require.Empty(t, out.Degraded)
				return
			}
			require.Nil(t, out.Refused, "%+v", out.Refused)
			require.Equal(t, tc.degraded, out.Degraded)
			require.NotNil(t, out.Degraded, "degraded must be a positive empty set, never null")
			if len(p.Betas) > 0 {
				require.Equal(t, tc.betas, append([]string{}, out.Betas...))
			}
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
