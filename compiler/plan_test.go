package compiler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/profiles"
)

func list(s ...string) *[]string { return &s }
func str(s string) *string       { return &s }

func layer(rung string, f func(*profiles.Profile)) profiles.Layer {
	p := &profiles.Profile{}
	f(p)
	return profiles.Layer{Rung: rung, File: rung + ".toml", Profile: p}
}

func TestDecideWithoutGuardrail(t *testing.T) {
	tests := []struct {
		name       string
		req        Request
		layers     []profiles.Layer
		chain      []string
		preferred  []string
		provenance map[string]string
	}{
		{
			name:       "anthropic default applies",
			req:        Request{Model: "Anthropic/Claude-Sonnet-4.5"},
			chain:      []string{},
			preferred:  []string{"anthropic"},
			provenance: map[string]string{"providers.preferred": RungAnthropicDefault},
		},
		{
			name:       "anthropic default stands down for an explicit order",
			req:        Request{Model: "anthropic/claude-sonnet-4.5"},
			layers:     []profiles.Layer{layer("team:ml", func(p *profiles.Profile) { p.Providers.Preferred = list("amazon-bedrock") })},
			chain:      []string{},
			preferred:  []string{"amazon-bedrock"},
			provenance: map[string]string{"providers.preferred": "team:ml"},
		},
		{
			name:       "anthropic default stands down for an explicitly empty order",
			req:        Request{Model: "anthropic/claude-sonnet-4.5"},
			layers:     []profiles.Layer{layer("org", func(p *profiles.Profile) { p.Providers.Preferred = list() })},
			chain:      []string{},
			preferred:  []string{},
			provenance: map[string]string{"providers.preferred": "org"},
		},
		{
			name:       "anthropic default stands down for an allow list",
			req:        Request{Model: "anthropic/claude-sonnet-4.5"},
			layers:     []profiles.Layer{layer("org", func(p *profiles.Profile) { p.Providers.Allowed = list("amazon-bedrock", "anthropic") })},
			chain:      []string{},
			preferred:  []string{},
			provenance: map[string]string{"providers.allowed": "org"},
		},
		{
			name:       "anthropic default applies with an empty allow list (no restriction)",
			req:        Request{Model: "anthropic/claude-sonnet-4.5"},
			layers:     []profiles.Layer{layer("org", func(p *profiles.Profile) { p.Providers.Allowed = list() })},
			chain:      []string{},
			preferred:  []string{"anthropic"},
			provenance: map[string]string{"providers.allowed": "org", "providers.preferred": RungAnthropicDefault},
		},
		{
			name:       "anthropic default stands down for a deny naming anthropic",
			req:        Request{Model: "anthropic/claude-sonnet-4.5"},
			layers:     []profiles.Layer{layer("key:k", func(p *profiles.Profile) { p.Providers.Denied = list("anthropic") })},
			chain:      []string{},
			preferred:  []string{},
			provenance: map[string]string{"providers.denied": "key:k"},
		},
		{
			name:       "anthropic default ignores a deny of another provider",
			req:        Request{Model: "anthropic/claude-sonnet-4.5"},
			layers:     []profiles.Layer{layer("key:k", func(p *profiles.Profile) { p.Providers.Denied = list("together") })},
			chain:      []string{},
			preferred:  []string{"anthropic"},
			provenance: map[string]string{"providers.denied": "key:k", "providers.preferred": RungAnthropicDefault},
		},
		{
			name:       "no default for other authors",
			req:        Request{Model: "openai/gpt-4o"},
			chain:      []string{},
			preferred:  []string{},
			provenance: map[string]string{},
		},
		{
			name: "chain drops the decided model and keeps order",
			req:  Request{Model: "openai/gpt-4o"},
			layers: []profiles.Layer{layer("org", func(p *profiles.Profile) {
				p.Fallbacks = list("openai/gpt-4o", "anthropic/claude-haiku-4.5", "openai/gpt-4o-mini")
			})},
			chain:      []string{"anthropic/claude-haiku-4.5", "openai/gpt-4o-mini"},
			preferred:  []string{},
			provenance: map[string]string{"fallbacks": "org"},
		},
		{
			name: "request rung overrides",
			req: Request{Model: "openai/gpt-4o", Routing: func() *profiles.Profile {
				p := &profiles.Profile{Fallbacks: list()}
				p.Providers.RankBy = str("cost")
				return p
			}()},
			layers:     []profiles.Layer{layer("org", func(p *profiles.Profile) { p.Fallbacks = list("a/b") })},
			chain:      []string{},
			preferred:  []string{},
			provenance: map[string]string{"fallbacks": "request", "providers.rank_by": "request"},
		},
		{
			name:       "session pin goes first",
			req:        Request{Model: "anthropic/claude-sonnet-4.5", PinnedProvider: "Amazon-Bedrock"},
			chain:      []string{},
			preferred:  []string{"amazon-bedrock", "anthropic"},
			provenance: map[string]string{"providers.preferred": RungSession},
		},
		{
			name:       "session pin dropped when denied",
			req:        Request{Model: "openai/gpt-4o", PinnedProvider: "together"},
			layers:     []profiles.Layer{layer("org", func(p *profiles.Profile) { p.Providers.Denied = list("together") })},
			chain:      []string{},
			preferred:  []string{},
			provenance: map[string]string{"providers.denied": "org"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.req, tc.layers, nil)
			require.Nil(t, p.Refused)
			require.Equal(t, tc.chain, p.Chain)
			require.Equal(t, tc.preferred, p.Providers.Preferred)
			require.Equal(t, tc.provenance, p.Provenance())
		})
	}
}

func TestDecideDoesNotMutateLayers(t *testing.T) {
	layers := make([]profiles.Layer, 1, 4)
	layers[0] = layer("org", func(p *profiles.Profile) { p.Fallbacks = list("a/1") })
	routing := &profiles.Profile{Fallbacks: list("b/2")}
	_ = Decide(Request{Model: "x/y", Routing: routing}, layers, nil)
	require.Len(t, layers, 1)
	require.Equal(t, 4, cap(layers))
	other := Decide(Request{Model: "x/y"}, layers, nil)
	require.Equal(t, []string{"a/1"}, other.Chain)
}

func TestPermits(t *testing.T) {
	ps := Providers{Allowed: []string{"deepinfra", "anthropic/eu"}, Denied: []string{"deepinfra/fp4"}}
	require.True(t, Permits(ps, "deepinfra"))
	require.True(t, Permits(ps, "deepinfra/fp8"))
	require.False(t, Permits(ps, "deepinfra/fp4"))
	require.True(t, Permits(ps, "anthropic/eu"))
	require.False(t, Permits(ps, "anthropic"))
	require.False(t, Permits(ps, "together"))
	require.True(t, Permits(Providers{}, "anyone"))
}
