package gateway

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSwitchReason: a served model that differs from the decided one is a
// chain hop only when the chain it was sent holds it; any other is recorded
// as upstream_substitution, the upstream doing what the plan did not allow.
func TestSwitchReason(t *testing.T) {
	chain := []string{"anthropic/claude-sonnet-4.5", "openai/gpt-4o-mini"}
	for _, tc := range []struct{ served, want string }{
		{"openai/gpt-4o", ""},
		{"OpenAI/GPT-4o", ""},
		{"", ""},
		{"openai/gpt-4o-mini", SwitchChain},
		{"Anthropic/Claude-Sonnet-4.5", SwitchChain},
		{"mistralai/mistral-large", SwitchSubstitution},
	} {
		require.Equal(t, tc.want, switchReason("openai/gpt-4o", chain, tc.served), tc.served)
	}
	require.Equal(t, SwitchSubstitution, switchReason("openai/gpt-4o", nil, "openai/gpt-4o-mini"), "without a chain any other model is a substitution")
}
